// NEON decoders of the issue 38 types into the decode.h shapes, so the GGUF-layout engines of
// dot.h (widening multiplies, SDOT) run them unchanged:
// - IQ4_NL, MXFP4 (Decoded32, Q8_0 activations): nibbles through a 16-entry code book (TBL);
// - IQ4_XS, TQ1_0, TQ2_0 and the lattice i-quants (DecodedK, Q8_K activations).
// The lattice types decode as ref::lattice_unpack does: value = factor * scale * w with w a
// signed byte (grid coordinate with its sign; IQ1: 8 * grid +- 1) and an integer scale per 16
// values, so the integer sums are exact and only the float order differs from the reference.
// Grid points are 8 (IQ2, IQ1) or 4 (IQ3) bytes of tensor/iq_grids.h, loaded as vector halves
// or quarters; signs become a byte mask (bits_to_bytes) applied as (v ^ m) - m.
//
// Internal linkage, for the reason given in decode.h.
#pragma once

#include "tensor/arm/decode.h"
#include "tensor/iq_grids.h"

namespace mw::neon {
namespace {

// ---- Code-book types ------------------------------------------------------------------------

// The 32 nibbles of qs (element order: low nibbles, then high) looked up in a 16-byte book.
inline void book_nibbles(const uint8_t* qs, const int8x16_t book, int8x16_t q[2]) {
    const uint8x16_t v = vld1q_u8(qs);
    q[0] = vqtbl1q_s8(book, vandq_u8(v, vdupq_n_u8(0xF)));
    q[1] = vqtbl1q_s8(book, vshrq_n_u8(v, 4));
}

struct IQ4_NL {
    using Block = BlockIQ4_NL;
    using Act = BlockQ8_0;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, Decoded32& o) {
        book_nibbles(b.qs, vld1q_s8(kIq4Values), o.q);
        o.d = half_to_float(b.d);
        o.m = 0.0f;
    }
};

// The book holds the E2M1 values doubled, so the scale is 2^(e - 128) (e8m0_half).
struct MXFP4 {
    using Block = BlockMXFP4;
    using Act = BlockQ8_0;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, Decoded32& o) {
        book_nibbles(b.qs, vld1q_s8(kMxfp4Values), o.q);
        o.d = e8m0_half(b.e);
        o.m = 0.0f;
    }
};

// Sub-blocks of 32 as IQ4_NL blocks under one fp16 d, a 6-bit scale (minus 32) each.
struct IQ4_XS {
    using Block = BlockIQ4_XS;
    static constexpr int kGroup = 32;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, DecodedK& o) {
        const int8x16_t book = vld1q_s8(kIq4Values);
        for (int j = 0; j < 8; ++j) {
            book_nibbles(b.qs + 16 * j, book, o.q + 2 * j);
            o.scale[j] = int16_t(iq4xs_scale(b, j));
        }
        o.mins[0] = o.mins[1] = vdupq_n_s16(0);
        o.d = half_to_float(b.d);
        o.dmin = 0.0f;
    }
    static int32x4_t min_sums(const DecodedK&, const BlockQ8_K&) { return vdupq_n_s32(0); }
};

// ---- Ternary ---------------------------------------------------------------------------------

inline void unit_scales(DecodedK& o) {
    for (int g = 0; g < 8; ++g) o.scale[g] = 1;
    o.mins[0] = o.mins[1] = vdupq_n_s16(0);
    o.dmin = 0.0f;
}

// TQ2_0: codes 0..3 in Q2_K's layout, value code - 1 (scales of 1 per 32).
struct TQ2_0 {
    using Block = BlockTQ2_0;
    static constexpr int kGroup = 32;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, DecodedK& o) {
        const uint8x16_t three = vdupq_n_u8(3);
        const int8x16_t one = vdupq_n_s8(1);
        // Chunk 8h + 2s + k: bits 2s..2s+1 of qs[32h + 16k + i].
        for (int h = 0; h < 2; ++h) {
            const uint8x16_t v[2] = {vld1q_u8(b.qs + 32 * h), vld1q_u8(b.qs + 32 * h + 16)};
            for (int s = 0; s < 4; ++s) {
                for (int k = 0; k < 2; ++k) {
                    const uint8x16_t code =
                        vandq_u8(vshlq_u8(v[k], vdupq_n_s8(int8_t(-2 * s))), three);
                    o.q[8 * h + 2 * s + k] = vsubq_s8(as_s8(code), one);
                }
            }
        }
        unit_scales(o);
        o.d = half_to_float(b.d);
    }
    static int32x4_t min_sums(const DecodedK&, const BlockQ8_K&) { return vdupq_n_s32(0); }
};

