// The kernels of the packed layouts (tensor/repack.h), written once for every vector type V
// (AVX2, AVX-VNNI, AVX-512, NEON dotprod): a group of R = V::kLanes rows, one per 32-bit lane.
//
// Decode: per step of a record, one load holds 4 bytes of each of the R rows; a mask or shift
// gives R rows x 4 codes, which one integer dot product multiplies with 4 broadcast activation
// quants. The integer sum of a (sub-)block lands in its row's lane, so the block's scale is one
// float multiply-add for R rows, and a K-quant's mins are one vpdpwssd of R rows' mins (pairs of
// sub-blocks) with the activation's pair sums. No horizontal sums at all. A code's offset (8 for
// Q4_0, 32 for Q6_K) comes back through the activation sums.
//
// Prefill: a group's codes are already interleaved as the GEMM's panel wants them
// (tensor/simd/gemm.h), so a group becomes a panel with one mask or shift per vector plus R rows'
// scales at a time.
#pragma once

#include <type_traits>

#include "tensor/repack.h"
#include "tensor/simd/common.h"

namespace mw::simd {
namespace {

// Tokens per pass over the weights: a verification pass of speculative decoding (the last
// accepted token and k drafts) reads every weight once for k < V::kPassTokens (8 unless V says
// otherwise: 9 where the accumulators of 9 tokens fit the registers, 4 on NEON).
constexpr int kMaxPassTokens = 9;
template <class V>
constexpr int pass_tokens() {
    if constexpr (requires { V::kPassTokens; }) {
        return V::kPassTokens;
    } else {
        return 8;
    }
}

// Bytes ahead of the current record to prefetch.
constexpr int kPackedPrefetch = 4096;

template <class V, int kRecord>
inline void prefetch_record(const uint8_t* rec) {
    for (int l = 0; l < (kRecord + 63) / 64; ++l) V::prefetch(rec + kPackedPrefetch + 64 * l);
}

// Rows of group g (of R rows) that are in [r0, r1), as [lo, hi) within the group.
struct GroupRows {
    int lo, hi;
};
inline GroupRows rows_of_group(int64_t g, int R, int64_t r0, int64_t r1) {
    const int64_t lo = r0 - R * g > 0 ? r0 - R * g : 0;
    const int64_t hi = r1 - R * g < R ? r1 - R * g : R;
    return {int(lo), int(hi)};
}

// ---- Activations -----------------------------------------------------------------------------

// Q8_0 rows (for Q4_0 and Q8_0 weights): per block the float scale and -offset * sum(quants).
struct Q8_0Acts {
    const uint8_t* row[kMaxPassTokens];
    const float* dx[kMaxPassTokens];
    const int32_t* bias[kMaxPassTokens];
};

inline Q8_0Acts prepare_q8_0_acts(const MatmulArgs& a, int64_t t0, int n, int offset) {
    static thread_local ScratchBuffer buffer;
    const int64_t nb = a.n_cols / 32;
    uint8_t* base = buffer.get(size_t(n) * size_t(nb) * 8);
    Q8_0Acts p{};
    for (int t = 0; t < n; ++t) {
        p.row[t] = a.act + size_t(t0 + t) * a.act_stride;
        auto* dx = reinterpret_cast<float*>(base) + size_t(t) * size_t(nb) * 2;
        auto* bias = reinterpret_cast<int32_t*>(dx + nb);
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* block = p.row[t] + size_t(b) * sizeof(BlockQ8_0);
            const auto* q = reinterpret_cast<const int8_t*>(block + 2);
            int sum = 0;
            for (int k = 0; k < 32; ++k) sum += q[k];
            dx[b] = half(load_u16(block));
            bias[b] = -offset * sum;
        }
        p.dx[t] = dx;
        p.bias[t] = bias;
    }
    return p;
}

// Q8_K rows (for the K-quants): per super-block, the sums of each pair of 32-quant sub-blocks
// as 16-bit pairs (sub-blocks 2p and 2p + 1 in one dword) for the mins, and -offset times the
// sum of each 16 quants for the codes' offset.
struct Q8KActs {
    const BlockQ8_K* x[kMaxPassTokens];
    const uint32_t* pair_sums[kMaxPassTokens];
    const int32_t* bias16[kMaxPassTokens];
};

inline Q8KActs prepare_q8_k_acts(const MatmulArgs& a, int64_t t0, int n, int offset) {
    static thread_local ScratchBuffer buffer;
    const int64_t nsb = a.n_cols / 256;
    const size_t per_token = size_t(nsb) * (4 + 16) * 4;
    uint8_t* base = buffer.get(size_t(n) * per_token);
    Q8KActs p{};
    for (int t = 0; t < n; ++t) {
        p.x[t] = reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride);
        auto* pairs = reinterpret_cast<uint32_t*>(base + per_token * size_t(t));
        auto* bias = reinterpret_cast<int32_t*>(pairs + 4 * nsb);
        for (int64_t i = 0; i < nsb; ++i) {
            const int16_t* bs = p.x[t][i].bsums;
            for (int q = 0; q < 4; ++q) {
                const int lo = bs[4 * q] + bs[4 * q + 1], hi = bs[4 * q + 2] + bs[4 * q + 3];
                pairs[4 * i + q] = uint32_t(uint16_t(lo)) | uint32_t(uint16_t(hi)) << 16;
            }
            for (int j = 0; j < 16; ++j) bias[16 * i + j] = -offset * bs[j];
        }
        p.pair_sums[t] = pairs;
        p.bias16[t] = bias;
    }
    return p;
}

