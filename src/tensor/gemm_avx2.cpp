// AVX2 prefill kernels: the weight rows decoded once per call into panels of 8 rows (codes
// interleaved 4 per row per vector, then the rows' float scales and mins), and a micro-kernel
// that keeps 8 rows x 4 tokens in registers (see gemm_avx512.cpp for the scheme). Without
// vpdpbusd, two steps of vpmaddubsw are summed in 16 bits (codes below 64 cannot overflow) before
// one vpmaddwd; Q8_0 codes are signed and use |w| x sign(x, w) per step.
#include "tensor/kernels_avx2.h"
#include "tensor/kernels_x86_common.h"

namespace mw::avx2 {
namespace {

using namespace x86;

using DecodeFn = void (*)(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float* min);

constexpr int kRows = 8;  // rows per panel: one vector of 8 int32 lanes

size_t panel_stride(const PanelFormat& f) {
    return size_t(f.bl) * kRows + 32 + (f.has_min ? 32 : 0);
}

void pack_panel(const MatmulArgs& a, const PanelFormat& f, DecodeFn decode, int64_t r, int nr,
                uint8_t* panel, uint8_t* codes, float* scale, float* min) {
    const int64_t n_sub = a.n_cols / f.bl;
    const size_t stride = panel_stride(f);
    for (int i = 0; i < kRows; ++i) {
        if (i < nr) {
            decode(a.w + size_t(r + i) * a.w_row_bytes, a.n_cols, codes, scale, min);
        } else {
            std::memset(codes, 0x80 * (f.offset == 128), size_t(a.n_cols));  // Q8_0: code of 0
            std::memset(scale, 0, size_t(n_sub) * sizeof(float));
            if (f.has_min) std::memset(min, 0, size_t(n_sub) * sizeof(float));
        }
        for (int64_t j = 0; j < n_sub; ++j) {
            uint8_t* p = panel + size_t(j) * stride;
            const uint8_t* c = codes + j * f.bl;
            for (int s = 0; s < f.bl / 4; ++s) std::memcpy(p + 32 * s + 4 * i, c + 4 * s, 4);
            reinterpret_cast<float*>(p + f.bl * kRows)[i] = scale[j];
            if (f.has_min) reinterpret_cast<float*>(p + f.bl * kRows + 32)[i] = min[j];
        }
    }
}

struct TileActs {
    const uint8_t* row[4];
    const int32_t* bias[4];
    const float* min_factor[4];
    const float* dx[4];
};

inline __m256i bcast4(const int8_t* p) {
    return _mm256_set1_epi32(load_i32(p));
}

// Integer dot products of sub-block j, 8 rows x T tokens.
template <int T, int BL, bool kBias, bool kSigned>
inline void dot_sub_block(const PanelFormat& f, const uint8_t* panel, size_t stride,
                          const TileActs& x, int64_t j, __m256i s[T]) {
    const int8_t* xq[T];
    for (int t = 0; t < T; ++t) {
        xq[t] = act_quants(f, x.row[t], j);
        s[t] = kBias ? _mm256_set1_epi32(x.bias[t][j]) : _mm256_setzero_si256();
    }
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t* p = panel + size_t(j) * stride;
    if constexpr (kSigned) {
        const __m256i flip = _mm256_set1_epi8(char(0x80));
        for (int q = 0; q < BL / 4; ++q) {
            const __m256i w = _mm256_xor_si256(
                _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32 * q)), flip);
            const __m256i aw = _mm256_sign_epi8(w, w);
            for (int t = 0; t < T; ++t) {
                const __m256i prod =
                    _mm256_maddubs_epi16(aw, _mm256_sign_epi8(bcast4(xq[t] + 4 * q), w));
                s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(prod, ones));
            }
        }
    } else {
        for (int q = 0; q < BL / 4; q += 2) {
            const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32 * q));
            const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32 * q + 32));
            for (int t = 0; t < T; ++t) {
                const __m256i p16 =
                    _mm256_add_epi16(_mm256_maddubs_epi16(w0, bcast4(xq[t] + 4 * q)),
                                     _mm256_maddubs_epi16(w1, bcast4(xq[t] + 4 * q + 4)));
                s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(p16, ones));
            }
        }
    }
}

