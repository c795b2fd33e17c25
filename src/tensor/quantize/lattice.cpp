// File quantizers of the lattice i-quants IQ3_S, IQ3_XXS, IQ2_XXS, IQ2_XS and IQ2_S.
//
// Each group of 8 (IQ3: 4) magnitudes |x| is one point of the type's grid (tensor/iq_grids.h)
// times the sub-block scale; the signs are stored apart (IQ3_S, IQ2_S: one bit per value; the XXS
// types and IQ2_XS: 7 bits per 8 values with an even count of minus signs, so where the count is
// odd the value whose sign costs least, min w x^2, is encoded with the wrong sign: its magnitude
// target becomes -|x| and the search gives it the smallest level).
//
// For a trial scale each coordinate is rounded to its nearest level; when that lattice point is
// not on the grid, the grid points nearest to it (precomputed per lattice point: the two closest
// distance shells) are tried and the one of least weighted error kept. A sub-block tries inverse
// scales from 18 % below to 18 % above the one that maps its largest magnitude onto the top level,
// refits the scale by weighted least squares on the points found, and rounds again at the refit
// scale. The super-block scale then holds the largest sub-block scale as 2 * 15 + 1 steps; each
// sub-block takes the stored step count (and its neighbours) that fits best with its points
// rounded again at that scale. The approach is ggml's (quantize_row_iq2_xxs_impl and relatives);
// the code and the neighbour rule are memwall's own.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "tensor/iq_grids.h"
#include "tensor/quantize/lattice.h"
#include "tensor/quantize/quantize.h"
#include "tensor/quants.h"

