// Decode kernels of the types whose weights are signed values from a table or a small set
// (IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0; issue 38), written once for every vector width V; the
// lattice types (IQ3/IQ2/IQ1) build on this in tensor/x86/gemv_lattice.h. Every type uses them for
// few tokens and a panel GEMM for many (IQ4_NL, IQ4_XS, MXFP4: tensor/x86/gemm.h; the ternary and
// lattice types: tensor/x86/panels_iquants.h, which decodes through the same decoders and groups).
//
// A block is decoded into signed 8-bit values in element order (each 32 elements one 256-bit
// vector; AVX-512 joins two), multiplied with the activation quants as |w| x sign(x, w) by
// vpmaddubsw (exact: |w| <= 127, and a pair of products fits int16) and summed into int32 by
// vpmaddwd with the sub-block scales, as the reference sums them: one float multiply per block.
// The 32-element types (Q8_0 activations) use 256 bits in every set: one block per vector.
#pragma once

#include <type_traits>

#include "tensor/iq_grids.h"
#include "tensor/x86/codes.h"
#include "tensor/x86/gemv.h"
#include "tensor/x86/simd.h"

namespace mw::x86 {
namespace {

inline __m256i abs8(__m256i w) {
    return _mm256_sign_epi8(w, w);
}
// x where w > 0, -x where w < 0, 0 where w == 0.
inline __m256i sign8(__m256i x, __m256i w) {
    return _mm256_sign_epi8(x, w);
}
#if defined(__AVX512F__) && defined(__AVX512BW__)
inline __m512i abs8(__m512i w) {
    return _mm512_abs_epi8(w);
}
// Where w == 0 the product is 0 anyway (|w| = 0), so x may stay.
inline __m512i sign8(__m512i x, __m512i w) {
    return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
}
#endif

// f(std::integral_constant<int, T>{}, t0) over tokens [0, n) in passes of up to 4: the kernels
// take their token count as a template argument so that the per-token accumulators stay in
// registers.
template <class F>
inline void by_4_tokens(int64_t n, F&& f) {
    for (int64_t t0 = 0; t0 < n; t0 += 4) {
        switch (n - t0 < 4 ? n - t0 : 4) {
            case 1:
                f(std::integral_constant<int, 1>{}, t0);
                break;
            case 2:
                f(std::integral_constant<int, 2>{}, t0);
                break;
            case 3:
                f(std::integral_constant<int, 3>{}, t0);
                break;
            default:
                f(std::integral_constant<int, 4>{}, t0);
                break;
        }
    }
}

// The eight 32-byte vectors of a super-block at V's width.
template <class V>
inline void join(const __m256i in[8], typename V::I* out) {
    if constexpr (V::kBytes == 32) {
        for (int v = 0; v < 8; ++v) out[v] = in[v];
    } else {
#if defined(__AVX512F__)
        for (int v = 0; v < 4; ++v)
            out[v] = _mm512_inserti64x4(_mm512_castsi256_si512(in[2 * v]), in[2 * v + 1], 1);
#endif
    }
}

// ---- 32-element blocks: IQ4_NL, MXFP4 ----------------------------------------------------------

struct DecodeIQ4_NL {
    using Block = BlockIQ4_NL;
    static const int8_t* table() { return kIq4Values; }
    static float scale(const Block& b) { return half(b.d); }
};
struct DecodeMXFP4 {
    using Block = BlockMXFP4;
    static const int8_t* table() { return kMxfp4Values; }
    static float scale(const Block& b) { return e8m0_half(b.e); }
};

// T tokens against rows [r0, r1); the activations prepared once per call (prepare_tokens32:
// quants contiguous, scales as floats).
template <class D, int T>
void nl32_rows(const MatmulArgs& a, int64_t t0, const Act32& p, int64_t nb) {
    const __m256i table = table16(D::table()), ones = _mm256_set1_epi16(1);
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const auto* w = reinterpret_cast<const typename D::Block*>(a.w + size_t(r) * a.w_row_bytes);
        __m256 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            _mm_prefetch(reinterpret_cast<const char*>(w + b) + 1024, _MM_HINT_T0);
            const __m256i wv = _mm256_shuffle_epi8(table, nibbles32(w[b].qs));
            const __m256i aw = abs8(wv);
            const float dw = D::scale(w[b]);
            for (int t = 0; t < T; ++t) {
                const __m256i prod = _mm256_maddubs_epi16(aw, sign8(load256(p.xs[t] + 32 * b), wv));
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(prod, ones)),
                                         _mm256_set1_ps(dw * p.dx[t][b]), acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = reduce256(acc[t]);
    }
}

template <class D>
void gemv_nl32(const MatmulArgs& a) {
    const int64_t nb = a.n_cols / 32;
    by_4_tokens(a.n_tokens, [&](auto n, int64_t t0) {
        constexpr int T = decltype(n)::value;
        nl32_rows<D, T>(a, t0, prepare_tokens32(a, t0, T, kActQ8_0, -1, nb), nb);
    });
}

// ---- 256-element super-blocks: IQ4_XS, TQ1_0, TQ2_0 --------------------------------------------
// decode(block, w, words) fills the 8 vectors of signed values and, unless kUnitScales, the 16
// sub-block-of-16 scales as 16-bit words; it returns the block's float scale.

struct DecodeIQ4_XS {
    using Block = BlockIQ4_XS;
    static constexpr bool kUnitScales = false;
    static float decode(const Block& b, __m256i w[8], __m256i* words) {
        const __m256i table = table16(kIq4Values);
        alignas(32) int16_t s[16];
        for (int j = 0; j < 8; ++j) {
            w[j] = _mm256_shuffle_epi8(table, nibbles32(b.qs + 16 * j));
            s[2 * j] = s[2 * j + 1] = int16_t(iq4xs_scale(b, j));
        }
        *words = _mm256_load_si256(reinterpret_cast<const __m256i*>(s));
        return half(b.d);
    }
};

struct DecodeTQ2_0 {
    using Block = BlockTQ2_0;
    static constexpr bool kUnitScales = true;
    static float decode(const Block& b, __m256i w[8], __m256i*) {
        const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = load256(b.qs + 32 * h);
            for (int s = 0; s < 4; ++s) {
                w[4 * h + s] =
                    _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), three), one);
            }
        }
        return half(b.d);
    }
};