// ---- Decoding a record's codes --------------------------------------------------------------

// The 8 scales and 8 mins (6 bits) of R rows from a Q4_K / Q5_K record's scale planes, as bytes:
// scale j of row i at sc[R j + i], likewise mn.
template <class V>
inline void unpack_scale_planes(const uint8_t* planes, uint8_t* sc, uint8_t* mn) {
    using I = typename V::I;
    constexpr int R = V::kLanes;
    const I a = V::load(planes), b = V::load(planes + 4 * R), c = V::load(planes + 8 * R);
    const I low6 = V::set1_i8(63), low4 = V::set1_i8(15), bits45 = V::set1_i8(0x30);
    V::store(sc, V::and_(a, low6));
    V::store(mn, V::and_(b, low6));
    // Top two bits of planes 0-3 / 4-7 (bits 6-7 to 4-5) above the nibbles of planes 8-11.
    V::store(sc + 4 * R, V::select_or(c, low4, V::and_(V::template srl16<2>(a), bits45)));
    V::store(mn + 4 * R,
             V::select_or(V::template srl16<4>(c), low4, V::and_(V::template srl16<2>(b), bits45)));
}

// The low and high nibbles of a step: codes of elements 8q..8q+3 and 8q+4..8q+7.
template <class V>
inline void nibbles(const uint8_t* p, typename V::I* lo, typename V::I* hi) {
    const typename V::I v = V::load(p), low4 = V::set1_i8(15);
    *lo = V::and_(v, low4);
    *hi = V::and_(V::template srl16<4>(v), low4);
}

// Bit 4 of the codes of step q from a Q5_K high-bit vector (see PackedQ5K): lo gets bit 2q,
// hi bit 2q + 1, each moved to bit 4 (16-bit shifts: no byte's bit 4 comes from its neighbour).
template <class V, int q>
inline void add_fifth_bits(typename V::I high, typename V::I* lo, typename V::I* hi) {
    const typename V::I bit4 = V::set1_i8(16);
    constexpr int lo_from = 2 * q, hi_from = 2 * q + 1;
    auto move = [](typename V::I v, auto from) {
        constexpr int f = decltype(from)::value;
        if constexpr (f < 4) {
            return V::template sll16<4 - f>(v);
        } else if constexpr (f > 4) {
            return V::template srl16<f - 4>(v);
        } else {
            return v;
        }
    };
    *lo = V::select_or(move(high, std::integral_constant<int, lo_from>{}), bit4, *lo);
    *hi = V::select_or(move(high, std::integral_constant<int, hi_from>{}), bit4, *hi);
}

