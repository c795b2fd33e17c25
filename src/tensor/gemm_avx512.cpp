// AVX-512 prefill kernels: many tokens times quantized weights, as a register-blocked GEMM.
//
// Each call decodes its weight rows once, 32 at a time, into two panels of 16 rows: per
// sub-block, the unsigned 8-bit codes interleaved as [4 codes of row 0, of row 1, ... row 15] per
// 64-byte vector, then the 16 rows' float scales (and mins). The micro-kernel keeps a tile of
// 2 x 16 rows times T tokens in registers: one vpdpbusd multiplies 4 codes of 16 rows with the same
// 4 quants of one token (broadcast), so every decoded weight byte is reused T times from a
// register and every activation byte 32 times. Integer sums per sub-block, then one float
// multiply-add per (rows, token, sub-block) with scale_w * scale_x; a type's code offset comes in
// through the activation sums, its mins through a second multiply-add.
#include <array>
#include <utility>

#include "tensor/kernels_avx512.h"
#include "tensor/kernels_avx512_codes.h"
#include "tensor/kernels_x86_common.h"

namespace mw::avx512 {
namespace {

using namespace x86;

using DecodeFn = void (*)(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float* min);

size_t panel_stride(const PanelFormat& f) {
    return size_t(f.bl) * 16 + 64 + (f.has_min ? 64 : 0);
}

// ---- Row decoders: codes in element order, scale (and min) per sub-block ------------------

inline __m256i nibbles32(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(
        _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1),
        _mm256_set1_epi8(15));
}

inline void store32(uint8_t* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

template <class Block, bool kHigh, bool kMin>
void row_nibbles(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float* min) {
    const auto* b = reinterpret_cast<const Block*>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
        __m256i c = nibbles32(b[i].qs);
        if constexpr (kHigh)
            c = _mm256_mask_add_epi8(c, __mmask32(load_u32(b[i].qh)), c, _mm256_set1_epi8(16));
        store32(codes + 32 * i, c);
        scale[i] = half(b[i].d);
        if constexpr (kMin) min[i] = half(b[i].m);
    }
}

void row_q8_0(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float*) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs));
        store32(codes + 32 * i, _mm256_xor_si256(q, _mm256_set1_epi8(char(0x80))));
        scale[i] = half(b[i].d);
    }
}

inline void store_codes(uint8_t* p, const __m512i codes[4]) {
    for (int v = 0; v < 4; ++v) _mm512_storeu_si512(p + 64 * v, codes[v]);
}

void row_q2_k(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float* min) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(row);
    for (int64_t i = 0; i < n / 256; ++i, codes += 256, scale += 16, min += 16) {
        __m512i c[4];
        codes_q2_k(b[i], c);
        store_codes(codes, c);
        const float d = half(b[i].d), dmin = half(b[i].dmin);
        for (int j = 0; j < 16; ++j) {
            scale[j] = d * float(b[i].scales[j] & 15);
            min[j] = -dmin * float(b[i].scales[j] >> 4);
        }
    }
}

void row_q3_k(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float*) {
    const auto* b = reinterpret_cast<const BlockQ3_K*>(row);
    for (int64_t i = 0; i < n / 256; ++i, codes += 256, scale += 16) {
        __m512i c[4];
        codes_q3_k(b[i], c);
        store_codes(codes, c);
        const float d = half(b[i].d);
        uint64_t sc[2];
        unpack_q3k_scales(b[i].scales, sc);
        for (int j = 0; j < 16; ++j)
            scale[j] = d * float(int((sc[j / 8] >> (8 * (j % 8))) & 63) - 32);
    }
}

template <class Block, void (*codes_of)(const Block&, __m512i*)>
void row_q45_k(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float* min) {
    const auto* b = reinterpret_cast<const Block*>(row);
    for (int64_t i = 0; i < n / 256; ++i, codes += 256, scale += 8, min += 8) {
        __m512i c[4];
        codes_of(b[i], c);
        store_codes(codes, c);
        const float d = half(b[i].d), dmin = half(b[i].dmin);
        uint64_t sc, m;
        unpack_q4k_scales(b[i].scales, &sc, &m);
        for (int j = 0; j < 8; ++j) {
            scale[j] = d * float((sc >> (8 * j)) & 63);
            min[j] = -dmin * float((m >> (8 * j)) & 63);
        }
    }
}

void row_q6_k(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float*) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(row);
    for (int64_t i = 0; i < n / 256; ++i, codes += 256, scale += 16) {
        __m512i c[4];
        codes_q6_k(b[i], c);
        store_codes(codes, c);
        const float d = half(b[i].d);
        for (int j = 0; j < 16; ++j) scale[j] = d * float(b[i].scales[j]);
    }
}

