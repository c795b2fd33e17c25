// AVX-512 decode kernels of the 32-element types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4)
// in their GGUF layout: what differs in kind from the other sets, so written for this set alone.
//
// Decoding is memory-bound on paper, but on a small core the work per byte decides whether the
// weights stream at memory speed, so these read 8 blocks at once (three 64-byte loads) and pick
// the nibbles and scales out with byte permutes (VBMI). Their activations are rearranged once per
// call so that 4 blocks' low nibbles and 4 blocks' high nibbles each form one vector. Codes are
// unsigned (vpdpbusd wants one unsigned operand); a type's offset (8 for Q4_0) comes back through
// the activation sums.
#include <array>

#include "tensor/x86/blocks_avx512.h"
#include "tensor/x86/simd.h"

namespace mw::x86::vbmi {
namespace {

// Bytes ahead of the current block to prefetch: enough to cover memory latency at full speed.
constexpr int kPrefetch = 2048;

inline void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

// ---- Gathering bytes from a span of 8 blocks held in three registers -----------------------
//
// The span (len bytes, 128 < len <= 192) is loaded as r0 = [0, 64), r1 = [64, 128) and
// r2 = [len - 64, len). A gather takes each output byte from one of two permutes: (r0, r1) or
// (r1, r2); the plan is computed at compile time.
struct GatherPlan {
    std::array<uint8_t, 64> idx01{};
    std::array<uint8_t, 64> idx12{};
    uint64_t mask12 = 0;  // output bytes taken from (r1, r2)
    bool use01 = false;
    bool use12 = false;
};

// src[i]: offset in the span of output byte i, or -1 for "zero / don't care".
constexpr GatherPlan make_plan(int len, const std::array<int, 64>& src) {
    GatherPlan p;
    bool all_low = true, all_high = true;  // reachable through (r0, r1) / (r1, r2) only
    for (int o : src) {
        if (o < 0) continue;
        if (o >= 128) all_low = false;
        if (o < 64) all_high = false;
    }
    for (int i = 0; i < 64; ++i) {
        const int o = src[i] < 0 ? 64 : src[i];
        const bool via12 = all_low ? false : all_high ? true : o >= 128;
        if (via12) {
            p.idx12[i] = uint8_t(o < 128 ? o - 64 : 64 + (o - (len - 64)));
            p.mask12 |= uint64_t(1) << i;
            p.use12 = true;
        } else {
            p.idx01[i] = uint8_t(o);
            p.use01 = true;
        }
    }
    return p;
}

template <const GatherPlan& P>
inline __m512i gather(__m512i r0, __m512i r1, __m512i r2) {
    if constexpr (P.use01 && P.use12) {
        const __m512i a = _mm512_permutex2var_epi8(r0, _mm512_loadu_si512(P.idx01.data()), r1);
        const __m512i b = _mm512_permutex2var_epi8(r1, _mm512_loadu_si512(P.idx12.data()), r2);
        return _mm512_mask_blend_epi8(P.mask12, a, b);
    } else if constexpr (P.use12) {
        return _mm512_permutex2var_epi8(r1, _mm512_loadu_si512(P.idx12.data()), r2);
    } else {
        return _mm512_permutex2var_epi8(r0, _mm512_loadu_si512(P.idx01.data()), r1);
    }
}

// ---- The 32-element nibble types: Q4_0, Q4_1, Q5_0, Q5_1 -----------------------------------

struct NibbleLayout {
    int block_bytes;
    int qs;                        // offset of the 16 nibble bytes
    int m;                         // offset of the fp16 min, or -1
    int qh;                        // offset of the 32 high bits, or -1
    int offset;                    // subtracted from each code (0 for the types with a min)
    const int8_t* book = nullptr;  // codes index this code book (stored + offset, unsigned)
    bool e8m0 = false;             // the scale is one E8M0 byte (MXFP4), not fp16
};
constexpr NibbleLayout kQ4_0{18, 2, -1, -1, 8};
constexpr NibbleLayout kIQ4_NL{18, 2, -1, -1, 128, kIq4Values};  // Q4_0's layout, non-linear
// MXFP4's book is -12..12: the smallest offset keeps the bias (offset * sum(x)) that cancels
// small, as rounding goes.
constexpr NibbleLayout kMXFP4{17, 1, -1, -1, 12, kMxfp4Values, true};

// A code book plus the offset (unsigned, for vpdpbusd) in each 128-bit lane, for vpshufb.
struct UnsignedBook {
    uint8_t v[64];
};
constexpr UnsignedBook unsigned_book(const int8_t* book, int offset) {
    UnsignedBook t{};
    for (int i = 0; i < 64; ++i) t.v[i] = uint8_t(book[i % 16] + offset);
    return t;
}
constexpr NibbleLayout kQ4_1{20, 4, 2, -1, 0};
constexpr NibbleLayout kQ5_0{22, 6, -1, 2, 16};
constexpr NibbleLayout kQ5_1{24, 8, 2, 4, 0};

// Nibbles of blocks 4h..4h+3: 128-bit lane k holds the 16 bytes of block 4h + k.
constexpr std::array<int, 64> nibble_src(const NibbleLayout& l, int h) {
    std::array<int, 64> s{};
    for (int i = 0; i < 64; ++i) s[i] = l.block_bytes * (4 * h + i / 16) + l.qs + i % 16;
    return s;
}

// "Meta" vector: bytes 0-15 the 8 fp16 scales, 16-31 the 8 mins, 32-63 the 8 qh words.
constexpr std::array<int, 64> meta_src(const NibbleLayout& l) {
    std::array<int, 64> s{};
    for (int i = 0; i < 64; ++i) s[i] = -1;
    for (int k = 0; k < 8; ++k) {
        if (l.e8m0) {  // bytes 0-7: the exponents
            s[k] = l.block_bytes * k;
            continue;
        }
        s[2 * k] = l.block_bytes * k;
        s[2 * k + 1] = l.block_bytes * k + 1;
        if (l.m >= 0) {
            s[16 + 2 * k] = l.block_bytes * k + l.m;
            s[16 + 2 * k + 1] = l.block_bytes * k + l.m + 1;
        }
        if (l.qh >= 0) {
            for (int j = 0; j < 4; ++j) s[32 + 4 * k + j] = l.block_bytes * k + l.qh + j;
        }
    }
    return s;
}

template <const NibbleLayout& L>
struct NibblePlans {
    static constexpr GatherPlan n0 = make_plan(8 * L.block_bytes, nibble_src(L, 0));
    static constexpr GatherPlan n1 = make_plan(8 * L.block_bytes, nibble_src(L, 1));
    static constexpr GatherPlan meta = make_plan(8 * L.block_bytes, meta_src(L));
    static constexpr UnsignedBook book = L.book ? unsigned_book(L.book, L.offset) : UnsignedBook{};
};

// Byte permutes of the meta vector that put, for each code byte of a split vector, the qh byte
// holding its high bit: half h (blocks 4h..), part 0 (elements 0-15) or 1 (16-31).
constexpr std::array<uint8_t, 64> qh_index(int h, int part) {
    std::array<uint8_t, 64> idx{};
    for (int i = 0; i < 64; ++i) {
        const int k = 4 * h + i / 16, j = i % 16;
        idx[i] = uint8_t(32 + 4 * k + 2 * part + j / 8);
    }
    return idx;
}
constexpr std::array<std::array<uint8_t, 64>, 4> kQhIndex = {qh_index(0, 0), qh_index(0, 1),
                                                             qh_index(1, 0), qh_index(1, 1)};

// Adds 16 to the codes whose high bit is set.
inline __m512i add_high_bit(__m512i codes, __m512i meta, int which) {
    const __m512i bit_of_byte = _mm512_set1_epi64(0x8040201008040201);
    const __m512i bits = _mm512_permutexvar_epi8(_mm512_loadu_si512(kQhIndex[which].data()), meta);
    const __mmask64 set = _mm512_test_epi8_mask(bits, bit_of_byte);
    return _mm512_mask_add_epi8(codes, set, codes, _mm512_set1_epi8(16));
}

// Prepared activations of up to 4 tokens (see prepare_act32).
struct Act32 {
    const int8_t* xs[4];
    const float* dx[4];
    const float* a2[4];
};

Act32 prepare_tokens32(const MatmulArgs& a, int64_t t0, int n_tok, Act32Format f, int offset,
                       bool split, int64_t nb, int64_t nb_padded) {
    static thread_local ScratchBuffer buffer;
    const size_t per_token = align64(size_t(nb_padded) * 32) + 2 * align64(size_t(nb_padded) * 4);
    uint8_t* base = buffer.get(per_token * size_t(n_tok));
    Act32 p{};
    for (int t = 0; t < n_tok; ++t) {
        uint8_t* b = base + per_token * size_t(t);
        auto* xs = reinterpret_cast<int8_t*>(b);
        auto* dx = reinterpret_cast<float*>(b + align64(size_t(nb_padded) * 32));
        auto* a2 = dx + align64(size_t(nb_padded) * 4) / 4;
        const uint8_t* act = a.act + size_t(t0 + t) * a.act_stride;
        if (split) {
            prepare_act32<true>(act, f, offset, nb, nb_padded, xs, dx, a2);
        } else {
            prepare_act32<false>(act, f, offset, nb, nb_padded, xs, dx, a2);
        }
        p.xs[t] = xs;
        p.dx[t] = dx;
        p.a2[t] = a2;
    }
    return p;
}

// Lanes of 4 (or 8) int32 per block: which scale of the 8 each lane takes.
inline __m512i lanes_of_4(int first) {
    return _mm512_set_epi32(first + 3, first + 3, first + 3, first + 3, first + 2, first + 2,
                            first + 2, first + 2, first + 1, first + 1, first + 1, first + 1, first,
                            first, first, first);
}
inline __m512i lanes_of_8(int first) {
    return _mm512_set_epi32(first + 1, first + 1, first + 1, first + 1, first + 1, first + 1,
                            first + 1, first + 1, first, first, first, first, first, first, first,
                            first);
}

template <const NibbleLayout& L, int T>
void nibble_rows(const MatmulArgs& a, int64_t t0, const Act32& p, int64_t nb) {
    using Plans = NibblePlans<L>;
    constexpr int S = L.block_bytes;
    const int64_t n_chunks = (nb + 7) / 8;
    const int64_t full_chunks = nb / 8;
    const __m512i low4 = _mm512_set1_epi8(15);
    const __m512i e0 = lanes_of_4(0), e1 = lanes_of_4(4);
    alignas(64) uint8_t tail[8 * S];
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const uint8_t* row = a.w + size_t(r) * a.w_row_bytes;
        __m512 acc0[T], acc1[T];
        __m256 acc2[T];
        for (int t = 0; t < T; ++t) {
            acc0[t] = _mm512_setzero_ps();
            acc1[t] = _mm512_setzero_ps();
            acc2[t] = _mm256_setzero_ps();
        }
        for (int64_t c = 0; c < n_chunks; ++c) {
            const uint8_t* q = row + size_t(c) * 8 * S;
            if (c == full_chunks) {  // the last, partial chunk: zero blocks contribute nothing
                std::memset(tail, 0, sizeof tail);
                std::memcpy(tail, q, size_t(nb - 8 * c) * S);
                q = tail;
            }
            prefetch(q + kPrefetch);
            prefetch(q + kPrefetch + 64);
            prefetch(q + kPrefetch + 128);
            const __m512i r0 = _mm512_loadu_si512(q);
            const __m512i r1 = _mm512_loadu_si512(q + 64);
            const __m512i r2 = _mm512_loadu_si512(q + 8 * S - 64);
            const __m512i n0 = gather<Plans::n0>(r0, r1, r2);
            const __m512i n1 = gather<Plans::n1>(r0, r1, r2);
            const __m512i meta = gather<Plans::meta>(r0, r1, r2);
            __m512i lo0 = _mm512_and_si512(n0, low4);
            __m512i hi0 = _mm512_and_si512(_mm512_srli_epi16(n0, 4), low4);
            __m512i lo1 = _mm512_and_si512(n1, low4);
            __m512i hi1 = _mm512_and_si512(_mm512_srli_epi16(n1, 4), low4);
            if constexpr (L.book != nullptr) {
                const __m512i book = _mm512_loadu_si512(Plans::book.v);
                lo0 = _mm512_shuffle_epi8(book, lo0);
                hi0 = _mm512_shuffle_epi8(book, hi0);
                lo1 = _mm512_shuffle_epi8(book, lo1);
                hi1 = _mm512_shuffle_epi8(book, hi1);
            }
            if constexpr (L.qh >= 0) {
                lo0 = add_high_bit(lo0, meta, 0);
                hi0 = add_high_bit(hi0, meta, 1);
                lo1 = add_high_bit(lo1, meta, 2);
                hi1 = add_high_bit(hi1, meta, 3);
            }
            __m256 dw;
            if constexpr (L.e8m0) {
                // 2^(e - 128), exactly as e8m0_half: (e - 1) << 23 in the exponent field, the
                // subnormals 2^-128 and 2^-127 for e = 0, 1.
                const __m256i e = _mm256_cvtepu8_epi32(_mm512_castsi512_si128(meta));
                const __m256i normal =
                    _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
                const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
                dw = _mm256_castsi256_ps(
                    _mm256_blendv_epi8(tiny, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))));
            } else {
                dw = _mm256_cvtph_ps(_mm512_castsi512_si128(meta));
            }
            __m256 w2 = dw;
            if constexpr (L.m >= 0) w2 = _mm256_cvtph_ps(_mm512_extracti32x4_epi32(meta, 1));
            for (int t = 0; t < T; ++t) {
                const int8_t* x = p.xs[t] + 256 * c;
                __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo0, _mm512_load_si512(x));
                s0 = _mm512_dpbusd_epi32(s0, hi0, _mm512_load_si512(x + 64));
                __m512i s1 =
                    _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo1, _mm512_load_si512(x + 128));
                s1 = _mm512_dpbusd_epi32(s1, hi1, _mm512_load_si512(x + 192));
                const __m512 sc =
                    _mm512_castps256_ps512(_mm256_mul_ps(dw, _mm256_load_ps(p.dx[t] + 8 * c)));
                acc0[t] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), _mm512_permutexvar_ps(e0, sc), acc0[t]);
                acc1[t] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_permutexvar_ps(e1, sc), acc1[t]);
                acc2[t] = _mm256_fmadd_ps(w2, _mm256_load_ps(p.a2[t] + 8 * c), acc2[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            a.y[(t0 + t) * a.ldy + r] =
                _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t])) + reduce256(acc2[t]);
        }
    }
}

