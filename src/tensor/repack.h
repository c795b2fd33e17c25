// Load-time repacking of weights into layouts the installed kernels read faster than GGUF's.
//
// In GGUF a row's blocks are contiguous, so a decode kernel multiplies one row at a time and
// spends much of its work on horizontal sums and per-block scales. A packed layout interleaves
// groups of 16 rows, so one vector instruction works on 16 rows at once (one row per 32-bit lane)
// and scales are applied to 16 rows per instruction: the same bytes, about half the work per
// byte, which is what lets a small core keep up with memory when decoding.
//
// Packing keeps the byte size (each group of 16 rows occupies the same 16 x row_bytes) and the
// ggml type; only the kernels and this file know the order. A packed matrix has its own traits
// row (not in the type table): matmul reads the packed layout, to_float and vec_dot are null
// (use packed_get_row for a single row). Offered only where a kernel set supports the layout
// (today: Q4_0, Q4_K and Q6_K on AVX-512), for matrices whose row count is a multiple of 16.
//
// Usage at load time (the caller owns the destination buffer; the GGUF bytes stay untouched):
//   if (const TypeTraits* p = packed_traits(w.traits->type, w.n_rows, w.n_cols)) {
//       repack_matrix(*p, w.data, owned, w.n_rows, w.n_cols);
//       w.data = owned; w.traits = p;
//   }
#pragma once

#include <cstdint>

#include "tensor/types.h"

namespace mw {

inline constexpr int kPackRows = 16;

// The packed layout the installed kernels offer for this type and shape, or null.
const TypeTraits* packed_traits(GgmlType type, int64_t n_rows, int64_t n_cols);

// Whether t describes a packed layout (one returned by packed_traits).
bool is_packed(const TypeTraits* t);

// Writes the packed form of n_rows x n_cols weights (GGUF layout in src) to dst, which has the
// same size and must not overlap src.
void repack_matrix(const TypeTraits& packed, const uint8_t* src, uint8_t* dst, int64_t n_rows,
                   int64_t n_cols);

// The same in place: `data` holds the GGUF layout before and the packed one after. Packing is
// local to each group of 16 rows, so only one group at a time is copied aside.
void repack_in_place(const TypeTraits& packed, uint8_t* data, int64_t n_rows, int64_t n_cols);

// Row r of a packed matrix, decoded to n_cols floats.
void packed_get_row(const TypeTraits& packed, const uint8_t* data, int64_t n_cols, int64_t r,
                    float* out);

// ---- Layouts (shared by repack.cpp and the kernels) ---------------------------------------

// Q4_K x16: for each group of 16 rows, for each super-block of 256 columns, one record of
// 16 x 144 bytes:
//   [0, 32)     d of the 16 rows (fp16)
//   [32, 64)    dmin of the 16 rows (fp16)
//   [64, 256)   the 12 packed scale bytes as planes: byte b of row i at 64 + 16 b + i
//   [256, 2304) the codes: for sub-block j (8), quad q (4), row i (16), k (4), the byte at
//               256 + 256 j + 64 q + 4 i + k holds element 32 j + 8 q + k in its low nibble and
//               element 32 j + 8 q + 4 + k in its high nibble.
// So one 64-byte load gives, after masking, the 4 codes of 16 rows that one vpdpbusd multiplies
// with 4 broadcast activation quants.
struct PackedQ4K {
    static constexpr int kRecord = 16 * 144;
    static constexpr int kD = 0;
    static constexpr int kDmin = 32;
    static constexpr int kScales = 64;
    static constexpr int kCodes = 256;
};

// Q6_K x16: per super-block, one record of 16 x 210 bytes:
//   [0, 32)      d of the 16 rows (fp16)
//   [32, 288)    the 16 sub-block scales as planes: scale j of row i at 32 + 16 j + i
//   [288, 3360)  per sub-block j of 16 columns, 192 bytes at 288 + 192 j: for row i, k < 4,
//                byte 4 i + k of the first 64 holds the low 4 bits of the codes (q + 32) of
//                elements 16 j + k (low nibble) and 16 j + 4 + k (high nibble); of the next 64,
//                elements 16 j + 8 + k and 16 j + 12 + k; of the last 64, the top 2 bits of those
//                four elements at bits 0-1, 2-3, 4-5, 6-7.
struct PackedQ6K {
    static constexpr int kRecord = 16 * 210;
    static constexpr int kD = 0;
    static constexpr int kScales = 32;
    static constexpr int kCodes = 288;
};

// Q4_0 x16: per block of 32 columns, one record of 16 x 18 bytes: d of the 16 rows (fp16,
// [0, 32)), then the codes: byte 32 + 64 q + 4 i + k holds element 8 q + k of row i in its low
// nibble and element 8 q + 4 + k in its high nibble (q, k < 4).
struct PackedQ4_0 {
    static constexpr int kRecord = 16 * 18;
    static constexpr int kD = 0;
    static constexpr int kCodes = 32;
};

}  // namespace mw
