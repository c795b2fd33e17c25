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
// distance shells) are tried and the one of least weighted error kept. Each candidate's error at
// scale s is sum w x^2 - 2 s b + s^2 c with b, c independent of s, so a group keeps them for the
// lattice point it last rounded to and the next trials that land there (most do) only compare
// s c - 2 b (GroupMemo). A sub-block tries every other of 25 inverse scales from 18 % below to
// 18 % above the one that maps its largest magnitude onto the top level, then the two beside the
// best, refits the scale by weighted least squares on the points found, and rounds again at the
// refit scale. The super-block scale then holds the largest sub-block scale as 2 * 15 + 1 steps;
// each sub-block takes the stored step count (and its neighbours) that fits best with its points
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
    int max_near = 1;                  // the longest candidate list (at least 1: an on-grid point)
    float level[8] = {};               // coordinate values, ascending
    float mid[7] = {};                 // midpoints of adjacent levels: rounding is counting these
    std::vector<uint8_t> coord;        // point p, coordinate j: its level index at p * dim + j
    std::vector<float> value;          // and its level value
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
    for (int l = 0; l + 1 < c.n_levels; ++l) c.mid[l] = 0.5f * (c.level[l] + c.level[l + 1]);
    int n_keys = 1;
    for (int j = 0; j < kDim; ++j) n_keys *= c.n_levels;
    c.coord.resize(size_t(n_points * kDim));
    c.value.resize(size_t(n_points * kDim));
    c.on_grid.assign(size_t(n_keys), -1);
    for (int p = 0; p < n_points; ++p) {
        int key = 0;
        for (int j = kDim - 1; j >= 0; --j) {
            const int v = int((points[p] >> (8 * j)) & 0xFF);
            const int l = int(std::lower_bound(values.begin(), values.end(), v) - values.begin());
            c.coord[size_t(p * kDim + j)] = uint8_t(l);
            c.value[size_t(p * kDim + j)] = c.level[l];
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
                const float e = at[j] - c.value[size_t(p * kDim + j)];
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
        c.max_near = std::max(c.max_near, int(c.near.size() - c.near_begin[size_t(key)]));
    }
    c.near_begin[size_t(n_keys)] = uint32_t(c.near.size());
    return c;
}

enum class Coder { iq2xxs, iq2xs, iq2s, iq3xxs, iq3s };

// Each built on first use (the larger tables take tens of milliseconds).
const LatticeCoder& coder(Coder which) {
    switch (which) {
        case Coder::iq2xxs: {
            static const LatticeCoder c = make_coder(iq_grids().iq2xxs, 256);
            return c;
        }
        case Coder::iq2xs: {
            static const LatticeCoder c = make_coder(iq_grids().iq2xs, 512);
            return c;
        }
        case Coder::iq2s: {
            static const LatticeCoder c = make_coder(iq_grids().iq2s, 1024);
            return c;
        }
        case Coder::iq3xxs: {
            static const LatticeCoder c = make_coder(iq_grids().iq3xxs, 256);
            return c;
        }
        case Coder::iq3s:
            break;
    }
    static const LatticeCoder c = make_coder(iq_grids().iq3s, 512);
    return c;
}

// The trial scales: every other one, then the two beside the best of those (1: every one). On the
// 1B synth's blk.0.attn_k with its imatrix the winning trial is spread over the whole range (IQ3_S,
// IQ2_XXS) or 0.36-0.69 of max (IQ1_S), so no end of the range is dropped; halving them leaves
// the imatrix-weighted error of IQ3_S on blk.3's attention and blk.9's ffn_gate within 0.01 %
// (lower), and kq-tiny's ratios to llama-quantize unchanged at three digits.
constexpr int kTrialStep = 2;
typedef float V4f __attribute__((vector_size(16)));
typedef int32_t V4i __attribute__((vector_size(16)));

// Per group of a super-block, the candidates of the lattice point it last rounded to, each with
// b = sum w x q and c = sum w q^2: its error at any scale s is sum w x^2 - 2 s b + s^2 c, so a
// trial scale that rounds the group to the same lattice point (most of the nearby trials do) only
// compares s c - 2 b over the list, without touching the coordinates again.
struct GroupMemo {
    int max_near = 0;
    std::vector<int> key, n;
    std::vector<const uint16_t*> cand;  // the coder's list, or on_grid[g] for a grid point
    std::vector<uint16_t> on_grid;
    std::vector<float> b, c;