// The 4 steps of R rows x 4 codes (q + 32) of a Q6_K sub-block's 16 columns.
template <class V>
inline void q6k_steps(const uint8_t* codes, typename V::I steps[4]) {
    using I = typename V::I;
    constexpr int R = V::kLanes;
    const I low4 = V::set1_i8(15), bits45 = V::set1_i8(0x30);
    const I lo = V::load(codes), hi = V::load(codes + 4 * R), top = V::load(codes + 8 * R);
    // Top bits 0-1, 2-3, 4-5, 6-7 moved to bits 4-5 above the low 4 bits.
    steps[0] = V::select_or(lo, low4, V::and_(V::template sll16<4>(top), bits45));
    steps[1] =
        V::select_or(V::template srl16<4>(lo), low4, V::and_(V::template sll16<2>(top), bits45));
    steps[2] = V::select_or(hi, low4, V::and_(top, bits45));
    steps[3] =
        V::select_or(V::template srl16<4>(hi), low4, V::and_(V::template srl16<2>(top), bits45));
}

// ---- Decode kernels (T <= pass_tokens<V>() tokens per pass over the weights) -----------------

template <class V, int T>
void q4_0_groups(const MatmulArgs& a, int64_t t0, const Q8_0Acts& p) {
    using I = typename V::I;
    using F = typename V::F;
    constexpr int R = V::kLanes;
    using L = PackedQ4_0<R>;
    const int64_t nb = a.n_cols / 32;
    for (int64_t g = a.r0 / R; g * R < a.r1; ++g) {
        const uint8_t* group = a.w + size_t(g) * R * a.w_row_bytes;
        F acc[T];
        for (int t = 0; t < T; ++t) acc[t] = V::zerof();
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* rec = group + size_t(b) * L::kRecord;
            prefetch_record<V, L::kRecord>(rec);
            DotChain<V, 15> s[T];
            for (int t = 0; t < T; ++t) s[t] = DotChain<V, 15>(V::set1_i32(p.bias[t][b]));
            for (int q = 0; q < 4; ++q) {
                I lo, hi;
                nibbles<V>(rec + L::kCodes + 4 * R * q, &lo, &hi);
                for (int t = 0; t < T; ++t) {
                    const uint8_t* xq = p.row[t] + size_t(b) * sizeof(BlockQ8_0) + 2 + 8 * q;
                    s[t].add(lo, V::bcast32(xq));
                    s[t].add(hi, V::bcast32(xq + 4));
                }
            }
            const F d = V::load_halfs(rec + L::kD);
            for (int t = 0; t < T; ++t) {
                acc[t] = V::fmadd(V::cvt(s[t].result()), V::mul(d, V::set1(p.dx[t][b])), acc[t]);
            }
        }
        const GroupRows rows = rows_of_group(g, R, a.r0, a.r1);
        for (int t = 0; t < T; ++t)
            V::store_rows(a.y + (t0 + t) * a.ldy + R * g, acc[t], rows.lo, rows.hi);
    }
}