// Trit k of every byte b, with 3^k given per 16-bit word: ((b * 3^k mod 256) * 3) >> 8, the
// even and odd bytes in separate words so that no product carries into its neighbour.
inline __m256i trits(__m256i b, __m256i pow3) {
    const __m256i low8 = _mm256_set1_epi16(0xFF), three = _mm256_set1_epi16(3);
    const __m256i even =
        _mm256_and_si256(_mm256_mullo_epi16(_mm256_and_si256(b, low8), pow3), low8);
    const __m256i odd = _mm256_and_si256(_mm256_mullo_epi16(_mm256_srli_epi16(b, 8), pow3), low8);
    const __m256i te = _mm256_srli_epi16(_mm256_mullo_epi16(even, three), 8);
    const __m256i to = _mm256_srli_epi16(_mm256_mullo_epi16(odd, three), 8);
    return _mm256_or_si256(te, _mm256_slli_epi16(to, 8));
}

struct DecodeTQ1_0 {
    using Block = BlockTQ1_0;
    static constexpr bool kUnitScales = true;
    static float decode(const Block& b, __m256i w[8], __m256i*) {
        const __m256i one = _mm256_set1_epi8(1);
        // Elements 0-159: trit k of qs[0..31]; 160-223: trits 0-3 of qs[32..47], two per vector;
        // 224-239 trit 4 of qs[32..47], 240-255 trits 0-3 of qh[0..3].
        const __m256i q0 = load256(b.qs);
        const __m256i q1 = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32)));
        const __m256i q2 = _mm256_inserti128_si256(q1, _mm_set1_epi32(load_i32(b.qh)), 1);
        static constexpr short kPow3[5] = {1, 3, 9, 27, 81};
        for (int k = 0; k < 5; ++k) w[k] = trits(q0, _mm256_set1_epi16(kPow3[k]));
        w[5] = trits(q1, _mm256_set_m128i(_mm_set1_epi16(3), _mm_set1_epi16(1)));
        w[6] = trits(q1, _mm256_set_m128i(_mm_set1_epi16(27), _mm_set1_epi16(9)));
        w[7] =
            trits(q2, _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27));
        for (int v = 0; v < 8; ++v) w[v] = _mm256_sub_epi8(w[v], one);
        return half(b.d);
    }
};