namespace mw {
namespace {

// A grid as a code book of points (see the file comment).
struct LatticeCoder {
    int dim = 0, n_levels = 0, n_points = 0;
    float level[8] = {};               // coordinate values, ascending
    std::vector<uint8_t> coord;        // point p, coordinate j: its level index at p * dim + j
    std::vector<int32_t> on_grid;      // lattice key (level indexes as digits) -> point or -1
    std::vector<uint32_t> near_begin;  // key -> candidates [near_begin[k], near_begin[k + 1])
    std::vector<uint16_t> near;
};

template <class Point>
LatticeCoder make_coder(const Point* points, int n_points) {
    constexpr int kDim = int(sizeof(Point));
    LatticeCoder c;
    c.dim = kDim;
    c.n_points = n_points;
    std::vector<int> values;
    for (int p = 0; p < n_points; ++p) {
        for (int j = 0; j < kDim; ++j) values.push_back(int((points[p] >> (8 * j)) & 0xFF));
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    c.n_levels = int(values.size());
    for (int l = 0; l < c.n_levels; ++l) c.level[l] = float(values[size_t(l)]);
    int n_keys = 1;
    for (int j = 0; j < kDim; ++j) n_keys *= c.n_levels;
    c.coord.resize(size_t(n_points * kDim));
    c.on_grid.assign(size_t(n_keys), -1);
    for (int p = 0; p < n_points; ++p) {
        int key = 0;
        for (int j = kDim - 1; j >= 0; --j) {
            const int v = int((points[p] >> (8 * j)) & 0xFF);
            const int l = int(std::lower_bound(values.begin(), values.end(), v) - values.begin());
            c.coord[size_t(p * kDim + j)] = uint8_t(l);
            key = key * c.n_levels + l;
        }
        c.on_grid[size_t(key)] = p;
    }
    // Off-grid lattice points: the grid points within the two smallest distances.
    c.near_begin.assign(size_t(n_keys) + 1, 0);
    std::vector<float> dist(static_cast<size_t>(n_points), 0.0f);
    for (int key = 0; key < n_keys; ++key) {
        c.near_begin[size_t(key)] = uint32_t(c.near.size());
        if (c.on_grid[size_t(key)] >= 0) continue;
        float at[8];
        for (int j = 0, k = key; j < kDim; ++j, k /= c.n_levels) at[j] = c.level[k % c.n_levels];
        float d1 = INFINITY, d2 = INFINITY;
        for (int p = 0; p < n_points; ++p) {
            float d = 0;
            for (int j = 0; j < kDim; ++j) {
                const float e = at[j] - c.level[c.coord[size_t(p * kDim + j)]];
                d += e * e;
            }
            dist[size_t(p)] = d;
            if (d < d1) {
                d2 = d1;
                d1 = d;
            } else if (d > d1 && d < d2) {
                d2 = d;
            }
        }
        for (int p = 0; p < n_points; ++p) {
            if (dist[size_t(p)] <= d2) c.near.push_back(uint16_t(p));
        }
    }
    c.near_begin[size_t(n_keys)] = uint32_t(c.near.size());
    return c;
}

enum class Coder { iq2xxs, iq2xs, iq2s, iq3xxs, iq3s };

const LatticeCoder& coder(Coder which) {
    static const LatticeCoder coders[] = {
        make_coder(iq_grids().iq2xxs, 256), make_coder(iq_grids().iq2xs, 512),
        make_coder(iq_grids().iq2s, 1024),  make_coder(iq_grids().iq3xxs, 256),
        make_coder(iq_grids().iq3s, 512),
    };
    return coders[int(which)];
}

// The grid point for magnitudes xa (weights w) at scale s = 1 / id.
int round_group(const LatticeCoder& c, const float* xa, const float* w, float s, float id) {
    int key = 0;
    for (int j = c.dim - 1; j >= 0; --j) {
        const float t = id * xa[j];
        int l = 0;
        while (l + 1 < c.n_levels && std::fabs(c.level[l + 1] - t) < std::fabs(c.level[l] - t)) ++l;
        key = key * c.n_levels + l;
    }
    if (c.on_grid[size_t(key)] >= 0) return c.on_grid[size_t(key)];
    int best = 0;
    float best_e = INFINITY;
    for (uint32_t k = c.near_begin[size_t(key)]; k < c.near_begin[size_t(key) + 1]; ++k) {
        const int p = c.near[k];
        float e = 0;
        for (int j = 0; j < c.dim; ++j) {
            const float r = xa[j] - s * c.level[c.coord[size_t(p * c.dim + j)]];
            e += w[j] * r * r;
        }
        if (e < best_e) {
            best_e = e;
            best = p;
        }
    }
    return best;
}

// Points of n magnitudes at scale s; returns sum w xa q and sum w q^2 through the pointers.
void round_points(const LatticeCoder& c, const float* xa, const float* w, int n, float s, int* pts,
                  double* sumqx, double* sumq2) {
    const float id = s > 0 ? 1.0f / s : 0.0f;
    double qx = 0, q2 = 0;
    for (int g = 0; g < n / c.dim; ++g) {
        const int p = round_group(c, xa + g * c.dim, w + g * c.dim, s, id);
        pts[g] = p;
        for (int j = 0; j < c.dim; ++j) {
            const double q = c.level[c.coord[size_t(p * c.dim + j)]];
            qx += w[g * c.dim + j] * xa[g * c.dim + j] * q;
            q2 += w[g * c.dim + j] * q * q;
        }
    }
    *sumqx = qx;
    *sumq2 = q2;
}

// The best scale (>= 0) and points of a sub-block of n magnitudes.
float fit_subblock(const LatticeCoder& c, const float* xa, const float* w, int n, int* pts) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, xa[i]);
    int trial[8];
    double qx, q2;
    if (max <= 0) {
        round_points(c, xa, w, n, 0.0f, pts, &qx, &q2);
        return 0.0f;
    }
    const float top = c.level[c.n_levels - 1];
    double best_gain = -1;
    float best_s = 0;
    auto consider = [&](float s) {
        round_points(c, xa, w, n, s, trial, &qx, &q2);
        if (q2 <= 0 || qx <= 0) return;
        if (qx * qx / q2 > best_gain) {
            best_gain = qx * qx / q2;
            best_s = float(qx / q2);
            std::memcpy(pts, trial, sizeof(int) * size_t(n / c.dim));
        }
    };
    for (int t = -12; t <= 12; ++t) consider(max / (top * (1.0f + 0.015f * float(t))));
    for (int iter = 0; iter < 2 && best_s > 0; ++iter) consider(best_s);
    return best_s;
}

// How a type stores its scales and signs.
struct LatticeSpec {
    Coder coder;
    int sub;          // values per sub-block scale: 32 or 16
    bool free_signs;  // one bit per value; else 7 bits per 8 values, the count of minus even
    float f;          // sub-block scale = d * f * (2 m + 1), m < 16
};

// One super-block as the packers need it.
struct Encoded {
    int pts[64];        // per group of c.dim values
    uint8_t signs[32];  // per 8 values, bit i: value i negative
    int m[16];          // per sub-block
    uint16_t d;
};

void encode(const LatticeSpec& spec, const float* x, const float* w, Encoded* out) {
    const LatticeCoder& c = coder(spec.coder);
    float xa[kQK_K];
    for (int g = 0; g < kQK_K / 8; ++g) {
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
            xa[8 * g + i] = std::fabs(x[8 * g + i]);
            if (x[8 * g + i] < 0) s |= uint8_t(1u << i);
        }
        if (!spec.free_signs && (__builtin_popcount(s) & 1)) {
            int k = 0;
            for (int i = 1; i < 8; ++i) {
                const float* v = x + 8 * g;
                if (w[8 * g + i] * v[i] * v[i] < w[8 * g + k] * v[k] * v[k]) k = i;
            }
            s ^= uint8_t(1u << k);
            xa[8 * g + k] = -xa[8 * g + k];
        }
        out->signs[g] = s;
    }
    const int n_sub = kQK_K / spec.sub, per_sub = spec.sub / c.dim;
    float scale[16], max_s = 0;
    for (int k = 0; k < n_sub; ++k) {
        scale[k] =
            fit_subblock(c, xa + k * spec.sub, w + k * spec.sub, spec.sub, out->pts + k * per_sub);
        max_s = std::max(max_s, scale[k]);
    }
    std::fill(out->m, out->m + 16, 0);
    out->d = f32_to_fp16(max_s / (31 * spec.f));
    const float step = fp16_to_f32(out->d) * spec.f;
    if (!(step > 0) || !std::isfinite(step)) {
        out->d = 0;
        return;
    }
    // Each sub-block: the stored scale nearest its fit and the two beside it, points rounded
    // again at each; the least weighted error wins (sum w (x - s q)^2 less its constant part).
    int trial[8];
    for (int k = 0; k < n_sub; ++k) {
        const float* xk = xa + k * spec.sub;
        const float* wk = w + k * spec.sub;
        const int m0 = std::clamp(int(std::lround((scale[k] / step - 1) / 2)), 0, 15);
        double best = INFINITY;
        for (int m = std::max(0, m0 - 1); m <= std::min(15, m0 + 1); ++m) {
            const float s = step * float(2 * m + 1);
            double qx, q2;
            round_points(c, xk, wk, spec.sub, s, trial, &qx, &q2);
            const double e = double(s) * s * q2 - 2.0 * s * qx;
            if (e < best) {
                best = e;
                out->m[k] = m;
                std::memcpy(out->pts + k * per_sub, trial, sizeof(int) * size_t(per_sub));
            }
        }
    }
}

