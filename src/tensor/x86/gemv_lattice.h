// Decode kernels of the lattice i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M;
// issue 38), written once for every vector width V; their prefill goes through panels
// (tensor/x86/panels_iquants.h) from the same groups.
//
// The IQ2 and IQ3 grid points are non-negative (tensor/iq_grids.h), so a group of 32 weights is
// taken as its gathered grid bytes, unsigned, and the weights' signs go onto the activations:
// vpmaddubsw(grid, +-x), then vpmaddwd (vpdpwssd) with the sub-block scales, nothing stored in
// between. AVX2 multiplies x by a +-1 byte per weight (vpsignb); AVX-512, which has no vpsignb,
// negates x under a 64-bit mask, which IQ2_S and IQ3_S hold as they lie in the block. IQ1's values
// 8 g + delta (g in -1..1, delta +-1) are never zero: their magnitudes are the unsigned operand,
// the values themselves the signs. Values, scales and factor are those of ref::lattice_unpack.
#pragma once

#include <utility>

#include "tensor/iq_grids.h"
#include "tensor/x86/gemv_iquants.h"

namespace mw::x86 {
namespace {

// A group of 32 weights: grid bytes (unsigned) and a byte per weight with the weight's sign.
struct Group32 {
    __m256i grid, sign;
};

// The +-1 bytes of the 8 values of a 7-bit sign index (the 8th sign makes the number of minus
// signs even): one table load per 8 weights instead of spreading bits.
struct SignBytes {
    uint64_t v[128];
};
constexpr SignBytes make_sign_bytes() {
    SignBytes t{};
    for (int i = 0; i < 128; ++i) {
        int parity = 0;
        for (int k = 0; k < 7; ++k) parity ^= (i >> k) & 1;
        const int bits = i | parity << 7;
        for (int k = 0; k < 8; ++k) t.v[i] |= uint64_t((bits >> k) & 1 ? 0xFF : 0x01) << (8 * k);
    }
    return t;
}
constexpr SignBytes kSignBytes = make_sign_bytes();

inline __m256i sign_bytes(uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
    return _mm256_set_epi64x(int64_t(kSignBytes.v[i3]), int64_t(kSignBytes.v[i2]),
                             int64_t(kSignBytes.v[i1]), int64_t(kSignBytes.v[i0]));
}
// The four 7-bit sign indexes of an IQ2_XXS / IQ3_XXS word.
inline __m256i sign_bytes(uint32_t aux) {
    return sign_bytes(aux & 127, (aux >> 7) & 127, (aux >> 14) & 127, (aux >> 21) & 127);
}
// +-1 per byte from 32 sign bits (bit k set: byte k -1).
inline __m256i sign_bytes_of_bits(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(bits)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit),
                           _mm256_set1_epi8(1));
}
// 64 sign bits from eight 7-bit sign indexes packed at bits 7k: each spread to a byte, with its
// parity on top. For AVX-512 only: pdep is microcoded (slow) on Zen 2 and earlier.
inline uint64_t parity_signs(uint64_t packed) {
    const uint64_t b = _pdep_u64(packed, 0x7F7F7F7F7F7F7F7Full);
    uint64_t p = b ^ (b >> 4);  // bit 0 of each byte ends as the parity of that byte
    p ^= p >> 2;
    p ^= p >> 1;
    return b | (p & 0x0101010101010101ull) << 7;
}
inline uint64_t xxs_sign_bits(uint32_t aux0, uint32_t aux1) {
    return parity_signs((aux0 & 0x0FFFFFFF) | uint64_t(aux1 & 0x0FFFFFFF) << 28);
}

