// AVX2 decode kernels: weight rows in their GGUF layout times up to 4 tokens a pass.
//
// One 32-element block (or 32 elements of a super-block) per vector: codes decoded in natural
// order, multiplied with the activation quants by vpmaddubsw (unsigned codes x signed quants,
// pairs summed to 16 bits) and vpmaddwd (pairs summed to 32 bits, times 1 or times the K-quant
// sub-block scale). Q8_0 weights are signed: |w| x sign(x, w). As in the AVX-512 set, the codes'
// offset comes back through the activation sums, and K-quants apply one float scale per
// super-block.
#include "tensor/kernels_avx2.h"
#include "tensor/kernels_x86_common.h"

namespace mw::avx2 {
namespace {

using namespace x86;

constexpr int kPrefetch = 1024;

inline void prefetch(const void* p) {
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
}

inline float reduce(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Sum of 4 adjacent products of unsigned a and signed b (codes below 64: no 16-bit overflow).
inline __m256i dot4(__m256i a, __m256i b) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1));
}

// The 16 nibble bytes of a 32-element block as codes 0-15, element order.
inline __m256i nibbles(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(15));
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

// ---- The 32-element types --------------------------------------------------------------------

struct Act32 {
    const int8_t* xs[4];
    const float* dx[4];
    const float* a2[4];
};

Act32 prepare_tokens32(const MatmulArgs& a, int64_t t0, int n_tok, Act32Format f, int offset,
                       int64_t nb) {
    static thread_local ScratchBuffer buffer;
    const size_t per_token = align64(size_t(nb) * 32) + 2 * align64(size_t(nb) * 4);
    uint8_t* base = buffer.get(per_token * size_t(n_tok));
    Act32 p{};
    for (int t = 0; t < n_tok; ++t) {
        uint8_t* b = base + per_token * size_t(t);
        auto* xs = reinterpret_cast<int8_t*>(b);
        auto* dx = reinterpret_cast<float*>(b + align64(size_t(nb) * 32));
        auto* a2 = dx + align64(size_t(nb) * 4) / 4;
        prepare_act32<false>(a.act + size_t(t0 + t) * a.act_stride, f, offset, nb, nb, xs, dx, a2);
        p.xs[t] = xs;
        p.dx[t] = dx;
        p.a2[t] = a2;
    }
    return p;
}

// Block decoders: codes (unsigned) and the value the block's second term multiplies.
struct DecodeQ4_0 {
    using Block = BlockQ4_0;
    static constexpr int kOffset = 8;
    static __m256i codes(const Block& b) { return nibbles(b.qs); }
    static float second(const Block& b) { return half(b.d); }
};
struct DecodeQ4_1 {
    using Block = BlockQ4_1;
    static constexpr int kOffset = 0;
    static __m256i codes(const Block& b) { return nibbles(b.qs); }
    static float second(const Block& b) { return half(b.m); }
};
struct DecodeQ5_0 {
    using Block = BlockQ5_0;
    static constexpr int kOffset = 16;
    static __m256i codes(const Block& b) {
        return _mm256_or_si256(nibbles(b.qs), high_bits(load_u32(b.qh)));
    }
    static float second(const Block& b) { return half(b.d); }
};
struct DecodeQ5_1 {
    using Block = BlockQ5_1;
    static constexpr int kOffset = 0;
    static __m256i codes(const Block& b) {
        return _mm256_or_si256(nibbles(b.qs), high_bits(load_u32(b.qh)));
    }
    static float second(const Block& b) { return half(b.m); }
};

template <class D, int T>
void block32_rows(const MatmulArgs& a, int64_t t0, const Act32& p, int64_t nb) {
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const auto* w = reinterpret_cast<const typename D::Block*>(a.w + size_t(r) * a.w_row_bytes);
        __m256 acc[T];
        float acc2[T];
        for (int t = 0; t < T; ++t) {
            acc[t] = _mm256_setzero_ps();
            acc2[t] = 0.0f;
        }
        for (int64_t b = 0; b < nb; ++b) {
            prefetch(reinterpret_cast<const uint8_t*>(w + b) + kPrefetch);
            const __m256i codes = D::codes(w[b]);
            const float dw = half(w[b].d), w2 = D::second(w[b]);
            for (int t = 0; t < T; ++t) {
                const __m256i s = dot4(
                    codes, _mm256_load_si256(reinterpret_cast<const __m256i*>(p.xs[t] + 32 * b)));
                acc[t] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(dw * p.dx[t][b]), acc[t]);
                acc2[t] += w2 * p.a2[t][b];
            }
        }
        for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = reduce(acc[t]) + acc2[t];
    }
}