// Trit digits of bytes already multiplied by 3^k (mod 256): the top trit, (m * 3) >> 8, minus 1.
inline int8x16_t top_trits(uint8x16_t m) {
    const uint8x16_t three = vdupq_n_u8(3);
    const uint8x8_t lo = vshrn_n_u16(vmull_u8(vget_low_u8(m), vget_low_u8(three)), 8);
    const uint8x8_t hi = vshrn_n_u16(vmull_high_u8(m, three), 8);
    return vsubq_s8(as_s8(vcombine_u8(lo, hi)), vdupq_n_s8(1));
}

// TQ1_0: five trits per byte of qs, four per byte of qh (layout in tensor/quants.h).
struct TQ1_0 {
    using Block = BlockTQ1_0;
    static constexpr int kGroup = 32;
    static constexpr bool kHasMin = false;
    static void decode(const Block& b, DecodedK& o) {
        static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
        const uint8x16_t a0 = vld1q_u8(b.qs), a1 = vld1q_u8(b.qs + 16), a2 = vld1q_u8(b.qs + 32);
        for (int k = 0; k < 5; ++k) {
            const uint8x16_t p = vdupq_n_u8(kPow3[k]);
            o.q[2 * k] = top_trits(vmulq_u8(a0, p));  // elements 32k .. 32k + 15
            o.q[2 * k + 1] = top_trits(vmulq_u8(a1, p));
            o.q[10 + k] = top_trits(vmulq_u8(a2, p));  // elements 160 + 16k ..
        }
        // Elements 240 + 4k + m: digit k of qh[m].
        static constexpr uint8_t kPowQh[16] = {1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27};
        const uint8x16_t qh = vreinterpretq_u8_u32(vdupq_n_u32(load_u32(b.qh)));
        o.q[15] = top_trits(vmulq_u8(qh, vld1q_u8(kPowQh)));
        unit_scales(o);
        o.d = half_to_float(b.d);
    }
    static int32x4_t min_sums(const DecodedK&, const BlockQ8_K&) { return vdupq_n_s32(0); }
};

// ---- Lattice i-quants ----------------------------------------------------------------------

// Two 8-value grid points with 8 sign bits each (bit j of s0 for lane j, of s1 for lane 8 + j).
inline int8x16_t signed_points8(uint64_t p0, uint64_t p1, uint32_t s0, uint32_t s1) {
    const uint8x16_t v = vcombine_u8(vcreate_u8(p0), vcreate_u8(p1));
    const uint8x16_t m = bits_to_bytes(s0 | (s1 << 8));
    return vsubq_s8(as_s8(veorq_u8(v, m)), as_s8(m));
}

// Four 4-value grid points, 16 sign bits.
inline int8x16_t signed_points4(const uint32_t p[4], uint32_t signs16) {
    const uint8x16_t v = vreinterpretq_u8_u32(vld1q_u32(p));
    const uint8x16_t m = bits_to_bytes(signs16);
    return vsubq_s8(as_s8(veorq_u8(v, m)), as_s8(m));
}

// IQ1's values 8 * grid + delta from two points of -1 / 0 / 1 and their deltas (+-1).
inline int8x16_t iq1_points(uint64_t p0, uint64_t p1, int8_t delta0, int8_t delta1) {
    const int8x16_t v = vreinterpretq_s8_u8(vcombine_u8(vcreate_u8(p0), vcreate_u8(p1)));
    const int8x16_t delta = vcombine_s8(vdup_n_s8(delta0), vdup_n_s8(delta1));
    return vaddq_s8(vshlq_n_s8(v, 3), delta);
}