template <class V, int T>
void q8_0_groups(const MatmulArgs& a, int64_t t0, const Q8_0Acts& p) {
    using I = typename V::I;
    using F = typename V::F;
    constexpr int R = V::kLanes;
    using L = PackedQ8_0<R>;
    const int64_t nb = a.n_cols / 32;
    for (int64_t g = a.r0 / R; g * R < a.r1; ++g) {
        const uint8_t* group = a.w + size_t(g) * R * a.w_row_bytes;
        F acc[T];
        for (int t = 0; t < T; ++t) acc[t] = V::zerof();
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* rec = group + size_t(b) * L::kRecord;
            prefetch_record<V, L::kRecord>(rec);
            I s[T];
            for (int t = 0; t < T; ++t) s[t] = V::set1_i32(p.bias[t][b]);
            for (int k = 0; k < 8; ++k) {
                const I w = V::load(rec + L::kCodes + 4 * R * k);
                for (int t = 0; t < T; ++t) {
                    const uint8_t* xq = p.row[t] + size_t(b) * sizeof(BlockQ8_0) + 2 + 4 * k;
                    s[t] = V::dot_signed(s[t], w, V::bcast32(xq));
                }
            }
            const F d = V::load_halfs(rec + L::kD);
            for (int t = 0; t < T; ++t) {
                acc[t] = V::fmadd(V::cvt(s[t]), V::mul(d, V::set1(p.dx[t][b])), acc[t]);
            }
        }
        const GroupRows rows = rows_of_group(g, R, a.r0, a.r1);
        for (int t = 0; t < T; ++t)
            V::store_rows(a.y + (t0 + t) * a.ldy + R * g, acc[t], rows.lo, rows.hi);
    }
}

// Q4_K and Q5_K (kFifth): 8 sub-blocks of 32, 6-bit scales and mins.
template <class V, int T, bool kFifth>
void q45k_groups(const MatmulArgs& a, int64_t t0, const Q8KActs& p) {
    using I = typename V::I;
    using F = typename V::F;
    constexpr int R = V::kLanes;
    constexpr int kRecord = kFifth ? PackedQ5K<R>::kRecord : PackedQ4K<R>::kRecord;
    constexpr int kCodes = kFifth ? PackedQ5K<R>::kCodes : PackedQ4K<R>::kCodes;
    constexpr int kMaxCode = kFifth ? 31 : 15;
    using Chain = DotChain<V, kMaxCode>;
    const int64_t nsb = a.n_cols / 256;
    alignas(64) uint8_t sc[8 * R], mn[8 * R];
    for (int64_t g = a.r0 / R; g * R < a.r1; ++g) {
        const uint8_t* group = a.w + size_t(g) * R * a.w_row_bytes;
        F acc[T];
        for (int t = 0; t < T; ++t) acc[t] = V::zerof();
        for (int64_t i = 0; i < nsb; ++i) {
            const uint8_t* rec = group + size_t(i) * kRecord;
            unpack_scale_planes<V>(rec + PackedQ4K<R>::kScales, sc, mn);
            F sacc[T];
            I macc[T];
            for (int t = 0; t < T; ++t) {
                sacc[t] = V::zerof();
                macc[t] = V::zero();
            }
            for (int j = 0; j < 8; ++j) {
                const uint8_t* codes = rec + kCodes + 16 * R * j;
                for (int l = 0; l < R / 4; ++l) V::prefetch(codes + kPackedPrefetch + 64 * l);
                I high = V::zero();
                if constexpr (kFifth) high = V::load(rec + PackedQ5K<R>::kHigh + 4 * R * j);
                Chain s[T];
                auto step = [&](auto qc) {
                    constexpr int q = decltype(qc)::value;
                    I lo, hi;
                    nibbles<V>(codes + 4 * R * q, &lo, &hi);
                    if constexpr (kFifth) add_fifth_bits<V, q>(high, &lo, &hi);
                    for (int t = 0; t < T; ++t) {
                        const int8_t* xq = p.x[t][i].qs + 32 * j + 8 * q;
                        s[t].add_bcast(lo, xq);
                        s[t].add_bcast(hi, xq + 4);
                    }
                };
                step(std::integral_constant<int, 0>{});
                step(std::integral_constant<int, 1>{});
                step(std::integral_constant<int, 2>{});
                step(std::integral_constant<int, 3>{});
                const F scale = V::load_u8(sc + R * j);
                for (int t = 0; t < T; ++t)
                    sacc[t] = V::fmadd(V::cvt(s[t].result()), scale, sacc[t]);
            }
            for (int q = 0; q < 4; ++q) {
                const I mins = V::u8_pairs(mn + R * (2 * q), mn + R * (2 * q + 1));
                for (int t = 0; t < T; ++t) {
                    macc[t] = V::dpwssd(macc[t], mins, V::set1_i32(int(p.pair_sums[t][4 * i + q])));
                }
            }
            const F d = V::load_halfs(rec + PackedQ4K<R>::kD);
            const F dmin = V::load_halfs(rec + PackedQ4K<R>::kDmin);
            for (int t = 0; t < T; ++t) {
                const F xd = V::set1(p.x[t][i].d);
                acc[t] = V::fmadd(sacc[t], V::mul(d, xd), acc[t]);
                acc[t] = V::fnmadd(V::cvt(macc[t]), V::mul(dmin, xd), acc[t]);
            }
        }
        const GroupRows rows = rows_of_group(g, R, a.r0, a.r1);
        for (int t = 0; t < T; ++t)
            V::store_rows(a.y + (t0 + t) * a.ldy + R * g, acc[t], rows.lo, rows.hi);
    }
}

