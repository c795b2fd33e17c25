// Block layouts of the quantized tensor types (byte-compatible with GGUF / ggml); the scalar
// reference functions that the type-traits table (tensor/types.h) points at are declared in
// tensor/ref/ref.h (included here).
//
// Half-precision fields are stored as raw uint16_t bits (fp16 unless named otherwise); convert
// with base/fp16.h. All blocks are tightly packed (static_asserts below check the file sizes).
#pragma once

#include <bit>
#include <cstdint>

#include "tensor/ref/ref.h"

namespace mw {

inline constexpr int kQK = 32;     // elements per block of the 32-element types
inline constexpr int kQK_K = 256;  // elements per super-block of the K-quants

// ---- 32-element block types ----------------------------------------------------------------

// x = d * (q - 8), q in 0..15. Element j in the low nibble of qs[j], j+16 in its high nibble.
struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kQK / 2];
};

// x = d * q + m, q in 0..15, nibbles as in Q4_0.
struct BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK / 2];
};

// x = d * (q - 16), q in 0..31: low 4 bits as in Q4_0, bit 4 of element j is bit j of qh
// (read as a little-endian uint32).
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// x = d * q + m, q in 0..31, bits as in Q5_0.
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// x = d * q.
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[kQK];
};

// x = d * q; s = d * sum(q) (fp16) lets Q4_1/Q5_1 dot products apply their offset m cheaply.
struct BlockQ8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[kQK];
};

// ---- K-quants: 256-element super-blocks of 16 or 8 sub-blocks -------------------------------

// 16 sub-blocks of 16: x = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4), q in 0..3.
// qs: element 128*h + 32*s + l (h < 2, s < 4, l < 32) is bits 2s..2s+1 of qs[32*h + l].
struct BlockQ2_K {
    uint8_t scales[kQK_K / 16];
    uint8_t qs[kQK_K / 4];
    uint16_t d;
    uint16_t dmin;
};

// 16 sub-blocks of 16: x = d * (scale_j - 32) * (q - 4), q in 0..7. Low 2 bits of q laid out as
// in Q2_K; bit 2 of element 32*b + l (b < 8) is bit b of hmask[l]. The 6-bit scales are packed
// into 12 bytes (see q3k_scale).
struct BlockQ3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[12];
    uint16_t d;
};

// 8 sub-blocks of 32: x = d * sc_j * q - dmin * m_j, q in 0..15, 6-bit sc/m packed into 12
// bytes (see q4k_scale_min). Element 64*p + l (l < 32) is the low nibble of qs[32*p + l], element
// 64*p + 32 + l its high nibble.
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[kQK_K / 2];
};

// As Q4_K with q in 0..31: bit 4 of element 32*b + l (b < 8) is bit b of qh[l].
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q in 0..63. For half h (128 elements) and
// l < 32: the 4 low bits of elements l, l+32, l+64, l+96 are the low nibble of ql[64h + l], of
// ql[64h + l + 32], the high nibble of ql[64h + l], of ql[64h + l + 32]; their 2 high bits are
// bits 0-1, 2-3, 4-5, 6-7 of qh[32h + l].
struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};

// Activations for the K-quant dot products: x = d * q with a float32 d, plus the sums of each
// 16 quants (the K-quant mins multiply these instead of every element).
struct BlockQ8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};

// ---- Non-linear, microscaled and ternary types (issue 38) -------------------------------------

// x = d * kIq4Values[q], q in 0..15, nibbles as in Q4_0.
struct BlockIQ4_NL {
    uint16_t d;
    uint8_t qs[kQK / 2];
};

// 8 sub-blocks of 32, each as an IQ4_NL block with scale d * (ls_j - 32): ls_j is 6 bits, its low
// 4 bits the nibble j % 2 of scales_l[j / 2], its high 2 bits bits 2j..2j+1 of scales_h.
struct BlockIQ4_XS {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};

// OCP microscaling FP4: x = 2^(e - 127) * E2M1(q), q in 0..15 (bit 3 the sign), nibbles as in
// Q4_0. Computed as 2^(e - 128) * kMxfp4Values[q] (the values doubled, so they are integers).
struct BlockMXFP4 {
    uint8_t e;
    uint8_t qs[kQK / 2];
};

// Ternary, x = d * (t - 1) with t in 0..2 stored as base-3 digits, five per byte of qs and four
// per byte of qh; digit k of byte b is the top trit of b * 3^k, read as ((b * 3^k mod 256) * 3)
// >> 8. Element 32k + m (m < 32) is digit k of qs[m]; 160 + 16k + m (m < 16) digit k of
// qs[32 + m]; 240 + 4k + m (m < 4) digit k of qh[m].
struct BlockTQ1_0 {
    uint8_t qs[48];
    uint8_t qh[4];
    uint16_t d;
};

