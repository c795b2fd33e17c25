// File quantizers of the K-quants (Q2_K .. Q6_K). Every K-quant is a two-level grid: a
// super-block of 256 values with one fp16 scale d (and dmin), sub-blocks of 16 or 32 values with
// small integer scales sc_j (and mins m_j), and the quants: x ~ d sc_j q - dmin m_j. The search:
//
// 1. Each sub-block gets its best real scale a_j (and offset b_j) and quants on its own
//    (qsearch::fit_scale / fit_scale_offset).
// 2. The a_j are themselves quantized onto the integer grid d * sc_j with the same search,
//    each weighted by how fast its sub-block's error grows when its scale moves (sum w q^2; for
//    the mins, sum w). d is rounded to fp16.
// 3. Each sub-block then tries the integer scales (and mins) around a_j / d and keeps the pair
//    whose re-rounded quants give the lowest error.
// 4. With all integers fixed, d (and dmin) are re-fitted by least squares over the whole
//    super-block, rounded to fp16, and step 3 repeats while the error drops.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/fp16.h"
#include "tensor/quantize/quantize.h"
#include "tensor/quantize/search.h"
#include "tensor/quants.h"

namespace mw {
namespace {

struct GridSpec {
    int n_sub;       // sub-blocks per super-block
    int sub_size;    // values per sub-block
    int qmin, qmax;  // quant range (0..qmax for the types with mins)
    bool has_min;    // x = d sc q - dmin m; otherwise x = d sc q
    int sc_min, sc_max;
    int m_max;
    // The fast search's step 1: inverse scales tried per sub-block, over +- `spread` levels
    // around the saturating one (measured on Gaussian and on real weights: more steps or a wider
    // spread gain < 0.2 % RMSE; the exact sweep of --thorough gains 0.3 % to 1.5 % more).
    int grid_steps;
    float grid_spread;
};

constexpr GridSpec kQ2K{16, 16, 0, 3, true, 0, 15, 15, 12, 0.9f};
constexpr GridSpec kQ3K{16, 16, -4, 3, false, -32, 31, 0, 6, 0.9f};
constexpr GridSpec kQ4K{8, 32, 0, 15, true, 0, 63, 63, 10, 1.0f};
constexpr GridSpec kQ5K{8, 32, 0, 31, true, 0, 63, 63, 10, 1.0f};
constexpr GridSpec kQ6K{16, 16, -32, 31, false, -128, 127, 0, 6, 1.0f};

// The fast search's step 2: grid points, and their spread as a fraction of the levels.
constexpr int kSubScaleSteps = 12;
constexpr float kSubScaleSpread = 0.1f;

// Step 4's rounds in the fast search.
constexpr int kFastRefits = 1;

// How many integer scales (and mins) either side of the rounded ones step 3 tries. A radius of 2
// gains < 0.3 % RMSE (Q2_K) for twice the time.
constexpr int kRadius = 1;

struct GridFit {
    uint16_t d = 0, dmin = 0;  // fp16 bits
    int sc[16], m[16];         // every one set by fit_integers (no zeroing: it shows in profiles)
    int q[kQK_K];
    double error = 0;
};

inline float round_fp16(float v, uint16_t* bits) {
    *bits = f32_to_fp16(v);
    return fp16_to_f32(*bits);
}

// Step 3 for one sub-block: the integer scale (and min) near the centre with the lowest error.
double best_integers(const GridSpec& g, const float* x, const float* w, float d, float dmin,
                     int sc_centre, int m_centre, QuantSearch search, int* sc, int* m, int* q) {
    if (search == QuantSearch::fast) {
        // The errors of the trials in floats, the quants of the winner only.
        float best = std::numeric_limits<float>::infinity();
        const int m_radius = g.has_min ? kRadius : 0;
        for (int ds = -kRadius; ds <= kRadius; ++ds) {
            const int s = std::clamp(sc_centre + ds, g.sc_min, g.sc_max);
            if (ds != -kRadius && s == std::clamp(sc_centre + ds - 1, g.sc_min, g.sc_max)) continue;
            for (int dm = -m_radius; dm <= m_radius; ++dm) {
                const int mm = g.has_min ? std::clamp(m_centre + dm, 0, g.m_max) : 0;
                if (dm != -m_radius && mm == std::clamp(m_centre + dm - 1, 0, g.m_max)) continue;
                const float offset = g.has_min ? -(dmin * float(mm)) : 0.0f;
                const float e =
                    qsearch::group_error(g.sub_size, x, w, d * float(s), offset, g.qmin, g.qmax);
                if (e < best) {
                    best = e;
                    *sc = s;
                    *m = mm;
                }
            }
        }
        const float offset = g.has_min ? -(dmin * float(*m)) : 0.0f;
        return qsearch::quantize_with(g.sub_size, x, w, d * float(*sc), offset, g.qmin, g.qmax, q);
    }
    int trial[32];
    double best = std::numeric_limits<double>::infinity();
    const int m_radius = g.has_min ? kRadius : 0;
    for (int ds = -kRadius; ds <= kRadius; ++ds) {
        const int s = std::clamp(sc_centre + ds, g.sc_min, g.sc_max);
        if (ds != -kRadius && s == std::clamp(sc_centre + ds - 1, g.sc_min, g.sc_max)) continue;
        for (int dm = -m_radius; dm <= m_radius; ++dm) {
            const int mm = g.has_min ? std::clamp(m_centre + dm, 0, g.m_max) : 0;
            if (dm != -m_radius && mm == std::clamp(m_centre + dm - 1, 0, g.m_max)) continue;
            const float scale = d * float(s);
            const float offset = g.has_min ? -(dmin * float(mm)) : 0.0f;
            const double e =
                qsearch::quantize_with(g.sub_size, x, w, scale, offset, g.qmin, g.qmax, trial);
            if (e < best) {
                best = e;
                *sc = s;
                *m = mm;
                std::copy(trial, trial + g.sub_size, q);
            }
        }
    }
    return best;
}

// Step 3 for every sub-block; returns the total error.
double fit_integers(const GridSpec& g, const float* x, const float* w, float d, float dmin,
                    const int* sc_centre, const int* m_centre, QuantSearch search, GridFit* out) {
    double total = 0;
    for (int j = 0; j < g.n_sub; ++j) {
        const int off = j * g.sub_size;
        total += best_integers(g, x + off, w + off, d, dmin, sc_centre[j], m_centre[j], search,
                               &out->sc[j], &out->m[j], out->q + off);
    }
    return total;
}

int centre(float value, float step, int lo, int hi) {
    if (step == 0.0f) return 0;
    return qsearch::round_int(std::clamp(value / step, float(lo), float(hi)));
}

// Step 4: least-squares d (and dmin) for fixed integers.
void refit_super_scales(const GridSpec& g, const float* x, const float* w, const GridFit& f,
                        float* d, float* dmin) {
    double uu = 0, uv = 0, vv = 0, xu = 0, xv = 0;
    for (int j = 0; j < g.n_sub; ++j) {
        for (int l = 0; l < g.sub_size; ++l) {
            const int i = j * g.sub_size + l;
            const double u = double(f.sc[j]) * f.q[i];
            const double v = g.has_min ? double(f.m[j]) : 0.0;
            uu += w[i] * u * u;
            uv += w[i] * u * v;
            vv += w[i] * v * v;
            xu += w[i] * x[i] * u;
            xv += w[i] * x[i] * v;
        }
    }
    // x ~ d u + e v with e = -dmin.
    const double det = uu * vv - uv * uv;
    if (g.has_min && vv > 0 && det > 1e-12 * uu * vv) {
        *d = float((vv * xu - uv * xv) / det);
        *dmin = float(-(uu * xv - uv * xu) / det);
    } else if (uu > 0) {
        *d = float(xu / uu);
    }
}

void fit_grid(const GridSpec& g, const float* x, const float* w, QuantSearch search, GridFit* out) {
    const bool fast = search == QuantSearch::fast;
    // 1. Each sub-block alone.
    float a[16], b[16], wa[16], wb[16];
    int tmp[kQK_K];
    for (int j = 0; j < g.n_sub; ++j) {
        const int off = j * g.sub_size;
        const float* xs = x + off;
        const float* ws = w + off;
        int* qs = tmp + off;
        if (g.has_min) {
            const qsearch::Fit f =
                fast ? qsearch::fit_scale_offset_grid(g.sub_size, xs, ws, g.qmax, true,
                                                      g.grid_steps, g.grid_spread, qs)
                     : qsearch::fit_scale_offset(g.sub_size, xs, ws, g.qmax, true, qs);
            a[j] = f.scale;
            b[j] = -f.offset;
        } else {
            a[j] = fast ? qsearch::fit_scale_grid(g.sub_size, xs, ws, g.qmin, g.qmax, g.grid_steps,
                                                  g.grid_spread, qs)
                              .scale
                        : qsearch::fit_scale(g.sub_size, xs, ws, g.qmin, g.qmax, true, qs).scale;
            b[j] = 0.0f;
        }
        double sum_w = 0, sum_wqq = 0;
        for (int l = 0; l < g.sub_size; ++l) {
            sum_w += ws[l];
            sum_wqq += double(ws[l]) * qs[l] * qs[l];
        }
        wa[j] = float(sum_wqq);
        wb[j] = float(sum_w);
    }

    // 2. The sub-block scales (and mins) on their integer grids.
    int sc[16], m[16] = {};
    auto fit_sub_scales = [&](const float* v, const float* wv, int lo, int hi, int* out_q) {
        if (!fast) return qsearch::fit_scale(g.n_sub, v, wv, lo, hi, lo < 0, out_q);
        const int side = std::max(-lo, hi);
        return qsearch::fit_scale_grid(g.n_sub, v, wv, lo, hi, kSubScaleSteps,
                                       kSubScaleSpread * float(side), out_q);
    };
    const qsearch::Fit fs = fit_sub_scales(a, wa, g.sc_min, g.sc_max, sc);
    float d = round_fp16(fs.scale, &out->d);
    float dmin = 0.0f;
    out->dmin = 0;
    if (g.has_min) {
        const qsearch::Fit fm = fit_sub_scales(b, wb, 0, g.m_max, m);
        dmin = round_fp16(fm.scale, &out->dmin);
    }
    for (int j = 0; j < g.n_sub; ++j) {
        sc[j] = centre(a[j], d, g.sc_min, g.sc_max);
        m[j] = g.has_min ? centre(b[j], dmin, 0, g.m_max) : 0;
    }

    // 3. Integers by exact error around the rounded ones.
    out->error = fit_integers(g, x, w, d, dmin, sc, m, search, out);

    // 4. Re-fit the fp16 scales; keep while better.
    const int rounds = fast ? kFastRefits : 2;
    for (int round = 0; round < rounds; ++round) {
        float d2 = d, dmin2 = dmin;
        refit_super_scales(g, x, w, *out, &d2, &dmin2);
        GridFit trial;
        d2 = round_fp16(d2, &trial.d);
        dmin2 = g.has_min ? round_fp16(dmin2, &trial.dmin) : 0.0f;
        if (d2 == d && dmin2 == dmin) break;
        trial.error = fit_integers(g, x, w, d2, dmin2, out->sc, out->m, search, &trial);
        if (!(trial.error < out->error)) break;
        *out = trial;
        d = d2;
        dmin = dmin2;
    }
}

// ---- Packing the fitted integers into each block layout (see tensor/quants.h) ---------------

// 2-bit fields as in Q2_K / Q3_K: element 128 h + 32 s + l is bits 2s..2s+1 of qs[32 h + l].
void pack_2bit(const int* u, uint8_t* qs) {
    std::memset(qs, 0, kQK_K / 4);
    for (int e = 0; e < kQK_K; ++e) {
        const int h = e / 128, s = (e % 128) / 32, l = e % 32;
        qs[32 * h + l] |= uint8_t((u[e] & 3) << (2 * s));
    }
}

// Nibbles as in Q4_K / Q5_K: element 64 p + l is the low nibble of qs[32 p + l], element
// 64 p + 32 + l its high nibble.
void pack_4bit(const int* u, uint8_t* qs) {
    for (int p = 0; p < 4; ++p) {
        for (int l = 0; l < 32; ++l) {
            qs[32 * p + l] = uint8_t((u[64 * p + l] & 0xF) | ((u[64 * p + 32 + l] & 0xF) << 4));
        }
    }
}

// Bit `bit` of element 32 b + l goes to bit b of mask[l].
void pack_high_bits(const int* u, int bit, uint8_t* mask) {
    std::memset(mask, 0, 32);
    for (int e = 0; e < kQK_K; ++e) mask[e % 32] |= uint8_t(((u[e] >> bit) & 1) << (e / 32));
}

// The 6-bit scales and mins of Q4_K / Q5_K (inverse of q4k_scale_min).
void pack_scale_min(const int* sc, const int* m, uint8_t* scales) {
    for (int j = 0; j < 4; ++j) {
        scales[j] = uint8_t(sc[j]);
        scales[j + 4] = uint8_t(m[j]);
    }
    for (int j = 4; j < 8; ++j) {
        scales[j + 4] = uint8_t((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
        scales[j - 4] |= uint8_t((sc[j] >> 4) << 6);
        scales[j] |= uint8_t((m[j] >> 4) << 6);
    }
}

// The 6-bit scales of Q3_K, stored + 32 (inverse of q3k_scale).
void pack_q3k_scales(const int* sc, uint8_t* scales) {
    std::memset(scales, 0, 12);
    for (int j = 0; j < 16; ++j) {
        const int v = sc[j] + 32;
        if (j < 8) {
            scales[j] |= uint8_t(v & 0xF);
        } else {
            scales[j - 8] |= uint8_t((v & 0xF) << 4);
        }
        scales[8 + j % 4] |= uint8_t((v >> 4) << (2 * (j / 4)));
    }
}

void pack_q2_k(const GridFit& f, BlockQ2_K& b) {
    for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(f.sc[j] | (f.m[j] << 4));
    pack_2bit(f.q, b.qs);
    b.d = f.d;
    b.dmin = f.dmin;
}

void pack_q3_k(const GridFit& f, BlockQ3_K& b) {
    int u[kQK_K];
    for (int e = 0; e < kQK_K; ++e) u[e] = f.q[e] + 4;
    pack_2bit(u, b.qs);
    pack_high_bits(u, 2, b.hmask);
    pack_q3k_scales(f.sc, b.scales);
    b.d = f.d;
}

void pack_q4_k(const GridFit& f, BlockQ4_K& b) {
    b.d = f.d;
    b.dmin = f.dmin;
    pack_scale_min(f.sc, f.m, b.scales);
    pack_4bit(f.q, b.qs);
}

void pack_q5_k(const GridFit& f, BlockQ5_K& b) {
    b.d = f.d;
    b.dmin = f.dmin;
    pack_scale_min(f.sc, f.m, b.scales);
    pack_high_bits(f.q, 4, b.qh);
    pack_4bit(f.q, b.qs);
}

// For half h (128 values) and l < 32: the low nibbles of values l, l+32, l+64, l+96 go to
// ql[64h + l] (low, high nibble) and ql[64h + l + 32]; their 2 high bits to qh[32h + l].
void pack_q6_k(const GridFit& f, BlockQ6_K& b) {
    int u[kQK_K];
    for (int e = 0; e < kQK_K; ++e) u[e] = f.q[e] + 32;
    for (int h = 0; h < 2; ++h) {
        const int* v = u + 128 * h;
        for (int l = 0; l < 32; ++l) {
            b.ql[64 * h + l] = uint8_t((v[l] & 0xF) | ((v[l + 64] & 0xF) << 4));
            b.ql[64 * h + l + 32] = uint8_t((v[l + 32] & 0xF) | ((v[l + 96] & 0xF) << 4));
            b.qh[32 * h + l] = uint8_t((v[l] >> 4) | ((v[l + 32] >> 4) << 2) |
                                       ((v[l + 64] >> 4) << 4) | ((v[l + 96] >> 4) << 6));
        }
    }
    for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(f.sc[j]);
    b.d = f.d;
}

template <typename Block, typename Pack>
void quantize_super_blocks(const GridSpec& g, const float* src, void* dst, int64_t n,
                           const float* importance, QuantSearch search, Pack pack) {
    auto* blocks = static_cast<Block*>(dst);
    const float mean = qdetail::mean_importance(importance, n);
    float w[kQK_K], x[kQK_K];
    if (!importance) qdetail::block_weights(nullptr, 0.0f, kQK_K, w);  // all ones
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        qdetail::finite_copy(src + i * kQK_K, kQK_K, x);
        if (importance) qdetail::block_weights(importance + i * kQK_K, mean, kQK_K, w);
        GridFit f;
        fit_grid(g, x, w, search, &f);
        pack(f, blocks[i]);
    }
}

}  // namespace

void quantize_q2_k(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ2_K>(kQ2K, src, dst, n, importance, QuantSearch::fast, pack_q2_k);
}
void quantize_q2_k_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ2_K>(kQ2K, src, dst, n, importance, QuantSearch::thorough,
                                     pack_q2_k);
}

void quantize_q3_k(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ3_K>(kQ3K, src, dst, n, importance, QuantSearch::fast, pack_q3_k);
}
void quantize_q3_k_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ3_K>(kQ3K, src, dst, n, importance, QuantSearch::thorough,
                                     pack_q3_k);
}

