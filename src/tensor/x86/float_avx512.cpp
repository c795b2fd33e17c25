// AVX-512 activation encoders (byte-identical to the reference quantizers) and the kernels of the
// float weight types (F32, F16, BF16): tiles of rows x tokens of dot products along the row.
#include <array>
#include <utility>
#include <vector>

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

// ---- Float weights ---------------------------------------------------------------------------

// 16 weights of a row as floats (masked tail: `m` lanes valid).
struct LoadF32 {
    static constexpr int kBytes = 4;
    static __m512 load(const uint8_t* row, int64_t k, __mmask16 m) {
        return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + k);
    }
};
struct LoadF16 {
    static constexpr int kBytes = 2;
    static __m512 load(const uint8_t* row, int64_t k, __mmask16 m) {
        return _mm512_cvtph_ps(
            _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + k));
    }
};
struct LoadBF16 {
    static constexpr int kBytes = 2;
    static __m512 load(const uint8_t* row, int64_t k, __mmask16 m) {
        const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + k);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
};

inline __mmask16 lanes(int64_t remaining) {
    return remaining >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << remaining) - 1);
}

// R rows x T tokens; x[t] are the tokens' activations as floats.
template <class Load, int R, int T>
void float_tile(const MatmulArgs& a, int64_t r, const float* const* x, int64_t t0) {
    __m512 acc[R][T];
    for (int i = 0; i < R; ++i) {
        for (int t = 0; t < T; ++t) acc[i][t] = _mm512_setzero_ps();
    }
    const uint8_t* rows[R];
    for (int i = 0; i < R; ++i) rows[i] = a.w + size_t(r + i) * a.w_row_bytes;
    for (int64_t k = 0; k < a.n_cols; k += 16) {
        const __mmask16 m = lanes(a.n_cols - k);
        __m512 xv[T];
        for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x[t] + k);
        for (int i = 0; i < R; ++i) {
            _mm_prefetch(reinterpret_cast<const char*>(rows[i] + (k + 512) * Load::kBytes),
                         _MM_HINT_T0);
            const __m512 w = Load::load(rows[i], k, m);
            for (int t = 0; t < T; ++t) acc[i][t] = _mm512_fmadd_ps(w, xv[t], acc[i][t]);
        }
    }
    for (int i = 0; i < R; ++i) {
        for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r + i] = _mm512_reduce_add_ps(acc[i][t]);
    }
}

template <class Load, int T>
void float_rows(const MatmulArgs& a, const float* const* x, int64_t t0) {
    constexpr int R = 4;
    int64_t r = a.r0;
    for (; r + R <= a.r1; r += R) float_tile<Load, R, T>(a, r, x, t0);
    for (; r < a.r1; ++r) float_tile<Load, 1, T>(a, r, x, t0);
}

// ---- Float prefill: rows converted once into panels, then an outer-product micro-kernel ----

// 16 rows as floats, interleaved per column: panel[16 * k + i] = row i, column k. Missing rows
// are zero.
template <class Load>
void pack_float_panel(const MatmulArgs& a, int64_t r, int nr, float* row_buf, float* panel) {
    const int64_t n = a.n_cols;
    for (int i = 0; i < 16; ++i) {
        if (i < nr) {
            const uint8_t* row = a.w + size_t(r + i) * a.w_row_bytes;
            for (int64_t k = 0; k < n; k += 16) {
                _mm512_mask_storeu_ps(row_buf + k, lanes(n - k), Load::load(row, k, lanes(n - k)));
            }
            for (int64_t k = 0; k < n; ++k) panel[16 * k + i] = row_buf[k];
        } else {
            for (int64_t k = 0; k < n; ++k) panel[16 * k + i] = 0.0f;
        }
    }
}

// G x 16 rows times T tokens: one FMA per 16 rows and token per column.
template <int G, int T>
void float_gemm_tile(const float* const panel[2], int64_t n, const float* const* x, float* y,
                     int64_t ldy, int rows_valid) {
    __m512 acc[G][T];
    for (int g = 0; g < G; ++g) {
        for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < n; ++k) {
        __m512 w[G];
        for (int g = 0; g < G; ++g) w[g] = _mm512_load_ps(panel[g] + 16 * k);
        for (int t = 0; t < T; ++t) {
            const __m512 xb = _mm512_set1_ps(x[t][k]);
            for (int g = 0; g < G; ++g) acc[g][t] = _mm512_fmadd_ps(w[g], xb, acc[g][t]);
        }
    }
    for (int g = 0; g < G; ++g) {
        const int left = rows_valid - 16 * g;
        const __mmask16 m =
            left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (left > 0 ? left : 0)) - 1);
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + 16 * g, m, acc[g][t]);
    }
}

using FloatTileFn = void (*)(const float* const[2], int64_t, const float* const*, float*, int64_t,
                             int);

