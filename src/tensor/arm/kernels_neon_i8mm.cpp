// Prefill matrix kernels on SMMLA (ARMv8.6 int8 matrix multiply, compiled with +i8mm).
//
// SMMLA multiplies a 2x8 matrix of signed bytes by the transpose of another: with rows a, b of
// the weights in one register (8 bytes each) and tokens x, y in the other, it adds
// [a.x, a.y, b.x, b.y] to four 32-bit lanes. So a tile of 4 rows x 4 tokens is 2 x 2 such
// blocks: the weight rows are decoded once per tile and interleaved 8 bytes at a time with their
// pair row, the token pairs likewise, and every SMMLA does 32 multiply-adds. Scales follow the same
// 2x2 lane order. Token counts that leave a single token, and decode (one token), go to the SDOT
// tiles; vec_dot stays the SDOT one (install_dotprod runs first).
#include "tensor/arm/dot.h"
#include "tensor/arm/neon.h"

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

void set_matmul(TraitsArray& table, GgmlType type, MatmulFn matmul) {
    TypeTraits& t = row_of(table, type);
    t.matmul = matmul;
    t.isa = "neon-i8mm";
}

}  // namespace

void install_i8mm(TraitsArray& table) {
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
}

}  // namespace mw::neon
