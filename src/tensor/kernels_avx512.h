// Internal declarations shared by the AVX-512 kernel files (*_avx512.cpp). Only those files may
// include this header: everything declared here runs AVX-512 instructions.
#pragma once

#include "tensor/kernels_x86.h"

namespace mw::avx512 {

using x86::MatmulArgs;

// Decode kernels (gemv_avx512.cpp): the weight rows [r0, r1) in their GGUF layout times every
// token, the tokens taken up to 4 at a time.
void gemv_q4_0(const MatmulArgs& a);
void gemv_q4_1(const MatmulArgs& a);
void gemv_q5_0(const MatmulArgs& a);
void gemv_q5_1(const MatmulArgs& a);
void gemv_q8_0(const MatmulArgs& a);
void gemv_q2_k(const MatmulArgs& a);
void gemv_q3_k(const MatmulArgs& a);
void gemv_q4_k(const MatmulArgs& a);
void gemv_q5_k(const MatmulArgs& a);
void gemv_q6_k(const MatmulArgs& a);

// Prefill kernels (gemm_avx512.cpp): rows decoded into VNNI panels, tiles of rows x tokens.
void gemm_q4_0(const MatmulArgs& a);
void gemm_q4_1(const MatmulArgs& a);
void gemm_q5_0(const MatmulArgs& a);
void gemm_q5_1(const MatmulArgs& a);
void gemm_q8_0(const MatmulArgs& a);
void gemm_q2_k(const MatmulArgs& a);
void gemm_q3_k(const MatmulArgs& a);
void gemm_q4_k(const MatmulArgs& a);
void gemm_q5_k(const MatmulArgs& a);
void gemm_q6_k(const MatmulArgs& a);

// The packed layouts (packed_avx512.cpp, tensor/repack.h). A GroupPackFn writes one group of 16
// rows into a prefill panel (per sub-block: codes [steps][16 rows][4], then the rows' float
// scales, then mins); the *_groups drivers run the prefill GEMM on such panels.
using GroupPackFn = void (*)(const MatmulArgs& a, int64_t group, uint8_t* panel);
void gemm_q4_0_groups(const MatmulArgs& a, GroupPackFn pack);
void gemm_q4_k_groups(const MatmulArgs& a, GroupPackFn pack);
void gemm_q6_k_groups(const MatmulArgs& a, GroupPackFn pack);
void matmul_q4_0_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy);
void matmul_q4_k_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy);
void matmul_q6_k_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy);

// From this many tokens on, matmul uses the prefill kernels (kernels_avx512.cpp).
inline constexpr int64_t kGemmMinTokens = 12;

// Float weights (float_avx512.cpp): tiles of rows x tokens of dot products.
void matmul_f32(const MatmulArgs& a);
void matmul_f16(const MatmulArgs& a);
void matmul_bf16(const MatmulArgs& a);     // converts bf16 to f32
void matmul_bf16_dp(const MatmulArgs& a);  // AVX512_BF16 vdpbf16ps
float vec_dot_f32(int64_t n, const void* w, const void* x);
float vec_dot_f16(int64_t n, const void* w, const void* x);
float vec_dot_bf16(int64_t n, const void* w, const void* x);
float vec_dot_bf16_dp(int64_t n, const void* w, const void* x);

// Activation encoders (float_avx512.cpp), byte-identical to the reference quantizers.
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_k(const float* src, void* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);

}  // namespace mw::avx512