// ---- Packing -----------------------------------------------------------------------------

// r[i] holds 16 dwords of row i; afterwards r[e] holds dword e of the 16 rows.
inline void transpose16x16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    // s[4g + k], 128-bit lane L: dword 4L + k of rows 4g..4g+3.
    __m512i s[16];
    for (int g = 0; g < 4; ++g) {
        s[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        s[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        s[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        s[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int k = 0; k < 4; ++k) {
        const __m512i ab_lo = _mm512_shuffle_i32x4(s[k], s[4 + k], 0x44);
        const __m512i ab_hi = _mm512_shuffle_i32x4(s[k], s[4 + k], 0xEE);
        const __m512i cd_lo = _mm512_shuffle_i32x4(s[8 + k], s[12 + k], 0x44);
        const __m512i cd_hi = _mm512_shuffle_i32x4(s[8 + k], s[12 + k], 0xEE);
        r[k] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0x88);
        r[4 + k] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0xDD);
        r[8 + k] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0x88);
        r[12 + k] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0xDD);
    }
}

// Row buffers for one panel: 16 rows of codes (padded to 64) and of scales and mins (padded
// to 16 sub-blocks).
struct RowBuffers {
    uint8_t* codes;
    float* scale;
    float* min;
    int64_t codes_stride;
    int64_t sub_stride;
};

// Decodes rows [r, r + nr) (nr <= 16) into a panel; missing rows are zero.
void pack_panel(const MatmulArgs& a, const PanelFormat& f, DecodeFn decode, int64_t r, int nr,
                uint8_t* panel, const RowBuffers& rb) {
    const int64_t n = a.n_cols, n_sub = n / f.bl;
    const size_t stride = panel_stride(f);
    for (int i = 0; i < 16; ++i) {
        uint8_t* codes = rb.codes + i * rb.codes_stride;
        float* scale = rb.scale + i * rb.sub_stride;
        float* min = rb.min + i * rb.sub_stride;
        if (i < nr) {
            decode(a.w + size_t(r + i) * a.w_row_bytes, n, codes, scale, min);
            std::memset(codes + n, 0, size_t(rb.codes_stride - n));
        } else {
            std::memset(codes, 0, size_t(rb.codes_stride));
            std::memset(scale, 0, size_t(n_sub) * sizeof(float));
            if (f.has_min) std::memset(min, 0, size_t(n_sub) * sizeof(float));
        }
    }
    // Codes: 64 columns of the 16 rows at a time, as 16 vectors of [row][4 codes].
    const int steps = f.bl / 4;
    for (int64_t c = 0; c < rb.codes_stride / 64; ++c) {
        __m512i v[16];
        for (int i = 0; i < 16; ++i)
            v[i] = _mm512_load_si512(rb.codes + i * rb.codes_stride + 64 * c);
        transpose16x16(v);
        for (int e = 0; e < 16; ++e) {
            const int64_t j = (16 * c + e) / steps;
            if (j < n_sub)
                _mm512_store_si512(panel + size_t(j) * stride + 64 * ((16 * c + e) % steps), v[e]);
        }
    }
    // Scales and mins: 16 sub-blocks of the 16 rows at a time.
    for (int which = 0; which < (f.has_min ? 2 : 1); ++which) {
        const float* src = which ? rb.min : rb.scale;
        const size_t offset = size_t(f.bl) * 16 + 64 * size_t(which);
        for (int64_t j0 = 0; j0 < n_sub; j0 += 16) {
            __m512i v[16];
            for (int i = 0; i < 16; ++i) v[i] = _mm512_load_si512(src + i * rb.sub_stride + j0);
            transpose16x16(v);
            for (int e = 0; e < 16 && j0 + e < n_sub; ++e) {
                _mm512_store_si512(panel + size_t(j0 + e) * stride + offset, v[e]);
            }
        }
    }
}

// What a tile reads of the activations: per token, its row and side arrays.
struct TileActs {
    const uint8_t* row[6];
    const int32_t* bias[6];
    const float* min_factor[6];
    const float* dx[6];
};

inline __m512i bcast4(const int8_t* p) {
    return _mm512_set1_epi32(load_i32(p));
}

