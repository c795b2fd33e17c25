// Decoders of GGUF blocks into unsigned 8-bit codes in element order, shared by the decode
// kernels of the GGUF layout (tensor/x86/gemv.h) and the panel packing of the prefill kernels
// (tensor/x86/gemm.h). kcodes(block, out) fills the vectors of one 256-element super-block at
// the width of `out`: 8 x 32 bytes (any set) or 4 x 64 (AVX-512: two 32-byte fields per load,
// the high half shifted by per-word counts).
//
// Codes: Q2_K q (0..3), Q3_K q + 4 (0..7), Q4_K q (0..15), Q5_K q (0..31), Q6_K q + 32 (0..63).
// Bit fields are moved with 16-bit shifts; for the shifts used here no byte's target bits come
// from its neighbour (left shifts of at most 4 into bit 4, right shifts that stay in the byte).
#pragma once

#include "tensor/x86/simd.h"

namespace mw::x86 {
namespace {

#if defined(__AVX512F__) && defined(__AVX512BW__)

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

inline void kcodes(const BlockQ2_K& b, __m512i codes[4]) {
    const __m512i three = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
        const __m512i qs = load_twice(b.qs + 32 * h);
        for (int q = 0; q < 2; ++q) {
            codes[2 * h + q] =
                _mm512_and_si512(_mm512_srlv_epi16(qs, shift_halves(4 * q, 4 * q + 2)), three);
        }
    }
}

inline void kcodes(const BlockQ3_K& b, __m512i codes[4]) {
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

inline void kcodes(const BlockQ4_K& b, __m512i codes[4]) {
    const __m512i low4 = _mm512_set1_epi8(15);
    const __m512i nibble_shift = shift_halves(0, 4);
    for (int p = 0; p < 4; ++p) {
        codes[p] =
            _mm512_and_si512(_mm512_srlv_epi16(load_twice(b.qs + 32 * p), nibble_shift), low4);
    }
}

inline void kcodes(const BlockQ5_K& b, __m512i codes[4]) {
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

inline void kcodes(const BlockQ6_K& b, __m512i codes[4]) {
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

// vpermw indexes that spread 16-bit scales over sub-blocks: `per_vector` sub-blocks per vector
// of 64 codes (2 for sub-blocks of 32, 4 for sub-blocks of 16); vector v takes scales
// per_vector * v onwards.
struct Spread512 {
    int16_t idx[4][32];
};
constexpr Spread512 make_spread512(int per_vector) {
    Spread512 s{};
    for (int v = 0; v < 4; ++v) {
        for (int i = 0; i < 32; ++i) s.idx[v][i] = int16_t(per_vector * v + i / (32 / per_vector));
    }
    return s;
}
constexpr Spread512 kSpread512Of32 = make_spread512(2);
constexpr Spread512 kSpread512Of16 = make_spread512(4);

// 16 scales (one per sub-block of 16, 16-bit words) spread over the four code vectors.
inline void spread_scales16(__m256i words, __m512i out[4]) {
    const __m512i s = _mm512_castsi256_si512(words);
    for (int v = 0; v < 4; ++v)
        out[v] = _mm512_permutexvar_epi16(_mm512_loadu_si512(kSpread512Of16.idx[v]), s);
}
// 8 scales (one per sub-block of 32, the low 8 words) spread over the four code vectors.
inline void spread_scales8(__m256i words, __m512i out[4]) {
    const __m512i s = _mm512_castsi256_si512(words);
    for (int v = 0; v < 4; ++v)
        out[v] = _mm512_permutexvar_epi16(_mm512_loadu_si512(kSpread512Of32.idx[v]), s);
}
#endif  // AVX-512

// ---- 256-bit decoders (every set) --------------------------------------------------------------

inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Bits moved to position `to` from position `from` within each byte.
inline __m256i move_bit(__m256i v, int from, int to) {
    return from <= to ? _mm256_slli_epi16(v, to - from) : _mm256_srli_epi16(v, from - to);
}

inline void kcodes(const BlockQ2_K& b, __m256i codes[8]) {
    const __m256i three = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
        const __m256i qs = load256(b.qs + 32 * h);
        for (int s = 0; s < 4; ++s)
            codes[4 * h + s] = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), three);
    }
}

inline void kcodes(const BlockQ3_K& b, __m256i codes[8]) {
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    const __m256i hm = load256(b.hmask);
    for (int h = 0; h < 2; ++h) {
        const __m256i qs = load256(b.qs + 32 * h);
        for (int s = 0; s < 4; ++s) {
            const __m256i low = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), three);
            const __m256i high = _mm256_and_si256(move_bit(hm, 4 * h + s, 2), four);
            codes[4 * h + s] = _mm256_or_si256(low, high);
        }
    }
}

