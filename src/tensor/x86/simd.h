// The vector types the x86 kernels are written for, so that an algorithm is written once
// (tensor/x86/gemm.h, gemv.h, packed.h) and compiled per instruction set:
//   V512         AVX-512 (F, BW, VL, VNNI): 16 int32 / float lanes, 32 registers;
//   V256<false>  AVX2 + FMA + F16C: 8 lanes, 16 registers, byte products by vpmaddubsw;
//   V256<true>   the same with AVX-VNNI (Alder Lake and Zen 5 onwards): vpdpbusd on 256 bits.
// Each *_avx2.cpp / *_avxvnni.cpp / *_avx512.cpp file includes this with its own ISA flags.
//
// The one operation that differs between the sets is the dot product of unsigned 8-bit codes
// with signed 8-bit activations, four bytes per 32-bit lane. With VNNI it is one vpdpbusd into
// int32. Without, vpmaddubsw sums pairs into int16 and vpmaddwd folds those into int32; several
// vpmaddubsw results are added in int16 first, as many as the largest code allows without
// overflow (a kernel says its codes' bound: kMaxCode). So a dot product is written
//   Dot d = V::dot_begin(s);  d = V::dot_add(d, codes, x); ...  s = V::dot_end(s, d);
// which is s plus the products either way.
//
// Like every header the ISA files share, everything here is in an anonymous namespace: each
// file gets its own copy compiled with its own flags, so the linker cannot hand an AVX-512
// function to a caller on an AVX2-only CPU.
#pragma once

// GCC 12 warns about the deliberately undefined vectors inside its own AVX-512 intrinsics
// (_mm512_undefined_*); the warnings point into its headers, so they are silenced there only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>
#include <cstring>

#include "tensor/simd/common.h"
#include "tensor/x86/x86.h"

namespace mw::simd {
namespace {

// The 32 codes of a Q4_0 block, centred on zero: elements 0..15 in the low nibbles of qs,
// 16..31 in the high ones.
inline void q4_0_codes_sse(const uint8_t* qs, int8_t* codes) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i low_mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes),
                     _mm_sub_epi8(_mm_and_si128(q, low_mask), eight));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 16),
                     _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low_mask), eight));
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
struct V512 {
    using I = __m512i;
    using F = __m512;
    using Dot = __m512i;
    static constexpr int kLanes = 16;  // 32-bit lanes: rows of a packed group
    static constexpr int kBytes = 64;
    static constexpr bool kVnni = true;
    // Prefill tile: groups of kLanes rows x tokens (int sums + float sums fit 32 registers).
    // (2 x 6 measured fastest of 2 x 4, 3 x 4, 4 x 3: 64 % of the int8 peak on Q4_0 in cache.)
    static constexpr int kTileGroups = 2;
    static constexpr int kTileTokens = 6;
    static constexpr int kTileTokensK = 4;  // K-quants keep a super-block partial sum as well
    // Decode kernels' tokens per pass (simd/packed.h): 9 tokens' sums fit the 32 registers, so a
    // verification pass of 8 drafts reads the weights once.
    static constexpr int kPassTokens = 9;

    static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
    static I zero() { return _mm512_setzero_si512(); }
    static I load(const void* p) { return _mm512_loadu_si512(p); }
    static void store(void* p, I v) { _mm512_storeu_si512(p, v); }
    static I set1_i32(int v) { return _mm512_set1_epi32(v); }
    static I set1_i8(char v) { return _mm512_set1_epi8(v); }
    static I bcast32(const void* p) { return _mm512_set1_epi32(load_i32(p)); }
    static I and_(I a, I b) { return _mm512_and_si512(a, b); }
    static I or_(I a, I b) { return _mm512_or_si512(a, b); }
    static I xor_(I a, I b) { return _mm512_xor_si512(a, b); }
    // (a & mask) | b in one vpternlogd.
    static I select_or(I a, I mask, I b) { return _mm512_ternarylogic_epi32(a, b, mask, 0xEC); }
    template <int n>
    static I srl16(I v) {
        return _mm512_srli_epi16(v, n);
    }
    template <int n>
    static I sll16(I v) {
        return _mm512_slli_epi16(v, n);
    }
    static I add_i32(I a, I b) { return _mm512_add_epi32(a, b); }
    static I sub_i32(I a, I b) { return _mm512_sub_epi32(a, b); }