// Sub-block j: integer dot products of G panels x T tokens, starting from the bias.
template <int G, int T, int BL, bool kBias>
inline void dot_sub_block(const PanelFormat& f, const uint8_t* const panel[2], size_t stride,
                          const TileActs& x, int64_t j, __m512i s[G][T]) {
    const int8_t* xq[T];
    for (int t = 0; t < T; ++t) {
        xq[t] = act_quants(f, x.row[t], j);
        for (int g = 0; g < G; ++g) {
            s[g][t] = kBias ? _mm512_set1_epi32(x.bias[t][j]) : _mm512_setzero_si512();
        }
    }
#pragma GCC unroll 8
    for (int q = 0; q < BL / 4; ++q) {
        __m512i w[G];
        for (int g = 0; g < G; ++g)
            w[g] = _mm512_load_si512(panel[g] + size_t(j) * stride + 64 * q);
        for (int t = 0; t < T; ++t) {
            const __m512i xb = bcast4(xq[t] + 4 * q);
            for (int g = 0; g < G; ++g) s[g][t] = _mm512_dpbusd_epi32(s[g][t], w[g], xb);
        }
    }
}

// The rows of the tile in [lo, hi) are stored (packed groups may start before the range).
struct RowSpan {
    int lo, hi;
};

inline __mmask16 rows_mask(RowSpan rows, int g) {
    const int lo = rows.lo - 16 * g > 0 ? rows.lo - 16 * g : 0;
    const int hi = rows.hi - 16 * g < 16 ? (rows.hi - 16 * g > 0 ? rows.hi - 16 * g : 0) : 16;
    return lo >= hi ? __mmask16(0) : __mmask16(((1u << hi) - 1) & ~((1u << lo) - 1));
}

template <int G, int T>
inline void store_tile(__m512 acc[G][T], float* y, int64_t ldy, RowSpan rows) {
    for (int g = 0; g < G; ++g) {
        const __mmask16 m = rows_mask(rows, g);
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + 16 * g, m, acc[g][t]);
    }
}

// Tile for the 32-element types: a float scale per block on both sides.
template <int G, int T, bool kBias, bool kMin>
void tile_blocks(const PanelFormat& f, const uint8_t* const panel[2], int64_t n_sub,
                 const TileActs& x, float* y, int64_t ldy, RowSpan rows) {
    const size_t stride = panel_stride(f);
    __m512 acc[G][T];
    for (int g = 0; g < G; ++g) {
        for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
    }
    for (int64_t j = 0; j < n_sub; ++j) {
        __m512i s[G][T];
        dot_sub_block<G, T, 32, kBias>(f, panel, stride, x, j, s);
        for (int g = 0; g < G; ++g) {
            const uint8_t* p = panel[g] + size_t(j) * stride + 32 * 16;
            const __m512 scale = _mm512_load_ps(reinterpret_cast<const float*>(p));
            for (int t = 0; t < T; ++t) {
                const __m512 sx = _mm512_mul_ps(scale, _mm512_set1_ps(x.dx[t][j]));
                acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[g][t]), sx, acc[g][t]);
            }
            if constexpr (kMin) {
                const __m512 mn = _mm512_load_ps(reinterpret_cast<const float*>(p + 64));
                for (int t = 0; t < T; ++t) {
                    acc[g][t] = _mm512_fmadd_ps(mn, _mm512_set1_ps(x.min_factor[t][j]), acc[g][t]);
                }
            }
        }
    }
    store_tile<G, T>(acc, y, ldy, rows);
}

// Tile for the K-quants: sub-block scales in float within a super-block, then the super-block's
// activation scale.
template <int G, int T, int BL, bool kBias, bool kMin>
void tile_kquant(const PanelFormat& f, const uint8_t* const panel[2], int64_t n_sub,
                 const TileActs& x, float* y, int64_t ldy, RowSpan rows) {
    const size_t stride = panel_stride(f);
    constexpr int kPerSuper = 256 / BL;
    __m512 acc[G][T];
    for (int g = 0; g < G; ++g) {
        for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
    }
    for (int64_t sb = 0; sb < n_sub / kPerSuper; ++sb) {
        __m512 sacc[G][T];
        for (int g = 0; g < G; ++g) {
            for (int t = 0; t < T; ++t) sacc[g][t] = _mm512_setzero_ps();
        }
        for (int64_t j = sb * kPerSuper; j < (sb + 1) * kPerSuper; ++j) {
            __m512i s[G][T];
            dot_sub_block<G, T, BL, kBias>(f, panel, stride, x, j, s);
            for (int g = 0; g < G; ++g) {
                const uint8_t* p = panel[g] + size_t(j) * stride + BL * 16;
                const __m512 scale = _mm512_load_ps(reinterpret_cast<const float*>(p));
                for (int t = 0; t < T; ++t) {
                    sacc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[g][t]), scale, sacc[g][t]);
                }
                if constexpr (kMin) {
                    const __m512 mn = _mm512_load_ps(reinterpret_cast<const float*>(p + 64));
                    for (int t = 0; t < T; ++t) {
                        sacc[g][t] =
                            _mm512_fmadd_ps(mn, _mm512_set1_ps(x.min_factor[t][j]), sacc[g][t]);
                    }
                }
            }
        }
        for (int t = 0; t < T; ++t) {
            const __m512 dx = _mm512_set1_ps(x.dx[t][sb]);
            for (int g = 0; g < G; ++g) acc[g][t] = _mm512_fmadd_ps(sacc[g][t], dx, acc[g][t]);
        }
    }
    store_tile<G, T>(acc, y, ldy, rows);
}