template <int T>
inline void store_tile(__m256 acc[T], float* y, int64_t ldy, int rows_valid) {
    if (rows_valid == kRows) {
        for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
        return;
    }
    alignas(32) float tmp[8];
    for (int t = 0; t < T; ++t) {
        _mm256_store_ps(tmp, acc[t]);
        for (int i = 0; i < rows_valid; ++i) y[t * ldy + i] = tmp[i];
    }
}

template <int T, bool kBias, bool kMin, bool kSigned>
void tile_blocks(const PanelFormat& f, const uint8_t* panel, int64_t n_sub, const TileActs& x,
                 float* y, int64_t ldy, int rows_valid) {
    const size_t stride = panel_stride(f);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t j = 0; j < n_sub; ++j) {
        __m256i s[T];
        dot_sub_block<T, 32, kBias, kSigned>(f, panel, stride, x, j, s);
        const uint8_t* p = panel + size_t(j) * stride + 32 * kRows;
        const __m256 scale = _mm256_load_ps(reinterpret_cast<const float*>(p));
        for (int t = 0; t < T; ++t) {
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]),
                                     _mm256_mul_ps(scale, _mm256_set1_ps(x.dx[t][j])), acc[t]);
        }
        if constexpr (kMin) {
            const __m256 mn = _mm256_load_ps(reinterpret_cast<const float*>(p + 32));
            for (int t = 0; t < T; ++t)
                acc[t] = _mm256_fmadd_ps(mn, _mm256_set1_ps(x.min_factor[t][j]), acc[t]);
        }
    }
    store_tile<T>(acc, y, ldy, rows_valid);
}

template <int T, int BL, bool kBias, bool kMin>
void tile_kquant(const PanelFormat& f, const uint8_t* panel, int64_t n_sub, const TileActs& x,
                 float* y, int64_t ldy, int rows_valid) {
    const size_t stride = panel_stride(f);
    constexpr int kPerSuper = 256 / BL;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < n_sub / kPerSuper; ++sb) {
        __m256 sacc[T];
        for (int t = 0; t < T; ++t) sacc[t] = _mm256_setzero_ps();
        for (int64_t j = sb * kPerSuper; j < (sb + 1) * kPerSuper; ++j) {
            __m256i s[T];
            dot_sub_block<T, BL, kBias, false>(f, panel, stride, x, j, s);
            const uint8_t* p = panel + size_t(j) * stride + BL * kRows;
            const __m256 scale = _mm256_load_ps(reinterpret_cast<const float*>(p));
            for (int t = 0; t < T; ++t)
                sacc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), scale, sacc[t]);
            if constexpr (kMin) {
                const __m256 mn = _mm256_load_ps(reinterpret_cast<const float*>(p + 32));
                for (int t = 0; t < T; ++t)
                    sacc[t] = _mm256_fmadd_ps(mn, _mm256_set1_ps(x.min_factor[t][j]), sacc[t]);
            }
        }
        for (int t = 0; t < T; ++t)
            acc[t] = _mm256_fmadd_ps(sacc[t], _mm256_set1_ps(x.dx[t][sb]), acc[t]);
    }
    store_tile<T>(acc, y, ldy, rows_valid);
}

using TileFn = void (*)(const PanelFormat&, const uint8_t*, int64_t, const TileActs&, float*,
                        int64_t, int);

template <int BL, bool kBias, bool kMin, bool kKQuant, bool kSigned, int T>
constexpr TileFn tile_fn() {
    if constexpr (kKQuant) {
        return tile_kquant<T, BL, kBias, kMin>;
    } else {
        return tile_blocks<T, kBias, kMin, kSigned>;
    }
}

