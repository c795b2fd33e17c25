// The matrix kernels of the float weight types (F32, F16, BF16), written once over a vector type V
// (tensor/simd/common.h): for a few tokens, tiles of rows x tokens of dot products along the row;
// from kFloatGemmMinTokens tokens on, each group of 2 x V::kLanes rows converted once to floats
// in a panel interleaved per column, then an outer-product micro-kernel (one FMA per kLanes rows
// and token per column). Activations are floats: F32 rows are used in place, F16 / BF16 rows
// converted once per call. Sums add in another order than the scalar reference.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "tensor/simd/common.h"

namespace mw::simd {
namespace {

// From this many tokens on, the float kernels convert the rows once into panels.
constexpr int64_t kFloatGemmMinTokens = 8;

// kLanes weights of a row from column k as floats; load_n: the first n (< kLanes), zeros after.
template <class V>
struct LoadF32 {
    static constexpr int kBytes = 4;
    static typename V::F load(const uint8_t* row, int64_t k) {
        return V::loadf(reinterpret_cast<const float*>(row) + k);
    }
    static typename V::F load_n(const uint8_t* row, int64_t k, int n) {
        return V::loadf_n(reinterpret_cast<const float*>(row) + k, n);
    }
};
template <class V>
struct LoadF16 {
    static constexpr int kBytes = 2;
    static typename V::F load(const uint8_t* row, int64_t k) { return V::load_halfs(row + 2 * k); }
    static typename V::F load_n(const uint8_t* row, int64_t k, int n) {
        alignas(64) float f[V::kLanes] = {};
        for (int i = 0; i < n; ++i) f[i] = half(load_u16(row + 2 * (k + i)));
        return V::loadf(f);
    }
};
template <class V>
struct LoadBF16 {
    static constexpr int kBytes = 2;
    static typename V::F load(const uint8_t* row, int64_t k) {
        return V::load_bf16(reinterpret_cast<const uint16_t*>(row + 2 * k));
    }
    static typename V::F load_n(const uint8_t* row, int64_t k, int n) {
        alignas(64) uint32_t bits[V::kLanes] = {};
        for (int i = 0; i < n; ++i) bits[i] = uint32_t(load_u16(row + 2 * (k + i))) << 16;
        return V::loadf(reinterpret_cast<const float*>(bits));
    }
};

template <class V, class Load>
struct FloatMatmul {
    using F = typename V::F;
    static constexpr int L = V::kLanes;
    // Tokens per panel tile: 2 x T accumulators, 2 weight vectors and a broadcast in registers.
    static constexpr int kPanelTokens = L >= 16 ? 6 : 4;

    // R rows x T tokens; x[t] are the tokens' activations as floats.
    template <int R, int T>
    static void tile(const MatmulArgs& a, int64_t r, const float* const* x, int64_t t0) {
        F acc[R][T];
        for (int i = 0; i < R; ++i) {
            for (int t = 0; t < T; ++t) acc[i][t] = V::zerof();
        }
        const uint8_t* rows[R];
        for (int i = 0; i < R; ++i) rows[i] = a.w + size_t(r + i) * a.w_row_bytes;
        const int64_t whole = a.n_cols / L * L;
        for (int64_t k = 0; k < whole; k += L) {
            F xv[T];
            for (int t = 0; t < T; ++t) xv[t] = V::loadf(x[t] + k);
            for (int i = 0; i < R; ++i) {
                V::prefetch(rows[i] + (k + 512) * Load::kBytes);
                const F w = Load::load(rows[i], k);
                for (int t = 0; t < T; ++t) acc[i][t] = V::fmadd(w, xv[t], acc[i][t]);
            }
        }
        if (whole < a.n_cols) {
            const int n = int(a.n_cols - whole);
            F xv[T];
            for (int t = 0; t < T; ++t) xv[t] = V::loadf_n(x[t] + whole, n);
            for (int i = 0; i < R; ++i) {
                const F w = Load::load_n(rows[i], whole, n);
                for (int t = 0; t < T; ++t) acc[i][t] = V::fmadd(w, xv[t], acc[i][t]);
            }
        }
        for (int i = 0; i < R; ++i) {
            for (int t = 0; t < T; ++t) a.y[(t0 + t) * a.ldy + r + i] = V::reduce(acc[i][t]);
        }
    }

    template <int T>
    static void rows(const MatmulArgs& a, const float* const* x, int64_t t0) {
        constexpr int R = 4;
        int64_t r = a.r0;
        for (; r + R <= a.r1; r += R) tile<R, T>(a, r, x, t0);
        for (; r < a.r1; ++r) tile<1, T>(a, r, x, t0);
    }

    // One row (n floats) as floats.
    static void convert_row(const uint8_t* src, int64_t n, float* dst) {
        const int64_t whole = n / L * L;
        for (int64_t k = 0; k < whole; k += L) V::storef(dst + k, Load::load(src, k));
        if (whole < n) {
            V::storef_n(dst + whole, Load::load_n(src, whole, int(n - whole)), int(n - whole));
        }
    }

