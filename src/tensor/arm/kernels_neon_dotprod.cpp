// The quantized kernels on SDOT (ARMv8.2 dot product, compiled with +dotprod): four 8-bit
// products summed into each 32-bit lane per instruction. The GGUF layout: the same tiling as the
// NEON fallback (dot.h), only the integer engine differs. The packed layouts (groups of 4 rows):
// the width-generic kernels of tensor/simd/ on V128.
#include "tensor/arm/dot.h"
#include "tensor/arm/neon.h"
#include "tensor/arm/simd.h"
#include "tensor/simd/gemm.h"
#include "tensor/simd/packed.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "kernels_neon_dotprod.cpp needs -march=armv8.2-a+dotprod (src/CMakeLists.txt)"
#endif

namespace mw::neon {
namespace {

template <class T>
void set_32(TraitsArray& table, GgmlType type) {
    TypeTraits& t = row_of(table, type);
    t.vec_dot = vec_dot_32<T, DotEngine>;
    t.matmul = matmul_32<T, DotEngine>;
    t.isa = "neon-dotprod";
}

template <class T>
void set_k(TraitsArray& table, GgmlType type) {
    TypeTraits& t = row_of(table, type);
    t.vec_dot = vec_dot_k<T, DotEngine>;
    t.matmul = matmul_k<T, DotEngine>;
    t.isa = "neon-dotprod";
}

using V = simd::V128;
using KernelFn = void (*)(const MatmulArgs&);

// From this many tokens on, the packed layouts' prefill GEMM (panels of 8 rows x 6 tokens)
// replaces the decode kernels (4 tokens per pass over the weights).
constexpr int64_t kGemmMinTokens = 8;

template <KernelFn gemv, KernelFn gemm>
void packed_matmul(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                   const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    const MatmulArgs a{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy};
    if (n_tokens < kGemmMinTokens) {
        gemv(a);
    } else {
        gemm(a);
    }
}

void gemm_q4_0(const MatmulArgs& a) {
    simd::PackedGemm<V>::q4_0_groups(a, simd::PackedPanels<V>::q4_0);
}
void gemm_q8_0(const MatmulArgs& a) {
    simd::PackedGemm<V>::q8_0_groups(a, simd::PackedPanels<V>::q8_0);
}
void gemm_q4_k(const MatmulArgs& a) {
    simd::PackedGemm<V>::q4_k_groups(a, simd::PackedPanels<V>::q4_k);
}
void gemm_q5_k(const MatmulArgs& a) {
    simd::PackedGemm<V>::q5_k_groups(a, simd::PackedPanels<V>::q5_k);
}
void gemm_q6_k(const MatmulArgs& a) {
    simd::PackedGemm<V>::q6_k_groups(a, simd::PackedPanels<V>::q6_k);
}

}  // namespace

double sdot_peak_loop(int64_t iterations) {
    constexpr int kChains = 16;
    int32x4_t acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = vdupq_n_s32(c);
    int8x16_t w = vdupq_n_s8(3), x = vdupq_n_s8(5);
    // The operands are opaque to the compiler, so it cannot fold the repeated adds.
    __asm__ volatile("" : "+w"(w), "+w"(x));
    for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
        for (int c = 0; c < kChains; ++c) acc[c] = vdotq_s32(acc[c], w, x);
    }
    int32x4_t sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = vaddq_s32(sum, acc[c]);
    volatile int32_t sink = vaddvq_s32(sum);
    (void)sink;
    return double(iterations) * kChains * 16;
}

void install_dotprod(KernelSet& set) {
    TraitsArray& table = set.table;
    set.int8_peak = [](double seconds) { return time_peak_loop(sdot_peak_loop, seconds); };
    set_32<Q4_0>(table, GgmlType::Q4_0);
    set_32<Q4_1>(table, GgmlType::Q4_1);
    set_32<Q5_0>(table, GgmlType::Q5_0);
    set_32<Q5_1>(table, GgmlType::Q5_1);
    set_32<Q8_0>(table, GgmlType::Q8_0);
    set_k<Q2_K>(table, GgmlType::Q2_K);
    set_k<Q3_K>(table, GgmlType::Q3_K);
    set_k<Q4_K>(table, GgmlType::Q4_K);
    set_k<Q5_K>(table, GgmlType::Q5_K);
    set_k<Q6_K>(table, GgmlType::Q6_K);
    set_32<IQ4_NL>(table, GgmlType::IQ4_NL);
    set_32<MXFP4>(table, GgmlType::MXFP4);
    set_k<IQ4_XS>(table, GgmlType::IQ4_XS);
    set_k<TQ1_0>(table, GgmlType::TQ1_0);
    set_k<TQ2_0>(table, GgmlType::TQ2_0);
    set_k<IQ2_XXS>(table, GgmlType::IQ2_XXS);
    set_k<IQ2_XS>(table, GgmlType::IQ2_XS);
    set_k<IQ2_S>(table, GgmlType::IQ2_S);
    set_k<IQ3_XXS>(table, GgmlType::IQ3_XXS);
    set_k<IQ3_S>(table, GgmlType::IQ3_S);
    set_k<IQ1_S>(table, GgmlType::IQ1_S);
    set_k<IQ1_M>(table, GgmlType::IQ1_M);

    using G = simd::PackedGemv<V>;
    constexpr int R = V::kLanes;
    set.add_packed(GgmlType::Q4_0, R, packed_matmul<G::q4_0, gemm_q4_0>);
    set.add_packed(GgmlType::Q8_0, R, packed_matmul<G::q8_0, gemm_q8_0>);
    set.add_packed(GgmlType::Q4_K, R, packed_matmul<G::q4_k, gemm_q4_k>);
    set.add_packed(GgmlType::Q5_K, R, packed_matmul<G::q5_k, gemm_q5_k>);
    set.add_packed(GgmlType::Q6_K, R, packed_matmul<G::q6_k, gemm_q6_k>);
}

}  // namespace mw::neon