inline void kcodes(const BlockQ4_K& b, __m256i codes[8]) {
    const __m256i low4 = _mm256_set1_epi8(15);
    for (int p = 0; p < 4; ++p) {
        const __m256i q = load256(b.qs + 32 * p);
        codes[2 * p] = _mm256_and_si256(q, low4);
        codes[2 * p + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    }
}

inline void kcodes(const BlockQ5_K& b, __m256i codes[8]) {
    const __m256i low4 = _mm256_set1_epi8(15), bit4 = _mm256_set1_epi8(16);
    const __m256i qh = load256(b.qh);
    for (int p = 0; p < 4; ++p) {
        const __m256i q = load256(b.qs + 32 * p);
        for (int k = 0; k < 2; ++k) {
            const int v = 2 * p + k;
            const __m256i nib = k == 0 ? _mm256_and_si256(q, low4)
                                       : _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            codes[v] = _mm256_or_si256(nib, _mm256_and_si256(move_bit(qh, v, 4), bit4));
        }
    }
}

inline void kcodes(const BlockQ6_K& b, __m256i codes[8]) {
    const __m256i low4 = _mm256_set1_epi8(15), bits45 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
        const __m256i ql0 = load256(b.ql + 64 * h), ql1 = load256(b.ql + 64 * h + 32);
        const __m256i qh = load256(b.qh + 32 * h);
        const __m256i nib[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                                _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
        for (int k = 0; k < 4; ++k) {
            // qh bits 2k, 2k + 1 moved to bits 4-5.
            codes[4 * h + k] =
                _mm256_or_si256(nib[k], _mm256_and_si256(move_bit(qh, 2 * k, 4), bits45));
        }
    }
}

// vpshufb indexes: both 16-bit words of a dword spread over the two 128-bit lanes (word 0 to
// the low lane, word 1 to the high lane), or one word over both lanes.
inline __m256i spread_pair() {
    return _mm256_set_epi64x(0x0302030203020302, 0x0302030203020302, 0x0100010001000100,
                             0x0100010001000100);
}
inline __m256i spread_word(int w) {
    const int64_t b = w == 0 ? 0x0100010001000100 : 0x0302030203020302;
    return _mm256_set1_epi64x(b);
}

// Scales of 16 sub-blocks of 16 (16-bit words): vector v (elements 32v..32v+31) takes scales
// 2v (low lane) and 2v + 1 (high lane).
inline void spread_scales16(__m256i words, __m256i out[8]) {
    for (int v = 0; v < 8; ++v) {
        out[v] = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(words, _mm256_set1_epi32(v)),
                                     spread_pair());
    }
}

// Scales of 8 sub-blocks of 32: vector v takes scale v.
inline void spread_scales8(__m256i words, __m256i out[8]) {
    for (int v = 0; v < 8; ++v) {
        out[v] = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(words, _mm256_set1_epi32(v / 2)),
                                     spread_word(v % 2));
    }
}

// ---- 32-element blocks (every set) --------------------------------------------------------------

// The 16 nibble bytes of a 32-element block as codes 0-15, element order.
inline __m256i nibbles32(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(15));
}

// The 16-entry table in both 128-bit lanes, for vpshufb (IQ4_NL, IQ4_XS, MXFP4).
inline __m256i table16(const int8_t* t) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}

// 16 for each element whose bit is set in the 32-bit mask, else 0.
inline __m256i high_bits(uint32_t qh) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(qh)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit),
                            _mm256_set1_epi8(16));
}

// The K-quants' scales as 16-bit words and what the activation block sums multiply.
// words:    the sub-block scales (16 for sub-blocks of 16; 8, in the low half, for 32).
// per_bsum: per sum of 16 activation quants, the integer it is multiplied with (the mins of the
//           types with mins, duplicated per sum for sub-blocks of 32; the scales for the types
//           with an offset).
struct KScales {
    __m256i words;
    __m256i per_bsum;
    float d, dmin;
};

inline KScales kscales(const BlockQ2_K& b) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i low4 = _mm_set1_epi8(15);
    return {_mm256_cvtepu8_epi16(_mm_and_si128(raw, low4)),
            _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), low4)), half(b.d),
            half(b.dmin)};
}
inline KScales kscales(const BlockQ3_K& b) {
    uint64_t sc[2];
    unpack_q3k_scales(b.scales, sc);
    const __m128i s8 =
        _mm_sub_epi8(_mm_set_epi64x(int64_t(sc[1]), int64_t(sc[0])), _mm_set1_epi8(32));
    const __m256i w = _mm256_cvtepi8_epi16(s8);
    return {w, w, half(b.d), 0.0f};
}
inline KScales kscales45(const uint8_t* packed, uint16_t d, uint16_t dmin) {
    uint64_t sc, m;
    unpack_q4k_scales(packed, &sc, &m);
    const __m128i mb = _mm_cvtsi64_si128(int64_t(m));
    return {_mm256_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(sc))),
            _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb)), half(d), half(dmin)};
}
inline KScales kscales(const BlockQ4_K& b) {
    return kscales45(b.scales, b.d, b.dmin);
}
inline KScales kscales(const BlockQ5_K& b) {
    return kscales45(b.scales, b.d, b.dmin);
}
inline KScales kscales(const BlockQ6_K& b) {
    const __m256i w =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    return {w, w, half(b.d), 0.0f};
}

}  // namespace
}  // namespace mw::x86
