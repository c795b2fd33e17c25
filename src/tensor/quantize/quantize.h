// tensor/quantize/: the weight quantizers (this header), the scale searches they share
// (search.h), the 32-element types (blocks.cpp), the K-quants (kquants.cpp) and the code-book and
// ternary types (iquants.cpp). They belong to
// the tensor layer, not to quant/ (which decides per tensor what to write and runs these on the
// thread pool): the type table's from_float of the K-quants, which the KV cache and tests encode
// with, is the plain K-quant search below.
//
// The file quantizers: one per type, each encoding rows of floats with a search for the scales
// that minimise the importance-weighted squared error sum_i w_i (x_i - dequantized_i)^2
// (tensor/quantize/search.h). They write what `memwall quantize` puts in a model file.
//
// Two searches per type. The fast one (the default) is at least as accurate as llama-quantize on
// every tensor and about as fast: the 32-element types start from llama.cpp's round-to-nearest
// encoding and keep a least-squares refinement of it where that is better; the K-quants try a
// grid of scales per sub-block. The thorough one (`quantize --thorough`) searches the scales
// exactly (several times slower, a few tenths of a percent to 1.5 % lower RMSE).
//
// They are slower than the round-to-nearest from_float of the 32-element types in the type table,
// which stays the fast path for activations and the KV cache. For the K-quants the type table's
// from_float is the plain (unweighted) file quantizer below.
//
// `importance` holds one non-negative weight per column of the row (n values): the mean square of
// the activations that column multiplies (an imatrix), so that the error is weighted by how much
// it moves the matrix product. Null means every column counts the same.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/ggml_types.h"

namespace mw {

using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n, const float* importance);

enum class QuantSearch { fast, thorough };

// 32-element block types.
void quantize_q4_0(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q4_1(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q5_0(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q5_1(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q8_0(const float* src, void* dst, int64_t n, const float* importance);

// K-quants (256-element super-blocks).
void quantize_q2_k(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q3_k(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q4_k(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q5_k(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q6_k(const float* src, void* dst, int64_t n, const float* importance);

// Code-book and ternary types (iquants.cpp): one search each (the fast and thorough ones).
void quantize_iq4_nl(const float* src, void* dst, int64_t n, const float* importance);
void quantize_iq4_xs(const float* src, void* dst, int64_t n, const float* importance);
void quantize_mxfp4(const float* src, void* dst, int64_t n, const float* importance);
void quantize_tq1_0(const float* src, void* dst, int64_t n, const float* importance);
void quantize_tq2_0(const float* src, void* dst, int64_t n, const float* importance);

// The thorough searches of the same types.
void quantize_q4_0_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q4_1_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q5_0_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q5_1_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q8_0_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q2_k_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q3_k_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q4_k_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q5_k_thorough(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q6_k_thorough(const float* src, void* dst, int64_t n, const float* importance);

// The same without importance: the type table's from_float for the K-quants (tensor/types.h).
void quantize_row_q2_k(const float* src, void* dst, int64_t n);
void quantize_row_q3_k(const float* src, void* dst, int64_t n);
void quantize_row_q4_k(const float* src, void* dst, int64_t n);
void quantize_row_q5_k(const float* src, void* dst, int64_t n);
void quantize_row_q6_k(const float* src, void* dst, int64_t n);

// The quantizer of a type (F32, F16 and BF16 convert and ignore the importance), or null when
// memwall cannot write that type.
QuantizeRowFn file_quantizer(GgmlType type, QuantSearch search = QuantSearch::fast);

// Encodes n_rows rows of n_cols floats (n_cols a multiple of the block size) into `type`;
// `importance` is null or n_cols weights shared by every row. Returns the bytes written.
size_t quantize_rows(GgmlType type, const float* src, void* dst, int64_t n_rows, int64_t n_cols,
                     const float* importance, QuantSearch search = QuantSearch::fast);

namespace qdetail {
// The per-element weights of one block: the column importance plus a small floor (1 % of the
// row's mean importance) so that columns the calibration text never exercised still keep a
// usable grid; all ones without importance.
void block_weights(const float* importance, float mean_importance, int count, float* w);
// Mean of the importance over a row (0 when null).
float mean_importance(const float* importance, int64_t n);
// Copies a block, replacing NaN by 0 and infinities by the largest finite floats, so that the
// searches stay defined on any input (the model quantizer rejects such tensors before).
void finite_copy(const float* x, int count, float* out);
}  // namespace qdetail

}  // namespace mw
