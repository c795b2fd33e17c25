// AVX-512 activation encoders (byte-identical to the reference quantizers), and the kernels of
// the float weight types (F32, F16, BF16): tensor/simd/float_matmul.h instantiated with V512,
// and BF16 x BF16 with AVX512_BF16's vdpbf16ps.
#include "tensor/simd/float_matmul.h"
#include "tensor/x86/set.h"
#include "tensor/x86/simd.h"

namespace mw::x86 {
namespace {

// std::round: half away from zero. x - trunc(x) is exact, so the comparison decides exactly.
inline __m512 round_half_away(__m512 x) {
    const __m512 t = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(x, t));
    const __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f),
                                    _mm512_and_ps(x, _mm512_set1_ps(-0.0f)));  // copysign(1, x)
    return _mm512_mask_add_ps(t, up, t, one);
}

inline uint16_t to_half(float f) {
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

inline void store_q8(int8_t* dst, __m512 q0, __m512 q1) {
    const __m512i i0 = _mm512_cvttps_epi32(q0), i1 = _mm512_cvttps_epi32(q1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm512_cvtepi32_epi8(i1));
}

// The shared part of Q8_0 / Q8_1: scale amax / 127, quants round(x / d); returns the float d.
inline float quantize_block32(const float* src, int8_t* qs, __m512* q0, __m512* q1) {
    const __m512 v0 = _mm512_loadu_ps(src), v1 = _mm512_loadu_ps(src + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    *q0 = round_half_away(_mm512_mul_ps(v0, vid));
    *q1 = round_half_away(_mm512_mul_ps(v1, vid));
    store_q8(qs, *q0, *q1);
    return d;
}

inline __mmask16 lanes(int64_t remaining) {
    return remaining >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << remaining) - 1);
}

using simd::kFloatGemmMinTokens;

// BF16 x BF16 with vdpbf16ps: 32 products per instruction, pairs summed in float.
template <int R, int T>
void bf16_dp_tile(const MatmulArgs& a, int64_t r, int64_t t0) {
    __m512 acc[R][T];
    for (int i = 0; i < R; ++i) {
        for (int t = 0; t < T; ++t) acc[i][t] = _mm512_setzero_ps();
    }
    const uint16_t* rows[R];
    const uint16_t* x[T];
    for (int i = 0; i < R; ++i)
        rows[i] = reinterpret_cast<const uint16_t*>(a.w + size_t(r + i) * a.w_row_bytes);
    for (int t = 0; t < T; ++t)
        x[t] = reinterpret_cast<const uint16_t*>(a.act + size_t(t0 + t) * a.act_stride);
    for (int64_t k = 0; k < a.n_cols; k += 32) {
        const int64_t left = a.n_cols - k;
        const __mmask32 m = left >= 32 ? __mmask32(0xFFFFFFFF) : __mmask32((1u << left) - 1);
        __m512bh xv[T];
        for (int t = 0; t < T; ++t) xv[t] = (__m512bh)_mm512_maskz_loadu_epi16(m, x[t] + k);
        for (int i = 0; i < R; ++i) {
            _mm_prefetch(reinterpret_cast<const char*>(rows[i] + k + 512), _MM_HINT_T0);
            const __m512bh w = (__m512bh)_mm512_maskz_loadu_epi16(m, rows[i] + k);
            for (int t = 0; t < T; ++t) acc[i][t] = _mm512_dpbf16_ps(acc[i][t], w, xv[t]);
        }
    }
    for (int i = 0; i < R; ++i) {
        for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r + i] = _mm512_reduce_add_ps(acc[i][t]);
    }
}

template <int T>
void bf16_dp_rows(const MatmulArgs& a, int64_t t0) {
    int64_t r = a.r0;
    for (; r + 4 <= a.r1; r += 4) bf16_dp_tile<4, T>(a, r, t0);
    for (; r < a.r1; ++r) bf16_dp_tile<1, T>(a, r, t0);
}

}  // namespace

// ---- Activation encoders --------------------------------------------------------------------

template <>
void Set<Isa::avx512>::quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / 32; ++i, src += 32) {
        __m512 q0, q1;
        blocks[i].d = to_half(quantize_block32(src, blocks[i].qs, &q0, &q1));
    }
}

