// AVX-512 kernels of the packed layouts (tensor/repack.h): 16 rows, one per 32-bit lane.
//
// Per sub-block of 32 columns: four 64-byte loads hold 16 rows x 32 codes as nibbles; each mask
// or shift gives 16 rows x 4 codes, which one vpdpbusd multiplies with 4 broadcast activation
// quants. The integer sum of a sub-block lands in its row's lane, so the sub-block scale is one
// float multiply-add for 16 rows, and the mins term is a vpdpwssd of 16 rows' mins (pairs of
// sub-blocks) with the activation's pair sums. No horizontal sums at all. Q4_0 and Q6_K work the
// same way (Q6_K's 6-bit codes are rebuilt from a nibble and two top bits per code; the codes'
// offsets, 8 and 32, come back through the activation sums).
#include "tensor/kernels_avx512.h"
#include "tensor/kernels_x86_common.h"
#include "tensor/repack.h"

namespace mw::avx512 {
namespace {

using namespace x86;

constexpr int kPrefetch = 4096;

inline __m512i bcast4(const int8_t* p) {
    return _mm512_set1_epi32(load_i32(p));
}

// vpermb indexes: byte 0 of dword r takes byte r of 128-bit lane L (a scale of row r), or bytes
// 0 and 2 take lanes 2p and 2p + 1 (two sub-blocks' mins as 16-bit words).
struct SpreadIndexes {
    alignas(64) uint8_t lane[4][64];
    alignas(64) uint8_t pair[2][64];
};
constexpr SpreadIndexes make_spread() {
    SpreadIndexes s{};
    for (int r = 0; r < 16; ++r) {
        for (int l = 0; l < 4; ++l) s.lane[l][4 * r] = uint8_t(16 * l + r);
        for (int p = 0; p < 2; ++p) {
            s.pair[p][4 * r] = uint8_t(16 * (2 * p) + r);
            s.pair[p][4 * r + 2] = uint8_t(16 * (2 * p + 1) + r);
        }
    }
    return s;
}
constexpr SpreadIndexes kSpread = make_spread();
constexpr __mmask64 kByte0 = 0x1111111111111111ull;
constexpr __mmask64 kBytes02 = 0x5555555555555555ull;

// The 8 scales and 8 mins of 16 rows from the scale planes: sc[h] lane L = scale 4h + L of the
// 16 rows (bytes), likewise m[h].
inline void unpack_scales(const uint8_t* planes, __m512i sc[2], __m512i m[2]) {
    const __m512i a = _mm512_loadu_si512(planes), b = _mm512_loadu_si512(planes + 64),
                  c = _mm512_loadu_si512(planes + 128);
    const __m512i low6 = _mm512_set1_epi8(63), low4 = _mm512_set1_epi8(15),
                  bits45 = _mm512_set1_epi8(0x30);
    sc[0] = _mm512_and_si512(a, low6);
    m[0] = _mm512_and_si512(b, low6);
    // Top two bits of planes 0-3 / 4-7 (bits 6-7 to 4-5) under the nibbles of planes 8-11.
    sc[1] =
        _mm512_ternarylogic_epi32(c, _mm512_and_si512(_mm512_srli_epi16(a, 2), bits45), low4, 0xEC);
    m[1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(c, 4),
                                     _mm512_and_si512(_mm512_srli_epi16(b, 2), bits45), low4, 0xEC);
}

inline __m512 scale_of(const __m512i sc[2], int j) {
    const __m512i idx = _mm512_load_si512(kSpread.lane[j % 4]);
    return _mm512_cvtepi32_ps(_mm512_maskz_permutexvar_epi8(kByte0, idx, sc[j / 4]));
}

// Per token: its Q8_K row and, per super-block, the sums of each pair of 32-quant sub-blocks
// packed as 16-bit pairs (sub-blocks 2p and 2p + 1 in one dword).
struct PackedActs {
    const BlockQ8_K* x[4];
    const uint32_t* pair_sums[4];
};

PackedActs prepare(const MatmulArgs& a, int64_t t0, int n) {
    static thread_local ScratchBuffer buffer;
    const int64_t nsb = a.n_cols / 256;
    auto* sums = reinterpret_cast<uint32_t*>(buffer.get(size_t(n) * size_t(nsb) * 16));
    PackedActs p{};
    for (int t = 0; t < n; ++t) {
        p.x[t] = reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride);
        uint32_t* out = sums + size_t(t) * size_t(nsb) * 4;
        for (int64_t i = 0; i < nsb; ++i) {
            const int16_t* bs = p.x[t][i].bsums;
            for (int q = 0; q < 4; ++q) {
                const int lo = bs[4 * q] + bs[4 * q + 1], hi = bs[4 * q + 2] + bs[4 * q + 3];
                out[4 * i + q] = uint32_t(uint16_t(lo)) | uint32_t(uint16_t(hi)) << 16;
            }
        }
        p.pair_sums[t] = out;
    }
    return p;
}

// Rows of group g that are in [r0, r1).
inline __mmask16 rows_in_range(int64_t g, int64_t r0, int64_t r1) {
    const int64_t lo = r0 - 16 * g > 0 ? r0 - 16 * g : 0;
    const int64_t hi = r1 - 16 * g < 16 ? r1 - 16 * g : 16;
    return __mmask16(((1u << hi) - 1) & ~((1u << lo) - 1));
}

template <int T>
void q4k_x16_groups(const MatmulArgs& a, int64_t t0, const PackedActs& p) {
    const int64_t nsb = a.n_cols / 256;
    const size_t group_bytes = kPackRows * a.w_row_bytes;
    const __m512i low4 = _mm512_set1_epi8(15);
    for (int64_t g = a.r0 / kPackRows; g * kPackRows < a.r1; ++g) {
        const uint8_t* group = a.w + size_t(g) * group_bytes;
        __m512 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
        for (int64_t i = 0; i < nsb; ++i) {
            const uint8_t* rec = group + size_t(i) * PackedQ4K::kRecord;
            __m512i sc[2], mn[2];
            unpack_scales(rec + PackedQ4K::kScales, sc, mn);
            __m512 sacc[T];
            __m512i macc[T];
            for (int t = 0; t < T; ++t) {
                sacc[t] = _mm512_setzero_ps();
                macc[t] = _mm512_setzero_si512();
            }
            for (int j = 0; j < 8; ++j) {
                const uint8_t* codes = rec + PackedQ4K::kCodes + 256 * j;
                for (int l = 0; l < 4; ++l) {
                    _mm_prefetch(reinterpret_cast<const char*>(codes + kPrefetch + 64 * l),
                                 _MM_HINT_T0);
                }
                __m512i s_lo[T], s_hi[T];
                for (int t = 0; t < T; ++t) s_lo[t] = s_hi[t] = _mm512_setzero_si512();
                for (int q = 0; q < 4; ++q) {
                    const __m512i v = _mm512_loadu_si512(codes + 64 * q);
                    const __m512i lo = _mm512_and_si512(v, low4);
                    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
                    for (int t = 0; t < T; ++t) {
                        const int8_t* xq = p.x[t][i].qs + 32 * j + 8 * q;
                        s_lo[t] = _mm512_dpbusd_epi32(s_lo[t], lo, bcast4(xq));
                        s_hi[t] = _mm512_dpbusd_epi32(s_hi[t], hi, bcast4(xq + 4));
                    }
                }
                const __m512 scale = scale_of(sc, j);
                for (int t = 0; t < T; ++t) {
                    sacc[t] = _mm512_fmadd_ps(
                        _mm512_cvtepi32_ps(_mm512_add_epi32(s_lo[t], s_hi[t])), scale, sacc[t]);
                }
            }
            for (int q = 0; q < 4; ++q) {
                const __m512i mins = _mm512_maskz_permutexvar_epi8(
                    kBytes02, _mm512_load_si512(kSpread.pair[q % 2]), mn[q / 2]);
                for (int t = 0; t < T; ++t) {
                    macc[t] = _mm512_dpwssd_epi32(
                        macc[t], mins, _mm512_set1_epi32(int(p.pair_sums[t][4 * i + q])));
                }
            }
            const __m512 d = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + PackedQ4K::kD)));
            const __m512 dmin = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + PackedQ4K::kDmin)));
            for (int t = 0; t < T; ++t) {
                const __m512 xd = _mm512_set1_ps(p.x[t][i].d);
                acc[t] = _mm512_fmadd_ps(sacc[t], _mm512_mul_ps(d, xd), acc[t]);
                acc[t] =
                    _mm512_fnmadd_ps(_mm512_cvtepi32_ps(macc[t]), _mm512_mul_ps(dmin, xd), acc[t]);
            }
        }
        const __mmask16 m = rows_in_range(g, a.r0, a.r1);
        for (int t = 0; t < T; ++t) {
            _mm512_mask_storeu_ps(a.y + (t0 + t) * a.ldy + kPackRows * g, m, acc[t]);
        }
    }
}

