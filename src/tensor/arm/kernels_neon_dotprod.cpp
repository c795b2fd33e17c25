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
    install_quantized<DotEngine>(table, "neon-dotprod");

    using G = simd::PackedGemv<V>;
    constexpr int R = V::kLanes;
    set.add_packed(GgmlType::Q4_0, R, packed_matmul<G::q4_0, gemm_q4_0>);
    set.add_packed(GgmlType::Q8_0, R, packed_matmul<G::q8_0, gemm_q8_0>);
    set.add_packed(GgmlType::Q4_K, R, packed_matmul<G::q4_k, gemm_q4_k>);
    set.add_packed(GgmlType::Q5_K, R, packed_matmul<G::q5_k, gemm_q5_k>);
    set.add_packed(GgmlType::Q6_K, R, packed_matmul<G::q6_k, gemm_q6_k>);
}

}  // namespace mw::neon