// The sign index of an even-parity sign byte: its low 7 bits (tensor/iq_grids.h).
inline uint32_t sign7(uint8_t s) {
    return s & 127u;
}

template <class Block, void (*kPack)(const Encoded&, Block&)>
void quantize_lattice(const LatticeSpec& spec, const float* src, void* dst, int64_t n,
                      const float* importance) {
    const float mean = qdetail::mean_importance(importance, n);
    auto* blocks = static_cast<Block*>(dst);
    float x[kQK_K], w[kQK_K];
    Encoded e;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        qdetail::finite_copy(src + i * kQK_K, kQK_K, x);
        qdetail::block_weights(importance ? importance + i * kQK_K : nullptr, mean, kQK_K, w);
        encode(spec, x, w, &e);
        std::memset(&blocks[i], 0, sizeof(Block));
        kPack(e, blocks[i]);
    }
}

void pack_iq3_s(const Encoded& e, BlockIQ3_S& b) {
    b.d = e.d;
    for (int j = 0; j < 8; ++j) {
        for (int k = 0; k < 8; ++k) {
            const int p = e.pts[8 * j + k];
            b.qs[8 * j + k] = uint8_t(p);
            b.qh[j] |= uint8_t(((p >> 8) & 1) << k);
        }
        for (int l = 0; l < 4; ++l) b.signs[4 * j + l] = e.signs[4 * j + l];
        b.scales[j / 2] |= uint8_t(e.m[j] << (4 * (j % 2)));
    }
}