    GroupMemo(int n_groups, int max_near_) : max_near(max_near_) {
        key.assign(size_t(n_groups), -1);
        n.assign(size_t(n_groups), 0);
        cand.assign(size_t(n_groups), nullptr);
        on_grid.assign(size_t(n_groups), 0);
        b.resize(size_t(n_groups * max_near));
        c.resize(b.size());
    }
    void clear() { std::fill(key.begin(), key.end(), -1); }
};

// The grid point of group g, values x (weights w) rounded at scale s = 1 / id after adding
// `shift` to x / s (IQ1's offset); `value` holds each point's coordinates (the coder's levels, or
// IQ1's shifted ones). Returns the point and its b and c (see GroupMemo).
template <int kDim>
int round_group(const LatticeCoder& c, const float* value, const float* x, const float* w, float s,
                float id, float shift, GroupMemo& memo, int g, float* bq, float* cq) {
    // Each coordinate's level: how many midpoints lie below it, 4 coordinates per vector.
    int level[kDim];
    for (int h = 0; h < kDim; h += 4) {
        const V4f t = V4f{x[h], x[h + 1], x[h + 2], x[h + 3]} * id + shift;
        V4i l = {0, 0, 0, 0};
        for (int m = 0; m + 1 < c.n_levels; ++m) l -= t > c.mid[m];
        for (int j = 0; j < 4; ++j) level[h + j] = l[j];
    }
    int key = 0;
    for (int j = kDim - 1; j >= 0; --j) key = key * c.n_levels + level[j];
    const size_t base = size_t(g) * size_t(memo.max_near);
    float* b = memo.b.data() + base;
    float* q2 = memo.c.data() + base;
    if (memo.key[size_t(g)] != key) {
        memo.key[size_t(g)] = key;
        const int on = c.on_grid[size_t(key)];
        int n = 1;
        if (on >= 0) {
            memo.on_grid[size_t(g)] = uint16_t(on);
            memo.cand[size_t(g)] = &memo.on_grid[size_t(g)];
        } else {
            const uint32_t begin = c.near_begin[size_t(key)];
            n = int(c.near_begin[size_t(key) + 1] - begin);
            memo.cand[size_t(g)] = c.near.data() + begin;
        }
        memo.n[size_t(g)] = n;
        const uint16_t* point = memo.cand[size_t(g)];
        V4f wv[kDim / 4], wx[kDim / 4];
        for (int h = 0; h < kDim / 4; ++h) {
            std::memcpy(&wv[h], w + 4 * h, sizeof(V4f));
            std::memcpy(&wx[h], x + 4 * h, sizeof(V4f));
            wx[h] *= wv[h];
        }
        for (int i = 0; i < n; ++i) {
            const float* q = value + size_t(point[i]) * kDim;
            V4f sb = {0, 0, 0, 0}, sc = {0, 0, 0, 0};
            for (int h = 0; h < kDim / 4; ++h) {
                V4f qv;
                std::memcpy(&qv, q + 4 * h, sizeof(V4f));
                sb += wx[h] * qv;
                sc += wv[h] * qv * qv;
            }
            b[i] = (sb[0] + sb[1]) + (sb[2] + sb[3]);
            q2[i] = (sc[0] + sc[1]) + (sc[2] + sc[3]);
        }
    }
    const uint16_t* point = memo.cand[size_t(g)];
    int best = 0;
    float best_e = INFINITY;
    for (int i = 0, n = memo.n[size_t(g)]; i < n; ++i) {
        const float e = s * q2[i] - 2 * b[i];
        if (e < best_e) {
            best_e = e;
            best = i;
        }
    }
    *bq = b[best];
    *cq = q2[best];
    return point[best];
}

