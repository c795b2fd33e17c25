// tensor/ref/: the scalar reference functions, the specification of every kernel. Each SIMD
// kernel set (tensor/x86/, tensor/arm/, tensor/simd/) is tested against these on random data and
// awkward sizes. They follow ggml's reference code operation for operation where bit-exactness
// matters (dequantize, the activation quantizers: llama-quantize's bytes) and its integer-per-
// block arithmetic in the dot products; the files here are compiled without floating-point
// contraction (src/CMakeLists.txt, *_ref.cpp) so they round the same on every CPU. The type
// table's scalar rows (tensor/types.cpp, MEMWALL_ISA=scalar) point at them.
#pragma once

#include <cstdint>

#include "format/ggml_types.h"

namespace mw {

// The scalar reference functions. Signatures match ToFloatFn / FromFloatFn / VecDotFn; `n` is a
// multiple of the block size.
namespace ref {

// Plain types.
void f32_to_float(const void* src, float* dst, int64_t n);
void f32_from_float(const float* src, void* dst, int64_t n);
void f16_to_float(const void* src, float* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
void bf16_to_float(const void* src, float* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);
// Products rounded to float, summed in double (as ggml does).
float vec_dot_f32(int64_t n, const void* w, const void* x);
float vec_dot_f16(int64_t n, const void* w, const void* x);
float vec_dot_bf16(int64_t n, const void* w, const void* x);

// 32-element block types.
void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void dequantize_row_q8_1(const void* src, float* dst, int64_t n);
// Round-to-nearest quantizers, identical to what llama-quantize writes without an imatrix.
void quantize_row_q4_0(const float* src, void* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* x);
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* x);
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x);

// K-quants.
void dequantize_row_q2_k(const void* src, float* dst, int64_t n);
void dequantize_row_q3_k(const void* src, float* dst, int64_t n);
void dequantize_row_q4_k(const void* src, float* dst, int64_t n);
void dequantize_row_q5_k(const void* src, float* dst, int64_t n);
void dequantize_row_q6_k(const void* src, float* dst, int64_t n);
void dequantize_row_q8_k(const void* src, float* dst, int64_t n);
void quantize_row_q8_k(const float* src, void* dst, int64_t n);
float vec_dot_q2_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_q3_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_q4_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_q5_k_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_q6_k_q8_k(int64_t n, const void* w, const void* x);

// Non-linear, microscaled and ternary types (iquants_ref.cpp).
void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n);
void dequantize_row_mxfp4(const void* src, float* dst, int64_t n);
void dequantize_row_tq1_0(const void* src, float* dst, int64_t n);
void dequantize_row_tq2_0(const void* src, float* dst, int64_t n);
float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_iq4_xs_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_mxfp4_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_tq1_0_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_tq2_0_q8_k(int64_t n, const void* w, const void* x);
// Invalid blocks (TypeTraits::check_block): E8M0 scale 0xFF (NaN in the OCP MX format, which
// ggml would decode as 2^127); a TQ2_0 code 3 (decodes to 2 d, not a ternary value).
const char* check_block_mxfp4(const void* block);
const char* check_block_tq2_0(const void* block);

// Lattice i-quants (iq_lattice_ref.cpp).
void dequantize_row_iq2_xxs(const void* src, float* dst, int64_t n);
void dequantize_row_iq2_xs(const void* src, float* dst, int64_t n);
void dequantize_row_iq2_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq3_xxs(const void* src, float* dst, int64_t n);
void dequantize_row_iq3_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq1_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq1_m(const void* src, float* dst, int64_t n);
float vec_dot_iq2_xxs_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq2_xs_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq2_s_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq3_xxs_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq3_s_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq1_s_q8_k(int64_t n, const void* w, const void* x);
float vec_dot_iq1_m_q8_k(int64_t n, const void* w, const void* x);

// A lattice i-quant super-block as the dot products see it: element e is
// factor * scale[e / 16] * w[e], exactly (|w| <= 62, scale <= 31).
struct LatticeBlock {
    int8_t w[256];
    int16_t scale[16];
    float factor;
};
void lattice_unpack(GgmlType type, const void* block, LatticeBlock* out);

}  // namespace ref

}  // namespace mw