void quantize_q4_k(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ4_K>(kQ4K, src, dst, n, importance, QuantSearch::fast, pack_q4_k);
}
void quantize_q4_k_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ4_K>(kQ4K, src, dst, n, importance, QuantSearch::thorough,
                                     pack_q4_k);
}

void quantize_q5_k(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ5_K>(kQ5K, src, dst, n, importance, QuantSearch::fast, pack_q5_k);
}
void quantize_q5_k_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ5_K>(kQ5K, src, dst, n, importance, QuantSearch::thorough,
                                     pack_q5_k);
}

void quantize_q6_k(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ6_K>(kQ6K, src, dst, n, importance, QuantSearch::fast, pack_q6_k);
}
void quantize_q6_k_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_super_blocks<BlockQ6_K>(kQ6K, src, dst, n, importance, QuantSearch::thorough,
                                     pack_q6_k);
}

void quantize_row_q2_k(const float* src, void* dst, int64_t n) {
    quantize_q2_k(src, dst, n, nullptr);
}
void quantize_row_q3_k(const float* src, void* dst, int64_t n) {
    quantize_q3_k(src, dst, n, nullptr);
}
void quantize_row_q4_k(const float* src, void* dst, int64_t n) {
    quantize_q4_k(src, dst, n, nullptr);
}
void quantize_row_q5_k(const float* src, void* dst, int64_t n) {
    quantize_q5_k(src, dst, n, nullptr);
}
void quantize_row_q6_k(const float* src, void* dst, int64_t n) {
    quantize_q6_k(src, dst, n, nullptr);
}

}  // namespace mw