// Prefill: a group's codes are already interleaved as the panel wants them, so packing is one
// mask or shift per 64 codes plus the scales of 16 rows at a time.
void pack_group_q4_k(const MatmulArgs& a, int64_t g, uint8_t* panel) {
    const int64_t nsb = a.n_cols / 256;
    const uint8_t* group = a.w + size_t(g) * kPackRows * a.w_row_bytes;
    constexpr size_t kStride = 32 * 16 + 64 + 64;  // the Q4_K panel: codes, scales, mins
    const __m512i low4 = _mm512_set1_epi8(15);
    for (int64_t i = 0; i < nsb; ++i) {
        const uint8_t* rec = group + size_t(i) * PackedQ4K::kRecord;
        __m512i sc[2], mn[2];
        unpack_scales(rec + PackedQ4K::kScales, sc, mn);
        const __m512 d = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + PackedQ4K::kD)));
        const __m512 dmin = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + PackedQ4K::kDmin)));
        for (int j = 0; j < 8; ++j) {
            uint8_t* p = panel + size_t(8 * i + j) * kStride;
            const uint8_t* codes = rec + PackedQ4K::kCodes + 256 * j;
            for (int q = 0; q < 4; ++q) {
                const __m512i v = _mm512_loadu_si512(codes + 64 * q);
                _mm512_store_si512(p + 128 * q, _mm512_and_si512(v, low4));
                _mm512_store_si512(p + 128 * q + 64,
                                   _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
            }
            _mm512_store_ps(reinterpret_cast<float*>(p + 512), _mm512_mul_ps(d, scale_of(sc, j)));
            const __m512 m = scale_of(mn, j);
            _mm512_store_ps(reinterpret_cast<float*>(p + 576),
                            _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), dmin), m));
        }
    }
}

