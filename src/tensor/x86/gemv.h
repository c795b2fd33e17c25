// Decode kernels of the GGUF layout (weights as they lie in the file), written once for every
// vector width V: the rows [r0, r1) times up to 4 tokens a pass, the weights streamed once.
// Packed layouts (tensor/simd/packed.h) are faster; these serve the types without one, matrices
// whose row count is not a multiple of the group, and `--no-repack`.
//
// - K-quants: a 256-element super-block is decoded into 256 / V::kBytes vectors of codes in
//   element order (tensor/x86/codes.h), multiplied with the Q8_K quants by vpmaddubsw and the
//   integer sub-block scales applied by vpdpwssd, as the reference sums them: one float multiply
//   per super-block. A code's offset comes back through -offset * sum_j scale_j * bsum_j.
// - 32-element types: one block per 256-bit vector (the AVX-512 set has its own 8-blocks-per-
//   step kernels on VBMI byte permutes, gemv_blocks_avx512.cpp).
#pragma once

#include "tensor/x86/codes.h"
#include "tensor/x86/simd.h"

namespace mw::x86 {
namespace {

// Bytes ahead of the current block to prefetch.
constexpr int kGemvPrefetch = 2048;

// ---- K-quants ----------------------------------------------------------------------------------

template <class Block, int kOffsetV, bool kMinsV, bool kSub16V>
struct KQuant {
    using B = Block;
    static constexpr int kOffset = kOffsetV;  // subtracted from every code
    static constexpr bool kMins = kMinsV;     // the value has a per-sub-block min
    static constexpr bool kSub16 = kSub16V;   // sub-blocks of 16 (else 32)
};
using KQ2 = KQuant<BlockQ2_K, 0, true, true>;
using KQ3 = KQuant<BlockQ3_K, 4, false, true>;
using KQ4 = KQuant<BlockQ4_K, 0, true, false>;
using KQ5 = KQuant<BlockQ5_K, 0, true, false>;
using KQ6 = KQuant<BlockQ6_K, 32, false, true>;

// The super-block's activation-sum term (8 int32 per 16 bsums x per_bsum) in a V vector.
template <class V>
inline typename V::I widen8(__m256i v) {
    if constexpr (V::kLanes == 16) {
#if defined(__AVX512F__)
        return _mm512_zextsi256_si512(v);
#endif
    } else {
        return v;
    }
}

template <class V, class K, int T>
void kquant_rows(const MatmulArgs& a, int64_t t0) {
    using I = typename V::I;
    using F = typename V::F;
    constexpr int N = 256 / V::kBytes;
    const int64_t nsb = a.n_cols / 256;
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const auto* w = reinterpret_cast<const typename K::B*>(a.w + size_t(r) * a.w_row_bytes);
        F acc[T];
        __m256 macc[T];
        for (int t = 0; t < T; ++t) {
            acc[t] = V::zerof();
            macc[t] = _mm256_setzero_ps();
        }
        for (int64_t i = 0; i < nsb; ++i) {
            const uint8_t* bp = reinterpret_cast<const uint8_t*>(w + i);
            for (int l = 0; l < int(sizeof(typename K::B) + 63) / 64; ++l)
                V::prefetch(bp + kGemvPrefetch + 64 * l);
            I codes[N], scales[N];
            kcodes(w[i], codes);
            const KScales ks = kscales(w[i]);
            if constexpr (K::kSub16) {
                spread_scales16(ks.words, scales);
            } else {
                spread_scales8(ks.words, scales);
            }
            for (int t = 0; t < T; ++t) {
                const auto* x =
                    reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride) + i;
                const __m256i bm = _mm256_madd_epi16(load256(x->bsums), ks.per_bsum);
                I s = V::zero();
                if constexpr (K::kOffset != 0) {
                    // -offset * sum_j scale_j * bsum_j (offset a power of two).
                    constexpr int kShift = K::kOffset == 4 ? 2 : 5;
                    s = widen8<V>(
                        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bm, kShift)));
                }
                for (int v = 0; v < N; ++v) {
                    const I xq = V::load(x->qs + V::kBytes * v);
                    s = V::dpwssd(s, V::maddubs(codes[v], xq), scales[v]);
                }
                acc[t] = V::fmadd(V::cvt(s), V::set1(ks.d * x->d), acc[t]);
                if constexpr (K::kMins) {
                    macc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(bm),
                                              _mm256_set1_ps(-ks.dmin * x->d), macc[t]);
                }
            }
        }
        for (int t = 0; t < T; ++t) {
            float v = V::reduce(acc[t]);
            if constexpr (K::kMins) v += reduce256(macc[t]);
            a.y[(t0 + t) * a.ldy + r] = v;
        }
    }
}