template <class V, int T>
void q6k_groups(const MatmulArgs& a, int64_t t0, const Q8KActs& p) {
    using I = typename V::I;
    using F = typename V::F;
    constexpr int R = V::kLanes;
    using L = PackedQ6K<R>;
    using Chain = DotChain<V, 63>;
    const int64_t nsb = a.n_cols / 256;
    for (int64_t g = a.r0 / R; g * R < a.r1; ++g) {
        const uint8_t* group = a.w + size_t(g) * R * a.w_row_bytes;
        F acc[T];
        for (int t = 0; t < T; ++t) acc[t] = V::zerof();
        for (int64_t i = 0; i < nsb; ++i) {
            const uint8_t* rec = group + size_t(i) * L::kRecord;
            F sacc[T];
            for (int t = 0; t < T; ++t) sacc[t] = V::zerof();
            for (int j = 0; j < 16; ++j) {
                const uint8_t* codes = rec + L::kCodes + 12 * R * j;
                for (int l = 0; l < (12 * R + 63) / 64; ++l)
                    V::prefetch(codes + kPackedPrefetch + 64 * l);
                I steps[4];
                q6k_steps<V>(codes, steps);
                const F scale =
                    V::load_s8(reinterpret_cast<const int8_t*>(rec + L::kScales + R * j));
                for (int t = 0; t < T; ++t) {
                    const int8_t* xq = p.x[t][i].qs + 16 * j;
                    Chain s(V::set1_i32(p.bias16[t][16 * i + j]));
                    for (int k = 0; k < 4; ++k) s.add(steps[k], V::bcast32(xq + 4 * k));
                    sacc[t] = V::fmadd(V::cvt(s.result()), scale, sacc[t]);
                }
            }
            const F d = V::load_halfs(rec + L::kD);
            for (int t = 0; t < T; ++t) {
                acc[t] = V::fmadd(sacc[t], V::mul(d, V::set1(p.x[t][i].d)), acc[t]);
            }
        }
        const GroupRows rows = rows_of_group(g, R, a.r0, a.r1);
        for (int t = 0; t < T; ++t)
            V::store_rows(a.y + (t0 + t) * a.ldy + R * g, acc[t], rows.lo, rows.hi);
    }
}

// Kernel<n>::run for 1 <= n <= T.
template <template <int> class Kernel, int T, class Acts>
void run_tokens(int n, const MatmulArgs& a, int64_t t0, const Acts& p) {
    if constexpr (T > 1) {
        if (n < T) return run_tokens<Kernel, T - 1>(n, a, t0, p);
    }
    Kernel<T>::run(a, t0, p);
}

// Runs kernel<T> over the tokens, up to kPass per pass, with activations from prepare(t0, n).
template <template <int> class Kernel, int kPass, class Prepare>
void by_tokens(const MatmulArgs& a, Prepare prepare) {
    static_assert(kPass <= kMaxPassTokens);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kPass) {
        const int n = int(a.n_tokens - t0 < kPass ? a.n_tokens - t0 : kPass);
        run_tokens<Kernel, kPass>(n, a, t0, prepare(t0, n));
    }
}