template <int BL, bool kBias, bool kMin, bool kKQuant, bool kSigned = false>
void gemm(const MatmulArgs& a, const PanelFormat& f, DecodeFn decode) {
    static constexpr TileFn tiles[5] = {nullptr, tile_fn<BL, kBias, kMin, kKQuant, kSigned, 1>(),
                                        tile_fn<BL, kBias, kMin, kKQuant, kSigned, 2>(),
                                        tile_fn<BL, kBias, kMin, kKQuant, kSigned, 3>(),
                                        tile_fn<BL, kBias, kMin, kKQuant, kSigned, 4>()};
    const int64_t n_sub = a.n_cols / BL;
    const int64_t n_dx = kKQuant ? a.n_cols / 256 : n_sub;
    const int64_t n_tok = a.n_tokens;

    static thread_local ScratchBuffer side_buf, panel_buf, row_buf;
    const size_t side_elems = size_t(n_tok) * size_t(n_sub);
    uint8_t* sides = side_buf.get(3 * align64(side_elems * 4) + align64(size_t(n_tok * n_dx) * 4));
    const ActSide side{reinterpret_cast<int32_t*>(sides),
                       reinterpret_cast<float*>(sides + align64(side_elems * 4)),
                       reinterpret_cast<float*>(sides + 2 * align64(side_elems * 4))};
    compute_act_side(f, a.act, a.act_stride, n_tok, a.n_cols, side);

    uint8_t* panel = panel_buf.get(size_t(n_sub) * panel_stride(f));
    uint8_t* row_codes = row_buf.get(align64(size_t(a.n_cols)) + 2 * align64(size_t(n_sub) * 4));
    float* row_scale = reinterpret_cast<float*>(row_codes + align64(size_t(a.n_cols)));
    float* row_min = row_scale + align64(size_t(n_sub) * 4) / 4;

    for (int64_t r = a.r0; r < a.r1; r += kRows) {
        const int rows = int(a.r1 - r < kRows ? a.r1 - r : kRows);
        pack_panel(a, f, decode, r, rows, panel, row_codes, row_scale, row_min);
        for (int64_t t0 = 0; t0 < n_tok; t0 += 4) {
            const int n = int(n_tok - t0 < 4 ? n_tok - t0 : 4);
            TileActs x{};
            for (int t = 0; t < n; ++t) {
                const int64_t tt = t0 + t;
                x.row[t] = a.act + size_t(tt) * a.act_stride;
                x.bias[t] = side.bias + tt * n_sub;
                x.min_factor[t] = side.min_factor + tt * n_sub;
                x.dx[t] = side.dx + tt * n_dx;
            }
            tiles[n](f, panel, n_sub, x, a.y + t0 * a.ldy + r, a.ldy, rows);
        }
    }
}

}  // namespace

void gemm_q4_0(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 8, false, false, kActQ8_0};
    gemm<32, true, false, false>(a, f, decode_q4_0);
}
void gemm_q4_1(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 0, true, false, kActQ8_1};
    gemm<32, false, true, false>(a, f, decode_q4_1);
}
void gemm_q5_0(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 16, false, false, kActQ8_0};
    gemm<32, true, false, false>(a, f, decode_q5_0);
}
void gemm_q5_1(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 0, true, false, kActQ8_1};
    gemm<32, false, true, false>(a, f, decode_q5_1);
}
void gemm_q8_0(const MatmulArgs& a) {
    // Codes are q + 128 in the panel; the kernel flips them back and multiplies signed.
    static constexpr PanelFormat f{32, 128, false, false, kActQ8_0};
    gemm<32, false, false, false, true>(a, f, decode_q8_0);
}
void gemm_q2_k(const MatmulArgs& a) {
    static constexpr PanelFormat f{16, 0, true, true, kActQ8_0};
    gemm<16, false, true, true>(a, f, decode_q2_k);
}
void gemm_q3_k(const MatmulArgs& a) {
    static constexpr PanelFormat f{16, 4, false, true, kActQ8_0};
    gemm<16, true, false, true>(a, f, decode_q3_k);
}
void gemm_q4_k(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 0, true, true, kActQ8_0};
    gemm<32, false, true, true>(a, f, decode_q4_k);
}
void gemm_q5_k(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 0, true, true, kActQ8_0};
    gemm<32, false, true, true>(a, f, decode_q5_k);
}
void gemm_q6_k(const MatmulArgs& a) {
    static constexpr PanelFormat f{16, 32, false, true, kActQ8_0};
    gemm<16, true, false, true>(a, f, decode_q6_k);
}

}  // namespace mw::avx2