template <class V, class K>
void gemv_kquant(const MatmulArgs& a) {
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        switch (a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4) {
            case 1:
                kquant_rows<V, K, 1>(a, t0);
                break;
            case 2:
                kquant_rows<V, K, 2>(a, t0);
                break;
            case 3:
                kquant_rows<V, K, 3>(a, t0);
                break;
            default:
                kquant_rows<V, K, 4>(a, t0);
                break;
        }
    }
}

// ---- 32-element blocks, one per 256-bit vector
// ---------------------------------------------------

struct Act32 {
    const int8_t* xs[4];
    const float* dx[4];
    const float* a2[4];
};

inline Act32 prepare_tokens32(const MatmulArgs& a, int64_t t0, int n_tok, Act32Format f, int offset,
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

// Block decoders: codes (unsigned; signed for Q8_0), and the value the block's second term
// multiplies.
struct DecodeQ4_0 {
    using Block = BlockQ4_0;
    static constexpr int kOffset = 8, kMaxCode = 15;
    static __m256i codes(const Block& b) { return nibbles32(b.qs); }
    static float second(const Block& b) { return half(b.d); }
};
struct DecodeQ4_1 {
    using Block = BlockQ4_1;
    static constexpr int kOffset = 0, kMaxCode = 15;
    static __m256i codes(const Block& b) { return nibbles32(b.qs); }
    static float second(const Block& b) { return half(b.m); }
};
struct DecodeQ5_0 {
    using Block = BlockQ5_0;
    static constexpr int kOffset = 16, kMaxCode = 31;
    static __m256i codes(const Block& b) {
        return _mm256_or_si256(nibbles32(b.qs), high_bits(load_u32(b.qh)));
    }
    static float second(const Block& b) { return half(b.d); }
};
struct DecodeQ5_1 {
    using Block = BlockQ5_1;
    static constexpr int kOffset = 0, kMaxCode = 31;
    static __m256i codes(const Block& b) {
        return _mm256_or_si256(nibbles32(b.qs), high_bits(load_u32(b.qh)));
    }
    static float second(const Block& b) { return half(b.m); }
};
// Q8_0: signed codes through V::dot_signed; with VNNI its bias (-128 * sum(x)) is the second
// term, times d.
template <class V>
struct DecodeQ8_0 {
    using Block = BlockQ8_0;
    static constexpr int kOffset = V::kSignedBias ? V::kSignedBias : -1, kMaxCode = 0;
    static __m256i codes(const Block& b) { return load256(b.qs); }
    static float second(const Block& b) { return half(b.d); }
};

template <class V, class D, int T>
void block32_rows(const MatmulArgs& a, int64_t t0, const Act32& p, int64_t nb) {
    static_assert(V::kBytes == 32, "one 32-element block per vector");
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const auto* w = reinterpret_cast<const typename D::Block*>(a.w + size_t(r) * a.w_row_bytes);
        __m256 acc[T];
        float acc2[T];
        for (int t = 0; t < T; ++t) {
            acc[t] = _mm256_setzero_ps();
            acc2[t] = 0.0f;
        }
        for (int64_t b = 0; b < nb; ++b) {
            V::prefetch(reinterpret_cast<const uint8_t*>(w + b) + kGemvPrefetch / 2);
            const __m256i codes = D::codes(w[b]);
            const float dw = half(w[b].d), w2 = D::second(w[b]);
            for (int t = 0; t < T; ++t) {
                const __m256i x = load256(p.xs[t] + 32 * b);
                __m256i s;
                if constexpr (D::kMaxCode == 0) {
                    s = V::dot_signed(_mm256_setzero_si256(), codes, x);
                } else {
                    DotChain<V, D::kMaxCode> c;
                    c.add(codes, x);
                    s = c.result();
                }
                acc[t] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(dw * p.dx[t][b]), acc[t]);
                acc2[t] += w2 * p.a2[t][b];
            }
        }
        for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r] = reduce256(acc[t]) + acc2[t];
    }
}

template <class V, class D>
void gemv_block32(const MatmulArgs& a, Act32Format f) {
    const int64_t nb = a.n_cols / 32;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        const int n = int(a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4);
        const Act32 p = prepare_tokens32(a, t0, n, f, D::kOffset, nb);
        switch (n) {
            case 1:
                block32_rows<V, D, 1>(a, t0, p, nb);
                break;
            case 2:
                block32_rows<V, D, 2>(a, t0, p, nb);
                break;
            case 3:
                block32_rows<V, D, 3>(a, t0, p, nb);
                break;
            default:
                block32_rows<V, D, 4>(a, t0, p, nb);
                break;
        }
    }
}

}  // namespace
}  // namespace mw::x86