template <int T>
void q8_0_rows(const MatmulArgs& a, int64_t t0, const Act32& p, int64_t nb) {
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const auto* w = reinterpret_cast<const BlockQ8_0*>(a.w + size_t(r) * a.w_row_bytes);
        __m256 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            prefetch(reinterpret_cast<const uint8_t*>(w + b) + kPrefetch);
            const __m256i q = load256(w[b].qs);
            const __m256i aq = _mm256_sign_epi8(q, q);
            const float dw = half(w[b].d);
            for (int t = 0; t < T; ++t) {
                const __m256i x =
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(p.xs[t] + 32 * b));
                const __m256i prod = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(x, q));
                const __m256i s = _mm256_madd_epi16(prod, _mm256_set1_epi16(1));
                acc[t] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(dw * p.dx[t][b]), acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = reduce(acc[t]);
    }
}

template <int T>
using Rows32 = void (*)(const MatmulArgs&, int64_t, const Act32&, int64_t);

template <Rows32<1> r1, Rows32<2> r2, Rows32<3> r3, Rows32<4> r4>
void gemv32(const MatmulArgs& a, Act32Format f, int offset) {
    const int64_t nb = a.n_cols / 32;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        const int n = int(a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4);
        const Act32 p = prepare_tokens32(a, t0, n, f, offset, nb);
        switch (n) {
            case 1:
                r1(a, t0, p, nb);
                break;
            case 2:
                r2(a, t0, p, nb);
                break;
            case 3:
                r3(a, t0, p, nb);
                break;
            default:
                r4(a, t0, p, nb);
                break;
        }
    }
}

template <class D>
void gemv_block32(const MatmulArgs& a, Act32Format f) {
    gemv32<block32_rows<D, 1>, block32_rows<D, 2>, block32_rows<D, 3>, block32_rows<D, 4>>(
        a, f, D::kOffset);
}

// ---- K-quants --------------------------------------------------------------------------------

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
inline void spread16(__m256i words, __m256i out[8]) {
    for (int v = 0; v < 8; ++v) {
        out[v] = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(words, _mm256_set1_epi32(v)),
                                     spread_pair());
    }
}

// Scales of 8 sub-blocks of 32: vector v takes scale v.
inline void spread8(__m256i words, __m256i out[8]) {
    for (int v = 0; v < 8; ++v) {
        out[v] = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(words, _mm256_set1_epi32(v / 2)),
                                     spread_word(v % 2));
    }
}

// Shared loop of the K-quants (see gemv_avx512.cpp): codes[8] x 32 in natural order, 16-bit
// scales per vector, per-bsum multipliers (the 16 scales for offset types, the mins otherwise).
template <class Block, int T, int kOffset, bool kMins, class Decode>
void kquant_rows(const MatmulArgs& a, int64_t t0, Decode decode) {
    const int64_t nsb = a.n_cols / 256;
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const auto* w = reinterpret_cast<const Block*>(a.w + size_t(r) * a.w_row_bytes);
        __m256 acc[T], macc[T];
        for (int t = 0; t < T; ++t) acc[t] = macc[t] = _mm256_setzero_ps();
        for (int64_t i = 0; i < nsb; ++i) {
            const uint8_t* bp = reinterpret_cast<const uint8_t*>(w + i);
            for (int l = 0; l < int(sizeof(Block) + 63) / 64; ++l)
                prefetch(bp + kPrefetch + 64 * l);
            __m256i codes[8], scales[8], per_bsum;
            float d = 0.0f, dmin = 0.0f;
            decode(w[i], codes, scales, &per_bsum, &d, &dmin);
            for (int t = 0; t < T; ++t) {
                const auto* x =
                    reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride) + i;
                const __m256i bm = _mm256_madd_epi16(load256(x->bsums), per_bsum);
                __m256i s = _mm256_setzero_si256();
                if constexpr (kOffset != 0) {
                    constexpr int kShift = kOffset == 4 ? 2 : 5;
                    s = _mm256_sub_epi32(s, _mm256_slli_epi32(bm, kShift));
                }
                for (int v = 0; v < 8; ++v) {
                    const __m256i p = _mm256_maddubs_epi16(codes[v], load256(x->qs + 32 * v));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scales[v]));
                }
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * x->d), acc[t]);
                if constexpr (kMins) {
                    macc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(bm), _mm256_set1_ps(-dmin * x->d),
                                              macc[t]);
                }
            }
        }
        for (int t = 0; t < T; ++t)
            a.y[(t0 + t) * a.ldy + r] = reduce(_mm256_add_ps(acc[t], macc[t]));
    }
}

