// NEON decoding of weight blocks into signed 8-bit lanes, shared by the ARM64 kernel files
// (kernels_neon*.cpp). Lane i of decoded chunk c is element 16c + i of the block, so it lines up
// with the activation quants (Q8_0 / Q8_1 / Q8_K qs) for the integer dot products.
//
// Everything here has internal linkage on purpose: each kernel file includes it and compiles its
// own copy with its own -march, so code built for dotprod or i8mm never reaches a CPU without
// them through a shared inline definition.
#pragma once

#if !defined(__aarch64__)
#error "kernels_neon_decode.h is for ARM64 builds only"
#endif

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "tensor/quants.h"

namespace mw::neon {
namespace {

inline float half_to_float(uint16_t h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Byte j of the result is 0xFF where bit j of the low 16 bits of `bits` is set, else 0.
inline uint8x16_t bits_to_bytes(uint32_t bits) {
    static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t v = vcombine_u8(vdup_n_u8(uint8_t(bits)), vdup_n_u8(uint8_t(bits >> 8)));
    return vtstq_u8(v, vld1q_u8(kBit));
}

inline int8x16_t as_s8(uint8x16_t v) {
    return vreinterpretq_s8_u8(v);
}

// ---- 32-element blocks: one scale per block, plus an offset m for Q4_1 / Q5_1 ----------------

struct Decoded32 {
    int8x16_t q[2];  // elements 0..15, 16..31
    float d;
    float m;  // 0 for the symmetric types
};

struct Q4_0 {
    using Block = BlockQ4_0;
    using Act = BlockQ8_0;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, Decoded32& o) {
        const uint8x16_t v = vld1q_u8(b.qs);
        const int8x16_t eight = vdupq_n_s8(8);
        o.q[0] = vsubq_s8(as_s8(vandq_u8(v, vdupq_n_u8(0xF))), eight);
        o.q[1] = vsubq_s8(as_s8(vshrq_n_u8(v, 4)), eight);
        o.d = half_to_float(b.d);
        o.m = 0.0f;
    }
};

struct Q4_1 {
    using Block = BlockQ4_1;
    using Act = BlockQ8_1;
    static constexpr bool kHasMin = true;
    static void decode(const Block& b, Decoded32& o) {
        const uint8x16_t v = vld1q_u8(b.qs);
        o.q[0] = as_s8(vandq_u8(v, vdupq_n_u8(0xF)));
        o.q[1] = as_s8(vshrq_n_u8(v, 4));
        o.d = half_to_float(b.d);
        o.m = half_to_float(b.m);
    }
};

// The 5-bit quants of a Q5 block, 0..31: low nibbles plus bit j of qh as 16.
inline void decode_q5_bits(const uint8_t* qs, const uint8_t* qh, int8x16_t q[2]) {
    const uint8x16_t v = vld1q_u8(qs);
    const uint32_t high = load_u32(qh);
    const uint8x16_t sixteen = vdupq_n_u8(16);
    q[0] = as_s8(vorrq_u8(vandq_u8(v, vdupq_n_u8(0xF)), vandq_u8(bits_to_bytes(high), sixteen)));
    q[1] = as_s8(vorrq_u8(vshrq_n_u8(v, 4), vandq_u8(bits_to_bytes(high >> 16), sixteen)));
}

struct Q5_0 {
    using Block = BlockQ5_0;
    using Act = BlockQ8_0;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, Decoded32& o) {
        decode_q5_bits(b.qs, b.qh, o.q);
        o.q[0] = vsubq_s8(o.q[0], vdupq_n_s8(16));
        o.q[1] = vsubq_s8(o.q[1], vdupq_n_s8(16));
        o.d = half_to_float(b.d);
        o.m = 0.0f;
    }
};

struct Q5_1 {
    using Block = BlockQ5_1;
    using Act = BlockQ8_1;
    static constexpr bool kHasMin = true;
    static void decode(const Block& b, Decoded32& o) {
        decode_q5_bits(b.qs, b.qh, o.q);
        o.d = half_to_float(b.d);
        o.m = half_to_float(b.m);
    }
};

struct Q8_0 {
    using Block = BlockQ8_0;
    using Act = BlockQ8_0;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, Decoded32& o) {
        o.q[0] = vld1q_s8(b.qs);
        o.q[1] = vld1q_s8(b.qs + 16);
        o.d = half_to_float(b.d);
        o.m = 0.0f;
    }
};

