// The quantized NEON kernels written once for two integer dot-product engines: plain ARMv8 NEON
// (widening multiplies, kernels_neon.cpp) and SDOT (kernels_neon_dotprod.cpp). Each engine is a
// struct with dot16(acc, a, b): acc plus the products of 16 signed bytes, spread over 4 lanes.
//
// vec_dot handles one row and one token. The matrix kernel tiles 4 weight rows x kTokens tokens:
// each weight block is decoded once per tile, the four rows' integer sums are folded into one
// vector (lane r = row r) so the block's scales apply with one multiply per token, and each
// token's four results are one 16-byte store. Partial tiles repeat the last row and keep only the
// valid lanes.
//
// Internal linkage, for the reason given in kernels_neon_decode.h.
#pragma once

#include "tensor/arm/decode.h"
#include "tensor/arm/decode_iq.h"
#include "tensor/arm/neon.h"

namespace mw::neon {
namespace {

struct BaseEngine {
    // |a_i b_i + a_j b_j| <= 2 * 128 * 127 fits int16: activations never reach -128.
    static int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
        int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
        p = vmlal_high_s8(p, a, b);
        return vpadalq_s16(acc, p);
    }
};

#if defined(__ARM_FEATURE_DOTPROD)
struct DotEngine {
    static int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};
#endif

// [sum(a), sum(b), sum(c), sum(d)].
inline int32x4_t sum4(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
    return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
}

inline float32x4_t load4(float a, float b, float c, float d) {
    const float v[4] = {a, b, c, d};
    return vld1q_f32(v);
}

// ---- 32-element blocks ------------------------------------------------------------------------

template <class T>
float act_offset(const typename T::Act& x) {
    if constexpr (T::kHasMin) {
        return half_to_float(x.s);
    } else {
        (void)x;
        return 0.0f;
    }
}

template <class T, class E>
float vec_dot_32(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const typename T::Block*>(w);
    const auto* xb = static_cast<const typename T::Act*>(x);
    float32x4_t acc = vdupq_n_f32(0.0f);
    float offsets = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        Decoded32 d;
        T::decode(wb[i], d);
        int32x4_t s = E::dot16(vdupq_n_s32(0), d.q[0], vld1q_s8(xb[i].qs));
        s = E::dot16(s, d.q[1], vld1q_s8(xb[i].qs + 16));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), d.d * half_to_float(xb[i].d));
        if constexpr (T::kHasMin) offsets += d.m * act_offset<T>(xb[i]);
    }
    return vaddvq_f32(acc) + offsets;
}

// out[t] lane r = dot(row r, token t) for 4 rows and kTokens tokens.
template <class T, class E, int kTokens>
void tile_32(const uint8_t* const rows[4], const uint8_t* const tokens[], int64_t n_blocks,
             float32x4_t out[]) {
    using Block = typename T::Block;
    using Act = typename T::Act;
    float32x4_t acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n_blocks; ++i) {
        Decoded32 d[4];
        for (int r = 0; r < 4; ++r) T::decode(reinterpret_cast<const Block*>(rows[r])[i], d[r]);
        const float32x4_t dw = load4(d[0].d, d[1].d, d[2].d, d[3].d);
        const float32x4_t mw = load4(d[0].m, d[1].m, d[2].m, d[3].m);
        for (int t = 0; t < kTokens; ++t) {
            const Act& x = reinterpret_cast<const Act*>(tokens[t])[i];
            const int8x16_t x0 = vld1q_s8(x.qs), x1 = vld1q_s8(x.qs + 16);
            int32x4_t s[4];
            for (int r = 0; r < 4; ++r) {
                s[r] = E::dot16(E::dot16(vdupq_n_s32(0), d[r].q[0], x0), d[r].q[1], x1);
            }
            const int32x4_t sums = sum4(s[0], s[1], s[2], s[3]);
            acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(sums), vmulq_n_f32(dw, half_to_float(x.d)));
            if constexpr (T::kHasMin) acc[t] = vfmaq_n_f32(acc[t], mw, act_offset<T>(x));
        }
    }
    for (int t = 0; t < kTokens; ++t) out[t] = acc[t];
}

// ---- K-quants ---------------------------------------------------------------------------------

// The integer dot of one decoded block with one activation block, scales applied, 4 partial sums.
template <class T, class E>
int32x4_t k_block_isum(const DecodedK& w, const int8_t* xq) {
    constexpr int kChunks = T::kGroup / 16;
    int32x4_t isum = vdupq_n_s32(0);
    for (int g = 0; g < 256 / T::kGroup; ++g) {
        int32x4_t s = vdupq_n_s32(0);
        for (int c = 0; c < kChunks; ++c) {
            const int chunk = g * kChunks + c;
            s = E::dot16(s, w.q[chunk], vld1q_s8(xq + 16 * chunk));
        }
        isum = vmlaq_n_s32(isum, s, w.scale[g]);
    }
    return isum;
}