template <int G, size_t... Ts>
constexpr std::array<FloatTileFn, sizeof...(Ts) + 1> float_tiles(std::index_sequence<Ts...>) {
    return {nullptr, float_gemm_tile<G, int(Ts) + 1>...};
}

constexpr int kFloatTile = 6;  // tokens per tile: 2 x 6 accumulators + 2 weight vectors

template <class Load>
void float_gemm(const MatmulArgs& a, const float* const* x_rows) {
    static constexpr auto tiles1 = float_tiles<1>(std::make_index_sequence<kFloatTile>());
    static constexpr auto tiles2 = float_tiles<2>(std::make_index_sequence<kFloatTile>());
    static thread_local ScratchBuffer panel_buf;
    const size_t panel_floats = size_t(a.n_cols) * 16;
    auto* base = reinterpret_cast<float*>(
        panel_buf.get((2 * panel_floats + align64(size_t(a.n_cols) * 4) / 4) * 4));
    const float* panel[2] = {base, base + panel_floats};
    float* row_buf = base + 2 * panel_floats;
    for (int64_t r = a.r0; r < a.r1; r += 32) {
        const int rows = int(a.r1 - r < 32 ? a.r1 - r : 32);
        const int groups = rows > 16 ? 2 : 1;
        for (int g = 0; g < groups; ++g) {
            const int nr = rows - 16 * g < 16 ? rows - 16 * g : 16;
            pack_float_panel<Load>(a, r + 16 * g, nr, row_buf, base + g * panel_floats);
        }
        for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kFloatTile) {
            const int n = int(a.n_tokens - t0 < kFloatTile ? a.n_tokens - t0 : kFloatTile);
            const FloatTileFn fn = groups == 2 ? tiles2[n] : tiles1[n];
            fn(panel, a.n_cols, x_rows + t0, a.y + t0 * a.ldy + r, a.ldy, rows);
        }
    }
}

// From this many tokens on, the float kernels convert the rows once into panels.
constexpr int64_t kFloatGemmMinTokens = 8;

// Activations as floats: F32 rows are used in place, F16/BF16 rows converted once per call.
template <class Load>
void matmul_float(const MatmulArgs& a, bool act_is_f32) {
    static thread_local ScratchBuffer buffer;
    const size_t row_floats = align64(size_t(a.n_cols) * 4) / 4;
    float* converted =
        act_is_f32 ? nullptr
                   : reinterpret_cast<float*>(buffer.get(row_floats * 4 * size_t(a.n_tokens)));
    if (a.n_tokens >= kFloatGemmMinTokens) {
        static thread_local std::vector<const float*> rows;
        rows.resize(size_t(a.n_tokens));
        for (int64_t t = 0; t < a.n_tokens; ++t) {
            const uint8_t* src = a.act + size_t(t) * a.act_stride;
            if (act_is_f32) {
                rows[size_t(t)] = reinterpret_cast<const float*>(src);
                continue;
            }
            float* dst = converted + row_floats * size_t(t);
            for (int64_t k = 0; k < a.n_cols; k += 16) {
                _mm512_mask_storeu_ps(dst + k, lanes(a.n_cols - k),
                                      Load::load(src, k, lanes(a.n_cols - k)));
            }
            rows[size_t(t)] = dst;
        }
        float_gemm<Load>(a, rows.data());
        return;
    }
    constexpr int kTile = 4;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kTile) {
        const int n = int(a.n_tokens - t0 < kTile ? a.n_tokens - t0 : kTile);
        const float* x[kTile];
        for (int t = 0; t < n; ++t) {
            const uint8_t* src = a.act + size_t(t0 + t) * a.act_stride;
            if (act_is_f32) {
                x[t] = reinterpret_cast<const float*>(src);
                continue;
            }
            float* dst = converted + row_floats * size_t(t0 + t);
            for (int64_t k = 0; k < a.n_cols; k += 16) {
                _mm512_mask_storeu_ps(dst + k, lanes(a.n_cols - k),
                                      Load::load(src, k, lanes(a.n_cols - k)));
            }
            x[t] = dst;
        }
        switch (n) {
            case 1:
                float_rows<Load, 1>(a, x, t0);
                break;
            case 2:
                float_rows<Load, 2>(a, x, t0);
                break;
            case 3:
                float_rows<Load, 3>(a, x, t0);
                break;
            default:
                float_rows<Load, 4>(a, x, t0);
                break;
        }
    }
}

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
    matmul_float<LoadF32>(a, true);
}
template <>
void Set<Isa::avx512>::matmul_f16(const MatmulArgs& a) {
    matmul_float<LoadF16>(a, false);
}
template <>
void Set<Isa::avx512>::matmul_bf16(const MatmulArgs& a) {
    matmul_float<LoadBF16>(a, false);
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
