// The prefill entry points of a set (tensor/x86/set.h) and its int8 peak loop, defined once for
// every set over its vector type; gemm_<set>.cpp includes this with its ISA flags and
// instantiates Set<that set>.
#pragma once

#include "tensor/simd/packed.h"
#include "tensor/x86/gemm.h"
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

// The micro-kernel's instruction stream without memory: kChains independent accumulators, each
// advanced by the set's byte dot product (vpdpbusd, or vpmaddubsw + vpaddw without VNNI), four
// multiply-accumulates per 32-bit lane per step. Enough chains to cover the latency (4-5
// cycles) at two per cycle; the sums are consumed so the loop cannot be removed.
template <Isa I>
double Set<I>::int8_peak_loop(int64_t iterations) {
    using V = typename VecOf<I>::type;
    using I_ = typename V::I;
    constexpr int kChains = V::kLanes == 16 ? 16 : 12;
    I_ acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = V::set1_i32(c);
    const I_ w = V::set1_i8(3), x = V::set1_i8(5);
    for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
        for (int c = 0; c < kChains; ++c) {
            acc[c] = V::dot_add(acc[c], w, x);
            // An empty asm keeps every step in the loop (no folding of the repeated adds) and
            // every accumulator in a register.
            __asm__ volatile("" : "+v"(acc[c]));
        }
    }
    I_ sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = V::add_i32(sum, acc[c]);
    alignas(64) int32_t lanes[V::kLanes];
    V::store(lanes, sum);
    volatile int32_t sink = lanes[0];
    (void)sink;
    return double(iterations) * kChains * V::kBytes;
}

}  // namespace mw::x86