    // L rows interleaved per column: panel[L * k + i] = row i, column k; missing rows are zero.
    static void pack_panel(const MatmulArgs& a, int64_t r, int nr, float* row_buf, float* panel) {
        const int64_t n = a.n_cols;
        for (int i = 0; i < L; ++i) {
            if (i < nr) {
                convert_row(a.w + size_t(r + i) * a.w_row_bytes, n, row_buf);
                for (int64_t k = 0; k < n; ++k) panel[L * k + i] = row_buf[k];
            } else {
                for (int64_t k = 0; k < n; ++k) panel[L * k + i] = 0.0f;
            }
        }
    }

    // G x L rows times T tokens.
    template <int G, int T>
    static void panel_tile(const float* const panel[2], int64_t n, const float* const* x, float* y,
                           int64_t ldy, int rows_valid) {
        F acc[G][T];
        for (int g = 0; g < G; ++g) {
            for (int t = 0; t < T; ++t) acc[g][t] = V::zerof();
        }
        for (int64_t k = 0; k < n; ++k) {
            F w[G];
            for (int g = 0; g < G; ++g) w[g] = V::loadf(panel[g] + L * k);
            for (int t = 0; t < T; ++t) {
                const F xb = V::set1(x[t][k]);
                for (int g = 0; g < G; ++g) acc[g][t] = V::fmadd(w[g], xb, acc[g][t]);
            }
        }
        for (int g = 0; g < G; ++g) {
            const int left = rows_valid - L * g;
            const int hi = left < 0 ? 0 : (left > L ? L : left);
            for (int t = 0; t < T; ++t) V::store_rows(y + t * ldy + L * g, acc[g][t], 0, hi);
        }
    }

    using PanelTileFn = void (*)(const float* const[2], int64_t, const float* const*, float*,
                                 int64_t, int);
    template <int G, size_t... Ts>
    static constexpr std::array<PanelTileFn, sizeof...(Ts) + 1> panel_tiles(
        std::index_sequence<Ts...>) {
        return {nullptr, panel_tile<G, int(Ts) + 1>...};
    }

    static void gemm(const MatmulArgs& a, const float* const* x_rows) {
        static constexpr auto tiles1 = panel_tiles<1>(std::make_index_sequence<kPanelTokens>());
        static constexpr auto tiles2 = panel_tiles<2>(std::make_index_sequence<kPanelTokens>());
        static thread_local ScratchBuffer panel_buf;
        const size_t panel_floats = size_t(a.n_cols) * L;
        auto* base = reinterpret_cast<float*>(
            panel_buf.get((2 * panel_floats + align64(size_t(a.n_cols) * 4) / 4) * 4));
        const float* panel[2] = {base, base + panel_floats};
        float* row_buf = base + 2 * panel_floats;
        for (int64_t r = a.r0; r < a.r1; r += 2 * L) {
            const int rows = int(a.r1 - r < 2 * L ? a.r1 - r : 2 * L);
            const int groups = rows > L ? 2 : 1;
            for (int g = 0; g < groups; ++g) {
                const int nr = rows - L * g < L ? rows - L * g : L;
                pack_panel(a, r + L * g, nr, row_buf, base + g * panel_floats);
            }
            for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kPanelTokens) {
                const int n = int(a.n_tokens - t0 < kPanelTokens ? a.n_tokens - t0 : kPanelTokens);
                const PanelTileFn fn = groups == 2 ? tiles2[size_t(n)] : tiles1[size_t(n)];
                fn(panel, a.n_cols, x_rows + t0, a.y + t0 * a.ldy + r, a.ldy, rows);
            }
        }
    }

    static void matmul(const MatmulArgs& a, bool act_is_f32) {
        static thread_local ScratchBuffer buffer;
        const size_t row_floats = align64(size_t(a.n_cols) * 4) / 4;
        float* converted =
            act_is_f32 ? nullptr
                       : reinterpret_cast<float*>(buffer.get(row_floats * 4 * size_t(a.n_tokens)));
        auto activation = [&](int64_t t) -> const float* {
            const uint8_t* src = a.act + size_t(t) * a.act_stride;
            if (act_is_f32) return reinterpret_cast<const float*>(src);
            float* dst = converted + row_floats * size_t(t);
            convert_row(src, a.n_cols, dst);
            return dst;
        };
        if (a.n_tokens >= kFloatGemmMinTokens) {
            static thread_local std::vector<const float*> x_rows;
            x_rows.resize(size_t(a.n_tokens));
            for (int64_t t = 0; t < a.n_tokens; ++t) x_rows[size_t(t)] = activation(t);
            gemm(a, x_rows.data());
            return;
        }
        constexpr int kTile = 4;
        for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kTile) {
            const int n = int(a.n_tokens - t0 < kTile ? a.n_tokens - t0 : kTile);
            const float* x[kTile];
            for (int t = 0; t < n; ++t) x[t] = activation(t0 + t);
            switch (n) {
                case 1:
                    rows<1>(a, x, t0);
                    break;
                case 2:
                    rows<2>(a, x, t0);
                    break;
                case 3:
                    rows<3>(a, x, t0);
                    break;
                default:
                    rows<4>(a, x, t0);
                    break;
            }
        }
    }
};

}  // namespace
}  // namespace mw::simd
