// AVX-512 decoders of K-quant super-blocks into unsigned 8-bit codes in element order, four
// vectors of 64 per 256 elements; shared by the decode kernels (gemv_avx512.cpp) and the panel
// packing of the prefill kernels (gemm_avx512.cpp). Only *_avx512.cpp files may include this.
//
// Codes: Q2_K q (0..3), Q3_K q + 4 (0..7), Q4_K q (0..15), Q5_K q (0..31), Q6_K q + 32 (0..63).
// Bit fields are moved with 16-bit shifts; for the shifts used here no byte's target bits come
// from its neighbour (left shifts of at most 4 into bit 4, right shifts that stay in the byte).
#pragma once

#include "tensor/kernels_x86_common.h"

namespace mw::avx512 {
namespace {

// Per-word shift counts: the low 256 bits of a vector by `lo`, the high 256 bits by `hi`.
inline __m512i shift_halves(int lo, int hi) {
    return _mm512_inserti64x4(_mm512_set1_epi16(short(lo)), _mm256_set1_epi16(short(hi)), 1);
}

// The 32-byte field at p in both halves of a vector.
inline __m512i load_twice(const uint8_t* p) {
    return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// (A & C) | B for vpternlogd: the bits of A under the mask C, plus B.
constexpr int kSelectOr = 0xEC;

inline void codes_q2_k(const BlockQ2_K& b, __m512i codes[4]) {
    const __m512i three = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
        const __m512i qs = load_twice(b.qs + 32 * h);
        for (int q = 0; q < 2; ++q) {
            codes[2 * h + q] =
                _mm512_and_si512(_mm512_srlv_epi16(qs, shift_halves(4 * q, 4 * q + 2)), three);
        }
    }
}

inline void codes_q3_k(const BlockQ3_K& b, __m512i codes[4]) {
    const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    const __m512i hm = load_twice(b.hmask);
    // hmask bits 2v (low half) and 2v + 1 (high half) moved to bit 2.
    const __m512i high[4] = {
        _mm512_sllv_epi16(hm, shift_halves(2, 1)), _mm512_srlv_epi16(hm, shift_halves(0, 1)),
        _mm512_srlv_epi16(hm, shift_halves(2, 3)), _mm512_srlv_epi16(hm, shift_halves(4, 5))};
    for (int h = 0; h < 2; ++h) {
        const __m512i qs = load_twice(b.qs + 32 * h);
        for (int q = 0; q < 2; ++q) {
            const int v = 2 * h + q;
            const __m512i low = _mm512_srlv_epi16(qs, shift_halves(4 * q, 4 * q + 2));
            codes[v] =
                _mm512_ternarylogic_epi32(low, _mm512_and_si512(high[v], four), three, kSelectOr);
        }
    }
}

inline void codes_q4_k(const BlockQ4_K& b, __m512i codes[4]) {
    const __m512i low4 = _mm512_set1_epi8(15);
    const __m512i nibble_shift = shift_halves(0, 4);
    for (int p = 0; p < 4; ++p) {
        codes[p] =
            _mm512_and_si512(_mm512_srlv_epi16(load_twice(b.qs + 32 * p), nibble_shift), low4);
    }
}

inline void codes_q5_k(const BlockQ5_K& b, __m512i codes[4]) {
    const __m512i low4 = _mm512_set1_epi8(15), bit4 = _mm512_set1_epi8(16);
    const __m512i nibble_shift = shift_halves(0, 4);
    const __m512i qh = load_twice(b.qh);
    // qh bits 2p (low half) and 2p + 1 (high half) moved to bit 4.
    const __m512i high[4] = {
        _mm512_sllv_epi16(qh, shift_halves(4, 3)), _mm512_sllv_epi16(qh, shift_halves(2, 1)),
        _mm512_srlv_epi16(qh, shift_halves(0, 1)), _mm512_srlv_epi16(qh, shift_halves(2, 3))};
    for (int p = 0; p < 4; ++p) {
        const __m512i nib = _mm512_srlv_epi16(load_twice(b.qs + 32 * p), nibble_shift);
        codes[p] = _mm512_ternarylogic_epi32(nib, _mm512_and_si512(high[p], bit4), low4, kSelectOr);
    }
}

inline void codes_q6_k(const BlockQ6_K& b, __m512i codes[4]) {
    const __m512i low4 = _mm512_set1_epi8(15), bits45 = _mm512_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(b.ql + 64 * h);
        const __m512i qh = load_twice(b.qh + 32 * h);
        // Elements 0-63 of the half: low nibbles with qh bits 0-1 / 2-3; 64-127: high nibbles
        // with qh bits 4-5 / 6-7; the two bits moved to bits 4-5.
        const __m512i hi_a = _mm512_and_si512(_mm512_sllv_epi16(qh, shift_halves(4, 2)), bits45);
        const __m512i hi_b = _mm512_and_si512(_mm512_srlv_epi16(qh, shift_halves(0, 2)), bits45);
        codes[2 * h] = _mm512_ternarylogic_epi32(ql, hi_a, low4, kSelectOr);
        codes[2 * h + 1] =
            _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), hi_b, low4, kSelectOr);
    }
}

}  // namespace
}  // namespace mw::avx512