using TileFn = void (*)(const PanelFormat&, const uint8_t* const[2], int64_t, const TileActs&,
                        float*, int64_t, RowSpan);

template <int G, int BL, bool kBias, bool kMin, bool kKQuant, int T>
constexpr TileFn tile_fn() {
    if constexpr (kKQuant) {
        return tile_kquant<G, T, BL, kBias, kMin>;
    } else {
        return tile_blocks<G, T, kBias, kMin>;
    }
}

// Tokens per tile: 2 x 16 rows x T int32 sums plus as many float accumulators (and, for the
// K-quants, the super-block's partial sums) must fit the 32 vector registers.
template <bool kKQuant>
constexpr int kMaxTile = kKQuant ? 4 : 6;

template <int G, int BL, bool kBias, bool kMin, bool kKQuant, size_t... Ts>
constexpr std::array<TileFn, sizeof...(Ts) + 1> tile_table(std::index_sequence<Ts...>) {
    return {nullptr, tile_fn<G, BL, kBias, kMin, kKQuant, int(Ts) + 1>()...};
}

// The GEMM driver. pack(r, nr, panel) fills a panel with rows [r, r + nr); with `groups_of_16`
// the tiles start at multiples of 16 rows (packed layouts) and rows outside [r0, r1) are
// computed but not stored.
template <int BL, bool kBias, bool kMin, bool kKQuant, class Pack>
void gemm(const MatmulArgs& a, const PanelFormat& f, Pack pack, bool groups_of_16) {
    constexpr int kTile = kMaxTile<kKQuant>;
    static constexpr auto tiles1 =
        tile_table<1, BL, kBias, kMin, kKQuant>(std::make_index_sequence<kTile>());
    static constexpr auto tiles2 =
        tile_table<2, BL, kBias, kMin, kKQuant>(std::make_index_sequence<kTile>());
    const int64_t n_sub = a.n_cols / BL;
    const int64_t n_dx = kKQuant ? a.n_cols / 256 : n_sub;
    const int64_t n_tok = a.n_tokens;

    // Per-thread buffers: the activation side arrays and two panels.
    static thread_local ScratchBuffer side_buf, panel_buf;
    const size_t side_elems = size_t(n_tok) * size_t(n_sub);
    uint8_t* sides = side_buf.get(3 * align64(side_elems * 4) + align64(size_t(n_tok * n_dx) * 4));
    ActSide side{reinterpret_cast<int32_t*>(sides),
                 reinterpret_cast<float*>(sides + align64(side_elems * 4)),
                 reinterpret_cast<float*>(sides + 2 * align64(side_elems * 4))};
    compute_act_side(f, a.act, a.act_stride, n_tok, a.n_cols, side);

    const size_t panel_bytes = size_t(n_sub) * panel_stride(f);
    uint8_t* panels = panel_buf.get(2 * panel_bytes);
    const uint8_t* panel[2] = {panels, panels + panel_bytes};

    const int64_t r_begin = groups_of_16 ? a.r0 - a.r0 % 16 : a.r0;
    const int64_t r_end = groups_of_16 ? (a.r1 + 15) / 16 * 16 : a.r1;
    for (int64_t r = r_begin; r < r_end; r += 32) {
        const int rows = int(r_end - r < 32 ? r_end - r : 32);
        const int groups = rows > 16 ? 2 : 1;
        for (int g = 0; g < groups; ++g) {
            pack(r + 16 * g, rows - 16 * g < 16 ? rows - 16 * g : 16, panels + g * panel_bytes);
        }
        const RowSpan span{int(a.r0 > r ? a.r0 - r : 0), int(a.r1 - r < 32 ? a.r1 - r : 32)};
        for (int64_t t0 = 0; t0 < n_tok; t0 += kTile) {
            const int n = int(n_tok - t0 < kTile ? n_tok - t0 : kTile);
            TileActs x{};
            for (int t = 0; t < n; ++t) {
                const int64_t tt = t0 + t;
                x.row[t] = a.act + size_t(tt) * a.act_stride;
                x.bias[t] = side.bias + tt * n_sub;
                x.min_factor[t] = side.min_factor + tt * n_sub;
                x.dx[t] = side.dx + tt * n_dx;
            }
            const TileFn fn = groups == 2 ? tiles2[n] : tiles1[n];
            fn(f, panel, n_sub, x, a.y + t0 * a.ldy + r, a.ldy, span);
        }
    }
}