void gemv_q4_k_x16(const MatmulArgs& a) {
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        const int n = int(a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4);
        const PackedActs p = prepare(a, t0, n);
        switch (n) {
            case 1:
                q4k_x16_groups<1>(a, t0, p);
                break;
            case 2:
                q4k_x16_groups<2>(a, t0, p);
                break;
            case 3:
                q4k_x16_groups<3>(a, t0, p);
                break;
            default:
                q4k_x16_groups<4>(a, t0, p);
                break;
        }
    }
}

// ---- Q4_0 x16 ---------------------------------------------------------------------------

// Per token: the Q8_0 row, and per block its float scale and -8 * sum(quants).
struct Q4_0Acts {
    const uint8_t* row[4];
    const float* dx[4];
    const int32_t* bias[4];
};

Q4_0Acts prepare_q4_0(const MatmulArgs& a, int64_t t0, int n) {
    static thread_local ScratchBuffer buffer;
    const int64_t nb = a.n_cols / 32;
    uint8_t* base = buffer.get(size_t(n) * size_t(nb) * 8);
    Q4_0Acts p{};
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
            bias[b] = -8 * sum;
        }
        p.dx[t] = dx;
        p.bias[t] = bias;
    }
    return p;
}

template <int T>
void q4_0_x16_groups(const MatmulArgs& a, int64_t t0, const Q4_0Acts& p) {
    const int64_t nb = a.n_cols / 32;
    const size_t group_bytes = kPackRows * a.w_row_bytes;
    const __m512i low4 = _mm512_set1_epi8(15);
    for (int64_t g = a.r0 / kPackRows; g * kPackRows < a.r1; ++g) {
        const uint8_t* group = a.w + size_t(g) * group_bytes;
        __m512 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* rec = group + size_t(b) * PackedQ4_0::kRecord;
            for (int l = 0; l < 5; ++l)
                _mm_prefetch(reinterpret_cast<const char*>(rec + kPrefetch + 64 * l), _MM_HINT_T0);
            __m512i s_lo[T], s_hi[T];
            for (int t = 0; t < T; ++t) {
                s_lo[t] = _mm512_set1_epi32(p.bias[t][b]);
                s_hi[t] = _mm512_setzero_si512();
            }
            for (int q = 0; q < 4; ++q) {
                const __m512i v = _mm512_loadu_si512(rec + PackedQ4_0::kCodes + 64 * q);
                const __m512i lo = _mm512_and_si512(v, low4);
                const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
                for (int t = 0; t < T; ++t) {
                    const auto* xq = reinterpret_cast<const int8_t*>(
                                         p.row[t] + size_t(b) * sizeof(BlockQ8_0) + 2) +
                                     8 * q;
                    s_lo[t] = _mm512_dpbusd_epi32(s_lo[t], lo, bcast4(xq));
                    s_hi[t] = _mm512_dpbusd_epi32(s_hi[t], hi, bcast4(xq + 4));
                }
            }
            const __m512 d = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + PackedQ4_0::kD)));
            for (int t = 0; t < T; ++t) {
                const __m512 s = _mm512_cvtepi32_ps(_mm512_add_epi32(s_lo[t], s_hi[t]));
                acc[t] = _mm512_fmadd_ps(s, _mm512_mul_ps(d, _mm512_set1_ps(p.dx[t][b])), acc[t]);
            }
        }
        const __mmask16 m = rows_in_range(g, a.r0, a.r1);
        for (int t = 0; t < T; ++t)
            _mm512_mask_storeu_ps(a.y + (t0 + t) * a.ldy + kPackRows * g, m, acc[t]);
    }
}