// Points of the n magnitudes of groups g0, g0 + 1, ... at scale s; returns sum w xa q and
// sum w q^2 through the pointers.
template <int kDim>
void round_points(const LatticeCoder& c, const float* xa, const float* w, int n, float s,
                  GroupMemo& memo, int g0, int* pts, double* sumqx, double* sumq2) {
    const float id = s > 0 ? 1.0f / s : 0.0f;
    double qx = 0, q2 = 0;
    for (int g = 0; g < n / kDim; ++g) {
        float b, cq;
        pts[g] = round_group<kDim>(c, c.value.data(), xa + g * kDim, w + g * kDim, s, id, 0.0f,
                                   memo, g0 + g, &b, &cq);
        qx += b;
        q2 += cq;
    }
    *sumqx = qx;
    *sumq2 = q2;
}

// The best scale (>= 0) and points of a sub-block of n magnitudes (groups from g0).
template <int kDim>
float fit_subblock(const LatticeCoder& c, const float* xa, const float* w, int n, GroupMemo& memo,
                   int g0, int* pts) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, xa[i]);
    int trial[8];
    double qx, q2;
    if (max <= 0) {
        round_points<kDim>(c, xa, w, n, 0.0f, memo, g0, pts, &qx, &q2);
        return 0.0f;
    }
    const float top = c.level[c.n_levels - 1];
    double best_gain = -1;
    float best_s = 0;
    int best_t = 0;
    auto consider = [&](float s, int t) {
        round_points<kDim>(c, xa, w, n, s, memo, g0, trial, &qx, &q2);
        if (q2 <= 0 || qx <= 0) return;
        if (qx * qx / q2 > best_gain) {
            best_gain = qx * qx / q2;
            best_s = float(qx / q2);
            best_t = t;
            std::memcpy(pts, trial, sizeof(int) * size_t(n / kDim));
        }
    };
    auto inverse_scale = [&](int t) { return max / (top * (1.0f + 0.015f * float(t))); };
    // Every other trial, then the two beside the best of those (kTrialStep 1: all 25).
    for (int t = -12; t <= 12; t += kTrialStep) consider(inverse_scale(t), t);
    if (kTrialStep == 2 && best_gain >= 0) {
        const int t0 = best_t;
        if (t0 > -12) consider(inverse_scale(t0 - 1), t0 - 1);
        if (t0 < 12) consider(inverse_scale(t0 + 1), t0 + 1);
    }
    for (int iter = 0; iter < 2 && best_s > 0; ++iter) consider(best_s, best_t);
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