void pack_iq3_xxs(const Encoded& e, BlockIQ3_XXS& b) {
    b.d = e.d;
    for (int j = 0; j < 8; ++j) {
        uint32_t aux = uint32_t(e.m[j]) << 28;
        for (int l = 0; l < 4; ++l) aux |= sign7(e.signs[4 * j + l]) << (7 * l);
        for (int k = 0; k < 8; ++k) b.qs[8 * j + k] = uint8_t(e.pts[8 * j + k]);
        std::memcpy(b.qs + 64 + 4 * j, &aux, sizeof aux);
    }
}

void pack_iq2_xxs(const Encoded& e, BlockIQ2_XXS& b) {
    b.d = e.d;
    auto* q8 = reinterpret_cast<uint8_t*>(b.qs);
    for (int j = 0; j < 8; ++j) {
        uint32_t aux = uint32_t(e.m[j]) << 28;
        for (int l = 0; l < 4; ++l) {
            q8[8 * j + l] = uint8_t(e.pts[4 * j + l]);
            aux |= sign7(e.signs[4 * j + l]) << (7 * l);
        }
        std::memcpy(q8 + 8 * j + 4, &aux, sizeof aux);
    }
}

void pack_iq2_xs(const Encoded& e, BlockIQ2_XS& b) {
    b.d = e.d;
    for (int j = 0; j < 8; ++j) {
        for (int l = 0; l < 4; ++l) {
            b.qs[4 * j + l] = uint16_t(e.pts[4 * j + l] | (sign7(e.signs[4 * j + l]) << 9));
        }
        b.scales[j] = uint8_t(e.m[2 * j] | (e.m[2 * j + 1] << 4));
    }
}

void pack_iq2_s(const Encoded& e, BlockIQ2_S& b) {
    b.d = e.d;
    for (int j = 0; j < 8; ++j) {
        for (int l = 0; l < 4; ++l) {
            const int p = e.pts[4 * j + l];
            b.qs[4 * j + l] = uint8_t(p);
            b.qh[j] |= uint8_t(((p >> 8) & 3) << (2 * l));
            b.qs[32 + 4 * j + l] = e.signs[4 * j + l];
        }
        b.scales[j] = uint8_t(e.m[2 * j] | (e.m[2 * j + 1] << 4));
    }
}

// ---- IQ1_S, IQ1_M: values S (g + delta), g a grid point of -1 / 0 / 1, delta = +-1/8 ----------
//
// The same coder on the points shifted to levels 0, 1, 2 (v = g + 1): x - S (g + delta) is
// (x + S (1 - delta)) - S v, so each trial rounds the shifted values. No signs: a sub-block tries
// 31 scales from 0.3 to 1.2 times its largest |x| and both shifts (IQ1_S: one per 32 values;
// IQ1_M: per 8, chosen per group), refits the scale by least squares, rounds again there; the
// super-block scale holds the largest as 15 steps (3-bit scales 2 s + 1).

const LatticeCoder& iq1_coder() {
    static const LatticeCoder c = [] {
        std::vector<uint64_t> shifted(2048);
        for (int p = 0; p < 2048; ++p) {
            uint64_t v = 0;
            for (int j = 0; j < 8; ++j) {
                const int g = int8_t(uint8_t(iq_grids().iq1s[p] >> (8 * j)));
                v |= uint64_t(g + 1) << (8 * j);
            }
            shifted[size_t(p)] = v;
        }
        return make_coder(shifted.data(), 2048);
    }();
    return c;
}

constexpr float kIq1Delta = 0.125f;

// One group of 8 at scale S and shift delta: its point, and the weighted error.
double iq1_group(const LatticeCoder& c, const float* x, const float* w, float S, float delta,
                 int* point) {
    float xs[8];
    for (int j = 0; j < 8; ++j) xs[j] = x[j] + S * (1 - delta);
    const int p = round_group(c, xs, w, S, S > 0 ? 1.0f / S : 0.0f);
    double e = 0;
    for (int j = 0; j < 8; ++j) {
        const float r = x[j] - S * (c.level[c.coord[size_t(p * 8 + j)]] - 1 + delta);
        e += double(w[j]) * r * r;
    }
    *point = p;
    return e;
}

