// The NEON vector type of the width-generic kernels (tensor/simd/): V128, four 32-bit lanes, the
// SDOT dot product (ARMv8.2 dotprod). With it the packed layouts' decode kernels and the packed
// prefill GEMM (tensor/simd/packed.h, gemm.h) are the same source as on x86; only the lane count
// differs (groups of 4 rows). Files that include this are compiled with +dotprod.
//
// SDOT multiplies signed bytes: the kernels' codes are unsigned but below 128, so they are the
// same bytes signed, and signed weights (Q8_0) need no bias at all.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#if !defined(__ARM_FEATURE_DOTPROD)
#error "tensor/arm/simd.h needs -march=armv8.2-a+dotprod (src/CMakeLists.txt)"
#endif

namespace mw::simd {
namespace {

struct V128 {
    using I = int32x4_t;
    using F = float32x4_t;
    using Dot = int32x4_t;
    static constexpr int kLanes = 4;
    static constexpr int kBytes = 16;
    static constexpr bool kVnni = true;  // exact int32 dot products: no int16 partial sums
    // Prefill tile: 2 groups of 4 rows x tokens (int + float sums, the K-quants' super-block
    // sums, fit 32 registers).
    static constexpr int kTileGroups = 2;
    static constexpr int kTileTokens = 6;
    static constexpr int kTileTokensK = 4;
    // Decode kernels' tokens per pass (simd/packed.h): 4 as before, since with groups of 4 rows
    // the K-quant kernels spill from 6 tokens on (objdump) and no ARM timing says more tokens
    // a pass pay; neon-dotprod switches to the GEMM at 8 tokens, neon-i8mm at 4.
    static constexpr int kPassTokens = 4;

    static int8x16_t s8(I v) { return vreinterpretq_s8_s32(v); }
    static uint16x8_t u16(I v) { return vreinterpretq_u16_s32(v); }

    static void prefetch(const void* p) { __builtin_prefetch(p, 0, 3); }
    static I zero() { return vdupq_n_s32(0); }
    static I load(const void* p) {
        return vreinterpretq_s32_u8(vld1q_u8(static_cast<const uint8_t*>(p)));
    }
    static void store(void* p, I v) { vst1q_u8(static_cast<uint8_t*>(p), vreinterpretq_u8_s32(v)); }
    static I set1_i32(int v) { return vdupq_n_s32(v); }
    static I set1_i8(char v) { return vreinterpretq_s32_s8(vdupq_n_s8(int8_t(v))); }
    static I bcast32(const void* p) {
        int32_t v;
        std::memcpy(&v, p, 4);
        return vdupq_n_s32(v);
    }
    static I and_(I a, I b) { return vandq_s32(a, b); }
    static I or_(I a, I b) { return vorrq_s32(a, b); }
    static I xor_(I a, I b) { return veorq_s32(a, b); }
    static I select_or(I a, I mask, I b) { return vorrq_s32(vandq_s32(a, mask), b); }
    template <int n>
    static I srl16(I v) {
        return vreinterpretq_s32_u16(vshrq_n_u16(u16(v), n));
    }
    template <int n>
    static I sll16(I v) {
        return vreinterpretq_s32_u16(vshlq_n_u16(u16(v), n));
    }
    static I add_i32(I a, I b) { return vaddq_s32(a, b); }
    static I sub_i32(I a, I b) { return vsubq_s32(a, b); }

    static Dot dot_begin(I s) { return s; }
    static Dot dot_add(Dot d, I codes, I x) { return vdotq_s32(d, s8(codes), s8(x)); }
    static I dot_end(I, Dot d) { return d; }
    static constexpr int kSignedBias = 0;
    static I dot_signed(I s, I w, I x) { return vdotq_s32(s, s8(w), s8(x)); }
    // acc + the sums of pairs of int16 products (x86's vpdpwssd).
    static I dpwssd(I acc, I a, I b) {
        const int16x8_t x = vreinterpretq_s16_s32(a), y = vreinterpretq_s16_s32(b);
        const int32x4_t lo = vmull_s16(vget_low_s16(x), vget_low_s16(y));
        const int32x4_t hi = vmull_high_s16(x, y);
        return vaddq_s32(acc, vpaddq_s32(lo, hi));
    }