template <int kDim>
void encode(const LatticeSpec& spec, const float* x, const float* w, GroupMemo& memo,
            Encoded* out) {
    const LatticeCoder& c = coder(spec.coder);
    memo.clear();
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
    const int n_sub = kQK_K / spec.sub, per_sub = spec.sub / kDim;
    float scale[16], max_s = 0;
    for (int k = 0; k < n_sub; ++k) {
        scale[k] = fit_subblock<kDim>(c, xa + k * spec.sub, w + k * spec.sub, spec.sub, memo,
                                      k * per_sub, out->pts + k * per_sub);
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
            round_points<kDim>(c, xk, wk, spec.sub, s, memo, k * per_sub, trial, &qx, &q2);
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

template <int kDim, class Block, void (*kPack)(const Encoded&, Block&)>
void quantize_lattice(const LatticeSpec& spec, const float* src, void* dst, int64_t n,
                      const float* importance) {
    const float mean = qdetail::mean_importance(importance, n);
    auto* blocks = static_cast<Block*>(dst);
    float x[kQK_K], w[kQK_K];
    Encoded e;
    GroupMemo memo(kQK_K / kDim, coder(spec.coder).max_near);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        qdetail::finite_copy(src + i * kQK_K, kQK_K, x);
        qdetail::block_weights(importance ? importance + i * kQK_K : nullptr, mean, kQK_K, w);
        encode<kDim>(spec, x, w, memo, &e);
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
// (x + S (1 - delta)) - S v, so each trial rounds x / S + 1 - delta to the levels and weighs the
// candidates by their values g + delta. No signs: a sub-block tries scales from 0.3 to 1.2
// times its largest |x| (every other of 31, then the two beside the best) and both shifts (IQ1_S:
// one per 32 values; IQ1_M: per 8, chosen per group), refits the scale by least squares, rounds
// again there; the super-block scale holds the largest as 15 steps (3-bit scales 2 s + 1).

struct Iq1Coder {
    LatticeCoder lattice;
    std::vector<float> value[2];  // per shift (+delta, -delta): point p's g + delta at p * 8 + j
};

constexpr float kIq1Delta = 0.125f;

const Iq1Coder& iq1_coder() {
    static const Iq1Coder c = [] {
        std::vector<uint64_t> shifted(2048);
        for (int p = 0; p < 2048; ++p) {
            uint64_t v = 0;
            for (int j = 0; j < 8; ++j) {
                const int g = int8_t(uint8_t(iq_grids().iq1s[p] >> (8 * j)));
                v |= uint64_t(g + 1) << (8 * j);
            }
            shifted[size_t(p)] = v;
        }
        Iq1Coder out;
        out.lattice = make_coder(shifted.data(), 2048);
        for (int k = 0; k < 2; ++k) {
            out.value[k] = out.lattice.value;
            for (float& v : out.value[k]) v += k ? -1 - kIq1Delta : -1 + kIq1Delta;
        }
        return out;
    }();
    return c;
}

// A sub-block's groups at one scale: points, shifts, and b, c summed over them.
struct Iq1Trial {
    int pts[4];
    bool neg[4];
    double b, c;
};

// n values (groups of 8, the first group g0 of the super-block) at scale S: the points and shift
// signs (per group, or one for all when !per_group) of least error. Returns that error less its
// constant part sum w x^2 (that is -2 S b + S^2 c).
double iq1_round(const float* x, const float* w, int n, float S, bool per_group, GroupMemo* memo,
                 int g0, Iq1Trial* out) {
    const Iq1Coder& c = iq1_coder();
    const float id = S > 0 ? 1.0f / S : 0.0f;
    double bs[2] = {0, 0}, cs[2] = {0, 0};
    int p[2][4];
    float b[2][4], q2[2][4];
    for (int g = 0; g < n / 8; ++g) {
        for (int k = 0; k < 2; ++k) {
            const float shift = S > 0 ? 1 - (k ? -kIq1Delta : kIq1Delta) : 0.0f;
            p[k][g] = round_group<8>(c.lattice, c.value[k].data(), x + 8 * g, w + 8 * g, S, id,
                                     shift, memo[k], g0 + g, &b[k][g], &q2[k][g]);
            bs[k] += b[k][g];
            cs[k] += q2[k][g];
        }
    }
    auto error = [S](double bv, double cv) { return double(S) * S * cv - 2.0 * S * bv; };
    if (per_group) {
        out->b = out->c = 0;
        for (int g = 0; g < n / 8; ++g) {
            const bool neg = error(b[1][g], q2[1][g]) < error(b[0][g], q2[0][g]);
            out->neg[g] = neg;
            out->pts[g] = p[neg][g];
            out->b += b[neg][g];
            out->c += q2[neg][g];
        }
        return error(out->b, out->c);
    }
    const int k = error(bs[1], cs[1]) < error(bs[0], cs[0]);
    for (int g = 0; g < n / 8; ++g) {
        out->pts[g] = p[k][g];
        out->neg[g] = k;
    }
    out->b = bs[k];
    out->c = cs[k];
    return error(bs[k], cs[k]);
}

float iq1_fit(const float* x, const float* w, int n, bool per_group, GroupMemo* memo, int g0,
              int* pts, bool* neg) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, std::fabs(x[i]));
    Iq1Trial t;
    // The points at scale 0, where no trial scale fits.
    auto at_zero = [&] {
        iq1_round(x, w, n, 0.0f, per_group, memo, g0, &t);
        std::copy(t.pts, t.pts + n / 8, pts);
        std::copy(t.neg, t.neg + n / 8, neg);
        return 0.0f;
    };
    if (max <= 0) return at_zero();
    double best = INFINITY;
    float best_s = 0;
    int best_k = 0;
    auto consider = [&](float S, int k) {
        iq1_round(x, w, n, S, per_group, memo, g0, &t);
        // The least-squares scale on these points, and the error there (no worse than at S).
        if (!(t.c > 0 && t.b > 0)) return;
        const float refit = float(t.b / t.c);
        const double e = double(refit) * refit * t.c - 2.0 * refit * t.b;
        if (e < best) {
            best = e;
            best_s = refit;
            best_k = k;
            std::copy(t.pts, t.pts + n / 8, pts);
            std::copy(t.neg, t.neg + n / 8, neg);
        }
    };
    auto scale = [&](int k) { return max * (0.3f + 0.03f * float(k)); };
    for (int k = 0; k <= 30; k += kTrialStep) consider(scale(k), k);
    if (kTrialStep == 2 && best_s > 0) {
        const int k0 = best_k;
        if (k0 > 0) consider(scale(k0 - 1), k0 - 1);
        if (k0 < 30) consider(scale(k0 + 1), k0 + 1);
    }
    for (int iter = 0; iter < 2 && best_s > 0; ++iter) consider(best_s, best_k);
    return best_s > 0 ? best_s : at_zero();
}

// One IQ1 super-block: sub-blocks of `sub` values (IQ1_S 32, IQ1_M 16).
struct Iq1Encoded {
    int pts[32];
    bool neg[32];
    int m[16];
    uint16_t d;
};

void encode_iq1(const float* x, const float* w, int sub, bool per_group, GroupMemo* memo,
                Iq1Encoded* out) {
    memo[0].clear();
    memo[1].clear();
    const int n_sub = kQK_K / sub, per_sub = sub / 8;
    float scale[16], max_s = 0;
    for (int k = 0; k < n_sub; ++k) {
        scale[k] = iq1_fit(x + k * sub, w + k * sub, sub, per_group, memo, k * per_sub,
                           out->pts + k * per_sub, out->neg + k * per_sub);
        max_s = std::max(max_s, scale[k]);
    }
    std::fill(out->m, out->m + 16, 0);
    out->d = f32_to_fp16(max_s / 15);
    const float step = fp16_to_f32(out->d);
    if (!(step > 0) || !std::isfinite(step)) {
        out->d = 0;
        return;
    }
    Iq1Trial t;
    for (int k = 0; k < n_sub; ++k) {
        const int m0 = std::clamp(int(std::lround((scale[k] / step - 1) / 2)), 0, 7);
        double best = INFINITY;
        for (int m = std::max(0, m0 - 1); m <= std::min(7, m0 + 1); ++m) {
            const double e = iq1_round(x + k * sub, w + k * sub, sub, step * float(2 * m + 1),
                                       per_group, memo, k * per_sub, &t);
            if (e < best) {
                best = e;
                out->m[k] = m;
                std::copy(t.pts, t.pts + per_sub, out->pts + k * per_sub);
                std::copy(t.neg, t.neg + per_sub, out->neg + k * per_sub);
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
    const int max_near = iq1_coder().lattice.max_near;
    GroupMemo memo[2] = {GroupMemo(kQK_K / 8, max_near), GroupMemo(kQK_K / 8, max_near)};
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        qdetail::finite_copy(src + i * kQK_K, kQK_K, x);
        qdetail::block_weights(importance ? importance + i * kQK_K : nullptr, mean, kQK_K, w);
        encode_iq1(x, w, sub, per_group, memo, &e);
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
    quantize_lattice<4, BlockIQ3_S, pack_iq3_s>({Coder::iq3s, 32, true, 1.0f}, src, dst, n,
                                                importance);
}
void quantize_iq3_xxs(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<4, BlockIQ3_XXS, pack_iq3_xxs>({Coder::iq3xxs, 32, false, 0.25f}, src, dst, n,
                                                    importance);
}
void quantize_iq2_xxs(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<8, BlockIQ2_XXS, pack_iq2_xxs>({Coder::iq2xxs, 32, false, 0.125f}, src, dst, n,
                                                    importance);
}
void quantize_iq2_xs(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<8, BlockIQ2_XS, pack_iq2_xs>({Coder::iq2xs, 16, false, 0.125f}, src, dst, n,
                                                  importance);
}
void quantize_iq2_s(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_lattice<8, BlockIQ2_S, pack_iq2_s>({Coder::iq2s, 16, true, 0.125f}, src, dst, n,
                                                importance);
}
void quantize_iq1_s(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_iq1<BlockIQ1_S, pack_iq1_s>(32, false, src, dst, n, importance);
}
void quantize_iq1_m(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_iq1<BlockIQ1_M, pack_iq1_m>(16, true, src, dst, n, importance);
}

}  // namespace mw
