// Internal declarations shared by the AVX2 kernel files (*_avx2.cpp). Only those files may
// include this header: everything declared here runs AVX2 + FMA + F16C instructions.
#pragma once

#include "tensor/kernels_x86.h"

namespace mw::avx2 {

using x86::MatmulArgs;

// Decode kernels (gemv_avx2.cpp): weight rows in their GGUF layout times up to 4 tokens a pass.
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

// Prefill kernels (gemm_avx2.cpp): rows decoded into 8-row panels, tiles of rows x tokens.
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

// Float weights and activation encoders (float_avx2.cpp).
void matmul_f32(const MatmulArgs& a);
void matmul_f16(const MatmulArgs& a);
void matmul_bf16(const MatmulArgs& a);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_k(const float* src, void* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);

}  // namespace mw::avx2