// ---- K-quants: 256 elements in 16 chunks, integer scales per group of 16 or 32 ---------------
//
// x_e = d * scale[g] * q_e - dmin * min[g'] where g = e / kGroup; the mins (Q2_K: per 16,
// Q4_K / Q5_K: per 32) multiply the activation's bsums instead of every element. Q3_K and Q6_K
// have no mins: their offsets are folded into the signed quants.

struct DecodedK {
    int8x16_t q[16];
    int16_t scale[16];  // kGroups used
    int16x8_t mins[2];  // Q2_K: 16 mins; Q4_K / Q5_K: 8 mins in mins[0]
    float d;
    float dmin;
};

struct Q2_K {
    using Block = BlockQ2_K;
    static constexpr int kGroup = 16;
    static constexpr bool kHasMin = true;
    static void decode(const Block& b, DecodedK& o) {
        const uint8x16_t three = vdupq_n_u8(3);
        // Chunk 8h + 2s + k holds bits 2s..2s+1 of qs[32h + 16k + i].
        for (int h = 0; h < 2; ++h) {
            const uint8x16_t v0 = vld1q_u8(b.qs + 32 * h);
            const uint8x16_t v1 = vld1q_u8(b.qs + 32 * h + 16);
            int8x16_t* q = o.q + 8 * h;
            q[0] = as_s8(vandq_u8(v0, three));
            q[1] = as_s8(vandq_u8(v1, three));
            q[2] = as_s8(vandq_u8(vshrq_n_u8(v0, 2), three));
            q[3] = as_s8(vandq_u8(vshrq_n_u8(v1, 2), three));
            q[4] = as_s8(vandq_u8(vshrq_n_u8(v0, 4), three));
            q[5] = as_s8(vandq_u8(vshrq_n_u8(v1, 4), three));
            q[6] = as_s8(vshrq_n_u8(v0, 6));
            q[7] = as_s8(vshrq_n_u8(v1, 6));
        }
        const uint8x16_t sc = vld1q_u8(b.scales);
        const uint8x16_t scale = vandq_u8(sc, vdupq_n_u8(0xF));
        const uint8x16_t min = vshrq_n_u8(sc, 4);
        vst1q_s16(o.scale, vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(scale))));
        vst1q_s16(o.scale + 8, vreinterpretq_s16_u16(vmovl_high_u8(scale)));
        o.mins[0] = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(min)));
        o.mins[1] = vreinterpretq_s16_u16(vmovl_high_u8(min));
        o.d = half_to_float(b.d);
        o.dmin = half_to_float(b.dmin);
    }
    // sum_g min[g] * bsums[g], as four partial sums.
    static int32x4_t min_sums(const DecodedK& w, const BlockQ8_K& x) {
        const int16x8_t s0 = vld1q_s16(x.bsums), s1 = vld1q_s16(x.bsums + 8);
        int32x4_t p = vmull_s16(vget_low_s16(w.mins[0]), vget_low_s16(s0));
        p = vmlal_high_s16(p, w.mins[0], s0);
        p = vmlal_s16(p, vget_low_s16(w.mins[1]), vget_low_s16(s1));
        return vmlal_high_s16(p, w.mins[1], s1);
    }
};