// Ternary in 2 bits: x = d * (q - 1), q in 0..3, laid out as Q2_K's qs.
struct BlockTQ2_0 {
    uint8_t qs[kQK_K / 4];
    uint16_t d;
};

// ---- Lattice i-quants: groups of 8 (4 for IQ3) values are a point of a grid (tensor/iq_grids.h)
// times a sub-block scale, with one sign bit per value. IQ2_XXS and IQ3_XXS store 7 sign bits per
// 8 values, the 8th making the count of minus signs even. Layouts and scales (s the stored
// integer): tensor/ref/iq_lattice_ref.cpp.

// Sub-block of 32 (j < 8): qs[4j..4j+3] (as bytes: 8j..8j+7): four 8-bit grid indices, then 4 x 7
// sign bits and a 4-bit scale s in the top bits; scale d * (2s + 1) / 8.
struct BlockIQ2_XXS {
    uint16_t d;
    uint16_t qs[kQK_K / 8];
};

// qs[4j + l]: 9-bit grid index, 7 sign bits; scales[j]: 4-bit scales of the two halves.
struct BlockIQ2_XS {
    uint16_t d;
    uint16_t qs[kQK_K / 8];
    uint8_t scales[kQK_K / 32];
};

// qs[0..31]: low 8 bits of the 10-bit grid indices, qs[32..63]: one sign byte per 8 values; qh[j]:
// the high 2 bits of sub-block j's four indices.
struct BlockIQ2_S {
    uint16_t d;
    uint8_t qs[kQK_K / 4];
    uint8_t qh[kQK_K / 32];
    uint8_t scales[kQK_K / 32];
};

// qs[0..63]: 8-bit indices into a grid of 4-value points; qs[64 + 4j..]: as IQ2_XXS's second word.
struct BlockIQ3_XXS {
    uint16_t d;
    uint8_t qs[3 * kQK_K / 8];
};

// 9-bit indices of 4-value points (low bits in qs, the 9th in qh), a sign byte per 8 values.
struct BlockIQ3_S {
    uint16_t d;
    uint8_t qs[kQK_K / 4];
    uint8_t qh[kQK_K / 32];
    uint8_t signs[kQK_K / 8];
    uint8_t scales[kQK_K / 64];
};

// Values -1, 0, 1 (grid) plus or minus 1/8; 11-bit indices (8 in qs, 3 in qh), qh[j] also holds
// sub-block j's 3-bit scale and the sign of its delta.
struct BlockIQ1_S {
    uint16_t d;
    uint8_t qs[kQK_K / 8];
    uint16_t qh[kQK_K / 32];
};

// As IQ1_S with a scale per 16 values and a delta sign per 8; the fp16 d is spread over the top
// nibbles of the four scale words.
struct BlockIQ1_M {
    uint8_t qs[kQK_K / 8];
    uint8_t qh[kQK_K / 16];
    uint8_t scales[kQK_K / 32];
};

// The IQ4 code book (signed 8-bit integers, the scale multiplies them) and the E2M1 values of
// MXFP4, doubled: 0, 0.5, 1, 1.5, 2, 3, 4, 6, then the same negated.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};
inline constexpr int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

// The sub-block scale ls_j - 32 of an IQ4_XS block, j < 8.
inline int iq4xs_scale(const BlockIQ4_XS& b, int j) {
    const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF;
    const int high = (b.scales_h >> (2 * j)) & 3;
    return (low | (high << 4)) - 32;
}

// 2^(e - 128) as a float (half the E8M0 scale): exact for every e, subnormal for e < 2.
inline float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockTQ1_0) == 54);
static_assert(sizeof(BlockTQ2_0) == 66);
static_assert(sizeof(BlockIQ2_XXS) == 66);
static_assert(sizeof(BlockIQ2_XS) == 74);
static_assert(sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98);
static_assert(sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ1_S) == 50);
static_assert(sizeof(BlockIQ1_M) == 56);

// Scale j (0..15) of a Q3_K block, in 0..63 (the format subtracts 32). Low 4 bits: the low
// nibbles of bytes 0-7 for j < 8, their high nibbles for j >= 8; high 2 bits: bits 2*(j/4) of
// byte 8 + j%4.
inline int q3k_scale(const uint8_t* scales, int j) {
    const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return low | (high << 4);
}

// Scale and min of sub-block j (0..7) of a Q4_K / Q5_K block, each 6 bits. For j < 4 they are the
// low 6 bits of bytes j and j+4; for j >= 4 the low / high nibble of byte j+4 hold their low 4
// bits and the top 2 bits of bytes j-4 / j hold their high 2 bits.
inline void q4k_scale_min(const uint8_t* scales, int j, int* scale, int* min) {
    if (j < 4) {
        *scale = scales[j] & 63;
        *min = scales[j + 4] & 63;
    } else {
        *scale = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
        *min = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
}

}  // namespace mw