inline void no_mins(DecodedK& o) {
    o.mins[0] = o.mins[1] = vdupq_n_s16(0);
    o.dmin = 0.0f;
}

struct Lattice {
    static constexpr int kGroup = 16;
    static constexpr bool kHasMin = false;
    static int32x4_t min_sums(const DecodedK&, const BlockQ8_K&) { return vdupq_n_s32(0); }
};

struct IQ2_XXS : Lattice {
    using Block = BlockIQ2_XXS;
    static void decode(const Block& b, DecodedK& o) {
        const IqGrids& g = iq_grids();
        const auto* q8 = reinterpret_cast<const uint8_t*>(b.qs);
        for (int j = 0; j < 8; ++j) {
            // Four grid bytes, then four 7-bit sign indices and the 4-bit scale.
            const uint8_t* idx = q8 + 8 * j;
            const uint32_t aux = load_u32(idx + 4);
            for (int p = 0; p < 2; ++p) {
                o.q[2 * j + p] = signed_points8(g.iq2xxs[idx[2 * p]], g.iq2xxs[idx[2 * p + 1]],
                                                g.signs[(aux >> (14 * p)) & 127],
                                                g.signs[(aux >> (14 * p + 7)) & 127]);
            }
            o.scale[2 * j] = o.scale[2 * j + 1] = int16_t(2 * (aux >> 28) + 1);
        }
        no_mins(o);
        o.d = half_to_float(b.d) * 0.125f;
    }
};

struct IQ2_XS : Lattice {
    using Block = BlockIQ2_XS;
    static void decode(const Block& b, DecodedK& o) {
        const IqGrids& g = iq_grids();
        for (int j = 0; j < 8; ++j) {
            for (int p = 0; p < 2; ++p) {
                const uint16_t q0 = b.qs[4 * j + 2 * p], q1 = b.qs[4 * j + 2 * p + 1];
                o.q[2 * j + p] = signed_points8(g.iq2xs[q0 & 511], g.iq2xs[q1 & 511],
                                                g.signs[q0 >> 9], g.signs[q1 >> 9]);
            }
            o.scale[2 * j] = int16_t(2 * (b.scales[j] & 0xF) + 1);
            o.scale[2 * j + 1] = int16_t(2 * (b.scales[j] >> 4) + 1);
        }
        no_mins(o);
        o.d = half_to_float(b.d) * 0.125f;
    }
};

struct IQ2_S : Lattice {
    using Block = BlockIQ2_S;
    static void decode(const Block& b, DecodedK& o) {
        const IqGrids& g = iq_grids();
        for (int j = 0; j < 8; ++j) {
            for (int p = 0; p < 2; ++p) {
                const int l = 2 * p;  // points l, l + 1: 8 low bits in qs, 2 high bits in qh[j]
                const int i0 = b.qs[4 * j + l] | ((b.qh[j] << (8 - 2 * l)) & 0x300);
                const int i1 = b.qs[4 * j + l + 1] | ((b.qh[j] << (6 - 2 * l)) & 0x300);
                o.q[2 * j + p] = signed_points8(g.iq2s[i0], g.iq2s[i1], b.qs[32 + 4 * j + l],
                                                b.qs[33 + 4 * j + l]);
            }
            o.scale[2 * j] = int16_t(2 * (b.scales[j] & 0xF) + 1);
            o.scale[2 * j + 1] = int16_t(2 * (b.scales[j] >> 4) + 1);
        }
        no_mins(o);
        o.d = half_to_float(b.d) * 0.125f;
    }
};

struct IQ3_XXS : Lattice {
    using Block = BlockIQ3_XXS;
    static void decode(const Block& b, DecodedK& o) {
        const IqGrids& g = iq_grids();
        for (int j = 0; j < 8; ++j) {
            const uint32_t aux = load_u32(b.qs + 64 + 4 * j);
            for (int p = 0; p < 2; ++p) {
                const uint8_t* idx = b.qs + 8 * j + 4 * p;
                const uint32_t pts[4] = {g.iq3xxs[idx[0]], g.iq3xxs[idx[1]], g.iq3xxs[idx[2]],
                                         g.iq3xxs[idx[3]]};
                const uint32_t signs = g.signs[(aux >> (14 * p)) & 127] |
                                       uint32_t(g.signs[(aux >> (14 * p + 7)) & 127]) << 8;
                o.q[2 * j + p] = signed_points4(pts, signs);
            }
            o.scale[2 * j] = o.scale[2 * j + 1] = int16_t(2 * (aux >> 28) + 1);
        }
        no_mins(o);
        o.d = half_to_float(b.d) * 0.25f;
    }
};