    static F zerof() { return vdupq_n_f32(0.0f); }
    static F set1(float v) { return vdupq_n_f32(v); }
    static F loadf(const float* p) { return vld1q_f32(p); }
    static void storef(float* p, F v) { vst1q_f32(p, v); }
    static F cvt(I v) { return vcvtq_f32_s32(v); }
    static F add(F a, F b) { return vaddq_f32(a, b); }
    static F sub(F a, F b) { return vsubq_f32(a, b); }
    static F mul(F a, F b) { return vmulq_f32(a, b); }
    static F fmadd(F a, F b, F c) { return vfmaq_f32(c, a, b); }
    static F fnmadd(F a, F b, F c) { return vfmsq_f32(c, a, b); }
    static float reduce(F v) { return vaddvq_f32(v); }
    static F load_halfs(const void* p) {
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(p))));
    }
    static F load_bf16(const uint16_t* p) {
        return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
    }
    static F maxf(F a, F b) { return vmaxq_f32(a, b); }
    static F round(F v) { return vrndnq_f32(v); }
    // p * 2^n, 2^n through the exponent field.
    static F ldexp(F p, F n) {
        const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
        return vmulq_f32(p, vreinterpretq_f32_s32(e));
    }
    // The first n lanes (n < kLanes); the others read nothing and hold zeros.
    static F loadf_n(const float* p, int n) {
        float lanes[4] = {};
        for (int i = 0; i < n; ++i) lanes[i] = p[i];
        return vld1q_f32(lanes);
    }
    static void storef_n(float* p, F v, int n) {
        float lanes[4];
        vst1q_f32(lanes, v);
        for (int i = 0; i < n; ++i) p[i] = lanes[i];
    }
    // out[i] = the sum of ai's lanes.
    static void reduce4(F a0, F a1, F a2, F a3, float out[4]) {
        vst1q_f32(out, vpaddq_f32(vpaddq_f32(a0, a1), vpaddq_f32(a2, a3)));
    }
    // The 32 codes of a Q4_0 block, centred on zero: elements 0..15 in the low nibbles of qs,
    // 16..31 in the high ones.
    static void q4_0_codes(const uint8_t* qs, int8_t* codes) {
        const uint8x16_t q = vld1q_u8(qs);
        const int8x16_t eight = vdupq_n_s8(8);
        vst1q_s8(codes, vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), eight));
        vst1q_s8(codes + 16, vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight));
    }
    static uint8x8_t four_bytes(const void* p) {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return vreinterpret_u8_u32(vdup_n_u32(v));
    }
    static F load_u8(const uint8_t* p) {
        return vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(four_bytes(p)))));
    }
    static F load_s8(const int8_t* p) {
        const int8x8_t b = vreinterpret_s8_u8(four_bytes(p));
        return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(b))));
    }
    static I u8_pairs(const uint8_t* a, const uint8_t* b) {
        return vreinterpretq_s32_u16(vmovl_u8(vzip1_u8(four_bytes(a), four_bytes(b))));
    }
    static void store_rows(float* y, F v, int lo, int hi) {
        if (lo == 0 && hi >= 4) {
            vst1q_f32(y, v);
            return;
        }
        float lanes[4];
        vst1q_f32(lanes, v);
        for (int i = lo; i < hi; ++i) y[i] = lanes[i];
    }
    // r[i] holds 4 dwords of row i; afterwards r[e] holds dword e of the 4 rows.
    static void transpose(I r[4]) {
        const int32x4_t a = vtrn1q_s32(r[0], r[1]), b = vtrn2q_s32(r[0], r[1]);
        const int32x4_t c = vtrn1q_s32(r[2], r[3]), d = vtrn2q_s32(r[2], r[3]);
        r[0] =
            vreinterpretq_s32_s64(vzip1q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(c)));
        r[1] =
            vreinterpretq_s32_s64(vzip1q_s64(vreinterpretq_s64_s32(b), vreinterpretq_s64_s32(d)));
        r[2] =
            vreinterpretq_s32_s64(vzip2q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(c)));
        r[3] =
            vreinterpretq_s32_s64(vzip2q_s64(vreinterpretq_s64_s32(b), vreinterpretq_s64_s32(d)));
    }
};

}  // namespace
}  // namespace mw::simd