template <class T, class E>
float vec_dot_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const typename T::Block*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        DecodedK d;
        T::decode(wb[i], d);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(k_block_isum<T, E>(d, xb[i].qs)), d.d * xb[i].d);
        if constexpr (T::kHasMin) {
            acc = vfmsq_n_f32(acc, vcvtq_f32_s32(T::min_sums(d, xb[i])), d.dmin * xb[i].d);
        }
    }
    return vaddvq_f32(acc);
}

// Per group g: lane r = scale[g] of row r.
inline void transpose_scales(const DecodedK d[4], int n_groups, int32x4_t out[16]) {
    for (int g0 = 0; g0 < n_groups; g0 += 8) {
        const int16x8_t r0 = vld1q_s16(d[0].scale + g0), r1 = vld1q_s16(d[1].scale + g0);
        const int16x8_t r2 = vld1q_s16(d[2].scale + g0), r3 = vld1q_s16(d[3].scale + g0);
        const int32x4_t a = vreinterpretq_s32_s16(vzip1q_s16(r0, r1));  // groups 0-3 of rows 0, 1
        const int32x4_t b = vreinterpretq_s32_s16(vzip1q_s16(r2, r3));
        const int32x4_t c = vreinterpretq_s32_s16(vzip2q_s16(r0, r1));  // groups 4-7
        const int32x4_t e = vreinterpretq_s32_s16(vzip2q_s16(r2, r3));
        const int16x8_t g01 = vreinterpretq_s16_s32(vzip1q_s32(a, b));
        const int16x8_t g23 = vreinterpretq_s16_s32(vzip2q_s32(a, b));
        const int16x8_t g45 = vreinterpretq_s16_s32(vzip1q_s32(c, e));
        const int16x8_t g67 = vreinterpretq_s16_s32(vzip2q_s32(c, e));
        out[g0 + 0] = vmovl_s16(vget_low_s16(g01));
        out[g0 + 1] = vmovl_high_s16(g01);
        out[g0 + 2] = vmovl_s16(vget_low_s16(g23));
        out[g0 + 3] = vmovl_high_s16(g23);
        out[g0 + 4] = vmovl_s16(vget_low_s16(g45));
        out[g0 + 5] = vmovl_high_s16(g45);
        out[g0 + 6] = vmovl_s16(vget_low_s16(g67));
        out[g0 + 7] = vmovl_high_s16(g67);
    }
}

template <class T, class E, int kTokens>
void tile_k(const uint8_t* const rows[4], const uint8_t* const tokens[], int64_t n_blocks,
            float32x4_t out[]) {
    using Block = typename T::Block;
    constexpr int kGroups = 256 / T::kGroup, kChunks = T::kGroup / 16;
    float32x4_t acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n_blocks; ++i) {
        DecodedK d[4];
        for (int r = 0; r < 4; ++r) T::decode(reinterpret_cast<const Block*>(rows[r])[i], d[r]);
        int32x4_t scales[16];
        transpose_scales(d, kGroups, scales);
        const float32x4_t dw = load4(d[0].d, d[1].d, d[2].d, d[3].d);
        const float32x4_t dmin = load4(d[0].dmin, d[1].dmin, d[2].dmin, d[3].dmin);
        for (int t = 0; t < kTokens; ++t) {
            const BlockQ8_K& x = reinterpret_cast<const BlockQ8_K*>(tokens[t])[i];
            int32x4_t isum = vdupq_n_s32(0);
            for (int g = 0; g < kGroups; ++g) {
                int32x4_t s[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
                for (int c = 0; c < kChunks; ++c) {
                    const int chunk = g * kChunks + c;
                    const int8x16_t xq = vld1q_s8(x.qs + 16 * chunk);
                    for (int r = 0; r < 4; ++r) s[r] = E::dot16(s[r], d[r].q[chunk], xq);
                }
                isum = vmlaq_s32(isum, sum4(s[0], s[1], s[2], s[3]), scales[g]);
            }
            acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(isum), vmulq_n_f32(dw, x.d));
            if constexpr (T::kHasMin) {
                const int32x4_t mins = sum4(T::min_sums(d[0], x), T::min_sums(d[1], x),
                                            T::min_sums(d[2], x), T::min_sums(d[3], x));
                acc[t] = vfmsq_f32(acc[t], vcvtq_f32_s32(mins), vmulq_n_f32(dmin, x.d));
            }
        }
    }
    for (int t = 0; t < kTokens; ++t) out[t] = acc[t];
}

// ---- The matrix driver ------------------------------------------------------------------------

// Writes lanes [0, n_rows) of v to y[0..n_rows).
inline void store_rows(float* y, float32x4_t v, int64_t n_rows) {
    if (n_rows == 4) {
        vst1q_f32(y, v);
        return;
    }
    float lanes[4];
    vst1q_f32(lanes, v);
    for (int64_t r = 0; r < n_rows; ++r) y[r] = lanes[r];
}

// A tile function: 4 row pointers, kTokens token pointers, blocks per row, kTokens outputs.
using TileFn = void (*)(const uint8_t* const rows[4], const uint8_t* const tokens[],
                        int64_t n_blocks, float32x4_t out[]);