struct Q3_K {
    using Block = BlockQ3_K;
    static constexpr int kGroup = 16;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, DecodedK& o) {
        const uint8x16_t three = vdupq_n_u8(3), four = vdupq_n_u8(4);
        const uint8x16_t hm[2] = {vld1q_u8(b.hmask), vld1q_u8(b.hmask + 16)};
        // Low 2 bits as in Q2_K; chunk c = 2b + k takes bit b of hmask[16k + i]: q - 4 without it.
        for (int h = 0; h < 2; ++h) {
            const uint8x16_t v[2] = {vld1q_u8(b.qs + 32 * h), vld1q_u8(b.qs + 32 * h + 16)};
            for (int s = 0; s < 4; ++s) {
                for (int k = 0; k < 2; ++k) {
                    const int c = 8 * h + 2 * s + k;
                    const uint8x16_t low =
                        vandq_u8(vshlq_u8(v[k], vdupq_n_s8(int8_t(-2 * s))), three);
                    const uint8x16_t has = vtstq_u8(hm[k], vdupq_n_u8(uint8_t(1u << (c / 2))));
                    o.q[c] = vsubq_s8(as_s8(low), as_s8(vbicq_u8(four, has)));
                }
            }
        }
        // 6-bit scales: low nibbles from bytes 0-7 (j < 8) or their high nibbles (j >= 8), the
        // top two bits of scale 4p + i are bits 2p..2p+1 of byte 8 + i.
        const uint32_t a = load_u32(b.scales), bw = load_u32(b.scales + 4);
        const uint32_t c = load_u32(b.scales + 8);
        const uint32_t low4 = 0x0F0F0F0Fu, low2 = 0x03030303u;
        const uint32_t words[4] = {
            (a & low4) | ((c & low2) << 4),
            (bw & low4) | (((c >> 2) & low2) << 4),
            ((a >> 4) & low4) | (((c >> 4) & low2) << 4),
            ((bw >> 4) & low4) | (((c >> 6) & low2) << 4),
        };
        const int8x16_t sc = vsubq_s8(vreinterpretq_s8_u32(vld1q_u32(words)), vdupq_n_s8(32));
        vst1q_s16(o.scale, vmovl_s8(vget_low_s8(sc)));
        vst1q_s16(o.scale + 8, vmovl_high_s8(sc));
        o.mins[0] = o.mins[1] = vdupq_n_s16(0);
        o.d = half_to_float(b.d);
        o.dmin = 0.0f;
    }
    static int32x4_t min_sums(const DecodedK&, const BlockQ8_K&) { return vdupq_n_s32(0); }
};

// Scales and mins of Q4_K / Q5_K (6 bits each, packed in 12 bytes, see q4k_scale_min): with the
// bytes as little-endian words a, b, c: scales 0-3 = a & 63, mins 0-3 = b & 63; scales 4-7 = low
// nibbles of c plus the top bits of a, mins 4-7 = high nibbles of c plus the top bits of b.
inline void unpack_k4_scales(const uint8_t* scales, DecodedK& o) {
    const uint32_t a = load_u32(scales), b = load_u32(scales + 4), c = load_u32(scales + 8);
    const uint32_t low6 = 0x3F3F3F3Fu, low4 = 0x0F0F0F0Fu, low2 = 0x03030303u;
    const uint32_t scale_words[2] = {a & low6, (c & low4) | (((a >> 6) & low2) << 4)};
    const uint32_t min_words[2] = {b & low6, ((c >> 4) & low4) | (((b >> 6) & low2) << 4)};
    vst1q_s16(o.scale, vreinterpretq_s16_u16(vmovl_u8(vreinterpret_u8_u32(vld1_u32(scale_words)))));
    o.mins[0] = vreinterpretq_s16_u16(vmovl_u8(vreinterpret_u8_u32(vld1_u32(min_words))));
    o.mins[1] = vdupq_n_s16(0);
}

// sum_j min[j] * (bsums[2j] + bsums[2j + 1]) for the 8 sub-blocks of 32.
inline int32x4_t k4_min_sums(const DecodedK& w, const BlockQ8_K& x) {
    const int16x8_t pairs = vpaddq_s16(vld1q_s16(x.bsums), vld1q_s16(x.bsums + 8));
    const int32x4_t p = vmull_s16(vget_low_s16(w.mins[0]), vget_low_s16(pairs));
    return vmlal_high_s16(p, w.mins[0], pairs);
}

struct Q4_K {
    using Block = BlockQ4_K;
    static constexpr int kGroup = 32;
    static constexpr bool kHasMin = true;
    static void decode(const Block& b, DecodedK& o) {
        // Chunk 4p + 2n + k: nibble n of qs[32p + 16k + i].
        for (int p = 0; p < 4; ++p) {
            const uint8x16_t v0 = vld1q_u8(b.qs + 32 * p), v1 = vld1q_u8(b.qs + 32 * p + 16);
            o.q[4 * p + 0] = as_s8(vandq_u8(v0, vdupq_n_u8(0xF)));
            o.q[4 * p + 1] = as_s8(vandq_u8(v1, vdupq_n_u8(0xF)));
            o.q[4 * p + 2] = as_s8(vshrq_n_u8(v0, 4));
            o.q[4 * p + 3] = as_s8(vshrq_n_u8(v1, 4));
        }
        unpack_k4_scales(b.scales, o);
        o.d = half_to_float(b.d);
        o.dmin = half_to_float(b.dmin);
    }
    static int32x4_t min_sums(const DecodedK& w, const BlockQ8_K& x) { return k4_min_sums(w, x); }
};