template <>
void Set<Isa::avx512>::quantize_row_q8_1(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / 32; ++i, src += 32) {
        __m512 q0, q1;
        const float d = quantize_block32(src, blocks[i].qs, &q0, &q1);
        // Clamped like the stored bytes: a NaN converts to INT_MIN, whose sum would overflow.
        const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
        const auto clamp = [&](__m512 q) {
            return _mm512_min_epi32(_mm512_max_epi32(_mm512_cvttps_epi32(q), lo), hi);
        };
        const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(clamp(q0), clamp(q1)));
        blocks[i].d = to_half(d);
        blocks[i].s = to_half(float(sum) * d);
    }
}

template <>
void Set<Isa::avx512>::quantize_row_q8_k(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / 256; ++i, src += 256) {
        BlockQ8_K& b = blocks[i];
        __m512 v[16];
        __m512 amax_v = _mm512_setzero_ps();
        for (int k = 0; k < 16; ++k) {
            v[k] = _mm512_loadu_ps(src + 16 * k);
            amax_v = _mm512_max_ps(amax_v, _mm512_abs_ps(v[k]));
        }
        const float amax = _mm512_reduce_max_ps(amax_v);
        if (amax == 0.0f) {
            std::memset(&b, 0, sizeof b);
            continue;
        }
        // The first element with the largest magnitude (its sign sets the scale's sign).
        float max = 0.0f;
        for (int k = 0; k < 16; ++k) {
            const __mmask16 hit =
                _mm512_cmp_ps_mask(_mm512_abs_ps(v[k]), _mm512_set1_ps(amax), _CMP_EQ_OQ);
            if (hit) {
                max = src[16 * k + __builtin_ctz(hit)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m512 vs = _mm512_set1_ps(iscale);
        for (int k = 0; k < 16; ++k) {
            // Round to nearest even, as nearest_int; then clamp at 127.
            __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(vs, v[k]));
            // Clamp at 127 (and at -128: a NaN converts to INT_MIN, whose sum would overflow).
            q = _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)),
                                 _mm512_set1_epi32(-128));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(b.qs + 16 * k), _mm512_cvtepi32_epi8(q));
            b.bsums[k] = int16_t(_mm512_reduce_add_epi32(q));
        }
        b.d = 1 / iscale;
    }
}

template <>
void Set<Isa::avx512>::f16_from_float(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<uint16_t*>(dst);
    for (int64_t k = 0; k < n; k += 16) {
        const __mmask16 m = lanes(n - k);
        const __m256i v =
            _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + k), _MM_FROUND_TO_NEAREST_INT);
        _mm256_mask_storeu_epi16(h + k, m, v);
    }
}

template <>
void Set<Isa::avx512>::bf16_from_float(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<uint16_t*>(dst);
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    for (int64_t k = 0; k < n; k += 16) {
        const __mmask16 m = lanes(n - k);
        const __m512i bits = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src + k));
        // Round to nearest even; NaNs are quieted instead.
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
        __m512i r = _mm512_srli_epi32(
            _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, abs_mask), inf);
        r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(bits, 16), _mm512_set1_epi32(64));
        _mm256_mask_storeu_epi16(h + k, m, _mm512_cvtepi32_epi16(r));
    }
}

// ---- Float matrix kernels --------------------------------------------------------------------

template <>
void Set<Isa::avx512>::matmul_f32(const MatmulArgs& a) {
    simd::FloatMatmul<V512, simd::LoadF32<V512>>::matmul(a, true);
}
template <>
void Set<Isa::avx512>::matmul_f16(const MatmulArgs& a) {
    simd::FloatMatmul<V512, simd::LoadF16<V512>>::matmul(a, false);
}
template <>
void Set<Isa::avx512>::matmul_bf16(const MatmulArgs& a) {
    simd::FloatMatmul<V512, simd::LoadBF16<V512>>::matmul(a, false);
}

template <>
void Set<Isa::avx512>::matmul_bf16_dp(const MatmulArgs& a) {
    if (a.n_tokens >= kFloatGemmMinTokens) {  // the f32 FMA panels beat vdpbf16ps there
        Set<Isa::avx512>::matmul_bf16(a);
        return;
    }
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 4) {
        switch (a.n_tokens - t0 < 4 ? a.n_tokens - t0 : 4) {
            case 1:
                bf16_dp_rows<1>(a, t0);
                break;
            case 2:
                bf16_dp_rows<2>(a, t0);
                break;
            case 3:
                bf16_dp_rows<3>(a, t0);
                break;
            default:
                bf16_dp_rows<4>(a, t0);
                break;
        }
    }
}

}  // namespace mw::x86