template <class Block, int kOffset, bool kMins, class Decode>
void gemv_kquant(const MatmulArgs& a, Decode decode) {
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        switch (a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4) {
            case 1:
                kquant_rows<Block, 1, kOffset, kMins>(a, t0, decode);
                break;
            case 2:
                kquant_rows<Block, 2, kOffset, kMins>(a, t0, decode);
                break;
            case 3:
                kquant_rows<Block, 3, kOffset, kMins>(a, t0, decode);
                break;
            default:
                kquant_rows<Block, 4, kOffset, kMins>(a, t0, decode);
                break;
        }
    }
}

// Bits moved to position `to` from position `from` within each byte (16-bit shifts: the bytes
// do not leak into each other's target bit for the shifts used here).
inline __m256i move_bit(__m256i v, int from, int to) {
    return from <= to ? _mm256_slli_epi16(v, to - from) : _mm256_srli_epi16(v, from - to);
}

inline void q4k_scales(const uint8_t* packed, __m256i scales[8], __m256i* mins16) {
    uint64_t sc, m;
    unpack_q4k_scales(packed, &sc, &m);
    spread8(_mm256_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(sc))), scales);
    const __m128i mb = _mm_cvtsi64_si128(int64_t(m));
    *mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb));
}

}  // namespace

void gemv_q4_0(const MatmulArgs& a) {
    gemv_block32<DecodeQ4_0>(a, kActQ8_0);
}
void gemv_q4_1(const MatmulArgs& a) {
    gemv_block32<DecodeQ4_1>(a, kActQ8_1);
}
void gemv_q5_0(const MatmulArgs& a) {
    gemv_block32<DecodeQ5_0>(a, kActQ8_0);
}
void gemv_q5_1(const MatmulArgs& a) {
    gemv_block32<DecodeQ5_1>(a, kActQ8_1);
}
void gemv_q8_0(const MatmulArgs& a) {
    gemv32<q8_0_rows<1>, q8_0_rows<2>, q8_0_rows<3>, q8_0_rows<4>>(a, kActQ8_0, -1);
}

void gemv_q2_k(const MatmulArgs& a) {
    gemv_kquant<BlockQ2_K, 0, true>(a, [](const BlockQ2_K& b, __m256i codes[8], __m256i scales[8],
                                          __m256i* mins16, float* d, float* dmin) {
        const __m256i three = _mm256_set1_epi8(3);
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = load256(b.qs + 32 * h);
            for (int s = 0; s < 4; ++s)
                codes[4 * h + s] = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), three);
        }
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
        const __m128i low4 = _mm_set1_epi8(15);
        spread16(_mm256_cvtepu8_epi16(_mm_and_si128(raw, low4)), scales);
        *mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), low4));
        *d = half(b.d);
        *dmin = half(b.dmin);
    });
}

void gemv_q3_k(const MatmulArgs& a) {
    gemv_kquant<BlockQ3_K, 4, false>(a, [](const BlockQ3_K& b, __m256i codes[8], __m256i scales[8],
                                           __m256i* scales16, float* d, float*) {
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
        uint64_t sc[2];
        unpack_q3k_scales(b.scales, sc);
        const __m128i s8 =
            _mm_sub_epi8(_mm_set_epi64x(int64_t(sc[1]), int64_t(sc[0])), _mm_set1_epi8(32));
        *scales16 = _mm256_cvtepi8_epi16(s8);
        spread16(*scales16, scales);
        *d = half(b.d);
    });
}

void gemv_q4_k(const MatmulArgs& a) {
    gemv_kquant<BlockQ4_K, 0, true>(a, [](const BlockQ4_K& b, __m256i codes[8], __m256i scales[8],
                                          __m256i* mins16, float* d, float* dmin) {
        const __m256i low4 = _mm256_set1_epi8(15);
        for (int p = 0; p < 4; ++p) {
            const __m256i q = load256(b.qs + 32 * p);
            codes[2 * p] = _mm256_and_si256(q, low4);
            codes[2 * p + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        }
        q4k_scales(b.scales, scales, mins16);
        *d = half(b.d);
        *dmin = half(b.dmin);
    });
}

void gemv_q5_k(const MatmulArgs& a) {
    gemv_kquant<BlockQ5_K, 0, true>(a, [](const BlockQ5_K& b, __m256i codes[8], __m256i scales[8],
                                          __m256i* mins16, float* d, float* dmin) {
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
        q4k_scales(b.scales, scales, mins16);
        *d = half(b.d);
        *dmin = half(b.dmin);
    });
}

void gemv_q6_k(const MatmulArgs& a) {
    gemv_kquant<BlockQ6_K, 32, false>(a, [](const BlockQ6_K& b, __m256i codes[8], __m256i scales[8],
                                            __m256i* scales16, float* d, float*) {
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
        *scales16 =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
        spread16(*scales16, scales);
        *d = half(b.d);
    });
}

}  // namespace mw::avx2
