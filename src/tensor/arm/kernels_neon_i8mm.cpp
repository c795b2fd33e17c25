// Prefill matrix kernels on SMMLA (ARMv8.6 int8 matrix multiply, compiled with +i8mm).
//
// SMMLA multiplies a 2x8 matrix of signed bytes by the transpose of another: with rows a, b of
// the weights in one register (8 bytes each) and tokens x, y in the other, it adds
// [a.x, a.y, b.x, b.y] to four 32-bit lanes. So a tile of 4 rows x 4 tokens is 2 x 2 such
// blocks: the weight rows are decoded once per tile and interleaved 8 bytes at a time with their
// pair row, the token pairs likewise, and every SMMLA does 32 multiply-adds. Scales follow the same
// 2x2 lane order. Token counts that leave a single token, and decode (one token), go to the SDOT
// tiles; vec_dot stays the SDOT one (install_dotprod runs first).
//
// The packed layouts' prefill runs the width-generic GEMM driver (tensor/simd/gemm.h) with SMMLA
// tiles: a group's panel (codes [steps][4 rows][4]) has each pair of steps zipped into
// [row 0 | row 1] and [row 2 | row 3] x 8 codes, the layout SMMLA multiplies; the packed decode
// stays the SDOT kernels of install_dotprod.
//
// The issue 38 types (IQ4_NL, IQ4_XS, MXFP4, the lattice i-quants, TQ1_0 / TQ2_0) run the same
// driver and tiles from 4 tokens on, their GGUF rows decoded (decode_iq.h) straight into such
// panels once per call: signed codes, so no bias, and one float scale per sub-block.
#include <cstring>
#include <type_traits>

#include "tensor/arm/dot.h"
#include "tensor/arm/neon.h"
#include "tensor/arm/simd.h"
#include "tensor/simd/gemm.h"
#include "tensor/simd/packed.h"

#if !defined(__ARM_FEATURE_MATMUL_INT8) || !defined(__ARM_FEATURE_DOTPROD)
#error "kernels_neon_i8mm.cpp needs -march=armv8.6-a+i8mm (src/CMakeLists.txt)"
#endif

