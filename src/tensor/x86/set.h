// The entry points of one x86 kernel set, declared once for all sets: Set<Isa::avx2>,
// Set<Isa::avxvnni> and Set<Isa::avx512> are defined by that set's own files (gemv_<set>.cpp,
// gemm_<set>.cpp, float_<set>.cpp, peak_<set>.cpp), compiled with its ISA flags; kernels.cpp
// (baseline flags) only takes their addresses. Only tensor/x86/ and its tests include this.
#pragma once

#include "tensor/x86/x86.h"

namespace mw::x86 {

template <Isa I>
struct Set {
    using Fn = void (*)(const MatmulArgs&);

    // Decode of the GGUF layout (gemv_<set>.cpp): rows [r0, r1) times every token.
    static void gemv_q4_0(const MatmulArgs& a);
    static void gemv_q4_1(const MatmulArgs& a);
    static void gemv_q5_0(const MatmulArgs& a);
    static void gemv_q5_1(const MatmulArgs& a);
    static void gemv_q8_0(const MatmulArgs& a);
    static void gemv_q2_k(const MatmulArgs& a);
    static void gemv_q3_k(const MatmulArgs& a);
    static void gemv_q4_k(const MatmulArgs& a);
    static void gemv_q5_k(const MatmulArgs& a);
    static void gemv_q6_k(const MatmulArgs& a);
    // The signed-value types (gemv_iquants.h), below their GEMM's crossover.
    static void gemv_iq4_nl(const MatmulArgs& a);
    static void gemv_iq4_xs(const MatmulArgs& a);
    static void gemv_mxfp4(const MatmulArgs& a);
    static void gemv_tq1_0(const MatmulArgs& a);
    static void gemv_tq2_0(const MatmulArgs& a);
    static void gemv_iq2_xxs(const MatmulArgs& a);
    static void gemv_iq2_xs(const MatmulArgs& a);
    static void gemv_iq2_s(const MatmulArgs& a);
    static void gemv_iq3_xxs(const MatmulArgs& a);
    static void gemv_iq3_s(const MatmulArgs& a);
    static void gemv_iq1_s(const MatmulArgs& a);
    static void gemv_iq1_m(const MatmulArgs& a);

    // Prefill of the GGUF layout (gemm_<set>.cpp).
    static void gemm_q4_0(const MatmulArgs& a);
    static void gemm_q4_1(const MatmulArgs& a);
    static void gemm_q5_0(const MatmulArgs& a);
    static void gemm_q5_1(const MatmulArgs& a);
    static void gemm_q8_0(const MatmulArgs& a);
    static void gemm_q2_k(const MatmulArgs& a);
    static void gemm_q3_k(const MatmulArgs& a);
    static void gemm_q4_k(const MatmulArgs& a);
    static void gemm_q5_k(const MatmulArgs& a);
    static void gemm_q6_k(const MatmulArgs& a);
    static void gemm_iq4_nl(const MatmulArgs& a);
    static void gemm_iq4_xs(const MatmulArgs& a);
    static void gemm_mxfp4(const MatmulArgs& a);
    // The lattice and ternary types' rows decoded into panels (panels_iquants.h).
    static void gemm_tq1_0(const MatmulArgs& a);
    static void gemm_tq2_0(const MatmulArgs& a);
    static void gemm_iq2_xxs(const MatmulArgs& a);
    static void gemm_iq2_xs(const MatmulArgs& a);
    static void gemm_iq2_s(const MatmulArgs& a);
    static void gemm_iq3_xxs(const MatmulArgs& a);
    static void gemm_iq3_s(const MatmulArgs& a);
    static void gemm_iq1_s(const MatmulArgs& a);
    static void gemm_iq1_m(const MatmulArgs& a);

    // The packed layouts, groups of R rows (decode in gemv_<set>.cpp, prefill in gemm_<set>.cpp).
    static constexpr int kPackRows = I == Isa::avx512 ? 16 : 8;
    static void packed_gemv_q4_0(const MatmulArgs& a);
    static void packed_gemv_q8_0(const MatmulArgs& a);
    static void packed_gemv_q4_k(const MatmulArgs& a);
    static void packed_gemv_q5_k(const MatmulArgs& a);
    static void packed_gemv_q6_k(const MatmulArgs& a);
    static void packed_gemm_q4_0(const MatmulArgs& a);
    static void packed_gemm_q8_0(const MatmulArgs& a);
    static void packed_gemm_q4_k(const MatmulArgs& a);
    static void packed_gemm_q5_k(const MatmulArgs& a);
    static void packed_gemm_q6_k(const MatmulArgs& a);

    // From this many tokens on, matmul uses the prefill kernels: decoding the rows into panels
    // once costs less than re-decoding them for every 4 tokens.
    static constexpr int64_t kGemmMinTokens = I == Isa::avx512 ? 12 : I == Isa::avxvnni ? 16 : 24;
    // The same for the packed layouts, whose decode kernels take 9 tokens a pass with AVX-512
    // (8 with AVX2), so 10..18 tokens read the weights twice. Measured with kernels_bench gemvk/
    // (4096 x 4096, one thread, weights streamed from memory, Zen 4): with AVX-512 the decode
    // kernels stayed ahead of the GEMM up to 24 tokens and more for Q4_0, Q4_K and Q5_K, up to
    // ~20 for Q6_K, and tied at 12 for Q8_0. With AVX2 (no VNNI) the GEMM won from 12 tokens on
    // for Q4_0 (1.2x) and from 16 for Q4_K, while Q8_0's, Q5_K's and Q6_K's decode kernels led
    // to 20-32 tokens. AVX-VNNI (not on that machine) keeps kGemmMinTokens. The two kernels
    // agree to float rounding (tests/repack_test.cpp), not bit for bit: where the switch falls
    // moves the logits of models with 8-bit activations a little (tests/batch_test.cpp).
    static constexpr int64_t packed_gemm_min_tokens(GgmlType type) {
        if constexpr (I == Isa::avx512) {
            return type == GgmlType::Q8_0 ? 12 : type == GgmlType::Q6_K ? 20 : 24;
        } else if constexpr (I == Isa::avx2) {
            switch (type) {
                case GgmlType::Q4_0:
                    return 12;
                case GgmlType::Q4_K:
                    return 16;
                case GgmlType::Q5_K:
                    return 20;
                default:  // Q8_0, Q6_K
                    return 24;
            }
        } else {
            return kGemmMinTokens;
        }
    }

    // Float weights and activation encoders (float_<set>.cpp; avxvnni uses avx2's).
    static void matmul_f32(const MatmulArgs& a);
    static void matmul_f16(const MatmulArgs& a);
    static void matmul_bf16(const MatmulArgs& a);
    static void matmul_bf16_dp(const MatmulArgs& a);  // AVX512_BF16 vdpbf16ps (avx512 only)
    static void quantize_row_q8_0(const float* src, void* dst, int64_t n);
    static void quantize_row_q8_1(const float* src, void* dst, int64_t n);
    static void quantize_row_q8_k(const float* src, void* dst, int64_t n);
    static void f16_from_float(const float* src, void* dst, int64_t n);
    static void bf16_from_float(const float* src, void* dst, int64_t n);

    // The int8 peak loop (peak_<set>.cpp): multiply-accumulates done in `iterations` passes.
    static double int8_peak_loop(int64_t iterations);
};

}  // namespace mw::x86