template <class V>
struct PackedGemv {
    template <int T>
    struct Q4_0 {
        static void run(const MatmulArgs& a, int64_t t0, const Q8_0Acts& p) {
            q4_0_groups<V, T>(a, t0, p);
        }
    };
    template <int T>
    struct Q8_0 {
        static void run(const MatmulArgs& a, int64_t t0, const Q8_0Acts& p) {
            q8_0_groups<V, T>(a, t0, p);
        }
    };
    template <int T>
    struct Q4K {
        static void run(const MatmulArgs& a, int64_t t0, const Q8KActs& p) {
            q45k_groups<V, T, false>(a, t0, p);
        }
    };
    template <int T>
    struct Q5K {
        static void run(const MatmulArgs& a, int64_t t0, const Q8KActs& p) {
            q45k_groups<V, T, true>(a, t0, p);
        }
    };
    template <int T>
    struct Q6K {
        static void run(const MatmulArgs& a, int64_t t0, const Q8KActs& p) {
            q6k_groups<V, T>(a, t0, p);
        }
    };

    static void q4_0(const MatmulArgs& a) {
        by_tokens<Q4_0, pass_tokens<V>()>(
            a, [&](int64_t t0, int n) { return prepare_q8_0_acts(a, t0, n, 8); });
    }
    static void q8_0(const MatmulArgs& a) {
        by_tokens<Q8_0, pass_tokens<V>()>(
            a, [&](int64_t t0, int n) { return prepare_q8_0_acts(a, t0, n, V::kSignedBias); });
    }
    static void q4_k(const MatmulArgs& a) {
        by_tokens<Q4K, pass_tokens<V>()>(
            a, [&](int64_t t0, int n) { return prepare_q8_k_acts(a, t0, n, 0); });
    }
    static void q5_k(const MatmulArgs& a) {
        by_tokens<Q5K, pass_tokens<V>()>(
            a, [&](int64_t t0, int n) { return prepare_q8_k_acts(a, t0, n, 0); });
    }
    static void q6_k(const MatmulArgs& a) {
        by_tokens<Q6K, pass_tokens<V>()>(
            a, [&](int64_t t0, int n) { return prepare_q8_k_acts(a, t0, n, 32); });
    }
};

// ---- Prefill: a group of R rows as a GEMM panel (tensor/x86/gemm.h) ------------------------
//
// Panel of a sub-block of bl columns: codes [bl / 4 steps][R rows][4 bytes], then R float
// scales, then (types with mins) R float mins.

template <class V>
struct PackedPanels {
    using I = typename V::I;
    using F = typename V::F;
    static constexpr int R = V::kLanes;

    static void q4_0(const MatmulArgs& a, int64_t g, uint8_t* panel) {
        using L = PackedQ4_0<R>;
        constexpr size_t kStride = 32 * R + 4 * R;
        const uint8_t* group = a.w + size_t(g) * R * a.w_row_bytes;
        for (int64_t b = 0; b < a.n_cols / 32; ++b) {
            const uint8_t* rec = group + size_t(b) * L::kRecord;
            uint8_t* out = panel + size_t(b) * kStride;
            for (int q = 0; q < 4; ++q) {
                I lo, hi;
                nibbles<V>(rec + L::kCodes + 4 * R * q, &lo, &hi);
                V::store(out + 8 * R * q, lo);
                V::store(out + 8 * R * q + 4 * R, hi);
            }
            V::storef(reinterpret_cast<float*>(out + 32 * R), V::load_halfs(rec + L::kD));
        }
    }

    // Q8_0 panels hold q + 128 (the panel format's codes are unsigned).
    static void q8_0(const MatmulArgs& a, int64_t g, uint8_t* panel) {
        using L = PackedQ8_0<R>;
        constexpr size_t kStride = 32 * R + 4 * R;
        const uint8_t* group = a.w + size_t(g) * R * a.w_row_bytes;
        const I flip = V::set1_i8(char(0x80));
        for (int64_t b = 0; b < a.n_cols / 32; ++b) {
            const uint8_t* rec = group + size_t(b) * L::kRecord;
            uint8_t* out = panel + size_t(b) * kStride;
            for (int k = 0; k < 8; ++k) {
                V::store(out + 4 * R * k, V::xor_(V::load(rec + L::kCodes + 4 * R * k), flip));
            }
            V::storef(reinterpret_cast<float*>(out + 32 * R), V::load_halfs(rec + L::kD));
        }
    }