// n values (groups of 8) at scale S: the points and shift signs (per group, or one for all when
// !per_group) of least error, which is returned.
double iq1_round(const float* x, const float* w, int n, float S, bool per_group, int* pts,
                 bool* neg) {
    const LatticeCoder& c = iq1_coder();
    double total[2] = {0, 0}, chosen = 0;
    int p[2][4];
    for (int g = 0; g < n / 8; ++g) {
        double e[2];
        for (int k = 0; k < 2; ++k) {
            e[k] = iq1_group(c, x + 8 * g, w + 8 * g, S, k ? -kIq1Delta : kIq1Delta, &p[k][g]);
            total[k] += e[k];
        }
        if (per_group) {
            neg[g] = e[1] < e[0];
            pts[g] = p[neg[g]][g];
            chosen += e[neg[g]];
        }
    }
    if (per_group) return chosen;
    const int k = total[1] < total[0];
    for (int g = 0; g < n / 8; ++g) {
        pts[g] = p[k][g];
        neg[g] = k;
    }
    return total[k];
}

// The least-squares scale of x on the points and shifts found (0 when there is none).
float iq1_refit(const float* x, const float* w, int n, const int* pts, const bool* neg) {
    const LatticeCoder& c = iq1_coder();
    double qx = 0, q2 = 0;
    for (int i = 0; i < n; ++i) {
        const int g = i / 8;
        const double q =
            c.level[c.coord[size_t(pts[g] * 8 + i % 8)]] - 1 + (neg[g] ? -kIq1Delta : kIq1Delta);
        qx += w[i] * x[i] * q;
        q2 += w[i] * q * q;
    }
    return q2 > 0 && qx > 0 ? float(qx / q2) : 0.0f;
}

float iq1_fit(const float* x, const float* w, int n, bool per_group, int* pts, bool* neg) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, std::fabs(x[i]));
    int tp[4];
    bool tn[4];
    iq1_round(x, w, n, 0.0f, per_group, pts, neg);
    if (max <= 0) return 0.0f;
    double best = INFINITY;
    float best_s = 0;
    auto consider = [&](float S) {
        iq1_round(x, w, n, S, per_group, tp, tn);
        const float refit = iq1_refit(x, w, n, tp, tn);
        if (refit <= 0) return;
        // The error at the refit scale with the same points (no worse than at S).
        const LatticeCoder& c = iq1_coder();
        double e = 0;
        for (int i = 0; i < n; ++i) {
            const int g = i / 8;
            const float r = x[i] - refit * (c.level[c.coord[size_t(tp[g] * 8 + i % 8)]] - 1 +
                                            (tn[g] ? -kIq1Delta : kIq1Delta));
            e += double(w[i]) * r * r;
        }
        if (e < best) {
            best = e;
            best_s = refit;
            std::memcpy(pts, tp, sizeof(int) * size_t(n / 8));
            std::memcpy(neg, tn, sizeof(bool) * size_t(n / 8));
        }
    };
    for (int t = 0; t <= 30; ++t) consider(max * (0.3f + 0.03f * float(t)));
    for (int iter = 0; iter < 2 && best_s > 0; ++iter) consider(best_s);
    return best_s;
}

// One IQ1 super-block: sub-blocks of `sub` values (IQ1_S 32, IQ1_M 16).
struct Iq1Encoded {
    int pts[32];
    bool neg[32];
    int m[16];
    uint16_t d;
};

void encode_iq1(const float* x, const float* w, int sub, bool per_group, Iq1Encoded* out) {
    const int n_sub = kQK_K / sub, per_sub = sub / 8;
    float scale[16], max_s = 0;
    for (int k = 0; k < n_sub; ++k) {
        scale[k] = iq1_fit(x + k * sub, w + k * sub, sub, per_group, out->pts + k * per_sub,
                           out->neg + k * per_sub);
        max_s = std::max(max_s, scale[k]);
    }
    std::fill(out->m, out->m + 16, 0);
    out->d = f32_to_fp16(max_s / 15);
    const float step = fp16_to_f32(out->d);
    if (!(step > 0) || !std::isfinite(step)) {
        out->d = 0;
        return;
    }
    int tp[4];
    bool tn[4];
    for (int k = 0; k < n_sub; ++k) {
        const int m0 = std::clamp(int(std::lround((scale[k] / step - 1) / 2)), 0, 7);
        double best = INFINITY;
        for (int m = std::max(0, m0 - 1); m <= std::min(7, m0 + 1); ++m) {
            const double e = iq1_round(x + k * sub, w + k * sub, sub, step * float(2 * m + 1),
                                       per_group, tp, tn);
            if (e < best) {
                best = e;
                out->m[k] = m;
                std::memcpy(out->pts + k * per_sub, tp, sizeof(int) * size_t(per_sub));
                std::memcpy(out->neg + k * per_sub, tn, sizeof(bool) * size_t(per_sub));
            }
        }
    }
}