    static Dot dot_begin(I s) { return s; }
    static Dot dot_add(Dot d, I u8, I s8) { return _mm512_dpbusd_epi32(d, u8, s8); }
    // dot_add(d, u8, bcast32(p)) with the broadcast in the instruction's memory operand: GCC
    // does not fold the separate vpbroadcastd, which at 5-8 tokens a pass is half the uops.
    static Dot dot_add_bcast(Dot d, I u8, const void* p) {
        asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(d) : "v"(u8), "m"(*static_cast<const int*>(p)));
        return d;
    }
    static I dot_end(I, Dot d) { return d; }
    // s + the products of signed weight bytes w with signed x: w + 128 is unsigned, so the caller
    // subtracts 128 * sum(x) (kSignedBias).
    static constexpr int kSignedBias = 128;
    static I dot_signed(I s, I w, I x) {
        return _mm512_dpbusd_epi32(s, _mm512_xor_si512(w, _mm512_set1_epi8(char(0x80))), x);
    }
    static I maddubs(I u8, I s8) { return _mm512_maddubs_epi16(u8, s8); }
    static I dpwssd(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }

    static F zerof() { return _mm512_setzero_ps(); }
    static F set1(float v) { return _mm512_set1_ps(v); }
    static F loadf(const float* p) { return _mm512_loadu_ps(p); }
    static void storef(float* p, F v) { _mm512_storeu_ps(p, v); }
    static F cvt(I v) { return _mm512_cvtepi32_ps(v); }
    static F add(F a, F b) { return _mm512_add_ps(a, b); }
    static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
    static float reduce(F v) { return _mm512_reduce_add_ps(v); }
    static F maxf(F a, F b) { return _mm512_max_ps(a, b); }
    static F round(F v) {
        return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    static F ldexp(F p, F n) { return _mm512_scalef_ps(p, n); }
    static void q4_0_codes(const uint8_t* qs, int8_t* codes) { q4_0_codes_sse(qs, codes); }
    // The first n lanes (n < kLanes); the others read nothing and hold zeros.
    static F loadf_n(const float* p, int n) {
        return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1u), p);
    }
    static void storef_n(float* p, F v, int n) {
        _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1u), v);
    }
    // out[i] = the sum of ai's lanes.
    static void reduce4(F a0, F a1, F a2, F a3, float out[4]) {
        auto half = [](F a) {
            return _mm256_add_ps(_mm512_castps512_ps256(a),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
        };
        const __m256 t =
            _mm256_hadd_ps(_mm256_hadd_ps(half(a0), half(a1)), _mm256_hadd_ps(half(a2), half(a3)));
        _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
    }
    static F load_bf16(const uint16_t* p) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
    }
    // kLanes fp16 values, bytes, signed bytes.
    static F load_halfs(const void* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
    }
    static F load_u8(const uint8_t* p) {
        return _mm512_cvtepi32_ps(
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    static F load_s8(const int8_t* p) {
        return _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    // Lane i = a[i] | b[i] << 16 (two unsigned bytes as 16-bit words).
    static I u8_pairs(const uint8_t* a, const uint8_t* b) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
        const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
        return _mm512_cvtepu8_epi16(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_unpacklo_epi8(x, y)), _mm_unpackhi_epi8(x, y), 1));
    }
    // Lanes [lo, hi) of v to y[lo..hi).
    static void store_rows(float* y, F v, int lo, int hi) {
        const unsigned m =
            lo >= hi ? 0u : ((hi >= 16 ? 0xFFFFu : (1u << hi) - 1) & ~((1u << lo) - 1));
        _mm512_mask_storeu_ps(y, __mmask16(m), v);
    }
    // r[i] holds 16 dwords of row i; afterwards r[e] holds dword e of the 16 rows.
    static void transpose(I r[16]) {
        I t[16];
        for (int i = 0; i < 8; ++i) {
            t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        I s[16];  // s[4g + k], 128-bit lane L: dword 4L + k of rows 4g..4g+3
        for (int g = 0; g < 4; ++g) {
            s[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
            s[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
            s[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
            s[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
        }
        for (int k = 0; k < 4; ++k) {
            const I ab_lo = _mm512_shuffle_i32x4(s[k], s[4 + k], 0x44);
            const I ab_hi = _mm512_shuffle_i32x4(s[k], s[4 + k], 0xEE);
            const I cd_lo = _mm512_shuffle_i32x4(s[8 + k], s[12 + k], 0x44);
            const I cd_hi = _mm512_shuffle_i32x4(s[8 + k], s[12 + k], 0xEE);
            r[k] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0x88);
            r[4 + k] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0xDD);
            r[8 + k] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0x88);
            r[12 + k] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0xDD);
        }
    }
};
#endif

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
template <bool kVnniSet>
struct V256 {
    using I = __m256i;
    using F = __m256;
    using Dot = __m256i;  // int32 sums with VNNI, int16 sums without
    static constexpr int kLanes = 8;
    static constexpr int kBytes = 32;
    static constexpr bool kVnni = kVnniSet;
    // (2 x 3 measured fastest of 1 x 4, 1 x 6, 2 x 3: +33 % over 1 x 4 without VNNI, +50 % with.)
    static constexpr int kTileGroups = 2;
    static constexpr int kTileTokens = 3;
    static constexpr int kTileTokensK = 3;

