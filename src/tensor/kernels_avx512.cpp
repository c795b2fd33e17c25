// The AVX-512 kernel set: which kernel each type uses, and the switch from the decode kernels
// (weights streamed once per call, up to 4 tokens per pass) to the prefill GEMM (weights decoded
// once into panels) as the number of tokens grows.
#include "tensor/kernels_avx512.h"

#include "tensor/kernels_x86_common.h"

namespace mw::avx512 {
namespace {

using x86::MatmulArgs;
using KernelFn = void (*)(const MatmulArgs&);

template <KernelFn gemv, KernelFn gemm>
void matmul(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
            const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    const MatmulArgs a{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy};
    if (n_tokens < kGemmMinTokens) {
        gemv(a);
    } else {
        gemm(a);
    }
}

template <KernelFn fn>
void matmul_one(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    fn(MatmulArgs{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy});
}

template <KernelFn gemv>
float vec_dot(int64_t n, const void* w, const void* x) {
    float y = 0.0f;
    gemv(MatmulArgs{static_cast<const uint8_t*>(w), 0, n, 0, 1, static_cast<const uint8_t*>(x), 0,
                    1, &y, 1});
    return y;
}

}  // namespace
}  // namespace mw::avx512

namespace mw::x86 {

void install_avx512(TraitsArray& table, const CpuFeatures& cpu) {
    using namespace avx512;
    for (TypeTraits& t : table) {
        switch (t.type) {
#define MW_QUANT(TYPE, name)                                 \
    case GgmlType::TYPE:                                     \
        t.vec_dot = avx512::vec_dot<gemv_##name>;            \
        t.matmul = avx512::matmul<gemv_##name, gemm_##name>; \
        break;
            MW_QUANT(Q4_0, q4_0)
            MW_QUANT(Q4_1, q4_1)
            MW_QUANT(Q5_0, q5_0)
            MW_QUANT(Q5_1, q5_1)
            MW_QUANT(Q8_0, q8_0)
            MW_QUANT(Q2_K, q2_k)
            MW_QUANT(Q3_K, q3_k)
            MW_QUANT(Q4_K, q4_k)
            MW_QUANT(Q5_K, q5_k)
            MW_QUANT(Q6_K, q6_k)
#undef MW_QUANT
            case GgmlType::F32:
                t.vec_dot = avx512::vec_dot_f32;
                t.matmul = matmul_one<matmul_f32>;
                break;
            case GgmlType::F16:
                t.vec_dot = avx512::vec_dot_f16;
                t.matmul = matmul_one<matmul_f16>;
                t.from_float = avx512::f16_from_float;
                break;
            case GgmlType::BF16:
                t.vec_dot = cpu.avx512bf16 ? avx512::vec_dot_bf16_dp : avx512::vec_dot_bf16;
                t.matmul = cpu.avx512bf16 ? matmul_one<matmul_bf16_dp> : matmul_one<matmul_bf16>;
                t.from_float = avx512::bf16_from_float;
                break;
            default:
                break;
        }
        // Activation encoders (these types are only ever activations or are weights too).
        if (t.type == GgmlType::Q8_0) t.from_float = avx512::quantize_row_q8_0;
        if (t.type == GgmlType::Q8_1) t.from_float = avx512::quantize_row_q8_1;
        if (t.type == GgmlType::Q8_K) t.from_float = avx512::quantize_row_q8_k;
        if (t.vec_dot) t.isa = "avx512";
    }
}

}  // namespace mw::x86