template <const NibbleLayout& L>
void gemv_nibble(const MatmulArgs& a, Act32Format f) {
    const int64_t nb = a.n_cols / 32;
    const int64_t nb_padded = (nb + 7) / 8 * 8;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        const int n = int(a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4);
        const Act32 p = prepare_tokens32(a, t0, n, f, L.offset, true, nb, nb_padded);
        switch (n) {
            case 1:
                nibble_rows<L, 1>(a, t0, p, nb);
                break;
            case 2:
                nibble_rows<L, 2>(a, t0, p, nb);
                break;
            case 3:
                nibble_rows<L, 3>(a, t0, p, nb);
                break;
            default:
                nibble_rows<L, 4>(a, t0, p, nb);
                break;
        }
    }
}

// ---- Q8_0: 8 blocks per step, codes q + 128 -------------------------------------------------

template <int T>
void q8_0_rows(const MatmulArgs& a, int64_t t0, const Act32& p, int64_t nb) {
    constexpr int S = sizeof(BlockQ8_0);
    const int64_t n_chunks = (nb + 7) / 8;
    const int64_t full_chunks = nb / 8;
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    const __m512i e[4] = {lanes_of_8(0), lanes_of_8(2), lanes_of_8(4), lanes_of_8(6)};
    alignas(64) uint8_t tail[8 * S];
    for (int64_t r = a.r0; r < a.r1; ++r) {
        const uint8_t* row = a.w + size_t(r) * a.w_row_bytes;
        __m512 acc[T][2];
        __m256 acc2[T];
        for (int t = 0; t < T; ++t) {
            acc[t][0] = acc[t][1] = _mm512_setzero_ps();
            acc2[t] = _mm256_setzero_ps();
        }
        for (int64_t c = 0; c < n_chunks; ++c) {
            const uint8_t* q = row + size_t(c) * 8 * S;
            if (c == full_chunks) {
                std::memset(tail, 0, sizeof tail);
                std::memcpy(tail, q, size_t(nb - 8 * c) * S);
                q = tail;
            }
            for (int l = 0; l < 5; ++l) prefetch(q + kPrefetch + 64 * l);
            __m512i codes[4];
            for (int v = 0; v < 4; ++v) {
                const uint8_t* b = q + 2 * v * S + 2;
                const __m512i both = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b))),
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + S)), 1);
                codes[v] = _mm512_xor_si512(both, flip);
            }
            uint64_t d_lo = 0, d_hi = 0;
            for (int k = 0; k < 4; ++k) {
                d_lo |= uint64_t(load_u16(q + k * S)) << (16 * k);
                d_hi |= uint64_t(load_u16(q + (k + 4) * S)) << (16 * k);
            }
            const __m256 dw = _mm256_cvtph_ps(_mm_set_epi64x(int64_t(d_hi), int64_t(d_lo)));
            for (int t = 0; t < T; ++t) {
                const int8_t* x = p.xs[t] + 256 * c;
                const __m512 sc =
                    _mm512_castps256_ps512(_mm256_mul_ps(dw, _mm256_load_ps(p.dx[t] + 8 * c)));
                for (int v = 0; v < 4; ++v) {
                    const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[v],
                                                          _mm512_load_si512(x + 64 * v));
                    acc[t][v & 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                                                    _mm512_permutexvar_ps(e[v], sc), acc[t][v & 1]);
                }
                acc2[t] = _mm256_fmadd_ps(dw, _mm256_load_ps(p.a2[t] + 8 * c), acc2[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            a.y[(t0 + t) * a.ldy + r] =
                _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1])) + reduce256(acc2[t]);
        }
    }
}

}  // namespace