inline __m256i points8(const uint64_t* grid, uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
    return _mm256_set_epi64x(int64_t(grid[i3]), int64_t(grid[i2]), int64_t(grid[i1]),
                             int64_t(grid[i0]));
}
template <class Index>
inline __m256i points4(const uint32_t* grid, const Index* i) {
    return _mm256_setr_epi32(int(grid[i[0]]), int(grid[i[1]]), int(grid[i[2]]), int(grid[i[3]]),
                             int(grid[i[4]]), int(grid[i[5]]), int(grid[i[6]]), int(grid[i[7]]));
}
// The scales (2 s + 1) of the two 16-weight halves of a group, low | high << 16.
inline uint32_t scale_pair(int lo, int hi) {
    return uint32_t(2 * lo + 1) | uint32_t(2 * hi + 1) << 16;
}
// 8 g + delta for IQ1's points g in -1..1 (three doublings) and a +-1 per byte.
inline __m256i iq1_values(__m256i g, __m256i delta) {
    const __m256i g2 = _mm256_add_epi8(g, g), g4 = _mm256_add_epi8(g2, g2);
    return _mm256_add_epi8(_mm256_add_epi8(g4, g4), delta);
}
inline int64_t iq1_delta(bool minus) {
    return minus ? -1 : 0x0101010101010101;
}

// The 16 nibbles of 8 bytes, low first, as words (IQ2_XS, IQ2_S: a byte per group, low
// nibble the scale of its first 16 weights).
inline __m256i scale_nibble_bytes(const uint8_t* p) {
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                  low4 = _mm_set1_epi8(0x0F);
    return _mm256_cvtepu8_epi16(
        _mm_unpacklo_epi8(_mm_and_si128(q, low4), _mm_and_si128(_mm_srli_epi16(q, 4), low4)));
}

// Each type: factor(b) (the float multiplying the integer sum), group(grids, b, j) and
// scales(b, j) of the group of weights 32 j..32 j + 31; with kSignBits, sign_bits(b, v) gives the
// 64 sign bits of groups 2 v and 2 v + 1 more cheaply than the +-1 bytes do.
struct LatticeIQ2_XXS {
    using Block = BlockIQ2_XXS;
    static constexpr bool kSignBits = true;
    static float factor(const Block& b) { return half(b.d) * 0.125f; }
    static const uint8_t* q(const Block& b, int j) {
        return reinterpret_cast<const uint8_t*>(b.qs) + 8 * j;
    }
    static uint32_t aux(const Block& b, int j) { return load_u32(q(b, j) + 4); }
    static Group32 group(const IqGrids& g, const Block& b, int j) {
        const uint8_t* p = q(b, j);
        return {points8(g.iq2xxs, p[0], p[1], p[2], p[3]), sign_bytes(aux(b, j))};
    }
    static uint32_t scales(const Block& b, int j) {
        const int s = int(aux(b, j) >> 28);
        return scale_pair(s, s);
    }
    static constexpr bool kScaleVec = true;
    static __m256i scale_nibbles(const Block& b) {
        // The top nibble of each of the 8 64-bit words; qword k holds group k's (k < 4) and,
        // after the shift, group k + 4's: dwords s0 s4 s1 s5 | s2 s6 s3 s7, put in order.
        const __m256i lo = _mm256_srli_epi64(load256(b.qs), 60);
        const __m256i hi = _mm256_srli_epi64(load256(b.qs + 16), 60);
        const __m256i d =
            _mm256_permutevar8x32_epi32(_mm256_or_si256(lo, _mm256_slli_epi64(hi, 32)),
                                        _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
        return _mm256_or_si256(d, _mm256_slli_epi32(d, 16));
    }
    static uint64_t sign_bits(const Block& b, int v) {
        return xxs_sign_bits(aux(b, 2 * v), aux(b, 2 * v + 1));
    }
};

struct LatticeIQ2_XS {
    using Block = BlockIQ2_XS;
    static constexpr bool kSignBits = true;
    static float factor(const Block& b) { return half(b.d) * 0.125f; }
    static Group32 group(const IqGrids& g, const Block& b, int j) {
        const uint16_t* q = b.qs + 4 * j;
        return {points8(g.iq2xs, q[0] & 511u, q[1] & 511u, q[2] & 511u, q[3] & 511u),
                sign_bytes(q[0] >> 9, q[1] >> 9, q[2] >> 9, q[3] >> 9)};
    }
    static uint32_t scales(const Block& b, int j) {
        return scale_pair(b.scales[j] & 0xF, b.scales[j] >> 4);
    }
    static constexpr bool kScaleVec = true;
    static __m256i scale_nibbles(const Block& b) { return scale_nibble_bytes(b.scales); }
    static uint64_t sign_bits(const Block& b, int v) {
        const auto* q = reinterpret_cast<const uint8_t*>(b.qs + 8 * v);
        constexpr uint64_t kSigns = 0xFE00FE00FE00FE00ull;  // bits 9-15 of four words
        return parity_signs(_pext_u64(load_u64(q), kSigns) | _pext_u64(load_u64(q + 8), kSigns)
                                                                 << 28);
    }
};

struct LatticeIQ2_S {
    using Block = BlockIQ2_S;
    static constexpr bool kSignBits = true;
    static float factor(const Block& b) { return half(b.d) * 0.125f; }
    static Group32 group(const IqGrids& g, const Block& b, int j) {
        const uint8_t* q = b.qs + 4 * j;
        const uint32_t h = b.qh[j];
        return {points8(g.iq2s, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300),
                        q[2] | ((h << 4) & 0x300), q[3] | ((h << 2) & 0x300)),
                sign_bytes_of_bits(load_u32(b.qs + 32 + 4 * j))};
    }
    static uint32_t scales(const Block& b, int j) {
        return scale_pair(b.scales[j] & 0xF, b.scales[j] >> 4);
    }
    static constexpr bool kScaleVec = true;
    static __m256i scale_nibbles(const Block& b) { return scale_nibble_bytes(b.scales); }
    static uint64_t sign_bits(const Block& b, int v) { return load_u64(b.qs + 32 + 8 * v); }
};