namespace mw::neon {
namespace {

// [a[0..8), b[0..8)] and [a[8..16), b[8..16)].
inline int8x16_t interleave_low(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
inline int8x16_t interleave_high(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

// [a, a, b, b] and [x, y, x, y]: the 2x2 lane order of SMMLA's result.
inline float32x4_t row_pair(float a, float b) {
    return load4(a, a, b, b);
}
inline float32x4_t token_pair(float x, float y) {
    return load4(x, y, x, y);
}

// out[t] lane r for 4 rows and kTokens (2 or 4) tokens from the 2x2 accumulators acc[P][Q]
// (rows 2P, 2P+1 x tokens 2Q, 2Q+1).
template <int kPairs>
void store_pairs(const float32x4_t acc[2][kPairs], float32x4_t out[]) {
    for (int q = 0; q < kPairs; ++q) {
        out[2 * q] = vuzp1q_f32(acc[0][q], acc[1][q]);
        out[2 * q + 1] = vuzp2q_f32(acc[0][q], acc[1][q]);
    }
}

template <class T, int kTokens>
void tile_32_mmla(const uint8_t* const rows[4], const uint8_t* const tokens[], int64_t n_blocks,
                  float32x4_t out[]) {
    using Block = typename T::Block;
    using Act = typename T::Act;
    constexpr int kPairs = kTokens / 2;
    float32x4_t acc[2][kPairs];
    for (int p = 0; p < 2; ++p) {
        for (int q = 0; q < kPairs; ++q) acc[p][q] = vdupq_n_f32(0.0f);
    }
    for (int64_t i = 0; i < n_blocks; ++i) {
        Decoded32 d[4];
        for (int r = 0; r < 4; ++r) T::decode(reinterpret_cast<const Block*>(rows[r])[i], d[r]);
        int8x16_t wz[2][4];
        float32x4_t dw[2], mw[2];
        for (int p = 0; p < 2; ++p) {
            const Decoded32& a = d[2 * p];
            const Decoded32& b = d[2 * p + 1];
            for (int h = 0; h < 2; ++h) {
                wz[p][2 * h] = interleave_low(a.q[h], b.q[h]);
                wz[p][2 * h + 1] = interleave_high(a.q[h], b.q[h]);
            }
            dw[p] = row_pair(a.d, b.d);
            mw[p] = row_pair(a.m, b.m);
        }
        for (int q = 0; q < kPairs; ++q) {
            const Act& x = reinterpret_cast<const Act*>(tokens[2 * q])[i];
            const Act& y = reinterpret_cast<const Act*>(tokens[2 * q + 1])[i];
            int8x16_t xz[4];
            for (int h = 0; h < 2; ++h) {
                const int8x16_t xv = vld1q_s8(x.qs + 16 * h), yv = vld1q_s8(y.qs + 16 * h);
                xz[2 * h] = interleave_low(xv, yv);
                xz[2 * h + 1] = interleave_high(xv, yv);
            }
            const float32x4_t dx = token_pair(half_to_float(x.d), half_to_float(y.d));
            for (int p = 0; p < 2; ++p) {
                int32x4_t s = vdupq_n_s32(0);
                for (int k = 0; k < 4; ++k) s = vmmlaq_s32(s, wz[p][k], xz[k]);
                acc[p][q] = vfmaq_f32(acc[p][q], vcvtq_f32_s32(s), vmulq_f32(dw[p], dx));
                if constexpr (T::kHasMin) {
                    const float32x4_t sx = token_pair(act_offset<T>(x), act_offset<T>(y));
                    acc[p][q] = vfmaq_f32(acc[p][q], mw[p], sx);
                }
            }
        }
    }
    store_pairs<kPairs>(acc, out);
}

// Per group g: [scale_a[g], scale_a[g], scale_b[g], scale_b[g]].
inline void pair_scales(const DecodedK& a, const DecodedK& b, int n_groups, int32x4_t out[16]) {
    for (int g0 = 0; g0 < n_groups; g0 += 8) {
        const int16x8_t ra = vld1q_s16(a.scale + g0), rb = vld1q_s16(b.scale + g0);
        const int32x4_t halves[2][2] = {
            {vreinterpretq_s32_s16(vzip1q_s16(ra, ra)), vreinterpretq_s32_s16(vzip1q_s16(rb, rb))},
            {vreinterpretq_s32_s16(vzip2q_s16(ra, ra)), vreinterpretq_s32_s16(vzip2q_s16(rb, rb))},
        };
        for (int h = 0; h < 2; ++h) {
            const int16x8_t lo = vreinterpretq_s16_s32(vzip1q_s32(halves[h][0], halves[h][1]));
            const int16x8_t hi = vreinterpretq_s16_s32(vzip2q_s32(halves[h][0], halves[h][1]));
            out[g0 + 4 * h + 0] = vmovl_s16(vget_low_s16(lo));
            out[g0 + 4 * h + 1] = vmovl_high_s16(lo);
            out[g0 + 4 * h + 2] = vmovl_s16(vget_low_s16(hi));
            out[g0 + 4 * h + 3] = vmovl_high_s16(hi);
        }
    }
}

template <class T, int kTokens>
void tile_k_mmla(const uint8_t* const rows[4], const uint8_t* const tokens[], int64_t n_blocks,
                 float32x4_t out[]) {
    using Block = typename T::Block;
    constexpr int kPairs = kTokens / 2;
    constexpr int kGroups = 256 / T::kGroup, kChunks = T::kGroup / 16;
    float32x4_t acc[2][kPairs];
    for (int p = 0; p < 2; ++p) {
        for (int q = 0; q < kPairs; ++q) acc[p][q] = vdupq_n_f32(0.0f);
    }
    for (int64_t i = 0; i < n_blocks; ++i) {
        DecodedK d[4];
        for (int r = 0; r < 4; ++r) T::decode(reinterpret_cast<const Block*>(rows[r])[i], d[r]);
        int8x16_t wz[2][16][2];
        int32x4_t scales[2][16];
        float32x4_t dw[2], dmin[2];
        for (int p = 0; p < 2; ++p) {
            const DecodedK& a = d[2 * p];
            const DecodedK& b = d[2 * p + 1];
            for (int c = 0; c < 16; ++c) {
                wz[p][c][0] = interleave_low(a.q[c], b.q[c]);
                wz[p][c][1] = interleave_high(a.q[c], b.q[c]);
            }
            pair_scales(a, b, kGroups, scales[p]);
            dw[p] = row_pair(a.d, b.d);
            dmin[p] = row_pair(a.dmin, b.dmin);
        }
        for (int q = 0; q < kPairs; ++q) {
            const BlockQ8_K& x = reinterpret_cast<const BlockQ8_K*>(tokens[2 * q])[i];
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(tokens[2 * q + 1])[i];
            int32x4_t isum[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
            for (int g = 0; g < kGroups; ++g) {
                int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
                for (int c = 0; c < kChunks; ++c) {
                    const int chunk = g * kChunks + c;
                    const int8x16_t xv = vld1q_s8(x.qs + 16 * chunk);
                    const int8x16_t yv = vld1q_s8(y.qs + 16 * chunk);
                    const int8x16_t lo = interleave_low(xv, yv), hi = interleave_high(xv, yv);
                    for (int p = 0; p < 2; ++p) {
                        s[p] =
                            vmmlaq_s32(vmmlaq_s32(s[p], wz[p][chunk][0], lo), wz[p][chunk][1], hi);
                    }
                }
                for (int p = 0; p < 2; ++p) isum[p] = vmlaq_s32(isum[p], s[p], scales[p][g]);
            }
            const float32x4_t dx = token_pair(x.d, y.d);
            for (int p = 0; p < 2; ++p) {
                acc[p][q] = vfmaq_f32(acc[p][q], vcvtq_f32_s32(isum[p]), vmulq_f32(dw[p], dx));
                if constexpr (T::kHasMin) {
                    const DecodedK& a = d[2 * p];
                    const DecodedK& b = d[2 * p + 1];
                    const int32x4_t mins = sum4(T::min_sums(a, x), T::min_sums(a, y),
                                                T::min_sums(b, x), T::min_sums(b, y));
                    acc[p][q] = vfmsq_f32(acc[p][q], vcvtq_f32_s32(mins), vmulq_f32(dmin[p], dx));
                }
            }
        }
    }
    store_pairs<kPairs>(acc, out);
}

template <class T>
void matmul_32_mmla(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                    const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                    int64_t ldy) {
    matmul_tiles<4>(tile_32_mmla<T, 4>, tile_32_mmla<T, 2>, tile_32<T, DotEngine, 1>, kQK, w,
                    w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy);
}

template <class T>
void matmul_k_mmla(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                   const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    matmul_tiles<4>(tile_k_mmla<T, 4>, tile_k_mmla<T, 2>, tile_k<T, DotEngine, 1>, kQK_K, w,
                    w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy);
}

// Below this many tokens the decode kernels (SDOT, or the GGUF layout's 2-token SMMLA tile);
// the SMMLA panels from here on.
constexpr int64_t kMmlaMinTokens = 4;

// ---- Packed layouts: SMMLA tiles over the generic GEMM driver -----------------------------------

using V = simd::V128;
using simd::PanelFormat;
using simd::RowSpan;
using simd::TileActs;

// [a, b, a, b]: a token pair's factors in SMMLA's lane order.
inline float32x4_t pair_of(float a, float b) {
    const float32x2_t v = {a, b};
    return vcombine_f32(v, v);
}

// Sub-block j of G panels (2 row pairs each) x TP token pairs: integer sums in SMMLA's lanes
// [row a x token 2q, row a x token 2q+1, row b x token 2q, row b x token 2q+1]. kSigned: the
// panel holds q + 128 of signed codes (Q8_0).
template <int G, int TP, int BL, bool kBias, bool kSigned>
inline void mmla_sub_block(const PanelFormat& f, const uint8_t* const panel[simd::kMaxTileGroups],
                           size_t stride, const TileActs& x, const int* tok, int64_t j,
                           int32x4_t s[2 * G][TP]) {
    const int8_t* xq[2 * TP];
    for (int t = 0; t < 2 * TP; ++t) xq[t] = simd::act_quants(f, x.row[tok[t]], j);
    for (int q = 0; q < TP; ++q) {
        int32x4_t bias = vdupq_n_s32(0);
        if constexpr (kBias) {
            const int32x2_t b = {x.bias[tok[2 * q]][j], x.bias[tok[2 * q + 1]][j]};
            bias = vcombine_s32(b, b);
        }
        for (int p = 0; p < 2 * G; ++p) s[p][q] = bias;
    }
#pragma GCC unroll 4
    for (int k = 0; k < BL / 8; ++k) {
        int8x16_t w[2 * G];
        for (int g = 0; g < G; ++g) {
            for (int h = 0; h < 2; ++h) {
                int8x16_t v = vld1q_s8(reinterpret_cast<const int8_t*>(
                    panel[g] + size_t(j) * stride + 32 * k + 16 * h));
                if constexpr (kSigned) v = veorq_s8(v, vdupq_n_s8(int8_t(-128)));
                w[2 * g + h] = v;
            }
        }
        for (int q = 0; q < TP; ++q) {
            const int8x16_t xv =
                vcombine_s8(vld1_s8(xq[2 * q] + 8 * k), vld1_s8(xq[2 * q + 1] + 8 * k));
            for (int p = 0; p < 2 * G; ++p) s[p][q] = vmmlaq_s32(s[p][q], w[p], xv);
        }
    }
}

// The tile of G groups of 4 rows x T tokens (T odd: the last token is paired with itself).
template <int G, int T, int BL, bool kBias, bool kMin, bool kKQuant, bool kSigned>
void mmla_tile(const PanelFormat& f, const uint8_t* const panel[simd::kMaxTileGroups],
               int64_t n_sub, const TileActs& x, float* y, int64_t ldy, RowSpan rows) {
    constexpr int TP = (T + 1) / 2;
    constexpr size_t kScaleAt = size_t(BL) * 4;
    const size_t stride = simd::panel_stride<V>(f);
    int tok[2 * TP];
    for (int t = 0; t < 2 * TP; ++t) tok[t] = t < T ? t : T - 1;
    float32x4_t acc[2 * G][TP], sacc[2 * G][TP];
    for (int p = 0; p < 2 * G; ++p) {
        for (int q = 0; q < TP; ++q) acc[p][q] = sacc[p][q] = vdupq_n_f32(0.0f);
    }
    constexpr int kPerSuper = kKQuant ? 256 / BL : 1;
    for (int64_t j = 0; j < n_sub; ++j) {
        int32x4_t s[2 * G][TP];
        mmla_sub_block<G, TP, BL, kBias, kSigned>(f, panel, stride, x, tok, j, s);
        for (int g = 0; g < G; ++g) {
            const uint8_t* pj = panel[g] + size_t(j) * stride + kScaleAt;
            const float32x4_t sc = vld1q_f32(reinterpret_cast<const float*>(pj));
            const float32x4_t mn = kMin ? vld1q_f32(reinterpret_cast<const float*>(pj + 16)) : sc;
            for (int h = 0; h < 2; ++h) {
                const int p = 2 * g + h;
                // [scale a, scale a, scale b, scale b] for rows (2h, 2h + 1) of the group.
                const float32x4_t scale = h == 0 ? vzip1q_f32(sc, sc) : vzip2q_f32(sc, sc);
                const float32x4_t min = h == 0 ? vzip1q_f32(mn, mn) : vzip2q_f32(mn, mn);
                for (int q = 0; q < TP; ++q) {
                    float32x4_t factor = scale;
                    if constexpr (!kKQuant) {
                        factor =
                            vmulq_f32(scale, pair_of(x.dx[tok[2 * q]][j], x.dx[tok[2 * q + 1]][j]));
                    }
                    float32x4_t& a = kKQuant ? sacc[p][q] : acc[p][q];
                    a = vfmaq_f32(a, vcvtq_f32_s32(s[p][q]), factor);
                    if constexpr (kMin) {
                        a = vfmaq_f32(
                            a, min,
                            pair_of(x.min_factor[tok[2 * q]][j], x.min_factor[tok[2 * q + 1]][j]));
                    }
                }
            }
        }
        if constexpr (kKQuant) {
            if ((j + 1) % kPerSuper == 0) {
                const int64_t sb = j / kPerSuper;
                for (int q = 0; q < TP; ++q) {
                    const float32x4_t dx = pair_of(x.dx[tok[2 * q]][sb], x.dx[tok[2 * q + 1]][sb]);
                    for (int p = 0; p < 2 * G; ++p) {
                        acc[p][q] = vfmaq_f32(acc[p][q], sacc[p][q], dx);
                        sacc[p][q] = vdupq_n_f32(0.0f);
                    }
                }
            }
        }
    }
    // Per token, the 4 rows of a group: lanes 0 / 1 of both row pairs (uzp1 / uzp2).
    for (int g = 0; g < G; ++g) {
        const int lo = rows.lo - 4 * g > 0 ? rows.lo - 4 * g : 0;
        const int hi = rows.hi - 4 * g < 4 ? rows.hi - 4 * g : 4;
        if (lo >= hi) continue;
        for (int q = 0; q < TP; ++q) {
            const float32x4_t first = vuzp1q_f32(acc[2 * g][q], acc[2 * g + 1][q]);
            const float32x4_t second = vuzp2q_f32(acc[2 * g][q], acc[2 * g + 1][q]);
            V::store_rows(y + (2 * q) * ldy + 4 * g, first, lo, hi);
            if (2 * q + 1 < T) V::store_rows(y + (2 * q + 1) * ldy + 4 * g, second, lo, hi);
        }
    }
}

template <int BL, bool kBias, bool kMin, bool kKQuant, bool kSigned>
struct MmlaTiles {
    static constexpr int kGroups = 2;
    static constexpr int kTokens = 4;
    template <int G, size_t... Ts>
    static constexpr std::array<simd::TileFn, sizeof...(Ts) + 1> table(std::index_sequence<Ts...>) {
        return {nullptr, mmla_tile<G, int(Ts) + 1, BL, kBias, kMin, kKQuant, kSigned>...};
    }
    static simd::TileFn fn(int n_groups, int n) {
        static constexpr auto one = table<1>(std::make_index_sequence<kTokens>());
        static constexpr auto two = table<2>(std::make_index_sequence<kTokens>());
        return n_groups == 2 ? two[size_t(n)] : one[size_t(n)];  // kGroups = 2
    }
};

// A generic panel (codes [steps][4 rows][4]) as an SMMLA panel: each pair of steps zipped into
// [row 0 | row 1] and [row 2 | row 3] x 8 codes (in place).
template <int BL>
struct ZipPanel {
    void operator()(const MatmulArgs& a, const PanelFormat& f, uint8_t* panel) const {
        const size_t stride = simd::panel_stride<V>(f);
        for (int64_t j = 0; j < a.n_cols / BL; ++j) {
            uint8_t* codes = panel + size_t(j) * stride;
            for (int k = 0; k < BL / 8; ++k) {
                uint32_t* lo = reinterpret_cast<uint32_t*>(codes + 32 * k);
                uint32_t* hi = reinterpret_cast<uint32_t*>(codes + 32 * k + 16);
                const uint32x4_t s0 = vld1q_u32(lo), s1 = vld1q_u32(hi);
                vst1q_u32(lo, vzip1q_u32(s0, s1));
                vst1q_u32(hi, vzip2q_u32(s0, s1));
            }
        }
    }
};

template <int BL, bool kBias, bool kMin, bool kKQuant, bool kSigned, simd::GroupPanelFn kPack>
void packed_gemm_mmla(const MatmulArgs& a, const PanelFormat& f) {
    using Tiles = MmlaTiles<BL, kBias, kMin, kKQuant, kSigned>;
    simd::gemm<V, BL, kBias, kMin, kKQuant, simd::TileInts<255, kSigned>>(
        a, f,
        [&](int64_t r, int, uint8_t* panel) {
            kPack(a, r / 4, panel);
            ZipPanel<BL>{}(a, f, panel);
        },
        true, Tiles{});
}

// ---- The GGUF layout through panels: the issue 38 types --------------------------------------
//
// Their decoders (decode_iq.h: TBL through a code book, grid lookups) give signed bytes, which
// SMMLA multiplies as they are (offset 0, no bias), and integer sub-block scales, folded into one
// float scale per sub-block. Each call decodes its rows once, 4 at a time, straight into the
// SMMLA panel order; the tiles then reuse every decoded byte for all the tokens, where
// tile_32_mmla / tile_k_mmla decode it again per 4 tokens.

// Elements per sub-block: the K-shaped types' scale groups, else the 32-element block.
template <class T, bool kKQuant>
constexpr int sub_block() {
    if constexpr (kKQuant) {
        return T::kGroup;
    } else {
        return 32;
    }
}

// Rows [r, r + nr) (nr <= 4; missing rows repeat the last, their outputs are not stored) as one
// panel: per sub-block, steps of 8 codes as [row 0 | row 1] and [row 2 | row 3], then the four
// rows' float scales.
template <class T, bool kKQuant>
void decode_mmla_panel(const MatmulArgs& a, const PanelFormat& f, int64_t r, int nr,
                       uint8_t* panel) {
    using Block = typename T::Block;
    using Decoded = std::conditional_t<kKQuant, DecodedK, Decoded32>;
    constexpr int BL = sub_block<T, kKQuant>();
    constexpr int kChunks = kKQuant ? 16 : 2;  // 16-code vectors per block
    constexpr int kSubs = 16 * kChunks / BL;   // sub-blocks per block
    const size_t stride = simd::panel_stride<V>(f);
    const Block* rows[4];
    for (int k = 0; k < 4; ++k) {
        rows[k] =
            reinterpret_cast<const Block*>(a.w + size_t(r + (k < nr ? k : nr - 1)) * a.w_row_bytes);
    }
    for (int64_t i = 0; i < a.n_cols / (16 * kChunks); ++i) {
        Decoded d[4];
        for (int k = 0; k < 4; ++k) T::decode(rows[k][i], d[k]);
        uint8_t* block = panel + size_t(i * kSubs) * stride;
        for (int c = 0; c < kChunks; ++c) {
            // Codes 16c .. 16c + 15 of the block: steps 2m, 2m + 1 of its sub-block.
            auto* step =
                reinterpret_cast<int8_t*>(block + size_t(16 * c / BL) * stride + 4 * (16 * c % BL));
            for (int p = 0; p < 2; ++p) {
                vst1q_s8(step + 16 * p, interleave_low(d[2 * p].q[c], d[2 * p + 1].q[c]));
                vst1q_s8(step + 32 + 16 * p, interleave_high(d[2 * p].q[c], d[2 * p + 1].q[c]));
            }
        }
        for (int j = 0; j < kSubs; ++j) {
            float scale[4];
            for (int k = 0; k < 4; ++k) {
                if constexpr (kKQuant) {
                    scale[k] = d[k].d * float(d[k].scale[j]);
                } else {
                    scale[k] = d[k].d;
                }
            }
            std::memcpy(block + size_t(j) * stride + BL * 4, scale, sizeof scale);
        }
    }
}

// Signed codes, one float scale per sub-block; the K-shaped types take Q8_K activations. Below
// kPanelMinTokens the tiles of matmul_32_mmla / matmul_k_mmla, which fill no panel: counted
// under qemu (bench/arm-insn-count), the panels take fewer instructions from 4 tokens on for
// IQ4_NL / MXFP4 (0.91x / 0.88x of the tiles' at 4), from 8 for the K-shaped types (IQ4_XS
// 1.09x at 4, 0.79x at 8; IQ2_XXS 1.17x, 0.75x): their float scale per sub-block of 16 costs more
// per token than the tiles' integer scales.
template <class T, bool kKQuant>
void matmul_rows_mmla(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                      const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                      int64_t ldy) {
    constexpr int64_t kPanelMinTokens = kKQuant ? 8 : 4;
    if (n_tokens < kPanelMinTokens) {
        if constexpr (kKQuant) {
            matmul_k_mmla<T>(w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy);
        } else {
            matmul_32_mmla<T>(w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy);
        }
        return;
    }
    constexpr int BL = sub_block<T, kKQuant>();
    constexpr PanelFormat f{BL, 0, false, kKQuant, simd::kActQ8_0};
    const MatmulArgs a{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy};
    simd::gemm<V, BL, false, false, kKQuant, simd::TileInts<255, false>>(
        a, f,
        [&](int64_t r, int nr, uint8_t* panel) {
            decode_mmla_panel<T, kKQuant>(a, f, r, nr, panel);
        },
        false, MmlaTiles<BL, false, false, kKQuant, false>{});
}

using P = simd::PackedPanels<V>;
void mmla_q4_0(const MatmulArgs& a) {
    packed_gemm_mmla<32, true, false, false, false, P::q4_0>(a, simd::kPanelQ4_0);
}
void mmla_q8_0(const MatmulArgs& a) {
    packed_gemm_mmla<32, false, false, false, true, P::q8_0>(a, simd::kPanelQ8_0);
}
void mmla_q4_k(const MatmulArgs& a) {
    packed_gemm_mmla<32, false, true, true, false, P::q4_k>(a, simd::kPanelQ4K);
}
void mmla_q5_k(const MatmulArgs& a) {
    packed_gemm_mmla<32, false, true, true, false, P::q5_k>(a, simd::kPanelQ5K);
}
void mmla_q6_k(const MatmulArgs& a) {
    packed_gemm_mmla<16, true, false, true, false, P::q6_k>(a, simd::kPanelQ6K);
}

using KernelFn = void (*)(const MatmulArgs&);

template <KernelFn gemv, KernelFn gemm>
void packed_matmul(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                   const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    const MatmulArgs a{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy};
    if (n_tokens < kMmlaMinTokens) {
        gemv(a);
    } else {
        gemm(a);
    }
}

void set_matmul(TraitsArray& table, GgmlType type, MatmulFn matmul) {
    TypeTraits& t = row_of(table, type);
    t.matmul = matmul;
    t.isa = "neon-i8mm";
}

}  // namespace

void install_i8mm(KernelSet& set) {
    TraitsArray& table = set.table;
    set.int8_peak = [](double seconds) { return time_peak_loop(smmla_peak_loop, seconds); };
    set_matmul(table, GgmlType::Q4_0, matmul_32_mmla<Q4_0>);
    set_matmul(table, GgmlType::Q4_1, matmul_32_mmla<Q4_1>);
    set_matmul(table, GgmlType::Q5_0, matmul_32_mmla<Q5_0>);
    set_matmul(table, GgmlType::Q5_1, matmul_32_mmla<Q5_1>);
    set_matmul(table, GgmlType::Q8_0, matmul_32_mmla<Q8_0>);
    set_matmul(table, GgmlType::Q2_K, matmul_k_mmla<Q2_K>);
    set_matmul(table, GgmlType::Q3_K, matmul_k_mmla<Q3_K>);
    set_matmul(table, GgmlType::Q4_K, matmul_k_mmla<Q4_K>);
    set_matmul(table, GgmlType::Q5_K, matmul_k_mmla<Q5_K>);
    set_matmul(table, GgmlType::Q6_K, matmul_k_mmla<Q6_K>);
    // The issue 38 types: their decoders (decode_iq.h: TBL through a code book, grid lookups)
    // give signed bytes and integer scales, decoded once per call into SMMLA panels.
    set_matmul(table, GgmlType::IQ4_NL, matmul_rows_mmla<IQ4_NL, false>);
    set_matmul(table, GgmlType::MXFP4, matmul_rows_mmla<MXFP4, false>);
    set_matmul(table, GgmlType::IQ4_XS, matmul_rows_mmla<IQ4_XS, true>);
    set_matmul(table, GgmlType::TQ1_0, matmul_rows_mmla<TQ1_0, true>);
    set_matmul(table, GgmlType::TQ2_0, matmul_rows_mmla<TQ2_0, true>);
    set_matmul(table, GgmlType::IQ2_XXS, matmul_rows_mmla<IQ2_XXS, true>);
    set_matmul(table, GgmlType::IQ2_XS, matmul_rows_mmla<IQ2_XS, true>);
    set_matmul(table, GgmlType::IQ2_S, matmul_rows_mmla<IQ2_S, true>);
    set_matmul(table, GgmlType::IQ3_XXS, matmul_rows_mmla<IQ3_XXS, true>);
    set_matmul(table, GgmlType::IQ3_S, matmul_rows_mmla<IQ3_S, true>);
    set_matmul(table, GgmlType::IQ1_S, matmul_rows_mmla<IQ1_S, true>);
    set_matmul(table, GgmlType::IQ1_M, matmul_rows_mmla<IQ1_M, true>);

    using G = simd::PackedGemv<V>;
    for (int k = 0; k < set.n_packed; ++k) {
        TypeTraits& p = set.packed[size_t(k)];
        p.isa = "neon-i8mm";
        switch (p.type) {
            case GgmlType::Q4_0:
                p.matmul = packed_matmul<G::q4_0, mmla_q4_0>;
                break;
            case GgmlType::Q8_0:
                p.matmul = packed_matmul<G::q8_0, mmla_q8_0>;
                break;
            case GgmlType::Q4_K:
                p.matmul = packed_matmul<G::q4_k, mmla_q4_k>;
                break;
            case GgmlType::Q5_K:
                p.matmul = packed_matmul<G::q5_k, mmla_q5_k>;
                break;
            case GgmlType::Q6_K:
                p.matmul = packed_matmul<G::q6_k, mmla_q6_k>;
                break;
            default:
                break;
        }
    }
}

double smmla_peak_loop(int64_t iterations) {
    constexpr int kChains = 16;
    int32x4_t acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = vdupq_n_s32(c);
    int8x16_t w = vdupq_n_s8(3), x = vdupq_n_s8(5);
    // The operands are opaque to the compiler, so it cannot fold the repeated adds.
    __asm__ volatile("" : "+w"(w), "+w"(x));
    for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
        for (int c = 0; c < kChains; ++c) acc[c] = vmmlaq_s32(acc[c], w, x);
    }
    int32x4_t sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = vaddq_s32(sum, acc[c]);
    volatile int32_t sink = vaddvq_s32(sum);
    (void)sink;
    return double(iterations) * kChains * 32;  // 2 x 2 x 8 per instruction
}

}  // namespace mw::neon
