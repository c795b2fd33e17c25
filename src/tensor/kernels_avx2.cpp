// The AVX2 kernel set (with FMA and F16C): which kernel each type uses, and the switch from the
// decode kernels to the prefill GEMM as the number of tokens grows.
#include "tensor/kernels_avx2.h"

#include "tensor/kernels_x86_common.h"

namespace mw::avx2 {
namespace {

using KernelFn = void (*)(const MatmulArgs&);

// From this many tokens on, decoding the rows into panels once costs less than re-decoding them
// for every 4 tokens.
constexpr int64_t kGemmMinTokens = 24;

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

template <KernelFn fn>
float vec_dot(int64_t n, const void* w, const void* x) {
    float y = 0.0f;
    fn(MatmulArgs{static_cast<const uint8_t*>(w), 0, n, 0, 1, static_cast<const uint8_t*>(x), 0, 1,
                  &y, 1});
    return y;
}

}  // namespace
}  // namespace mw::avx2

namespace mw::x86 {

void install_avx2(TraitsArray& table, const CpuFeatures&) {
    using namespace avx2;
    for (TypeTraits& t : table) {
        switch (t.type) {
#define MW_QUANT(TYPE, name)                               \
    case GgmlType::TYPE:                                   \
        t.vec_dot = avx2::vec_dot<gemv_##name>;            \
        t.matmul = avx2::matmul<gemv_##name, gemm_##name>; \
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
                t.vec_dot = avx2::vec_dot<matmul_f32>;
                t.matmul = matmul_one<matmul_f32>;
                break;
            case GgmlType::F16:
                t.vec_dot = avx2::vec_dot<matmul_f16>;
                t.matmul = matmul_one<matmul_f16>;
                t.from_float = avx2::f16_from_float;
                break;
            case GgmlType::BF16:
                t.vec_dot = avx2::vec_dot<matmul_bf16>;
                t.matmul = matmul_one<matmul_bf16>;
                t.from_float = avx2::bf16_from_float;
                break;
            default:
                break;
        }
        if (t.type == GgmlType::Q8_0) t.from_float = avx2::quantize_row_q8_0;
        if (t.type == GgmlType::Q8_1) t.from_float = avx2::quantize_row_q8_1;
        if (t.type == GgmlType::Q8_K) t.from_float = avx2::quantize_row_q8_k;
        if (t.vec_dot) t.isa = "avx2";
    }
}

}  // namespace mw::x86