struct LatticeIQ3_XXS {
    using Block = BlockIQ3_XXS;
    static constexpr bool kSignBits = true;
    static float factor(const Block& b) { return half(b.d) * 0.25f; }
    static uint32_t aux(const Block& b, int j) { return load_u32(b.qs + 64 + 4 * j); }
    static Group32 group(const IqGrids& g, const Block& b, int j) {
        uint32_t idx[8];
        for (int k = 0; k < 8; ++k) idx[k] = b.qs[8 * j + k];
        return {points4(g.iq3xxs, idx), sign_bytes(aux(b, j))};
    }
    static uint32_t scales(const Block& b, int j) {
        const int s = int(aux(b, j) >> 28);
        return scale_pair(s, s);
    }
    static constexpr bool kScaleVec = true;
    static __m256i scale_nibbles(const Block& b) {
        const __m256i d = _mm256_srli_epi32(load256(b.qs + 64), 28);
        return _mm256_or_si256(d, _mm256_slli_epi32(d, 16));
    }
    static uint64_t sign_bits(const Block& b, int v) {
        return xxs_sign_bits(aux(b, 2 * v), aux(b, 2 * v + 1));
    }
};

struct LatticeIQ3_S {
    using Block = BlockIQ3_S;
    static constexpr bool kSignBits = true;
    static float factor(const Block& b) { return half(b.d); }
    static Group32 group(const IqGrids& g, const Block& b, int j) {
        // The 9-bit indexes computed in scalar registers, where the grid loads want them: on
        // Zen 4 1.09x gemv_l2 over gathering the points by vector-built indexes, which is 1.09x
        // over extracting those indexes from a vector (vpextrw) and 1.3x over storing and
        // reloading them.
        const uint32_t h = b.qh[j];
        const uint8_t* q = b.qs + 8 * j;
        uint32_t idx[8];
        for (int k = 0; k < 8; ++k) idx[k] = q[k] | ((h << (8 - k)) & 256);
        return {points4(g.iq3s, idx), sign_bytes_of_bits(load_u32(b.signs + 4 * j))};
    }
    static uint32_t scales(const Block& b, int j) {
        const int s = (b.scales[j / 2] >> (4 * (j % 2))) & 0xF;
        return scale_pair(s, s);
    }
    static constexpr bool kScaleVec = true;
    static __m256i scale_nibbles(const Block& b) {
        const __m128i q = _mm_cvtsi32_si128(load_i32(b.scales)), low4 = _mm_set1_epi8(0x0F);
        const __m128i s =
            _mm_unpacklo_epi8(_mm_and_si128(q, low4), _mm_and_si128(_mm_srli_epi16(q, 4), low4));
        return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(s, s));
    }
    static uint64_t sign_bits(const Block& b, int v) { return load_u64(b.signs + 8 * v); }
};