struct Q5_K {
    using Block = BlockQ5_K;
    static constexpr int kGroup = 32;
    static constexpr bool kHasMin = true;
    static void decode(const Block& b, DecodedK& o) {
        const uint8x16_t hm[2] = {vld1q_u8(b.qh), vld1q_u8(b.qh + 16)};
        const uint8x16_t sixteen = vdupq_n_u8(16);
        // As Q4_K, plus 16 where bit c / 2 of qh[16k + i] is set (chunk c = 2 * sub-block + k).
        for (int p = 0; p < 4; ++p) {
            const uint8x16_t v[2] = {vld1q_u8(b.qs + 32 * p), vld1q_u8(b.qs + 32 * p + 16)};
            for (int n = 0; n < 2; ++n) {
                for (int k = 0; k < 2; ++k) {
                    const int c = 4 * p + 2 * n + k;
                    const uint8x16_t low =
                        n == 0 ? vandq_u8(v[k], vdupq_n_u8(0xF)) : vshrq_n_u8(v[k], 4);
                    const uint8x16_t has = vtstq_u8(hm[k], vdupq_n_u8(uint8_t(1u << (c / 2))));
                    o.q[c] = as_s8(vorrq_u8(low, vandq_u8(has, sixteen)));
                }
            }
        }
        unpack_k4_scales(b.scales, o);
        o.d = half_to_float(b.d);
        o.dmin = half_to_float(b.dmin);
    }
    static int32x4_t min_sums(const DecodedK& w, const BlockQ8_K& x) { return k4_min_sums(w, x); }
};

struct Q6_K {
    using Block = BlockQ6_K;
    static constexpr int kGroup = 16;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, DecodedK& o) {
        const uint8x16_t low4 = vdupq_n_u8(0xF), three = vdupq_n_u8(3);
        const int8x16_t offset = vdupq_n_s8(32);
        // Half h, chunk 8h + 2j + k (quarter j, 16 lanes k): the low nibble (j = 0, 1) or high
        // nibble (j = 2, 3) of ql[64h + 32 (j % 2) + 16k + i], high bits 2j of qh[32h + 16k + i].
        for (int h = 0; h < 2; ++h) {
            for (int k = 0; k < 2; ++k) {
                const uint8x16_t l0 = vld1q_u8(b.ql + 64 * h + 16 * k);
                const uint8x16_t l1 = vld1q_u8(b.ql + 64 * h + 32 + 16 * k);
                const uint8x16_t hb = vld1q_u8(b.qh + 32 * h + 16 * k);
                const uint8x16_t lows[4] = {vandq_u8(l0, low4), vandq_u8(l1, low4),
                                            vshrq_n_u8(l0, 4), vshrq_n_u8(l1, 4)};
                const uint8x16_t highs[4] = {vandq_u8(hb, three),
                                             vandq_u8(vshrq_n_u8(hb, 2), three),
                                             vandq_u8(vshrq_n_u8(hb, 4), three), vshrq_n_u8(hb, 6)};
                for (int j = 0; j < 4; ++j) {
                    const uint8x16_t q6 = vorrq_u8(lows[j], vshlq_n_u8(highs[j], 4));
                    o.q[8 * h + 2 * j + k] = vsubq_s8(as_s8(q6), offset);
                }
            }
        }
        const int8x16_t sc = vld1q_s8(b.scales);
        vst1q_s16(o.scale, vmovl_s8(vget_low_s8(sc)));
        vst1q_s16(o.scale + 8, vmovl_high_s8(sc));
        o.mins[0] = o.mins[1] = vdupq_n_s16(0);
        o.d = half_to_float(b.d);
        o.dmin = 0.0f;
    }
    static int32x4_t min_sums(const DecodedK&, const BlockQ8_K&) { return vdupq_n_s32(0); }
};

}  // namespace
}  // namespace mw::neon
