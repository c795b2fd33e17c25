// AVX2 activation encoders (byte-identical to the reference quantizers), and the kernels of the
// float weight types: tensor/simd/float_matmul.h instantiated with AVX2's V256.
#include "tensor/simd/float_matmul.h"
#include "tensor/x86/set.h"
#include "tensor/x86/simd.h"

namespace mw::x86 {
namespace {

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

inline int hsum(__m256i v) {
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1)));
}

inline __m256 abs_ps(__m256 v) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// std::round: half away from zero (x - trunc(x) is exact).
inline __m256 round_half_away(__m256 x) {
    const __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 up = _mm256_cmp_ps(abs_ps(_mm256_sub_ps(x, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
    return _mm256_add_ps(t, _mm256_and_ps(up, one));
}

inline uint16_t to_half(float f) {
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

// 32 int32 (4 vectors, each in range) stored as int8 in order.
inline void store_i8x32(int8_t* dst, __m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);
    // The packs interleave 128-bit lanes: dwords come out as a0 b0 c0 d0 a1 b1 c1 d1.
    const __m256i fixed =
        _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), fixed);
}

// Q8_0 / Q8_1: d = amax / 127, quants round(x / d); returns d and the quants as int32.
inline float quantize_block32(const float* src, int8_t* qs, __m256i q[4]) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(src + 8 * k);
        amax = _mm256_max_ps(amax, abs_ps(v[k]));
    }
    const float d = hmax(amax) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int k = 0; k < 4; ++k) {
        q[k] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[k], _mm256_set1_ps(id))));
    }
    store_i8x32(qs, q[0], q[1], q[2], q[3]);
    return d;
}

}  // namespace

template <>
void Set<Isa::avx2>::quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / 32; ++i, src += 32) {
        __m256i q[4];
        blocks[i].d = to_half(quantize_block32(src, blocks[i].qs, q));
    }
}

template <>
void Set<Isa::avx2>::quantize_row_q8_1(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / 32; ++i, src += 32) {
        __m256i q[4];
        const float d = quantize_block32(src, blocks[i].qs, q);
        const int sum =
            hsum(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
        blocks[i].d = to_half(d);
        blocks[i].s = to_half(float(sum) * d);
    }
}

template <>
void Set<Isa::avx2>::quantize_row_q8_k(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / 256; ++i, src += 256) {
        BlockQ8_K& b = blocks[i];
        __m256 amax_v = _mm256_setzero_ps();
        for (int k = 0; k < 32; ++k)
            amax_v = _mm256_max_ps(amax_v, abs_ps(_mm256_loadu_ps(src + 8 * k)));
        const float amax = hmax(amax_v);
        if (amax == 0.0f) {
            std::memset(&b, 0, sizeof b);
            continue;
        }
        // The first element with the largest magnitude sets the scale's sign.
        float max = 0.0f;
        for (int k = 0; k < 32; ++k) {
            const __m256 hit = _mm256_cmp_ps(abs_ps(_mm256_loadu_ps(src + 8 * k)),
                                             _mm256_set1_ps(amax), _CMP_EQ_OQ);
            const int bits = _mm256_movemask_ps(hit);
            if (bits) {
                max = src[8 * k + __builtin_ctz(unsigned(bits))];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        for (int k = 0; k < 8; ++k) {  // 32 elements per step
            __m256i q[4];
            for (int j = 0; j < 4; ++j) {
                q[j] = _mm256_min_epi32(
                    _mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(src + 32 * k + 8 * j))),
                    _mm256_set1_epi32(127));
            }
            store_i8x32(b.qs + 32 * k, q[0], q[1], q[2], q[3]);
            b.bsums[2 * k] = int16_t(hsum(_mm256_add_epi32(q[0], q[1])));
            b.bsums[2 * k + 1] = int16_t(hsum(_mm256_add_epi32(q[2], q[3])));
        }
        b.d = 1 / iscale;
    }
}

template <>
void Set<Isa::avx2>::f16_from_float(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<uint16_t*>(dst);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(h + k),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + k), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; k < n; ++k) h[k] = to_half(src[k]);
}

template <>
void Set<Isa::avx2>::bf16_from_float(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<uint16_t*>(dst);
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        const __m256i bits = _mm256_castps_si256(_mm256_loadu_ps(src + k));
        // Round to nearest even; NaNs are quieted instead.
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
        const __m256i rounded = _mm256_srli_epi32(
            _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
        const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(64));
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, abs_mask), inf);
        const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
        const __m128i packed =
            _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(h + k), packed);
    }
    for (; k < n; ++k) {
        uint32_t bits;
        std::memcpy(&bits, src + k, 4);
        h[k] = (bits & 0x7fffffff) > 0x7f800000
                   ? uint16_t((bits >> 16) | 64)
                   : uint16_t((bits + (0x7fff + ((bits >> 16) & 1))) >> 16);
    }
}

template <>
void Set<Isa::avx2>::matmul_f32(const MatmulArgs& a) {
    simd::FloatMatmul<V256<false>, simd::LoadF32<V256<false>>>::matmul(a, true);
}
template <>
void Set<Isa::avx2>::matmul_f16(const MatmulArgs& a) {
    simd::FloatMatmul<V256<false>, simd::LoadF16<V256<false>>>::matmul(a, false);
}
template <>
void Set<Isa::avx2>::matmul_bf16(const MatmulArgs& a) {
    simd::FloatMatmul<V256<false>, simd::LoadBF16<V256<false>>>::matmul(a, false);
}

}  // namespace mw::x86