void pack_group_q4_0(const MatmulArgs& a, int64_t g, uint8_t* panel) {
    const int64_t nb = a.n_cols / 32;
    const uint8_t* group = a.w + size_t(g) * kPackRows * a.w_row_bytes;
    constexpr size_t kStride = 32 * 16 + 64;  // the Q4_0 panel: codes, scales
    const __m512i low4 = _mm512_set1_epi8(15);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* rec = group + size_t(b) * PackedQ4_0::kRecord;
        uint8_t* out = panel + size_t(b) * kStride;
        for (int q = 0; q < 4; ++q) {
            const __m512i v = _mm512_loadu_si512(rec + PackedQ4_0::kCodes + 64 * q);
            _mm512_store_si512(out + 128 * q, _mm512_and_si512(v, low4));
            _mm512_store_si512(out + 128 * q + 64, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
        }
        _mm512_store_ps(reinterpret_cast<float*>(out + 512),
                        _mm512_cvtph_ps(_mm256_loadu_si256(
                            reinterpret_cast<const __m256i*>(rec + PackedQ4_0::kD))));
    }
}

void gemv_q4_0_x16(const MatmulArgs& a) {
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        const int n = int(a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4);
        const Q4_0Acts p = prepare_q4_0(a, t0, n);
        switch (n) {
            case 1:
                q4_0_x16_groups<1>(a, t0, p);
                break;
            case 2:
                q4_0_x16_groups<2>(a, t0, p);
                break;
            case 3:
                q4_0_x16_groups<3>(a, t0, p);
                break;
            default:
                q4_0_x16_groups<4>(a, t0, p);
                break;
        }
    }
}