struct LatticeIQ1_S {
    using Block = BlockIQ1_S;
    static constexpr bool kSignBits = false;
    static float factor(const Block& b) { return half(b.d) * 0.125f; }
    static Group32 group(const IqGrids& g, const Block& b, int j) {
        const uint32_t h = b.qh[j];
        const uint8_t* q = b.qs + 4 * j;
        const __m256i p = points8(g.iq1s, q[0] | (h & 7) << 8, q[1] | ((h >> 3) & 7) << 8,
                                  q[2] | ((h >> 6) & 7) << 8, q[3] | ((h >> 9) & 7) << 8);
        const __m256i w = iq1_values(p, _mm256_set1_epi64x(iq1_delta(h & 0x8000)));
        return {abs8(w), w};
    }
    static uint32_t scales(const Block& b, int j) {
        const int s = (b.qh[j] >> 12) & 7;
        return scale_pair(s, s);
    }
    static constexpr bool kScaleVec = true;
    static __m256i scale_nibbles(const Block& b) {
        const __m128i s = _mm_and_si128(
            _mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh)), 12),
            _mm_set1_epi16(7));
        return _mm256_set_m128i(_mm_unpackhi_epi16(s, s), _mm_unpacklo_epi16(s, s));
    }
    static uint64_t sign_bits(const Block&, int) { return 0; }
};

struct LatticeIQ1_M {
    using Block = BlockIQ1_M;
    static constexpr bool kSignBits = false;
    static float factor(const Block& b) {
        uint16_t s[4];
        std::memcpy(s, b.scales, sizeof s);
        return half(uint16_t((s[0] >> 12) | ((s[1] >> 8) & 0x00F0) | ((s[2] >> 4) & 0x0F00) |
                             (s[3] & 0xF000))) *
               0.125f;
    }
    static Group32 group(const IqGrids& g, const Block& b, int j) {
        const uint8_t* q = b.qs + 4 * j;
        const uint32_t h0 = b.qh[2 * j], h1 = b.qh[2 * j + 1];
        const __m256i p = points8(g.iq1s, q[0] | ((h0 << 8) & 0x700), q[1] | ((h0 << 4) & 0x700),
                                  q[2] | ((h1 << 8) & 0x700), q[3] | ((h1 << 4) & 0x700));
        const __m256i delta = _mm256_set_epi64x(iq1_delta(h1 & 0x80), iq1_delta(h1 & 0x08),
                                                iq1_delta(h0 & 0x80), iq1_delta(h0 & 0x08));
        const __m256i w = iq1_values(p, delta);
        return {abs8(w), w};
    }
    static uint32_t scales(const Block& b, int j) {
        const int word = load_u16(b.scales + 2 * (j / 2)) >> (6 * (j % 2));
        return scale_pair(word & 7, (word >> 3) & 7);
    }
    static uint64_t sign_bits(const Block&, int) { return 0; }
};

// One vector of weights as the products take it: grid bytes, scale words, and the signs as +-1
// bytes (256 bits) or a mask (512 bits).
template <int kBytes>
struct LatticeSign {
    using type = __m256i;
};
template <>
struct LatticeSign<64> {
    using type = uint64_t;
};
template <class V>
struct LatticeVec {
    typename V::I grid, scale;
    typename LatticeSign<V::kBytes>::type sign;
};

// The scale words of a group: elements 0-15 take the pair's low word, 16-31 its high word.
inline __m256i scale_words(uint32_t pair) {
    return _mm256_shuffle_epi8(_mm256_set1_epi32(int(pair)),
                               _mm256_set_epi64x(0x0302030203020302, 0x0302030203020302,
                                                 0x0100010001000100, 0x0100010001000100));
}
inline __m256i signed_x(__m256i x, __m256i sign) {
    return _mm256_sign_epi8(x, sign);
}
#if defined(__AVX512F__) && defined(__AVX512BW__)
// Two groups' scale pairs (quad = pair0 | pair1 << 32): 128-bit lane L takes word L.
inline __m512i scale_words(uint64_t quad) {
    return _mm512_shuffle_epi8(
        _mm512_set1_epi64(int64_t(quad)),
        _mm512_set_epi64(0x0706070607060706, 0x0706070607060706, 0x0504050405040504,
                         0x0504050405040504, 0x0302030203020302, 0x0302030203020302,
                         0x0100010001000100, 0x0100010001000100));
}
inline __m512i signed_x(__m512i x, uint64_t neg) {
    return _mm512_mask_sub_epi8(x, _cvtu64_mask64(neg), _mm512_setzero_si512(), x);
}
#endif

