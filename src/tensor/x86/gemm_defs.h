// The prefill entry points of a set (tensor/x86/set.h) and its int8 peak loop, defined once for
// every set over its vector type; gemm_<set>.cpp includes this with its ISA flags and
// instantiates Set<that set>.
#pragma once

#include "tensor/simd/packed.h"
#include "tensor/x86/gemm.h"
#include "tensor/x86/panels_iquants.h"
#include "tensor/x86/set.h"

namespace mw::x86 {

template <Isa I>
void Set<I>::gemm_q4_0(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q4_0(a);
}
template <Isa I>
void Set<I>::gemm_q4_1(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q4_1(a);
}
template <Isa I>
void Set<I>::gemm_q5_0(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q5_0(a);
}
template <Isa I>
void Set<I>::gemm_q5_1(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q5_1(a);
}
template <Isa I>
void Set<I>::gemm_q8_0(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q8_0(a);
}
template <Isa I>
void Set<I>::gemm_q2_k(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q2_k(a);
}
template <Isa I>
void Set<I>::gemm_q3_k(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q3_k(a);
}
template <Isa I>
void Set<I>::gemm_q4_k(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q4_k(a);
}
template <Isa I>
void Set<I>::gemm_q5_k(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q5_k(a);
}
template <Isa I>
void Set<I>::gemm_q6_k(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::q6_k(a);
}

template <Isa I>
void Set<I>::gemm_iq4_nl(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::iq4_nl(a);
}
template <Isa I>
void Set<I>::gemm_iq4_xs(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::iq4_xs(a);
}
template <Isa I>
void Set<I>::gemm_mxfp4(const MatmulArgs& a) {
    Gemm<typename VecOf<I>::type>::mxfp4(a);
}

template <Isa I>
void Set<I>::gemm_tq1_0(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelTQ1_0>(a);
}
template <Isa I>
void Set<I>::gemm_tq2_0(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelTQ2_0>(a);
}
template <Isa I>
void Set<I>::gemm_iq2_xxs(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelIQ2_XXS>(a);
}
template <Isa I>
void Set<I>::gemm_iq2_xs(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelIQ2_XS>(a);
}
template <Isa I>
void Set<I>::gemm_iq2_s(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelIQ2_S>(a);
}
template <Isa I>
void Set<I>::gemm_iq3_xxs(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelIQ3_XXS>(a);
}
template <Isa I>
void Set<I>::gemm_iq3_s(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelIQ3_S>(a);
}
template <Isa I>
void Set<I>::gemm_iq1_s(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelIQ1_S>(a);
}
template <Isa I>
void Set<I>::gemm_iq1_m(const MatmulArgs& a) {
    gemm_signed<typename VecOf<I>::type, PanelIQ1_M>(a);
}

template <Isa I>
void Set<I>::packed_gemm_q4_0(const MatmulArgs& a) {
    using V = typename VecOf<I>::type;
    PackedGemm<V>::q4_0_groups(a, PackedPanels<V>::q4_0);
}
template <Isa I>
void Set<I>::packed_gemm_q8_0(const MatmulArgs& a) {
    using V = typename VecOf<I>::type;
    PackedGemm<V>::q8_0_groups(a, PackedPanels<V>::q8_0);
}
template <Isa I>
void Set<I>::packed_gemm_q4_k(const MatmulArgs& a) {
    using V = typename VecOf<I>::type;
    PackedGemm<V>::q4_k_groups(a, PackedPanels<V>::q4_k);
}
template <Isa I>
void Set<I>::packed_gemm_q5_k(const MatmulArgs& a) {
    using V = typename VecOf<I>::type;
    PackedGemm<V>::q5_k_groups(a, PackedPanels<V>::q5_k);
}
template <Isa I>
void Set<I>::packed_gemm_q6_k(const MatmulArgs& a) {
    using V = typename VecOf<I>::type;
    PackedGemm<V>::q6_k_groups(a, PackedPanels<V>::q6_k);
}

// The micro-kernel's instruction stream without memory: ten independent accumulators (enough
// to cover the dot product's latency at two or more per cycle), each advanced by the set's byte
// dot product (vpdpbusd, or vpmaddubsw + vpaddw without VNNI), four multiply-accumulates per
// 32-bit lane per step. Named variables, not an array: GCC 12 keeps an array of vectors in
// memory here and measures its own stores instead.
template <Isa I>
double Set<I>::int8_peak_loop(int64_t iterations) {
    using V = typename VecOf<I>::type;
    using I_ = typename V::I;
    I_ a0 = V::zero(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
       a9 = a0;
    I_ w = V::set1_i8(3), x = V::set1_i8(5);
    // The operands are opaque to the compiler, so it cannot fold the repeated adds (nor hoist
    // vpmaddubsw out of the loop).
    for (int64_t it = 0; it < iterations; ++it) {
        __asm__ volatile("" : "+v"(w), "+v"(x));
        a0 = V::dot_add(a0, w, x);
        a1 = V::dot_add(a1, w, x);
        a2 = V::dot_add(a2, w, x);
        a3 = V::dot_add(a3, w, x);
        a4 = V::dot_add(a4, w, x);
        a5 = V::dot_add(a5, w, x);
        a6 = V::dot_add(a6, w, x);
        a7 = V::dot_add(a7, w, x);
        a8 = V::dot_add(a8, w, x);
        a9 = V::dot_add(a9, w, x);
    }
    const I_ sum = V::add_i32(
        V::add_i32(V::add_i32(a0, a1), V::add_i32(a2, a3)),
        V::add_i32(V::add_i32(V::add_i32(a4, a5), V::add_i32(a6, a7)), V::add_i32(a8, a9)));
    __asm__ volatile("" : : "v"(sum));  // the sums are used
    return double(iterations) * 10 * V::kBytes;
}

}  // namespace mw::x86