// ---- Q6_K x16 ---------------------------------------------------------------------------

// The 4 steps of 16 rows x 4 codes (q + 32) of sub-block j's 16 columns.
inline void q6k_steps(const uint8_t* codes, __m512i steps[4]) {
    const __m512i low4 = _mm512_set1_epi8(15), bits45 = _mm512_set1_epi8(0x30);
    const __m512i lo = _mm512_loadu_si512(codes), hi = _mm512_loadu_si512(codes + 64),
                  top = _mm512_loadu_si512(codes + 128);
    // Top bits 0-1, 2-3, 4-5, 6-7 moved to bits 4-5 under the low 4 bits.
    steps[0] = _mm512_ternarylogic_epi32(lo, _mm512_and_si512(_mm512_slli_epi16(top, 4), bits45),
                                         low4, 0xEC);
    steps[1] = _mm512_ternarylogic_epi32(
        _mm512_srli_epi16(lo, 4), _mm512_and_si512(_mm512_slli_epi16(top, 2), bits45), low4, 0xEC);
    steps[2] = _mm512_ternarylogic_epi32(hi, _mm512_and_si512(top, bits45), low4, 0xEC);
    steps[3] = _mm512_ternarylogic_epi32(
        _mm512_srli_epi16(hi, 4), _mm512_and_si512(_mm512_srli_epi16(top, 2), bits45), low4, 0xEC);
}

inline __m512 q6k_scale(const uint8_t* rec, int j) {
    const __m128i sc =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + PackedQ6K::kScales + 16 * j));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc));
}

// Per token: the Q8_K row and, per sub-block of 16, -32 * its sum of quants.
struct Q6KActs {
    const BlockQ8_K* x[4];
    const int32_t* bias[4];
};

Q6KActs prepare_q6_k(const MatmulArgs& a, int64_t t0, int n) {
    static thread_local ScratchBuffer buffer;
    const int64_t nsb = a.n_cols / 256;
    auto* base = reinterpret_cast<int32_t*>(buffer.get(size_t(n) * size_t(nsb) * 64));
    Q6KActs p{};
    for (int t = 0; t < n; ++t) {
        p.x[t] = reinterpret_cast<const BlockQ8_K*>(a.act + size_t(t0 + t) * a.act_stride);
        int32_t* bias = base + size_t(t) * size_t(nsb) * 16;
        for (int64_t i = 0; i < nsb; ++i) {
            for (int j = 0; j < 16; ++j) bias[16 * i + j] = -32 * p.x[t][i].bsums[j];
        }
        p.bias[t] = bias;
    }
    return p;
}