// The GGUF layout: rows decoded one at a time, then transposed into the panel.
template <int BL, bool kBias, bool kMin, bool kKQuant>
void gemm(const MatmulArgs& a, const PanelFormat& f, DecodeFn decode) {
    static thread_local ScratchBuffer row_buf;
    const int64_t n_sub = a.n_cols / BL;
    RowBuffers rb;
    rb.codes_stride = int64_t(align64(size_t(a.n_cols)));
    rb.sub_stride = (n_sub + 15) / 16 * 16;
    uint8_t* rows_mem =
        row_buf.get(16 * size_t(rb.codes_stride) + 2 * 16 * size_t(rb.sub_stride) * 4);
    rb.codes = rows_mem;
    rb.scale = reinterpret_cast<float*>(rows_mem + 16 * rb.codes_stride);
    rb.min = rb.scale + 16 * rb.sub_stride;
    if (!f.has_min) std::memset(rb.min, 0, 16 * size_t(rb.sub_stride) * 4);
    gemm<BL, kBias, kMin, kKQuant>(
        a, f,
        [&](int64_t r, int nr, uint8_t* panel) { pack_panel(a, f, decode, r, nr, panel, rb); },
        false);
}

constexpr PanelFormat kQ4KPanel{32, 0, true, true, kActQ8_0};

}  // namespace

constexpr PanelFormat kQ4_0Panel{32, 8, false, false, kActQ8_0};
constexpr PanelFormat kQ6KPanel{16, 32, false, true, kActQ8_0};

void gemm_q4_0(const MatmulArgs& a) {
    gemm<32, true, false, false>(a, kQ4_0Panel, row_nibbles<BlockQ4_0, false, false>);
}
void gemm_q4_0_groups(const MatmulArgs& a, GroupPackFn pack) {
    gemm<32, true, false, false>(
        a, kQ4_0Panel, [&](int64_t r, int, uint8_t* panel) { pack(a, r / 16, panel); }, true);
}
void gemm_q4_1(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 0, true, false, kActQ8_1};
    gemm<32, false, true, false>(a, f, row_nibbles<BlockQ4_1, false, true>);
}
void gemm_q5_0(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 16, false, false, kActQ8_0};
    gemm<32, true, false, false>(a, f, row_nibbles<BlockQ5_0, true, false>);
}
void gemm_q5_1(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 0, true, false, kActQ8_1};
    gemm<32, false, true, false>(a, f, row_nibbles<BlockQ5_1, true, true>);
}
void gemm_q8_0(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 128, false, false, kActQ8_0};
    gemm<32, true, false, false>(a, f, row_q8_0);
}
void gemm_q2_k(const MatmulArgs& a) {
    static constexpr PanelFormat f{16, 0, true, true, kActQ8_0};
    gemm<16, false, true, true>(a, f, row_q2_k);
}
void gemm_q3_k(const MatmulArgs& a) {
    static constexpr PanelFormat f{16, 4, false, true, kActQ8_0};
    gemm<16, true, false, true>(a, f, row_q3_k);
}
void gemm_q4_k(const MatmulArgs& a) {
    gemm<32, false, true, true>(a, kQ4KPanel, (row_q45_k<BlockQ4_K, codes_q4_k>));
}
void gemm_q4_k_groups(const MatmulArgs& a, GroupPackFn pack) {
    gemm<32, false, true, true>(
        a, kQ4KPanel, [&](int64_t r, int, uint8_t* panel) { pack(a, r / 16, panel); }, true);
}
void gemm_q5_k(const MatmulArgs& a) {
    static constexpr PanelFormat f{32, 0, true, true, kActQ8_0};
    gemm<32, false, true, true>(a, f, (row_q45_k<BlockQ5_K, codes_q5_k>));
}
void gemm_q6_k(const MatmulArgs& a) {
    gemm<16, true, false, true>(a, kQ6KPanel, row_q6_k);
}
void gemm_q6_k_groups(const MatmulArgs& a, GroupPackFn pack) {
    gemm<16, true, false, true>(
        a, kQ6KPanel, [&](int64_t r, int, uint8_t* panel) { pack(a, r / 16, panel); }, true);
}

}  // namespace mw::avx512