struct IQ3_S : Lattice {
    using Block = BlockIQ3_S;
    static void decode(const Block& b, DecodedK& o) {
        const IqGrids& g = iq_grids();
        for (int j = 0; j < 8; ++j) {
            for (int p = 0; p < 2; ++p) {
                uint32_t pts[4];
                for (int m = 0; m < 4; ++m) {
                    const int k = 4 * p + m;  // the 9th index bit is bit k of qh[j]
                    pts[m] = g.iq3s[b.qs[8 * j + k] | ((b.qh[j] << (8 - k)) & 256)];
                }
                const uint32_t signs = b.signs[4 * j + 2 * p] | uint32_t(b.signs[4 * j + 2 * p + 1])
                                                                    << 8;
                o.q[2 * j + p] = signed_points4(pts, signs);
            }
            o.scale[2 * j] = o.scale[2 * j + 1] =
                int16_t(2 * ((b.scales[j / 2] >> (4 * (j % 2))) & 0xF) + 1);
        }
        no_mins(o);
        o.d = half_to_float(b.d);
    }
};

// 11-bit indices: 8 bits in qs, 3 in qh (IQ1_S: bits 3l of qh[j]; IQ1_M: a nibble of qh).
struct IQ1_S : Lattice {
    using Block = BlockIQ1_S;
    static void decode(const Block& b, DecodedK& o) {
        const IqGrids& g = iq_grids();
        for (int j = 0; j < 8; ++j) {
            const uint32_t qh = b.qh[j];
            const int8_t delta = (qh & 0x8000) ? -1 : 1;
            uint64_t pts[4];
            for (int l = 0; l < 4; ++l)
                pts[l] = g.iq1s[b.qs[4 * j + l] | (((qh >> (3 * l)) & 7) << 8)];
            o.q[2 * j] = iq1_points(pts[0], pts[1], delta, delta);
            o.q[2 * j + 1] = iq1_points(pts[2], pts[3], delta, delta);
            o.scale[2 * j] = o.scale[2 * j + 1] = int16_t(2 * ((qh >> 12) & 7) + 1);
        }
        no_mins(o);
        o.d = half_to_float(b.d) * 0.125f;
    }
};

// IQ1_M: a 3-bit scale per 16 values, a delta sign per 8; the fp16 d in the scale words' top
// nibbles.
struct IQ1_M : Lattice {
    using Block = BlockIQ1_M;
    static void decode(const Block& b, DecodedK& o) {
        const IqGrids& g = iq_grids();
        uint16_t sc[4];
        std::memcpy(sc, b.scales, sizeof sc);
        for (int j = 0; j < 8; ++j) {
            uint64_t pts[4];
            int8_t delta[4];
            for (int l = 0; l < 4; ++l) {
                const uint8_t qh = b.qh[2 * j + l / 2];
                pts[l] = g.iq1s[b.qs[4 * j + l] | ((l % 2 ? qh << 4 : qh << 8) & 0x700)];
                delta[l] = (qh & (l % 2 ? 0x80 : 0x08)) ? -1 : 1;
            }
            o.q[2 * j] = iq1_points(pts[0], pts[1], delta[0], delta[1]);
            o.q[2 * j + 1] = iq1_points(pts[2], pts[3], delta[2], delta[3]);
            for (int h = 0; h < 2; ++h) {
                o.scale[2 * j + h] = int16_t(2 * ((sc[j / 2] >> (6 * (j % 2) + 3 * h)) & 7) + 1);
            }
        }
        no_mins(o);
        const uint16_t d = uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                    ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        o.d = half_to_float(d) * 0.125f;
    }
};

}  // namespace
}  // namespace mw::neon