template <int T>
void q6k_x16_groups(const MatmulArgs& a, int64_t t0, const Q6KActs& p) {
    const int64_t nsb = a.n_cols / 256;
    const size_t group_bytes = kPackRows * a.w_row_bytes;
    for (int64_t g = a.r0 / kPackRows; g * kPackRows < a.r1; ++g) {
        const uint8_t* group = a.w + size_t(g) * group_bytes;
        __m512 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
        for (int64_t i = 0; i < nsb; ++i) {
            const uint8_t* rec = group + size_t(i) * PackedQ6K::kRecord;
            __m512 sacc[T];
            for (int t = 0; t < T; ++t) sacc[t] = _mm512_setzero_ps();
            for (int j = 0; j < 16; ++j) {
                const uint8_t* codes = rec + PackedQ6K::kCodes + 192 * j;
                for (int l = 0; l < 3; ++l)
                    _mm_prefetch(reinterpret_cast<const char*>(codes + kPrefetch + 64 * l),
                                 _MM_HINT_T0);
                __m512i steps[4];
                q6k_steps(codes, steps);
                const __m512 scale = q6k_scale(rec, j);
                for (int t = 0; t < T; ++t) {
                    const int8_t* xq = p.x[t][i].qs + 16 * j;
                    __m512i s = _mm512_set1_epi32(p.bias[t][16 * i + j]);
                    for (int k = 0; k < 4; ++k)
                        s = _mm512_dpbusd_epi32(s, steps[k], bcast4(xq + 4 * k));
                    sacc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, sacc[t]);
                }
            }
            const __m512 d = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + PackedQ6K::kD)));
            for (int t = 0; t < T; ++t) {
                acc[t] =
                    _mm512_fmadd_ps(sacc[t], _mm512_mul_ps(d, _mm512_set1_ps(p.x[t][i].d)), acc[t]);
            }
        }
        const __mmask16 m = rows_in_range(g, a.r0, a.r1);
        for (int t = 0; t < T; ++t)
            _mm512_mask_storeu_ps(a.y + (t0 + t) * a.ldy + kPackRows * g, m, acc[t]);
    }
}

void pack_group_q6_k(const MatmulArgs& a, int64_t g, uint8_t* panel) {
    const int64_t nsb = a.n_cols / 256;
    const uint8_t* group = a.w + size_t(g) * kPackRows * a.w_row_bytes;
    constexpr size_t kStride = 16 * 16 + 64;  // the Q6_K panel: codes, scales
    for (int64_t i = 0; i < nsb; ++i) {
        const uint8_t* rec = group + size_t(i) * PackedQ6K::kRecord;
        const __m512 d = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + PackedQ6K::kD)));
        for (int j = 0; j < 16; ++j) {
            uint8_t* out = panel + size_t(16 * i + j) * kStride;
            __m512i steps[4];
            q6k_steps(rec + PackedQ6K::kCodes + 192 * j, steps);
            for (int k = 0; k < 4; ++k) _mm512_store_si512(out + 64 * k, steps[k]);
            _mm512_store_ps(reinterpret_cast<float*>(out + 256),
                            _mm512_mul_ps(d, q6k_scale(rec, j)));
        }
    }
}

void gemv_q6_k_x16(const MatmulArgs& a) {
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        const int n = int(a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4);
        const Q6KActs p = prepare_q6_k(a, t0, n);
        switch (n) {
            case 1:
                q6k_x16_groups<1>(a, t0, p);
                break;
            case 2:
                q6k_x16_groups<2>(a, t0, p);
                break;
            case 3:
                q6k_x16_groups<3>(a, t0, p);
                break;
            default:
                q6k_x16_groups<4>(a, t0, p);
                break;
        }
    }
}

}  // namespace

void matmul_q4_0_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy) {
    const MatmulArgs a{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy};
    if (n_tokens < kGemmMinTokens) {
        gemv_q4_0_x16(a);
    } else {
        gemm_q4_0_groups(a, pack_group_q4_0);
    }
}

void matmul_q6_k_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy) {
    const MatmulArgs a{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy};
    if (n_tokens < kGemmMinTokens) {
        gemv_q6_k_x16(a);
    } else {
        gemm_q6_k_groups(a, pack_group_q6_k);
    }
}

void matmul_q4_k_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy) {
    const MatmulArgs a{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy};
    if (n_tokens < kGemmMinTokens) {
        gemv_q4_k_x16(a);
    } else {
        gemm_q4_k_groups(a, pack_group_q4_k);
    }
}

}  // namespace mw::avx512
