// Attention inner loops with AVX-512 (F, BW, VL) (tensor/attention_kernels.h): the AVX2 set's
// functions at twice the width, with masked tails. Row decoders are bit-exact with the reference;
// scores and sums add in another order than the scalar set.
// GCC 12's AVX-512 headers initialise their "undefined" vectors from themselves, which
// -Wuninitialized reports inside the header; the warning is about the header, not this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "tensor/attention_kernels.h"
#include "tensor/quants.h"

namespace mw {
namespace {

__mmask16 tail_mask(int64_t left) {
    return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
}

// The four horizontal sums of a0..a3, as one vector.
__m128 reduce4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    auto half = [](__m512 a) {
        return _mm256_add_ps(_mm512_castps512_ps256(a),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    };
    const __m256 t01 = _mm256_hadd_ps(half(a0), half(a1));
    const __m256 t23 = _mm256_hadd_ps(half(a2), half(a3));
    const __m256 t = _mm256_hadd_ps(t01, t23);
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// Scores of M (1 or 4) queries against every key: each key chunk is loaded once for all M.
template <int M>
void scores_rows(const float* q, const float* k, int ld_k, int n_k, int hd, float* s, int ld_s) {
    for (int j = 0; j < n_k; ++j) {
        const float* kj = k + size_t(j) * ld_k;
        __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                       _mm512_setzero_ps()};
        for (int d = 0; d < hd; d += 16) {
            const __mmask16 m = tail_mask(hd - d);
            const __m512 kv = _mm512_maskz_loadu_ps(m, kj + d);
            for (int r = 0; r < M; ++r) {
                a[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + size_t(r) * hd + d), kv, a[r]);
            }
        }
        if (M == 4) {
            alignas(16) float out[4];
            _mm_store_ps(out, reduce4(a[0], a[1], a[2], a[3]));
            for (int r = 0; r < 4; ++r) s[size_t(r) * ld_s + j] = out[r];
        } else {
            s[j] = _mm512_reduce_add_ps(a[0]);
        }
    }
}

void scores(const float* q, int n_q, const float* k, int ld_k, int n_k, int hd, float* s,
            int ld_s) {
    int i = 0;
    for (; i + 4 <= n_q; i += 4)
        scores_rows<4>(q + size_t(i) * hd, k, ld_k, n_k, hd, s + size_t(i) * ld_s, ld_s);
    for (; i < n_q; ++i)
        scores_rows<1>(q + size_t(i) * hd, k, ld_k, n_k, hd, s + size_t(i) * ld_s, ld_s);
}

// acc_r += sum_j p_rj v_j for M queries: each value chunk is loaded once for all M, and the
// accumulators stay in registers over the block.
template <int M>
void accumulate_rows(const float* p, int ld_p, const float* v, int ld_v, int n_v, int hd,
                     float* acc) {
    for (int d = 0; d < hd; d += 16) {
        const __mmask16 m = tail_mask(hd - d);
        __m512 a[M];
        for (int r = 0; r < M; ++r) a[r] = _mm512_maskz_loadu_ps(m, acc + size_t(r) * hd + d);
        for (int j = 0; j < n_v; ++j) {
            const __m512 vv = _mm512_maskz_loadu_ps(m, v + size_t(j) * ld_v + d);
            for (int r = 0; r < M; ++r) {
                a[r] = _mm512_fmadd_ps(_mm512_set1_ps(p[size_t(r) * ld_p + j]), vv, a[r]);
            }
        }
        for (int r = 0; r < M; ++r) _mm512_mask_storeu_ps(acc + size_t(r) * hd + d, m, a[r]);
    }
}

void accumulate(const float* p, int ld_p, int n_q, const float* v, int ld_v, int n_v, int hd,
                float* acc) {
    int i = 0;
    for (; i + 4 <= n_q; i += 4) {
        accumulate_rows<4>(p + size_t(i) * ld_p, ld_p, v, ld_v, n_v, hd, acc + size_t(i) * hd);
    }
    for (; i < n_q; ++i) {
        accumulate_rows<1>(p + size_t(i) * ld_p, ld_p, v, ld_v, n_v, hd, acc + size_t(i) * hd);
    }
}

// exp(x) for x <= 0 (Cephes' single-precision polynomial, about 1 ulp); below -87.3 it returns
// about 1e-38 rather than 0, which no softmax sum notices.
__m512 exp_nonpositive(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.33654f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

float exp_sum(float* x, int n, float max) {
    const __m512 vmax = _mm512_set1_ps(max);
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < n; j += 16) {
        const __mmask16 m = tail_mask(n - j);
        const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), vmax));
        _mm512_mask_storeu_ps(x + j, m, e);
        sum = _mm512_mask_add_ps(sum, m, sum, e);
    }
    return _mm512_reduce_add_ps(sum);
}

void scale(float a, float* y, int n) {
    const __m512 va = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, y + i)));
    }
}

void f16_to_float(const void* src, float* dst, int64_t n) {
    const uint16_t* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i));
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(v));
    }
    if (i < n) {
        const __mmask16 m = tail_mask(n - i);
        const __m256i v = _mm256_maskz_loadu_epi16(m, h + i);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(v));
    }
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
    const uint16_t* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i));
        _mm512_storeu_ps(dst + i,
                         _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)));
    }
    if (i < n) {
        const __mmask16 m = tail_mask(n - i);
        const __m256i v = _mm256_maskz_loadu_epi16(m, h + i);
        _mm512_mask_storeu_ps(dst + i, m,
                              _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)));
    }
}

void q8_0_to_float(const void* src, float* dst, int64_t n) {
    const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
    for (int64_t ib = 0; ib < n / kQK; ++ib, dst += kQK) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(b[ib].d));
        for (int j = 0; j < kQK; j += 16) {
            const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[ib].qs + j));
            _mm512_storeu_ps(dst + j,
                             _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d));
        }
    }
}

void q4_0_to_float(const void* src, float* dst, int64_t n) {
    const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
    const __m128i low_mask = _mm_set1_epi8(0x0F);
    const __m128i eight = _mm_set1_epi8(8);
    for (int64_t ib = 0; ib < n / kQK; ++ib, dst += kQK) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(b[ib].d));
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[ib].qs));
        // Elements 0..15 in the low nibbles, 16..31 in the high ones; centred on zero.
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low_mask), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low_mask), eight);
        _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d));
        _mm512_storeu_ps(dst + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d));
    }
}

constexpr AttentionKernels kAvx512 = {"avx512",      scores,        accumulate,
                                      exp_sum,       scale,         f16_to_float,
                                      bf16_to_float, q8_0_to_float, q4_0_to_float};

}  // namespace

const AttentionKernels& attention_kernels_avx512_set() {
    return kAvx512;
}

}  // namespace mw
