// Attention inner loops with AVX2 + FMA + F16C (tensor/attention_kernels.h): scores and value
// sums for four queries at a time, so each key or value is loaded once for the four; a vector
// exp. The row decoders are bit-exact with the scalar reference (the conversions are exact and
// each element is one float product); sums add in another order.
#include <immintrin.h>

#include <cstring>

#include "tensor/attention_kernels.h"
#include "tensor/quants.h"

namespace mw {
namespace {

float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The four horizontal sums of a0..a3, as one vector.
__m128 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// Scores of M (1 or 4) queries against every key: each key chunk is loaded once for all M.
template <int M>
void scores_rows(const float* q, const float* k, int ld_k, int n_k, int hd, float* s, int ld_s) {
    const int whole = hd / 8 * 8;
    for (int j = 0; j < n_k; ++j) {
        const float* kj = k + size_t(j) * ld_k;
        __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                       _mm256_setzero_ps()};
        for (int d = 0; d < whole; d += 8) {
            const __m256 kv = _mm256_loadu_ps(kj + d);
            for (int r = 0; r < M; ++r) {
                a[r] = _mm256_fmadd_ps(_mm256_loadu_ps(q + size_t(r) * hd + d), kv, a[r]);
            }
        }
        alignas(16) float out[4];
        if (M == 4) {
            _mm_store_ps(out, reduce4(a[0], a[1], a[2], a[3]));
        } else {
            out[0] = hsum(a[0]);
        }
        for (int r = 0; r < M; ++r) {
            for (int d = whole; d < hd; ++d) out[r] += q[size_t(r) * hd + d] * kj[d];
            s[size_t(r) * ld_s + j] = out[r];
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
    const int whole = hd / 8 * 8;
    for (int d = 0; d < whole; d += 8) {
        __m256 a[M];
        for (int r = 0; r < M; ++r) a[r] = _mm256_loadu_ps(acc + size_t(r) * hd + d);
        for (int j = 0; j < n_v; ++j) {
            const __m256 vv = _mm256_loadu_ps(v + size_t(j) * ld_v + d);
            for (int r = 0; r < M; ++r) {
                a[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + size_t(r) * ld_p + j), vv, a[r]);
            }
        }
        for (int r = 0; r < M; ++r) _mm256_storeu_ps(acc + size_t(r) * hd + d, a[r]);
    }
    for (int r = 0; r < M; ++r) {
        for (int j = 0; j < n_v; ++j) {
            const float prj = p[size_t(r) * ld_p + j];
            for (int d = whole; d < hd; ++d)
                acc[size_t(r) * hd + d] += prj * v[size_t(j) * ld_v + d];
        }
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
__m256 exp_nonpositive(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.33654f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    // 2^n through the exponent field: n >= -126 after the clamp, a normal number.
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

float exp_sum(float* x, int n, float max) {
    const __m256 vmax = _mm256_set1_ps(max);
    __m256 sum = _mm256_setzero_ps();
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + j), vmax));
        _mm256_storeu_ps(x + j, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (j < n) {
        alignas(32) float tail[8] = {};
        for (int i = j; i < n; ++i) tail[i - j] = x[i] - max;
        const __m256 e = exp_nonpositive(_mm256_load_ps(tail));
        _mm256_store_ps(tail, e);
        for (int i = j; i < n; ++i) x[i] = tail[i - j];
        sum = _mm256_add_ps(sum, _mm256_and_ps(e, _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                                                      _mm256_set1_epi32(n - j),
                                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)))));
    }
    return hsum(sum);
}

void scale(float a, float* y, int n) {
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] *= a;
}

void f16_to_float(const void* src, float* dst, int64_t n) {
    const uint16_t* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(v));
    }
    for (; i < n; ++i) dst[i] = _cvtsh_ss(h[i]);
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
    const uint16_t* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i));
        const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16);
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
    }
    for (; i < n; ++i) {
        const uint32_t bits = uint32_t(h[i]) << 16;
        std::memcpy(dst + i, &bits, 4);
    }
}

// Eight bytes as signed (or unsigned) integers, as floats.
__m256 i8x8_to_ps(const void* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p))));
}

void q8_0_to_float(const void* src, float* dst, int64_t n) {
    const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
    for (int64_t ib = 0; ib < n / kQK; ++ib, dst += kQK) {
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(b[ib].d));
        for (int j = 0; j < kQK; j += 8) {
            _mm256_storeu_ps(dst + j, _mm256_mul_ps(i8x8_to_ps(b[ib].qs + j), d));
        }
    }
}

void q4_0_to_float(const void* src, float* dst, int64_t n) {
    const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
    const __m128i low_mask = _mm_set1_epi8(0x0F);
    const __m128i eight = _mm_set1_epi8(8);
    for (int64_t ib = 0; ib < n / kQK; ++ib, dst += kQK) {
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(b[ib].d));
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[ib].qs));
        // Elements 0..15 in the low nibbles, 16..31 in the high ones; centred on zero.
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low_mask), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low_mask), eight);
        alignas(16) int8_t codes[kQK];
        _mm_store_si128(reinterpret_cast<__m128i*>(codes), lo);
        _mm_store_si128(reinterpret_cast<__m128i*>(codes + 16), hi);
        for (int j = 0; j < kQK; j += 8) {
            _mm256_storeu_ps(dst + j, _mm256_mul_ps(i8x8_to_ps(codes + j), d));
        }
    }
}

constexpr AttentionKernels kAvx2 = {"avx2",       scores,        accumulate,    exp_sum,      scale,
                                    f16_to_float, bf16_to_float, q8_0_to_float, q4_0_to_float};

}  // namespace

const AttentionKernels& attention_kernels_avx2_set() {
    return kAvx2;
}

}  // namespace mw