    template <bool kFifth>
    static void q45_k(const MatmulArgs& a, int64_t g, uint8_t* panel) {
        constexpr int kRecord = kFifth ? PackedQ5K<R>::kRecord : PackedQ4K<R>::kRecord;
        constexpr int kCodes = kFifth ? PackedQ5K<R>::kCodes : PackedQ4K<R>::kCodes;
        constexpr size_t kStride = 32 * R + 8 * R;  // codes, scales, mins
        const uint8_t* group = a.w + size_t(g) * R * a.w_row_bytes;
        alignas(64) uint8_t sc[8 * R], mn[8 * R];
        for (int64_t i = 0; i < a.n_cols / 256; ++i) {
            const uint8_t* rec = group + size_t(i) * kRecord;
            unpack_scale_planes<V>(rec + PackedQ4K<R>::kScales, sc, mn);
            const F d = V::load_halfs(rec + PackedQ4K<R>::kD);
            const F dmin = V::load_halfs(rec + PackedQ4K<R>::kDmin);
            for (int j = 0; j < 8; ++j) {
                uint8_t* out = panel + size_t(8 * i + j) * kStride;
                const uint8_t* codes = rec + kCodes + 16 * R * j;
                I high = V::zero();
                if constexpr (kFifth) high = V::load(rec + PackedQ5K<R>::kHigh + 4 * R * j);
                auto step = [&](auto qc) {
                    constexpr int q = decltype(qc)::value;
                    I lo, hi;
                    nibbles<V>(codes + 4 * R * q, &lo, &hi);
                    if constexpr (kFifth) add_fifth_bits<V, q>(high, &lo, &hi);
                    V::store(out + 8 * R * q, lo);
                    V::store(out + 8 * R * q + 4 * R, hi);
                };
                step(std::integral_constant<int, 0>{});
                step(std::integral_constant<int, 1>{});
                step(std::integral_constant<int, 2>{});
                step(std::integral_constant<int, 3>{});
                V::storef(reinterpret_cast<float*>(out + 32 * R),
                          V::mul(d, V::load_u8(sc + R * j)));
                V::storef(reinterpret_cast<float*>(out + 36 * R),
                          V::mul(V::sub(V::zerof(), dmin), V::load_u8(mn + R * j)));
            }
        }
    }
    static void q4_k(const MatmulArgs& a, int64_t g, uint8_t* panel) { q45_k<false>(a, g, panel); }
    static void q5_k(const MatmulArgs& a, int64_t g, uint8_t* panel) { q45_k<true>(a, g, panel); }

    static void q6_k(const MatmulArgs& a, int64_t g, uint8_t* panel) {
        using L = PackedQ6K<R>;
        constexpr size_t kStride = 16 * R + 4 * R;
        const uint8_t* group = a.w + size_t(g) * R * a.w_row_bytes;
        for (int64_t i = 0; i < a.n_cols / 256; ++i) {
            const uint8_t* rec = group + size_t(i) * L::kRecord;
            const F d = V::load_halfs(rec + L::kD);
            for (int j = 0; j < 16; ++j) {
                uint8_t* out = panel + size_t(16 * i + j) * kStride;
                I steps[4];
                q6k_steps<V>(rec + L::kCodes + 12 * R * j, steps);
                for (int k = 0; k < 4; ++k) V::store(out + 4 * R * k, steps[k]);
                V::storef(reinterpret_cast<float*>(out + 16 * R),
                          V::mul(d, V::load_s8(reinterpret_cast<const int8_t*>(rec + L::kScales +
                                                                               R * j))));
            }
        }
    }
};

}  // namespace
}  // namespace mw::simd