template <class Block, void (*kPack)(const Iq1Encoded&, Block&)>
void quantize_iq1(int sub, bool per_group, const float* src, void* dst, int64_t n,
                  const float* importance) {
    const float mean = qdetail::mean_importance(importance, n);
    auto* blocks = static_cast<Block*>(dst);
    float x[kQK_K], w[kQK_K];
    Iq1Encoded e;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        qdetail::finite_copy(src + i * kQK_K, kQK_K, x);
        qdetail::block_weights(importance ? importance + i * kQK_K : nullptr, mean, kQK_K, w);
        encode_iq1(x, w, sub, per_group, &e);
        std::memset(&blocks[i], 0, sizeof(Block));
        kPack(e, blocks[i]);
    }
}

void pack_iq1_s(const Iq1Encoded& e, BlockIQ1_S& b) {
    b.d = e.d;
    for (int j = 0; j < 8; ++j) {
        uint32_t qh = uint32_t(e.m[j]) << 12 | (e.neg[4 * j] ? 0x8000u : 0u);
        for (int l = 0; l < 4; ++l) {
            b.qs[4 * j + l] = uint8_t(e.pts[4 * j + l]);
            qh |= uint32_t((e.pts[4 * j + l] >> 8) & 7) << (3 * l);
        }
        b.qh[j] = uint16_t(qh);
    }
}

void pack_iq1_m(const Iq1Encoded& e, BlockIQ1_M& b) {
    uint16_t sc[4] = {0, 0, 0, 0};
    for (int j = 0; j < 8; ++j) {
        for (int l = 0; l < 4; ++l) {
            const int p = e.pts[4 * j + l];
            b.qs[4 * j + l] = uint8_t(p);
            const int nibble = ((p >> 8) & 7) | (e.neg[4 * j + l] ? 8 : 0);
            b.qh[2 * j + l / 2] |= uint8_t(nibble << (4 * (l % 2)));
        }
        for (int h = 0; h < 2; ++h) sc[j / 2] |= uint16_t(e.m[2 * j + h] << (6 * (j % 2) + 3 * h));
    }
    // The fp16 d in the top nibbles of the four words, least significant first.
    for (int k = 0; k < 4; ++k) sc[k] |= uint16_t(((e.d >> (4 * k)) & 0xF) << 12);
    std::memcpy(b.scales, sc, sizeof sc);
}

}  // namespace

void quantize_iq3_s(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<BlockIQ3_S, pack_iq3_s>({Coder::iq3s, 32, true, 1.0f}, src, dst, n,
                                             importance);
}
void quantize_iq3_xxs(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<BlockIQ3_XXS, pack_iq3_xxs>({Coder::iq3xxs, 32, false, 0.25f}, src, dst, n,
                                                 importance);
}
void quantize_iq2_xxs(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<BlockIQ2_XXS, pack_iq2_xxs>({Coder::iq2xxs, 32, false, 0.125f}, src, dst, n,
                                                 importance);
}
void quantize_iq2_xs(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<BlockIQ2_XS, pack_iq2_xs>({Coder::iq2xs, 16, false, 0.125f}, src, dst, n,
                                               importance);
}
void quantize_iq2_s(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<BlockIQ2_S, pack_iq2_s>({Coder::iq2s, 16, true, 0.125f}, src, dst, n,
                                             importance);
}
void quantize_iq1_s(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_iq1<BlockIQ1_S, pack_iq1_s>(32, false, src, dst, n, importance);
}
void quantize_iq1_m(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_iq1<BlockIQ1_M, pack_iq1_m>(16, true, src, dst, n, importance);
}

}  // namespace mw