// AVX2 with kScaleVec: a super-block's scale words at once. The type's scale_nibbles(b) gives
// the 16 half-group scales s as words in element order (word 2 j: weights 0-15 of group j,
// 2 j + 1: 16-31); made 2 s + 1 and split into the words of groups 0-3 and 4-7, each in both
// 128-bit lanes, a group's pair is one byte shuffle away: fewer operations than extracting and
// broadcasting each group's scales.
struct ScaleHalves {
    __m256i lo, hi;
};
struct ScalePick {
    int8_t idx[4][32];
};
constexpr ScalePick make_scale_pick() {
    ScalePick t{};
    for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 32; ++i) t.idx[k][i] = int8_t(4 * k + 2 * (i / 16) + i % 2);
    }
    return t;
}
inline constexpr ScalePick kScalePick = make_scale_pick();

template <class D>
constexpr bool has_scale_vec() {
    if constexpr (requires { D::kScaleVec; }) {
        return D::kScaleVec;
    } else {
        return false;
    }
}

template <class V, class D>
inline ScaleHalves scale_halves(const typename D::Block& b) {
    if constexpr (V::kBytes == 32 && has_scale_vec<D>()) {
        const __m256i s = D::scale_nibbles(b);
        const __m256i w = _mm256_or_si256(_mm256_add_epi16(s, s), _mm256_set1_epi16(1));
        return {_mm256_permute2x128_si256(w, w, 0x00), _mm256_permute2x128_si256(w, w, 0x11)};
    } else {
        (void)b;
        return {_mm256_setzero_si256(), _mm256_setzero_si256()};
    }
}

template <class V, class D>
inline LatticeVec<V> lattice_vec(const IqGrids& g, const typename D::Block& b, int v,
                                 const ScaleHalves& sh) {
    if constexpr (V::kBytes == 32) {
        const Group32 gr = D::group(g, b, v);
        if constexpr (has_scale_vec<D>()) {
            const __m256i pick =
                _mm256_load_si256(reinterpret_cast<const __m256i*>(kScalePick.idx[v % 4]));
            return {gr.grid, _mm256_shuffle_epi8(v < 4 ? sh.lo : sh.hi, pick), gr.sign};
        } else {
            (void)sh;
            return {gr.grid, scale_words(D::scales(b, v)), gr.sign};
        }
    } else {
        (void)sh;
#if defined(__AVX512F__) && defined(__AVX512BW__)
        const Group32 g0 = D::group(g, b, 2 * v), g1 = D::group(g, b, 2 * v + 1);
        const __m512i grid = _mm512_inserti64x4(_mm512_castsi256_si512(g0.grid), g1.grid, 1);
        const __m512i scale =
            scale_words(D::scales(b, 2 * v) | uint64_t(D::scales(b, 2 * v + 1)) << 32);
        if constexpr (D::kSignBits) {
            return {grid, scale, D::sign_bits(b, v)};
        } else {
            const __m512i sign = _mm512_inserti64x4(_mm512_castsi256_si512(g0.sign), g1.sign, 1);
            return {grid, scale, _cvtmask64_u64(_mm512_movepi8_mask(sign))};
        }
#endif
    }
}

template <class V>
inline typename V::I lattice_dot(typename V::I s, const LatticeVec<V>& w, const int8_t* x) {
    return V::dpwssd(s, V::maddubs(w.grid, signed_x(V::load(x), w.sign)), w.scale);
}