    static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
    static I zero() { return _mm256_setzero_si256(); }
    static I load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
    static void store(void* p, I v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
    static I set1_i32(int v) { return _mm256_set1_epi32(v); }
    static I set1_i8(char v) { return _mm256_set1_epi8(v); }
    static I bcast32(const void* p) { return _mm256_set1_epi32(load_i32(p)); }
    static I and_(I a, I b) { return _mm256_and_si256(a, b); }
    static I or_(I a, I b) { return _mm256_or_si256(a, b); }
    static I xor_(I a, I b) { return _mm256_xor_si256(a, b); }
    static I select_or(I a, I mask, I b) { return _mm256_or_si256(_mm256_and_si256(a, mask), b); }
    template <int n>
    static I srl16(I v) {
        return _mm256_srli_epi16(v, n);
    }
    template <int n>
    static I sll16(I v) {
        return _mm256_slli_epi16(v, n);
    }
    static I add_i32(I a, I b) { return _mm256_add_epi32(a, b); }
    static I sub_i32(I a, I b) { return _mm256_sub_epi32(a, b); }

    static Dot dot_begin(I s) {
        if constexpr (kVnni) {
            return s;
        } else {
            (void)s;
            return _mm256_setzero_si256();
        }
    }
    static Dot dot_add(Dot d, I u8, I s8) {
        if constexpr (kVnni) {
            return _mm256_dpbusd_avx_epi32(d, u8, s8);
        } else {
            return _mm256_add_epi16(d, _mm256_maddubs_epi16(u8, s8));
        }
    }
    // Keeps an int16 partial sum in a register at this point (DotChain's kInOrder). Integer
    // adds being associative, GCC otherwise computes a GEMM tile's every vpmaddubsw first and
    // adds them as a tree, spilling each to the stack: prefill 1.5-1.8x slower on this set.
    static void hold(Dot& d) { asm("" : "+x"(d)); }
    static I dot_end(I s, Dot d) {
        if constexpr (kVnni) {
            (void)s;
            return d;
        } else {
            return _mm256_add_epi32(s, _mm256_madd_epi16(d, _mm256_set1_epi16(1)));
        }
    }
    // Signed weights: with VNNI as V512 (w + 128, the caller subtracts 128 * sum(x)); without,
    // |w| x sign(x, w), exact and with no bias (a pair of products fits int16 only once).
    static constexpr int kSignedBias = kVnniSet ? 128 : 0;
    static I dot_signed(I s, I w, I x) {
        if constexpr (kVnni) {
            return _mm256_dpbusd_avx_epi32(s, _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80))), x);
        } else {
            const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
            return _mm256_add_epi32(s, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
        }
    }
    static I maddubs(I u8, I s8) { return _mm256_maddubs_epi16(u8, s8); }
    static I dpwssd(I acc, I a, I b) {
        if constexpr (kVnni) {
            return _mm256_dpwssd_avx_epi32(acc, a, b);
        } else {
            return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
        }
    }

    static F zerof() { return _mm256_setzero_ps(); }
    static F set1(float v) { return _mm256_set1_ps(v); }
    static F loadf(const float* p) { return _mm256_loadu_ps(p); }
    static void storef(float* p, F v) { _mm256_storeu_ps(p, v); }
    static F cvt(I v) { return _mm256_cvtepi32_ps(v); }
    static F add(F a, F b) { return _mm256_add_ps(a, b); }
    static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
    static float reduce(F v) {
        const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
        return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
    }
    static F load_halfs(const void* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    }
    static F maxf(F a, F b) { return _mm256_max_ps(a, b); }
    static F round(F v) {
        return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    // p * 2^n, 2^n through the exponent field.
    static F ldexp(F p, F n) {
        return _mm256_mul_ps(
            p, _mm256_castsi256_ps(_mm256_slli_epi32(
                   _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
    }
    static void q4_0_codes(const uint8_t* qs, int8_t* codes) { q4_0_codes_sse(qs, codes); }
    // The first n lanes (n < kLanes); the others read nothing and hold zeros.
    static __m256i first_lanes(int n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static F loadf_n(const float* p, int n) { return _mm256_maskload_ps(p, first_lanes(n)); }
    static void storef_n(float* p, F v, int n) { _mm256_maskstore_ps(p, first_lanes(n), v); }
    // out[i] = the sum of ai's lanes.
    static void reduce4(F a0, F a1, F a2, F a3, float out[4]) {
        const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
        _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
    }
    static F load_bf16(const uint16_t* p) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
    }
    static F load_u8(const uint8_t* p) {
        return _mm256_cvtepi32_ps(
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
    static F load_s8(const int8_t* p) {
        return _mm256_cvtepi32_ps(
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
    static I u8_pairs(const uint8_t* a, const uint8_t* b) {
        const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a));
        const __m128i y = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
        return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(x, y));
    }
    static void store_rows(float* y, F v, int lo, int hi) {
        if (lo == 0 && hi >= 8) {
            _mm256_storeu_ps(y, v);
            return;
        }
        // Lanes below hi and not below lo.
        _mm256_maskstore_ps(y, _mm256_andnot_si256(first_lanes(lo), first_lanes(hi)), v);
    }
    // r[i] holds 8 dwords of row i; afterwards r[e] holds dword e of the 8 rows.
    static void transpose(I r[8]) {
        I t[8], s[8];
        for (int i = 0; i < 4; ++i) {
            t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        // s[4g + k], 128-bit lane L: dword 4L + k of rows 4g..4g+3.
        for (int g = 0; g < 2; ++g) {
            s[4 * g + 0] = _mm256_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
            s[4 * g + 1] = _mm256_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
            s[4 * g + 2] = _mm256_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
            s[4 * g + 3] = _mm256_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
        }
        for (int k = 0; k < 4; ++k) {
            r[k] = _mm256_permute2x128_si256(s[k], s[4 + k], 0x20);
            r[4 + k] = _mm256_permute2x128_si256(s[k], s[4 + k], 0x31);
        }
    }
};
#endif

}  // namespace
}  // namespace mw::simd

namespace mw::x86 {

using namespace mw::simd;

namespace {

// The vector type of each set (defined where that set's flags are on).
template <Isa I>
struct VecOf;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
template <>
struct VecOf<Isa::avx512> {
    using type = V512;
};
#endif
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
template <>
struct VecOf<Isa::avx2> {
    using type = V256<false>;
};
#endif
#if defined(__AVX2__) && defined(__AVXVNNI__)
template <>
struct VecOf<Isa::avxvnni> {
    using type = V256<true>;
};
#endif

// The sum of 8 floats.
inline float reduce256(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

}  // namespace
}  // namespace mw::x86