void gemv_q4_0(const MatmulArgs& a) {
    gemv_nibble<kQ4_0>(a, kActQ8_0);
}
void gemv_q4_1(const MatmulArgs& a) {
    gemv_nibble<kQ4_1>(a, kActQ8_1);
}
void gemv_iq4_nl(const MatmulArgs& a) {
    gemv_nibble<kIQ4_NL>(a, kActQ8_0);
}
void gemv_mxfp4(const MatmulArgs& a) {
    gemv_nibble<kMXFP4>(a, kActQ8_0);
}
void gemv_q5_0(const MatmulArgs& a) {
    gemv_nibble<kQ5_0>(a, kActQ8_0);
}
void gemv_q5_1(const MatmulArgs& a) {
    gemv_nibble<kQ5_1>(a, kActQ8_1);
}

void gemv_q8_0(const MatmulArgs& a) {
    const int64_t nb = a.n_cols / 32;
    const int64_t nb_padded = (nb + 7) / 8 * 8;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        const int n = int(a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4);
        const Act32 p = prepare_tokens32(a, t0, n, kActQ8_0, 128, false, nb, nb_padded);
        switch (n) {
            case 1:
                q8_0_rows<1>(a, t0, p, nb);
                break;
            case 2:
                q8_0_rows<2>(a, t0, p, nb);
                break;
            case 3:
                q8_0_rows<3>(a, t0, p, nb);
                break;
            default:
                q8_0_rows<4>(a, t0, p, nb);
                break;
        }
    }
}

}  // namespace mw::x86::vbmi