// A super-block ready for the products: values, their magnitudes, the scale words, the factor.
template <class V>
struct Decoded {
    static constexpr int N = 256 / V::kBytes;
    typename V::I w[N], aw[N], sc[N];
    float d;
};

#if defined(__AVX512VBMI__)
// vpermt2b indexes that put the low (first operand) and high (second) nibbles of the 64 bytes of
// four IQ4_XS sub-blocks in element order, two sub-blocks per vector (k = 0, 1).
struct Iq4xsInterleave {
    uint8_t idx[2][64];
};
constexpr Iq4xsInterleave make_iq4xs_interleave() {
    Iq4xsInterleave t{};
    for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < 64; ++i) {
            const int sub = i / 32, pos = i % 32;
            t.idx[k][i] = uint8_t(32 * k + 16 * sub + pos % 16 + (pos < 16 ? 0 : 64));
        }
    }
    return t;
}
constexpr Iq4xsInterleave kIq4xsInterleave = make_iq4xs_interleave();
#endif

// IQ4_XS at the width of V: scales one per 32 values, so broadcast instead of spread; AVX-512
// decodes four sub-blocks per load with byte permutes (VBMI).
template <class V>
inline void decode_iq4_xs(const BlockIQ4_XS& b, Decoded<V>& out) {
    int s[8];
    for (int j = 0; j < 8; ++j) s[j] = iq4xs_scale(b, j);
    out.d = half(b.d);
    if constexpr (V::kBytes == 32) {
        const __m256i table = table16(kIq4Values);
        for (int j = 0; j < 8; ++j) {
            out.w[j] = _mm256_shuffle_epi8(table, nibbles32(b.qs + 16 * j));
            out.aw[j] = abs8(out.w[j]);
            out.sc[j] = _mm256_set1_epi16(short(s[j]));
        }
    } else {
#if defined(__AVX512VBMI__)
        const __m512i table =
            _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        for (int h = 0; h < 2; ++h) {
            const __m512i q = _mm512_loadu_si512(b.qs + 64 * h);
            const __m512i lo = _mm512_and_si512(q, low4);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
            for (int k = 0; k < 2; ++k) {
                const int v = 2 * h + k;
                const __m512i codes =
                    _mm512_permutex2var_epi8(lo, _mm512_loadu_si512(kIq4xsInterleave.idx[k]), hi);
                out.w[v] = _mm512_shuffle_epi8(table, codes);
                out.aw[v] = abs8(out.w[v]);
                out.sc[v] = _mm512_inserti64x4(_mm512_set1_epi16(short(s[2 * v])),
                                               _mm256_set1_epi16(short(s[2 * v + 1])), 1);
            }
        }
#endif
    }
}

template <class V, class D>
inline void decode_sb(const typename D::Block& b, Decoded<V>& out) {
    if constexpr (std::is_same_v<D, DecodeIQ4_XS>) {
        decode_iq4_xs<V>(b, out);
        return;
    }
    __m256i w8[8], words = _mm256_setzero_si256();
    out.d = D::decode(b, w8, &words);
    join<V>(w8, out.w);
    for (int v = 0; v < Decoded<V>::N; ++v) out.aw[v] = abs8(out.w[v]);
    if constexpr (D::kUnitScales) {
        for (int v = 0; v < Decoded<V>::N; ++v) out.sc[v] = V::set1_i32(0x00010001);
    } else {
        spread_scales16(words, out.sc);
    }
}

