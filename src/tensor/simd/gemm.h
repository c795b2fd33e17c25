// Prefill kernels: many tokens times quantized weights, as a register-blocked GEMM, written once
// for every vector type V (R = V::kLanes rows per panel).
//
// Each call decodes its weight rows once, G x R at a time, into G panels of R rows: per
// sub-block, the unsigned 8-bit codes interleaved as [4 codes of row 0, of row 1, ... row R-1]
// per vector, then the R rows' float scales (and mins). The micro-kernel keeps a tile of G x R
// rows times T tokens in registers: one integer dot product multiplies 4 codes of R rows with the
// same 4 quants of one token (broadcast), so every decoded weight byte is reused T times from a
// register and every activation byte G x R times. Integer sums per sub-block, then one float
// multiply-add per (rows, token, sub-block) with scale_w * scale_x; a type's code offset comes in
// through the activation sums, its mins through a second multiply-add.
//
// Panels come from rows in the GGUF layout (each ISA's row decoders, then a transpose:
// gemm_rows) or from packed groups (tensor/simd/packed.h), which are already interleaved this
// way: their panels are one mask or shift per vector instead of a decode and a transpose.
#pragma once

#include <array>
#include <type_traits>
#include <utility>

#include "tensor/simd/common.h"

namespace mw::simd {
namespace {

template <class V>
constexpr size_t panel_stride(const PanelFormat& f) {
    return size_t(f.bl) * V::kLanes + 4 * V::kLanes * (f.has_min ? 2 : 1);
}

// Fills codes (n elements, element order), the float scale and (types with mins) the float min
// of each sub-block of one row in the GGUF layout: each ISA's row decoders.
using RowDecodeFn = void (*)(const uint8_t* row, int64_t n, uint8_t* codes, float* scale,
                             float* min);

// ---- Packing rows into a panel ----------------------------------------------------------------

// Row buffers for one panel: R rows of codes (padded to a multiple of V::kBytes) and of scales
// and mins (padded to a multiple of R sub-blocks).
struct RowBuffers {
    uint8_t* codes;
    float* scale;
    float* min;
    int64_t codes_stride;
    int64_t sub_stride;
};

// Decodes rows [r, r + nr) (nr <= R) into a panel; missing rows are zero.
template <class V>
void pack_panel(const MatmulArgs& a, const PanelFormat& f, RowDecodeFn decode, int64_t r, int nr,
                uint8_t* panel, const RowBuffers& rb) {
    using I = typename V::I;
    constexpr int R = V::kLanes;
    const int64_t n = a.n_cols, n_sub = n / f.bl;
    const size_t stride = panel_stride<V>(f);
    for (int i = 0; i < R; ++i) {
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
    // Codes: R dwords (4R columns) of the R rows at a time, as R vectors of [row][4 codes].
    const int steps = f.bl / 4;
    for (int64_t c = 0; c < rb.codes_stride / V::kBytes; ++c) {
        I v[R];
        for (int i = 0; i < R; ++i) v[i] = V::load(rb.codes + i * rb.codes_stride + V::kBytes * c);
        V::transpose(v);
        for (int e = 0; e < R; ++e) {
            const int64_t j = (R * c + e) / steps;
            if (j < n_sub)
                V::store(panel + size_t(j) * stride + V::kBytes * ((R * c + e) % steps), v[e]);
        }
    }
    // Scales and mins: R sub-blocks of the R rows at a time.
    for (int which = 0; which < (f.has_min ? 2 : 1); ++which) {
        const float* src = which ? rb.min : rb.scale;
        const size_t offset = size_t(f.bl) * R + 4 * R * size_t(which);
        for (int64_t j0 = 0; j0 < n_sub; j0 += R) {
            I v[R];
            for (int i = 0; i < R; ++i) v[i] = V::load(src + i * rb.sub_stride + j0);
            V::transpose(v);
            for (int e = 0; e < R && j0 + e < n_sub; ++e) {
                V::store(panel + size_t(j0 + e) * stride + offset, v[e]);
            }
        }
    }
}

// ---- The micro-kernel -------------------------------------------------------------------------

// What a tile reads of the activations: per token, its row and side arrays.
inline constexpr int kMaxTileGroups = 4, kMaxTileTokens = 8;

struct TileActs {
    const uint8_t* row[kMaxTileTokens];
    const int32_t* bias[kMaxTileTokens];
    const float* min_factor[kMaxTileTokens];
    const float* dx[kMaxTileTokens];
};

// The tile's integer arithmetic: codes <= kMaxCode (unsigned), or kSigned: the panel holds
// q + 128 of signed q and the set multiplies signed bytes exactly (the sets without VNNI).
template <int kMaxCodeV, bool kSignedV>
struct TileInts {
    static constexpr int kMaxCode = kMaxCodeV;
    static constexpr bool kSigned = kSignedV;
};

// Sub-block j: integer dot products of G panels x T tokens, starting from the bias.
template <class V, int G, int T, int BL, bool kBias, class Ints>
inline void dot_sub_block(const PanelFormat& f, const uint8_t* const panel[kMaxTileGroups],
                          size_t stride, const TileActs& x, int64_t j, typename V::I s[G][T]) {
    using I = typename V::I;
    constexpr int R = V::kLanes;
    const int8_t* xq[T];
    for (int t = 0; t < T; ++t) {
        xq[t] = act_quants(f, x.row[t], j);
        for (int g = 0; g < G; ++g) s[g][t] = kBias ? V::set1_i32(x.bias[t][j]) : V::zero();
    }
    if constexpr (Ints::kSigned) {
        const I flip = V::set1_i8(char(0x80));
        for (int q = 0; q < BL / 4; ++q) {
            I w[G];
            for (int g = 0; g < G; ++g)
                w[g] = V::xor_(V::load(panel[g] + size_t(j) * stride + 4 * R * q), flip);
            for (int t = 0; t < T; ++t) {
                const I xb = V::bcast32(xq[t] + 4 * q);
                for (int g = 0; g < G; ++g) s[g][t] = V::dot_signed(s[g][t], w[g], xb);
            }
        }
    } else {
        using Chain = DotChain<V, Ints::kMaxCode, true>;
        Chain c[G][T];
        for (int g = 0; g < G; ++g) {
            for (int t = 0; t < T; ++t) c[g][t] = Chain(s[g][t]);
        }
#pragma GCC unroll 8
        for (int q = 0; q < BL / 4; ++q) {
            I w[G];
            for (int g = 0; g < G; ++g) w[g] = V::load(panel[g] + size_t(j) * stride + 4 * R * q);
            for (int t = 0; t < T; ++t) {
                const I xb = V::bcast32(xq[t] + 4 * q);
                for (int g = 0; g < G; ++g) c[g][t].add(w[g], xb);
            }
        }
        for (int g = 0; g < G; ++g) {
            for (int t = 0; t < T; ++t) s[g][t] = c[g][t].result();
        }
    }
}

// The rows of the tile in [lo, hi) are stored (packed groups may start before the range).
struct RowSpan {
    int lo, hi;
};

template <class V, int G, int T>
inline void store_tile(typename V::F acc[G][T], float* y, int64_t ldy, RowSpan rows) {
    constexpr int R = V::kLanes;
    for (int g = 0; g < G; ++g) {
        const int lo = rows.lo - R * g > 0 ? rows.lo - R * g : 0;
        const int hi = rows.hi - R * g < R ? rows.hi - R * g : R;
        if (lo >= hi) continue;
        for (int t = 0; t < T; ++t) V::store_rows(y + t * ldy + R * g, acc[g][t], lo, hi);
    }
}

// Tile for the 32-element types: a float scale per block on both sides.
template <class V, int G, int T, bool kBias, bool kMin, class Ints>
void tile_blocks(const PanelFormat& f, const uint8_t* const panel[kMaxTileGroups], int64_t n_sub,
                 const TileActs& x, float* y, int64_t ldy, RowSpan rows) {
    using I = typename V::I;
    using F = typename V::F;
    constexpr int R = V::kLanes;
    const size_t stride = panel_stride<V>(f);
    F acc[G][T];
    for (int g = 0; g < G; ++g) {
        for (int t = 0; t < T; ++t) acc[g][t] = V::zerof();
    }
    for (int64_t j = 0; j < n_sub; ++j) {
        I s[G][T];
        dot_sub_block<V, G, T, 32, kBias, Ints>(f, panel, stride, x, j, s);
        for (int g = 0; g < G; ++g) {
            const uint8_t* p = panel[g] + size_t(j) * stride + 32 * R;
            const F scale = V::loadf(reinterpret_cast<const float*>(p));
            for (int t = 0; t < T; ++t) {
                const F sx = V::mul(scale, V::set1(x.dx[t][j]));
                acc[g][t] = V::fmadd(V::cvt(s[g][t]), sx, acc[g][t]);
            }
            if constexpr (kMin) {
                const F mn = V::loadf(reinterpret_cast<const float*>(p + 4 * R));
                for (int t = 0; t < T; ++t) {
                    acc[g][t] = V::fmadd(mn, V::set1(x.min_factor[t][j]), acc[g][t]);
                }
            }
        }
    }
    store_tile<V, G, T>(acc, y, ldy, rows);
}

// Tile for the K-quants: sub-block scales in float within a super-block, then the super-block's
// activation scale.
template <class V, int G, int T, int BL, bool kBias, bool kMin, class Ints>
void tile_kquant(const PanelFormat& f, const uint8_t* const panel[kMaxTileGroups], int64_t n_sub,
                 const TileActs& x, float* y, int64_t ldy, RowSpan rows) {
    using I = typename V::I;
    using F = typename V::F;
    constexpr int R = V::kLanes;
    const size_t stride = panel_stride<V>(f);
    constexpr int kPerSuper = 256 / BL;
    F acc[G][T];
    for (int g = 0; g < G; ++g) {
        for (int t = 0; t < T; ++t) acc[g][t] = V::zerof();
    }
    for (int64_t sb = 0; sb < n_sub / kPerSuper; ++sb) {
        F sacc[G][T];
        for (int g = 0; g < G; ++g) {
            for (int t = 0; t < T; ++t) sacc[g][t] = V::zerof();
        }
        for (int64_t j = sb * kPerSuper; j < (sb + 1) * kPerSuper; ++j) {
            I s[G][T];
            dot_sub_block<V, G, T, BL, kBias, Ints>(f, panel, stride, x, j, s);
            for (int g = 0; g < G; ++g) {
                const uint8_t* p = panel[g] + size_t(j) * stride + BL * R;
                const F scale = V::loadf(reinterpret_cast<const float*>(p));
                for (int t = 0; t < T; ++t)
                    sacc[g][t] = V::fmadd(V::cvt(s[g][t]), scale, sacc[g][t]);
                if constexpr (kMin) {
                    const F mn = V::loadf(reinterpret_cast<const float*>(p + 4 * R));
                    for (int t = 0; t < T; ++t) {
                        sacc[g][t] = V::fmadd(mn, V::set1(x.min_factor[t][j]), sacc[g][t]);
                    }
                }
            }
        }
        for (int t = 0; t < T; ++t) {
            const F dx = V::set1(x.dx[t][sb]);
            for (int g = 0; g < G; ++g) acc[g][t] = V::fmadd(sacc[g][t], dx, acc[g][t]);
        }
    }
    store_tile<V, G, T>(acc, y, ldy, rows);
}

using TileFn = void (*)(const PanelFormat&, const uint8_t* const[kMaxTileGroups], int64_t,
                        const TileActs&, float*, int64_t, RowSpan);

template <class V, int G, int BL, bool kBias, bool kMin, bool kKQuant, class Ints, int T>
constexpr TileFn tile_fn() {
    if constexpr (kKQuant) {
        return tile_kquant<V, G, T, BL, kBias, kMin, Ints>;
    } else {
        return tile_blocks<V, G, T, kBias, kMin, Ints>;
    }
}

template <class V, int G, int BL, bool kBias, bool kMin, bool kKQuant, class Ints, size_t... Ts>
constexpr std::array<TileFn, sizeof...(Ts) + 1> tile_table(std::index_sequence<Ts...>) {
    return {nullptr, tile_fn<V, G, BL, kBias, kMin, kKQuant, Ints, int(Ts) + 1>()...};
}

// The micro-kernels a GEMM runs: tiles of up to kGroups panels x kTokens tokens; fn(g, n) is the
// tile of g panels (1..kGroups) and n tokens. These broadcast 4 activation bytes to the R rows
// of a vector; an ISA with a matrix instruction brings its own (tensor/arm, SMMLA).
template <class V, int BL, bool kBias, bool kMin, bool kKQuant, class Ints>
struct BroadcastTiles {
    static constexpr int kGroups = V::kTileGroups;
    static constexpr int kTokens = kKQuant ? V::kTileTokensK : V::kTileTokens;
    template <size_t... Gs>
    static constexpr std::array<std::array<TileFn, kTokens + 1>, sizeof...(Gs)> tables(
        std::index_sequence<Gs...>) {
        return {tile_table<V, int(Gs) + 1, BL, kBias, kMin, kKQuant, Ints>(
            std::make_index_sequence<kTokens>())...};
    }
    static TileFn fn(int n_groups, int n) {
        static constexpr auto all = tables(std::make_index_sequence<kGroups>());
        return all[size_t(n_groups - 1)][size_t(n)];
    }
};

// The GEMM driver. pack(r, nr, panel) fills a panel with rows [r, r + nr); with `groups` the
// tiles start at multiples of R rows (packed layouts) and rows outside [r0, r1) are computed but
// not stored.
template <class V, int BL, bool kBias, bool kMin, bool kKQuant, class Ints, class Pack,
          class Tiles = BroadcastTiles<V, BL, kBias, kMin, kKQuant, Ints>>
void gemm(const MatmulArgs& a, const PanelFormat& f, Pack pack, bool groups, Tiles = Tiles{}) {
    constexpr int R = V::kLanes;
    constexpr int G = Tiles::kGroups;
    constexpr int kTile = Tiles::kTokens;
    static_assert(G <= kMaxTileGroups && kTile <= kMaxTileTokens, "tile larger than TileActs");
    const int64_t n_sub = a.n_cols / BL;
    const int64_t n_dx = kKQuant ? a.n_cols / 256 : n_sub;
    const int64_t n_tok = a.n_tokens;

    // Per-thread buffers: the activation side arrays and G panels.
    static thread_local ScratchBuffer side_buf, panel_buf;
    const size_t side_elems = size_t(n_tok) * size_t(n_sub);
    uint8_t* sides = side_buf.get(3 * align64(side_elems * 4) + align64(size_t(n_tok * n_dx) * 4));
    ActSide side{reinterpret_cast<int32_t*>(sides),
                 reinterpret_cast<float*>(sides + align64(side_elems * 4)),
                 reinterpret_cast<float*>(sides + 2 * align64(side_elems * 4))};
    compute_act_side(f, a.act, a.act_stride, n_tok, a.n_cols, side);

    const size_t panel_bytes = size_t(n_sub) * panel_stride<V>(f);
    uint8_t* panels = panel_buf.get(G * panel_bytes);
    const uint8_t* panel[kMaxTileGroups] = {};
    for (int g = 0; g < G; ++g) panel[g] = panels + size_t(g) * panel_bytes;

    const int64_t r_begin = groups ? a.r0 - a.r0 % R : a.r0;
    const int64_t r_end = groups ? (a.r1 + R - 1) / R * R : a.r1;
    for (int64_t r = r_begin; r < r_end; r += G * R) {
        const int rows = int(r_end - r < G * R ? r_end - r : G * R);
        const int n_groups = (rows + R - 1) / R;
        for (int g = 0; g < n_groups; ++g) {
            pack(r + R * g, rows - R * g < R ? rows - R * g : R, panels + g * panel_bytes);
        }
        const RowSpan span{int(a.r0 > r ? a.r0 - r : 0), int(a.r1 - r < G * R ? a.r1 - r : G * R)};
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
            Tiles::fn(n_groups, n)(f, panel, n_sub, x, a.y + t0 * a.ldy + r, a.ldy, span);
        }
    }
}

// The GGUF layout: rows decoded one at a time, then transposed into the panel.
template <class V, int BL, bool kBias, bool kMin, bool kKQuant, class Ints>
void gemm_rows(const MatmulArgs& a, const PanelFormat& f, RowDecodeFn decode) {
    constexpr int R = V::kLanes;
    static thread_local ScratchBuffer row_buf;
    const int64_t n_sub = a.n_cols / BL;
    RowBuffers rb;
    rb.codes_stride = int64_t(align64(size_t(a.n_cols)));
    rb.sub_stride = (n_sub + R - 1) / R * R;
    uint8_t* rows_mem =
        row_buf.get(R * size_t(rb.codes_stride) + 2 * R * size_t(rb.sub_stride) * 4);
    rb.codes = rows_mem;
    rb.scale = reinterpret_cast<float*>(rows_mem + R * rb.codes_stride);
    rb.min = rb.scale + R * rb.sub_stride;
    if (!f.has_min) std::memset(rb.min, 0, R * size_t(rb.sub_stride) * 4);
    gemm<V, BL, kBias, kMin, kKQuant, Ints>(
        a, f,
        [&](int64_t r, int nr, uint8_t* panel) { pack_panel<V>(a, f, decode, r, nr, panel, rb); },
        false);
}

// ---- Per type -------------------------------------------------------------------------------

// The panel formats: {bl, offset, has_min, k_quant, activation format}.
constexpr PanelFormat kPanelQ4_0{32, 8, false, false, kActQ8_0};
constexpr PanelFormat kPanelQ4_1{32, 0, true, false, kActQ8_1};
constexpr PanelFormat kPanelQ5_0{32, 16, false, false, kActQ8_0};
constexpr PanelFormat kPanelQ5_1{32, 0, true, false, kActQ8_1};
constexpr PanelFormat kPanelQ8_0{32, 128, false, false, kActQ8_0};
constexpr PanelFormat kPanelQ2K{16, 0, true, true, kActQ8_0};
constexpr PanelFormat kPanelQ3K{16, 4, false, true, kActQ8_0};
constexpr PanelFormat kPanelQ4K{32, 0, true, true, kActQ8_0};
constexpr PanelFormat kPanelQ5K{32, 0, true, true, kActQ8_0};
constexpr PanelFormat kPanelQ6K{16, 32, false, true, kActQ8_0};
// The table types' codes are value + offset (tensor/x86/gemm.h): IQ4 -127..113 + 128, MXFP4's
// doubled E2M1 -12..12 + 16.
constexpr PanelFormat kPanelIQ4_NL{32, 128, false, false, kActQ8_0};
constexpr PanelFormat kPanelIQ4_XS{32, 128, false, true, kActQ8_0};
constexpr PanelFormat kPanelMXFP4{32, 16, false, false, kActQ8_0};

// A packed group g of R rows into a panel (tensor/simd/packed.h).
using GroupPanelFn = void (*)(const MatmulArgs& a, int64_t group, uint8_t* panel);

// The packed layouts' prefill: their groups are the panels (tensor/simd/packed.h, PackedPanels).
template <class V>
struct PackedGemm {
    // Q8_0 panels hold q + 128: sets that multiply unsigned by signed bytes take the bias
    // -128 * sum(x) (kSignedBias), the others flip the codes back and multiply signed bytes.
    using Q8Ints = TileInts<255, V::kSignedBias == 0>;
    static constexpr bool kQ8Bias = V::kSignedBias != 0;

