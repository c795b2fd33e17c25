// Load-time repacking of weights into layouts the installed kernels read faster than GGUF's.
//
// In GGUF a row's blocks are contiguous, so a decode kernel multiplies one row at a time and
// spends much of its work on horizontal sums and per-block scales. A packed layout interleaves
// groups of R rows, so one vector instruction works on R rows at once (one row per 32-bit lane)
// and scales are applied to R rows per instruction: the same bytes, about half the work per
// byte, which is what lets a small core keep up with memory when decoding.
//
// The layout is a property of the kernel set, not of the model: R is the set's vector width in
// 32-bit lanes (16 for AVX-512, 8 for AVX2, 4 for NEON), and the set lists the types it has
// packed kernels for (tensor/kernels.h, KernelSet::packed). The record formats below are one
// family for every R, so this file has one encoder and decoder per type, tested for every R.
//
// Packing keeps the byte size (each group of R rows occupies the same R x row_bytes) and the
// ggml type; only the kernels and this file know the order. A packed matrix has its own traits
// row (not in the type table, pack_rows = R): matmul reads the packed layout, to_float and
// vec_dot are null (use packed_get_row for a single row). Offered for matrices whose row count
// is a multiple of R.
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

// The largest group any kernel set uses (AVX-512).
inline constexpr int kMaxPackRows = 16;

// The packed layout the installed kernels offer for this type and shape, or null.
const TypeTraits* packed_traits(GgmlType type, int64_t n_rows, int64_t n_cols);

// Whether t describes a packed layout (t->pack_rows > 0).
bool is_packed(const TypeTraits* t);

// Whether this file can encode `type` with groups of `rows` (what a kernel set may offer).
bool packable(GgmlType type, int rows);

// The name of a packed layout's traits row, e.g. "Q4_K/x16" (static storage).
const char* packed_layout_name(GgmlType type, int rows);

// Writes the packed form of n_rows x n_cols weights (GGUF layout in src) to dst, which has the
// same size and must not overlap src.
void repack_matrix(const TypeTraits& packed, const uint8_t* src, uint8_t* dst, int64_t n_rows,
                   int64_t n_cols);

// The same in place: `data` holds the GGUF layout before and the packed one after. Packing is
// local to each group of rows, so only one group at a time is copied aside.
void repack_in_place(const TypeTraits& packed, uint8_t* data, int64_t n_rows, int64_t n_cols);

// Row r of a packed matrix, decoded to n_cols floats.
void packed_get_row(const TypeTraits& packed, const uint8_t* data, int64_t n_cols, int64_t r,
                    float* out);

// ---- Layouts (shared by repack.cpp and the kernels), for groups of R rows -----------------
//
// Every layout stores, per block (or super-block) of columns, one record of R x block bytes:
// the rows' fp16 scales side by side, then the codes as "steps": R rows x 4 bytes, so that one
// vector load holds 4 bytes of every row of the group (row i in 32-bit lane i), and one integer
// dot-product instruction multiplies them with 4 broadcast activation quants.

// Q4_0 xR: per block of 32 columns: d of the R rows (fp16, [0, 2R)), then 4 steps: byte
// 2R + 4R q + 4 i + k holds element 8 q + k of row i in its low nibble and element 8 q + 4 + k
// in its high nibble (q, k < 4).
template <int R>
struct PackedQ4_0 {
    static constexpr int kRecord = 18 * R;
    static constexpr int kD = 0;
    static constexpr int kCodes = 2 * R;
};

// Q8_0 xR: per block of 32 columns: d of the R rows, then 8 steps: byte 2R + 4R s + 4 i + k is
// element 4 s + k of row i (signed).
template <int R>
struct PackedQ8_0 {
    static constexpr int kRecord = 34 * R;
    static constexpr int kD = 0;
    static constexpr int kCodes = 2 * R;
};

// Q4_K xR: per super-block of 256 columns:
//   [0, 2R)       d of the R rows (fp16)          [2R, 4R)  dmin of the R rows (fp16)
//   [4R, 16R)     the 12 packed scale bytes as planes: byte b of row i at 4R + R b + i
//   [16R, 144R)   the codes: for sub-block j (8), step q (4), row i, k (4), the byte at
//                 16R + 16R j + 4R q + 4 i + k holds element 32 j + 8 q + k in its low nibble
//                 and element 32 j + 8 q + 4 + k in its high nibble.
template <int R>
struct PackedQ4K {
    static constexpr int kRecord = 144 * R;
    static constexpr int kD = 0;
    static constexpr int kDmin = 2 * R;
    static constexpr int kScales = 4 * R;
    static constexpr int kCodes = 16 * R;
};

// Q5_K xR: Q4_K's record with the fifth bits before the codes:
//   [16R, 48R)    per sub-block j, 4R bytes at 16R + 4R j: byte 4 i + k, bit 2 q holds bit 4 of
//                 element 32 j + 8 q + k, bit 2 q + 1 that of element 32 j + 8 q + 4 + k
//   [48R, 176R)   the low 4 bits as Q4_K's codes.
template <int R>
struct PackedQ5K {
    static constexpr int kRecord = 176 * R;
    static constexpr int kD = 0;
    static constexpr int kDmin = 2 * R;
    static constexpr int kScales = 4 * R;
    static constexpr int kHigh = 16 * R;
    static constexpr int kCodes = 48 * R;
};

// Q6_K xR: per super-block:
//   [0, 2R)       d of the R rows (fp16)
//   [2R, 18R)     the 16 sub-block scales as planes: scale j of row i at 2R + R j + i
//   [18R, 210R)   per sub-block j of 16 columns, 12R bytes at 18R + 12R j: for row i, k < 4,
//                 byte 4 i + k of the first 4R holds the low 4 bits of the codes (q + 32) of
//                 elements 16 j + k (low nibble) and 16 j + 4 + k (high nibble); of the next
//                 4R, elements 16 j + 8 + k and 16 j + 12 + k; of the last 4R, the top 2 bits
//                 of those four elements at bits 0-1, 2-3, 4-5, 6-7.
template <int R>
struct PackedQ6K {
    static constexpr int kRecord = 210 * R;
    static constexpr int kD = 0;
    static constexpr int kScales = 2 * R;
    static constexpr int kCodes = 18 * R;
};

}  // namespace mw