// acc + the super-block's product with one token's quants.
template <class V>
inline typename V::F dot_sb(const Decoded<V>& b, const BlockQ8_K* x, typename V::F acc) {
    typename V::I s = V::zero();
    for (int v = 0; v < Decoded<V>::N; ++v) {
        const typename V::I p = V::maddubs(b.aw[v], sign8(V::load(x->qs + V::kBytes * v), b.w[v]));
        s = V::dpwssd(s, p, b.sc[v]);
    }
    return V::fmadd(V::cvt(s), V::set1(b.d * x->d), acc);
}

// T tokens from t0 against rows [r0, r1), each super-block decoded where it is used (decode).
template <class V, class D, int T>
void signed_rows(const MatmulArgs& a, int64_t t0) {
    const int64_t nsb = a.n_cols / 256;
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const auto* w = reinterpret_cast<const typename D::Block*>(a.w + size_t(r) * a.w_row_bytes);
        typename V::F acc[T];
        for (int t = 0; t < T; ++t) acc[t] = V::zerof();
        for (int64_t i = 0; i < nsb; ++i) {
            const uint8_t* bp = reinterpret_cast<const uint8_t*>(w + i);
            for (int l = 0; l < int(sizeof(typename D::Block) + 63) / 64; ++l)
                V::prefetch(bp + 2048 + 64 * l);
            Decoded<V> b;
            decode_sb<V, D>(w[i], b);
            for (int t = 0; t < T; ++t) {
                acc[t] = dot_sb<V>(
                    b,
                    reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride) + i,
                    acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = V::reduce(acc[t]);
    }
}

// T tokens from t0 against one row already decoded into `row`.
template <class V, int T>
void predecoded_tokens(const MatmulArgs& a, const Decoded<V>* row, int64_t r, int64_t t0) {
    const int64_t nsb = a.n_cols / 256;
    typename V::F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zerof();
    for (int64_t i = 0; i < nsb; ++i) {
        for (int t = 0; t < T; ++t) {
            acc[t] = dot_sb<V>(
                row[i],
                reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride) + i,
                acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = V::reduce(acc[t]);
}

// Whether prefill decodes each row once: not for TQ2_0, whose decoding (shifts and masks) costs
// less than storing and reloading it (measured: 0.87x).
template <class D>
constexpr bool kDecodeRowOnce = true;
template <>
constexpr bool kDecodeRowOnce<DecodeTQ2_0> = false;

template <class V, class D>
void gemv_signed(const MatmulArgs& a) {
    if (a.n_tokens <= 0) return;
    if (a.n_tokens > 4 && kDecodeRowOnce<D>) {
        // Prefill: each row decoded once into a per-thread buffer (a few KiB to some tens of KiB,
        // cache-resident), then every token; the decoding costs more than a product here.
        static thread_local ScratchBuffer buffer;
        const int64_t nsb = a.n_cols / 256;
        auto* row = reinterpret_cast<Decoded<V>*>(buffer.get(sizeof(Decoded<V>) * size_t(nsb)));
        for (int64_t r = a.r0; r < a.r1; ++r) {
            const auto* w =
                reinterpret_cast<const typename D::Block*>(a.w + size_t(r) * a.w_row_bytes);
            for (int64_t i = 0; i < nsb; ++i) decode_sb<V, D>(w[i], row[i]);
            by_4_tokens(a.n_tokens, [&](auto n, int64_t t0) {
                predecoded_tokens<V, decltype(n)::value>(a, row, r, t0);
            });
        }
        return;
    }
    by_4_tokens(a.n_tokens,
                [&](auto n, int64_t t0) { signed_rows<V, D, decltype(n)::value>(a, t0); });
}

}  // namespace
}  // namespace mw::x86