// T tokens from t0 against rows [r0, r1), each vector of weights decoded where it is used.
template <class V, class D, int T>
void lattice_rows(const MatmulArgs& a, int64_t t0) {
    constexpr int N = 256 / V::kBytes;
    const IqGrids& g = iq_grids();
    const int64_t nsb = a.n_cols / 256;
    const BlockQ8_K* x[T];
    for (int t = 0; t < T; ++t)
        x[t] = reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride);
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const auto* w = reinterpret_cast<const typename D::Block*>(a.w + size_t(r) * a.w_row_bytes);
        typename V::F acc[T];
        for (int t = 0; t < T; ++t) acc[t] = V::zerof();
        for (int64_t i = 0; i < nsb; ++i) {
            const uint8_t* bp = reinterpret_cast<const uint8_t*>(w + i);
            for (int l = 0; l < int(sizeof(typename D::Block) + 63) / 64; ++l)
                V::prefetch(bp + 2048 + 64 * l);
            typename V::I s[T];
            for (int t = 0; t < T; ++t) s[t] = V::zero();
            const ScaleHalves sh = scale_halves<V, D>(w[i]);
            // Unrolled: each group's offsets and scale shuffle are constants.
            [&]<int... v>(std::integer_sequence<int, v...>) {
                (
                    [&] {
                        const LatticeVec<V> lv = lattice_vec<V, D>(g, w[i], v, sh);
                        for (int t = 0; t < T; ++t)
                            s[t] = lattice_dot<V>(s[t], lv, x[t][i].qs + V::kBytes * v);
                    }(),
                    ...);
            }
            (std::make_integer_sequence<int, N>{});
            const float d = D::factor(w[i]);
            for (int t = 0; t < T; ++t)
                acc[t] = V::fmadd(V::cvt(s[t]), V::set1(d * x[t][i].d), acc[t]);
        }
        for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = V::reduce(acc[t]);
    }
}

// A super-block decoded for prefill, where every token reuses it.
template <class V>
struct LatticeSb {
    LatticeVec<V> v[256 / V::kBytes];
    float d;
};

// T tokens from t0 against one row already decoded into `row`.
template <class V, int T>
void lattice_predecoded(const MatmulArgs& a, const LatticeSb<V>* row, int64_t r, int64_t t0) {
    constexpr int N = 256 / V::kBytes;
    const int64_t nsb = a.n_cols / 256;
    const BlockQ8_K* x[T];
    for (int t = 0; t < T; ++t)
        x[t] = reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride);
    typename V::F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zerof();
    for (int64_t i = 0; i < nsb; ++i) {
        typename V::I s[T];
        for (int t = 0; t < T; ++t) s[t] = V::zero();
        for (int v = 0; v < N; ++v) {
            for (int t = 0; t < T; ++t)
                s[t] = lattice_dot<V>(s[t], row[i].v[v], x[t][i].qs + V::kBytes * v);
        }
        for (int t = 0; t < T; ++t)
            acc[t] = V::fmadd(V::cvt(s[t]), V::set1(row[i].d * x[t][i].d), acc[t]);
    }
    for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = V::reduce(acc[t]);
}

template <class V, class D>
void gemv_lattice(const MatmulArgs& a) {
    if (a.n_tokens <= 0) return;
    if (a.n_tokens > 4) {
        // Prefill: each row decoded once into a per-thread buffer (cache-resident), then every
        // token: the gathering costs more than a product.
        static thread_local ScratchBuffer buffer;
        const IqGrids& g = iq_grids();
        const int64_t nsb = a.n_cols / 256;
        auto* row = reinterpret_cast<LatticeSb<V>*>(buffer.get(sizeof(LatticeSb<V>) * size_t(nsb)));
        for (int64_t r = a.r0; r < a.r1; ++r) {
            const auto* w =
                reinterpret_cast<const typename D::Block*>(a.w + size_t(r) * a.w_row_bytes);
            for (int64_t i = 0; i < nsb; ++i) {
                const ScaleHalves sh = scale_halves<V, D>(w[i]);
                for (int v = 0; v < 256 / V::kBytes; ++v)
                    row[i].v[v] = lattice_vec<V, D>(g, w[i], v, sh);
                row[i].d = D::factor(w[i]);
            }
            by_4_tokens(a.n_tokens, [&](auto n, int64_t t0) {
                lattice_predecoded<V, decltype(n)::value>(a, row, r, t0);
            });
        }
        return;
    }
    by_4_tokens(a.n_tokens,
                [&](auto n, int64_t t0) { lattice_rows<V, D, decltype(n)::value>(a, t0); });
}

}  // namespace
}  // namespace mw::x86