    template <int BL, bool kBias, bool kMin, bool kKQuant, class Ints>
    static void groups(const MatmulArgs& a, const PanelFormat& f, GroupPanelFn pack) {
        gemm<V, BL, kBias, kMin, kKQuant, Ints>(
            a, f, [&](int64_t r, int, uint8_t* panel) { pack(a, r / V::kLanes, panel); }, true);
    }
    static void q4_0_groups(const MatmulArgs& a, GroupPanelFn pack) {
        groups<32, true, false, false, TileInts<15, false>>(a, kPanelQ4_0, pack);
    }
    static void q8_0_groups(const MatmulArgs& a, GroupPanelFn pack) {
        groups<32, kQ8Bias, false, false, Q8Ints>(a, kPanelQ8_0, pack);
    }
    static void q4_k_groups(const MatmulArgs& a, GroupPanelFn pack) {
        groups<32, false, true, true, TileInts<15, false>>(a, kPanelQ4K, pack);
    }
    static void q5_k_groups(const MatmulArgs& a, GroupPanelFn pack) {
        groups<32, false, true, true, TileInts<31, false>>(a, kPanelQ5K, pack);
    }
    static void q6_k_groups(const MatmulArgs& a, GroupPanelFn pack) {
        groups<16, true, false, true, TileInts<63, false>>(a, kPanelQ6K, pack);
    }
};

}  // namespace
}  // namespace mw::simd