// MatmulFn body: tiles of 4 rows x kWide tokens with `wide`, then 2 tokens with `pair` (if not
// null), the remaining tokens one at a time with `narrow`.
template <int kWide>
void matmul_tiles(TileFn wide, TileFn pair, TileFn narrow, int64_t block_size, const uint8_t* w,
                  size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1, const uint8_t* act,
                  size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    const int64_t n_blocks = n_cols / block_size;
    for (int64_t r = r0; r < r1; r += 4) {
        const int64_t n_rows = r1 - r < 4 ? r1 - r : 4;
        const uint8_t* rows[4];
        for (int64_t k = 0; k < 4; ++k) {
            rows[k] = w + size_t(r + (k < n_rows ? k : n_rows - 1)) * w_row_bytes;
        }
        int64_t t = 0;
        for (; t + kWide <= n_tokens; t += kWide) {
            const uint8_t* tokens[kWide];
            for (int k = 0; k < kWide; ++k) tokens[k] = act + size_t(t + k) * act_stride;
            float32x4_t out[kWide];
            wide(rows, tokens, n_blocks, out);
            for (int k = 0; k < kWide; ++k) store_rows(y + (t + k) * ldy + r, out[k], n_rows);
        }
        if (pair && t + 2 <= n_tokens) {
            const uint8_t* tokens[2] = {act + size_t(t) * act_stride,
                                        act + size_t(t + 1) * act_stride};
            float32x4_t out[2];
            pair(rows, tokens, n_blocks, out);
            for (int k = 0; k < 2; ++k) store_rows(y + (t + k) * ldy + r, out[k], n_rows);
            t += 2;
        }
        for (; t < n_tokens; ++t) {
            const uint8_t* token = act + size_t(t) * act_stride;
            float32x4_t out;
            narrow(rows, &token, n_blocks, &out);
            store_rows(y + t * ldy + r, out, n_rows);
        }
    }
}

// The MatmulFn of weight type T (32-element or K-quant) on engine E.
template <class T, class E>
void matmul_32(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
               const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    matmul_tiles<4>(tile_32<T, E, 4>, nullptr, tile_32<T, E, 1>, kQK, w, w_row_bytes, n_cols, r0,
                    r1, act, act_stride, n_tokens, y, ldy);
}

template <class T, class E>
void matmul_k(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
              const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    matmul_tiles<4>(tile_k<T, E, 4>, nullptr, tile_k<T, E, 1>, kQK_K, w, w_row_bytes, n_cols, r0,
                    r1, act, act_stride, n_tokens, y, ldy);
}

// ---- Installation: the one list of quantized types on these kernels ------------------------

template <class T, class E>
void install_32(TraitsArray& table, GgmlType type, const char* isa) {
    TypeTraits& t = row_of(table, type);
    t.vec_dot = vec_dot_32<T, E>;
    t.matmul = matmul_32<T, E>;
    t.isa = isa;
}

template <class T, class E>
void install_k(TraitsArray& table, GgmlType type, const char* isa) {
    TypeTraits& t = row_of(table, type);
    t.vec_dot = vec_dot_k<T, E>;
    t.matmul = matmul_k<T, E>;
    t.isa = isa;
}

// Every quantized weight type's GGUF-layout kernels on engine E, named `isa` in the type table:
// the NEON and SDOT levels install the same list; only the engine differs.
template <class E>
void install_quantized(TraitsArray& table, const char* isa) {
    install_32<Q4_0, E>(table, GgmlType::Q4_0, isa);
    install_32<Q4_1, E>(table, GgmlType::Q4_1, isa);
    install_32<Q5_0, E>(table, GgmlType::Q5_0, isa);
    install_32<Q5_1, E>(table, GgmlType::Q5_1, isa);
    install_32<Q8_0, E>(table, GgmlType::Q8_0, isa);
    install_32<IQ4_NL, E>(table, GgmlType::IQ4_NL, isa);
    install_32<MXFP4, E>(table, GgmlType::MXFP4, isa);
    install_k<Q2_K, E>(table, GgmlType::Q2_K, isa);
    install_k<Q3_K, E>(table, GgmlType::Q3_K, isa);
    install_k<Q4_K, E>(table, GgmlType::Q4_K, isa);
    install_k<Q5_K, E>(table, GgmlType::Q5_K, isa);
    install_k<Q6_K, E>(table, GgmlType::Q6_K, isa);
    install_k<IQ4_XS, E>(table, GgmlType::IQ4_XS, isa);
    install_k<TQ1_0, E>(table, GgmlType::TQ1_0, isa);
    install_k<TQ2_0, E>(table, GgmlType::TQ2_0, isa);
    install_k<IQ2_XXS, E>(table, GgmlType::IQ2_XXS, isa);
    install_k<IQ2_XS, E>(table, GgmlType::IQ2_XS, isa);
    install_k<IQ2_S, E>(table, GgmlType::IQ2_S, isa);
    install_k<IQ3_XXS, E>(table, GgmlType::IQ3_XXS, isa);
    install_k<IQ3_S, E>(table, GgmlType::IQ3_S, isa);
    install_k<IQ1_S, E>(table, GgmlType::IQ1_S, isa);
    install_k<IQ1_M, E>(table, GgmlType::IQ1_M, isa);
}

}  // namespace
}  // namespace mw::neon
