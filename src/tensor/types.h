// The type-traits table: one row per tensor type memwall computes with. Adding a type means adding
// a row here (and its functions in quants_*.cpp), never touching the model code.
//
// Conventions (byte-compatible with GGUF / ggml):
// - `n` is an element count and a multiple of the type's block size.
// - to_float:   decode n elements of this type into floats (the scalar reference).
// - from_float: encode n floats into this type with the plain round-to-nearest reference quantizer.
//               Used for activations (Q8_0/Q8_1/Q8_K, F16, BF16) and the KV cache. The K-quants
//               (Q2_K..Q6_K) use the model quantizer's scale search (tensor/quantize/quantize.h),
//               which also has better-than-round-to-nearest versions of the 32-element types.
// - vec_dot:    sum_i w[i] * x[i] for one row `w` of this type and `x` already encoded in
//               `vec_dot_type`. The integer kernels accumulate exactly like the reference.
// - matmul:     the matrix kernel: for weight rows [r0, r1) and activation rows t < n_tokens,
//               y[t * ldy + r] = vec_dot(row r, act row t). The generic version loops vec_dot;
//               SIMD versions tile rows x tokens so each weight block is decoded once per tile.
//
// The table starts with the scalar reference functions (namespace mw::ref, the specification)
// and, once per process, the best kernels this CPU supports replace vec_dot, matmul and the
// activation from_float (tensor/kernels.h). MEMWALL_ISA=scalar|avx2|avxvnni|avx512|neon caps the
// choice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/ggml_types.h"

namespace mw {

using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);
using VecDotFn = float (*)(int64_t n, const void* w, const void* x);
// nullptr when a block is valid, else what is wrong with it ("code 3 is not ternary").
using CheckBlockFn = const char* (*)(const void* block);
using MatmulFn = void (*)(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0,
                          int64_t r1, const uint8_t* act, size_t act_stride, int64_t n_tokens,
                          float* y, int64_t ldy);

struct TypeTraits {
    GgmlType type;
    const char* name;
    uint32_t block_size;
    uint32_t type_size;
    bool is_quantized;
    ToFloatFn to_float;      // null only for types that are never decoded
    FromFloatFn from_float;  // null when memwall cannot yet encode this type
    VecDotFn vec_dot;        // null when this type is not used as a weight
    GgmlType vec_dot_type;   // what activations are encoded to before vec_dot
    MatmulFn matmul;         // null when vec_dot is null
    const char* isa;         // which kernel set provides vec_dot/matmul ("scalar", "avx2", ...)
    int pack_rows;           // 0: the GGUF layout; R: rows interleaved in groups of R
                             // (tensor/repack.h; such rows are not in the type table)
    // Bit patterns a writer of the format never produces, beyond non-finite values (which
    // to_float shows): null when every pattern is valid. For `verify`.
    CheckBlockFn check_block = nullptr;
};

// The row for `type`, or nullptr when memwall cannot compute with it (IQ types, ...).
const TypeTraits* type_traits(GgmlType type);
const TypeTraits* type_traits(uint32_t type_id);

// The kernel set in use ("scalar", "avx2", "avx512", "neon", ...).
const char* kernel_isa();

// Bytes of one row of n elements (n a multiple of the block size).
inline size_t row_bytes(const TypeTraits& t, int64_t n) {
    return size_t(n / t.block_size) * t.type_size;
}

}  // namespace mw
