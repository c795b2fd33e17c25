#include "tensor/quantize/search.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// The loops the searches spend their time in get an AVX2 version chosen when the library loads
// (the rest keeps the baseline ISA): 15-25 % less time on the K-quants, bit-identical output
// (partial sums per lane, no FMA). An avx512f version was no faster and changed the output.
#if defined(__x86_64__) && defined(__GNUC__)
#define MW_SEARCH_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MW_SEARCH_CLONES
#endif

namespace mw::qsearch {
namespace {

constexpr int kMaxGroup = 32;
constexpr int kMaxEvents = kMaxGroup * 128;  // every level of the widest range, for every value

// At inverse scale s, quant i moves one step further from 0 (away from the origin).
struct Event {
    float s;
    int i;
};

// How far either side of the saturating inverse scale (the one that first maps a value to the
// end of the range) the sweep looks, as a fraction of it. Measured on Gaussian and Student-t
// weights, the optimum lies within +-30 % for every type; types with many levels gain from
// clipping their largest value more than the 4-bit types do. Beyond 40 levels (Q8_0) the window
// narrows to keep the number of breakpoints per value bounded (costing < 0.5 % RMSE there).
float window_fraction(int levels) {
    return std::min(0.3f, 12.0f / float(levels));
}

// Orders the events by s into equal slices of [s_lo, s_hi] (a counting sort): within
// a slice the order is arbitrary. Every intermediate quant set is still a valid candidate whose
// error is computed exactly; only sets that exist between two close breakpoints of one slice may
// be skipped.
constexpr int kMaxBuckets = 256;

// Float-to-int conversions that stay defined for any float (NaN, infinities, huge values).
int bucket_index(float f, int n_buckets) {
    if (!(f > 0.0f)) return 0;
    return f < float(n_buckets) ? int(f) : n_buckets - 1;
}

// round(v) clamped to [0, limit], for v >= 0.
int level_at(float v, int limit) {
    const float r = v + 0.5f;
    if (!(r > 0.0f)) return 0;
    return r < float(limit) ? int(r) : limit;
}

void order_events(Event* in, int count, float s_lo, float s_hi, Event* out) {
    const int n_buckets = std::clamp(count, 1, kMaxBuckets);
    int start[kMaxBuckets + 1];
    std::fill(start, start + n_buckets + 1, 0);
    uint8_t bucket[kMaxEvents];
    const float width = s_hi - s_lo;
    const float scale = width > 0 && std::isfinite(width) ? float(n_buckets) / width : 0.0f;
    for (int e = 0; e < count; ++e) {
        const int b = bucket_index((in[e].s - s_lo) * scale, n_buckets);
        bucket[e] = uint8_t(b);
        ++start[b + 1];
    }
    for (int b = 0; b < n_buckets; ++b) start[b + 1] += start[b];
    for (int e = 0; e < count; ++e) out[start[bucket[e]]++] = in[e];
}

// The least-squares fit of x ~ a q + c for fixed quants, from the weighted sums
// W = sum w, X = sum w x, Q = sum w q, QQ = sum w q^2, XQ = sum w x q, XX = sum w x^2.
struct AffineSums {
    double W = 0, X = 0, XX = 0, Q = 0, QQ = 0, XQ = 0;
};

Fit solve_affine(const AffineSums& m, bool nonpositive_offset) {
    Fit f;
    const double det = m.W * m.QQ - m.Q * m.Q;
    if (m.QQ > 0 && det > 1e-12 * m.W * m.QQ) {
        const double a = (m.W * m.XQ - m.Q * m.X) / det;
        const double c = (m.QQ * m.X - m.Q * m.XQ) / det;
        if (a >= 0 && (!nonpositive_offset || c <= 0)) {
            f.scale = float(a);
            f.offset = float(c);
            f.error = m.XX - a * m.XQ - c * m.X;
            return f;
        }
    }
    // The constrained optimum lies on an edge: c = 0 (scale only) or a = 0 (offset only).
    Fit scale_only;
    scale_only.error = std::numeric_limits<double>::infinity();
    if (m.QQ > 0 && m.XQ > 0) {
        scale_only.scale = float(m.XQ / m.QQ);
        scale_only.error = m.XX - m.XQ * m.XQ / m.QQ;
    }
    Fit offset_only;
    double c = m.W > 0 ? m.X / m.W : 0.0;
    if (nonpositive_offset) c = std::min(c, 0.0);
    offset_only.offset = float(c);
    offset_only.error = m.XX - 2 * c * m.X + c * c * m.W;
    return scale_only.error <= offset_only.error ? scale_only : offset_only;
}

// x ~ a q, q = clamp(round(s x), lo, hi) over the inverse scales s > 0 of the window; exact
// inside it. lo <= 0 < hi.
Fit sweep_scale(int n, const float* x, const float* w, int lo, int hi, int* q) {
    float pmax = 0.0f, nmax = 0.0f;
    double xx = 0;
    for (int i = 0; i < n; ++i) {
        pmax = std::max(pmax, x[i]);
        nmax = std::max(nmax, -x[i]);
        xx += double(w[i]) * x[i] * x[i];
    }
    float s_full = std::numeric_limits<float>::infinity();
    if (pmax > 0) s_full = (hi + 0.5f) / pmax;
    if (nmax > 0 && lo < 0) s_full = std::min(s_full, (-lo + 0.5f) / nmax);
    const float window = window_fraction(std::max(hi, -lo));
    Fit fit;
    fit.error = xx;
    if (!std::isfinite(s_full)) {  // nothing this range can represent
        std::fill(q, q + n, 0);
        return fit;
    }
    const float s_lo = s_full * (1 - window), s_hi = s_full * (1 + window);

    // Quants at s_lo, and every breakpoint between s_lo and s_hi.
    int start[kMaxGroup];
    Event events[kMaxEvents];
    int n_events = 0;
    double sxq = 0, sqq = 0;
    for (int i = 0; i < n; ++i) {
        const float m = std::fabs(x[i]);
        const int limit = x[i] > 0 ? hi : -lo;
        if (m == 0.0f || limit <= 0) {
            start[i] = 0;
            continue;
        }
        const int k = level_at(s_lo * m, limit);
        start[i] = x[i] > 0 ? k : -k;
        sxq += double(w[i]) * x[i] * start[i];
        sqq += double(w[i]) * start[i] * start[i];
        const float inv = 1.0f / m;
        for (int level = k; level < limit && n_events < kMaxEvents; ++level) {
            const float s = (level + 0.5f) * inv;
            if (s > s_hi) break;
            events[n_events++] = {s, i};
        }
    }
    Event ordered[kMaxEvents];
    order_events(events, n_events, s_lo, s_hi, ordered);

    // Walk the breakpoints; the score sxq^2 / sqq is what the best scale removes from xx.
    std::copy(start, start + n, q);
    double best = sqq > 0 ? sxq * sxq / sqq : 0.0;
    int best_event = -1;
    for (int e = 0; e < n_events; ++e) {
        const int i = ordered[e].i;
        const int step = x[i] > 0 ? 1 : -1;
        sxq += double(w[i]) * x[i] * step;
        sqq += double(w[i]) * (2 * q[i] * step + 1);
        q[i] += step;
        if (sqq > 0 && sxq * sxq > best * sqq) {
            best = sxq * sxq / sqq;
            best_event = e;
        }
    }
    // Replay up to the best breakpoint.
    std::copy(start, start + n, q);
    for (int e = 0; e <= best_event; ++e) {
        const int i = ordered[e].i;
        q[i] += x[i] > 0 ? 1 : -1;
    }
    double bxq = 0, bqq = 0;
    for (int i = 0; i < n; ++i) {
        bxq += double(w[i]) * x[i] * q[i];
        bqq += double(w[i]) * q[i] * q[i];
    }
    if (bqq > 0) {
        fit.scale = float(bxq / bqq);
        fit.error = xx - bxq * bxq / bqq;
    }
    return fit;
}

// Re-round with the fitted scale, re-fit, while the error drops.
Fit polish_scale(int n, const float* x, const float* w, int qmin, int qmax, Fit fit, int* q,
                 int rounds = 3) {
    int trial[kMaxGroup];
    for (int round = 0; round < rounds && fit.scale != 0.0f; ++round) {
        quantize_with(n, x, w, fit.scale, 0.0f, qmin, qmax, trial);
        double xq = 0, qq = 0, xx = 0;
        for (int i = 0; i < n; ++i) {
            xq += double(w[i]) * x[i] * trial[i];
            qq += double(w[i]) * trial[i] * trial[i];
            xx += double(w[i]) * x[i] * x[i];
        }
        if (qq <= 0) break;
        const double error = xx - xq * xq / qq;
        if (!(error < fit.error * (1 - 1e-12))) break;
        fit.scale = float(xq / qq);
        fit.error = error;
        std::copy(trial, trial + n, q);
    }
    return fit;
}

// x ~ a q + c with q = clamp(round(s (x - origin)), 0, qmax) over the inverse scales s > 0 of
// the window, each quant set fitted by least squares.
Fit sweep_scale_offset(int n, const float* x, const float* w, int qmax, float origin, float s_lo,
                       float s_hi, bool nonpositive_offset, int* q) {
    AffineSums m;
    float ymax = 0.0f;
    for (int i = 0; i < n; ++i) {
        m.W += w[i];
        m.X += double(w[i]) * x[i];
        m.XX += double(w[i]) * x[i] * x[i];
        ymax = std::max(ymax, x[i] - origin);
    }
    if (ymax <= 0.0f) {
        std::fill(q, q + n, 0);
        return solve_affine(m, nonpositive_offset);
    }

    int start[kMaxGroup];
    Event events[kMaxEvents];
    int n_events = 0;
    for (int i = 0; i < n; ++i) {
        const float y = x[i] - origin;
        if (y <= 0.0f) {
            start[i] = 0;
            continue;
        }
        const int k = level_at(s_lo * y, qmax);
        start[i] = k;
        m.Q += double(w[i]) * k;
        m.QQ += double(w[i]) * k * k;
        m.XQ += double(w[i]) * x[i] * k;
        const float inv = 1.0f / y;
        for (int level = k; level < qmax && n_events < kMaxEvents; ++level) {
            const float s = (level + 0.5f) * inv;
            if (s > s_hi) break;
            events[n_events++] = {s, i};
        }
    }
    Event ordered[kMaxEvents];
    order_events(events, n_events, s_lo, s_hi, ordered);

    // What the least-squares fit removes from XX, as a fraction num / den compared by cross
    // multiplication (no division per breakpoint). Unconstrained: b' M^-1 b over det M; when that
    // fit would need a positive offset, the scale-only fit XQ^2 / QQ.
    auto gain = [&](double* num, double* den) {
        const double det = m.W * m.QQ - m.Q * m.Q;
        const double a_num = m.W * m.XQ - m.Q * m.X;
        const double c_num = m.QQ * m.X - m.Q * m.XQ;
        if (det > 0 && a_num >= 0 && (!nonpositive_offset || c_num <= 0)) {
            *num = m.W * m.XQ * m.XQ - 2 * m.Q * m.X * m.XQ + m.QQ * m.X * m.X;
            *den = det;
        } else {
            *num = m.XQ > 0 ? m.XQ * m.XQ : 0.0;
            *den = m.QQ > 0 ? m.QQ : 1.0;
        }
    };
    std::copy(start, start + n, q);
    double best_num, best_den;
    gain(&best_num, &best_den);
    int best_event = -1;
    for (int e = 0; e < n_events; ++e) {
        const int i = ordered[e].i;
        m.Q += w[i];
        m.QQ += double(w[i]) * (2 * q[i] + 1);
        m.XQ += double(w[i]) * x[i];
        q[i] += 1;
        double num, den;
        gain(&num, &den);
        if (num * best_den > best_num * den) {
            best_num = num;
            best_den = den;
            best_event = e;
        }
    }
    // The chosen quants and their exact fit (which also covers the offset-only edge case).
    std::copy(start, start + n, q);
    for (int e = 0; e <= best_event; ++e) q[ordered[e].i] += 1;
    AffineSums b;
    for (int i = 0; i < n; ++i) {
        b.W += w[i];
        b.X += double(w[i]) * x[i];
        b.XX += double(w[i]) * x[i] * x[i];
        b.Q += double(w[i]) * q[i];
        b.QQ += double(w[i]) * q[i] * q[i];
        b.XQ += double(w[i]) * x[i] * q[i];
    }
    return solve_affine(b, nonpositive_offset);
}

Fit polish_scale_offset(int n, const float* x, const float* w, int qmax, bool nonpositive_offset,
                        Fit fit, int* q, int rounds = 3) {
    int trial[kMaxGroup];
    for (int round = 0; round < rounds && fit.scale > 0.0f; ++round) {
        quantize_with(n, x, w, fit.scale, fit.offset, 0, qmax, trial);
        AffineSums m;
        for (int i = 0; i < n; ++i) {
            m.W += w[i];
            m.X += double(w[i]) * x[i];
            m.XX += double(w[i]) * x[i] * x[i];
            m.Q += double(w[i]) * trial[i];
            m.QQ += double(w[i]) * trial[i] * trial[i];
            m.XQ += double(w[i]) * x[i] * trial[i];
        }
        const Fit f = solve_affine(m, nonpositive_offset);
        if (!(f.error < fit.error * (1 - 1e-12))) break;
        fit = f;
        std::copy(trial, trial + n, q);
    }
    return fit;
}

// ---- The grid searches ------------------------------------------------------------------------

// Re-round / re-fit rounds after a grid search (a second one gains < 0.05 % RMSE).
constexpr int kGridPolishRounds = 1;

// Partial sums kept per lane (groups are 8, 16 or 32 values). The lanes are an explicit vector
// (GCC's vector extension; SSE halves on the baseline build, one AVX2 register in the avx2
// clones): left to itself GCC kept the eight partial sums on the stack as scalars. Lane j adds
// values j, j + 8, ... in order, exactly as the scalar loops did, so the output is unchanged.
constexpr int kLanes = 8;
// No helper takes or returns Lanes by value: clang refuses 32-byte vector arguments and returns
// in the baseline (non-AVX) clone, inlined or not. They go by reference.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
// Eight floats at p (any alignment) into v.
inline void load_lanes(Lanes& v, const float* p) {
    std::memcpy(&v, p, sizeof v);
}

// round(clamp(v, lo, hi)) for integer bounds, to nearest even, in floats (vectorisable).
inline float round_clamped(float v, float lo, float hi) {
    v = std::min(std::max(lo, v), hi);  // in this order a NaN becomes lo
    return (v + 12582912.0f) - 12582912.0f;
}

// The same per lane, in place (std::max(lo, v) is lo < v ? v : lo, std::min(m, hi) is
// hi < m ? hi : m).
inline void round_clamp(Lanes& v, const Lanes& lo, const Lanes& hi) {
    v = lo < v ? v : lo;
    v = hi < v ? hi : v;
    v = (v + 12582912.0f) - 12582912.0f;
}

inline double sum_lanes(const Lanes& v) {
    double total = 0;
    for (int j = 0; j < kLanes; ++j) total += v[j];
    return total;
}

// Sums over the quants l_i = round(clamp((x_i - origin) s, lo, hi)).
struct QuantSums {
    double q = 0, qq = 0, xq = 0;  // sum w l, sum w l^2, sum w x l
};

// Inlined into the cloned grid searches (one call per grid point: the call cost as much as the
// 16 values of a Q6_K sub-block).
inline __attribute__((always_inline)) QuantSums quant_sums(int n, const float* x, const float* w,
                                                           float origin, float s, float lo,
                                                           float hi) {
    Lanes q = {}, qq = {}, xq = {};
    const Lanes vo = (Lanes{} + origin), vs = (Lanes{} + s), vlo = (Lanes{} + lo),
                vhi = (Lanes{} + hi);
    int i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        Lanes xv;
        load_lanes(xv, x + i);
        Lanes l = (xv - vo) * vs;
        round_clamp(l, vlo, vhi);
        Lanes wl;
        load_lanes(wl, w + i);
        wl *= l;
        q += wl;
        qq += wl * l;
        xq += wl * xv;
    }
    for (; i < n; ++i) {
        const float l = round_clamped((x[i] - origin) * s, lo, hi);
        q[0] += w[i] * l;
        qq[0] += w[i] * l * l;
        xq[0] += w[i] * l * x[i];
    }
    return {sum_lanes(q), sum_lanes(qq), sum_lanes(xq)};
}

// The grid's inverse scale k of `steps`: levels `centre` +- spread, over `extent`.
float grid_point(int k, int steps, float centre, float spread, float extent) {
    const float t = steps > 1 ? 2.0f * float(k) / float(steps - 1) - 1.0f : 0.0f;
    return (centre + spread * t) / extent;
}

}  // namespace

MW_SEARCH_CLONES
double quantize_with(int n, const float* x, const float* w, float scale, float offset, int qmin,
                     int qmax, int* q) {
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    const float use = std::isfinite(inv) ? inv : 0.0f;
    Lanes e = {};
    const Lanes vo = (Lanes{} + offset), vu = (Lanes{} + use), va = (Lanes{} + scale);
    const Lanes vlo = (Lanes{} + float(qmin)), vhi = (Lanes{} + float(qmax));
    int i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        Lanes xv;
        load_lanes(xv, x + i);
        Lanes l = (xv - vo) * vu;
        round_clamp(l, vlo, vhi);
        for (int j = 0; j < kLanes; ++j) q[i + j] = int(l[j]);
        const Lanes d = xv - (va * l + vo);
        Lanes wv;
        load_lanes(wv, w + i);
        e += wv * d * d;
    }
    for (; i < n; ++i) {
        const float l = round_clamped((x[i] - offset) * use, float(qmin), float(qmax));
        q[i] = int(l);
        const float d = x[i] - (scale * l + offset);
        e[0] += w[i] * d * d;
    }
    return sum_lanes(e);
}

Fit fit_scale(int n, const float* x, const float* w, int qmin, int qmax, bool both_signs, int* q) {
    Fit best = sweep_scale(n, x, w, qmin, qmax, q);
    if (both_signs) {
        // A negative scale: x ~ (-a) (-q), i.e. positive scales over the mirrored range.
        int nq[kMaxGroup] = {};
        const Fit f = sweep_scale(n, x, w, -qmax, -qmin, nq);
        if (f.error < best.error) {
            best = {-f.scale, 0.0f, f.error};
            for (int i = 0; i < n; ++i) q[i] = -nq[i];
        }
    }
    return polish_scale(n, x, w, qmin, qmax, best, q);
}

Fit fit_scale_offset(int n, const float* x, const float* w, int qmax, bool nonpositive_offset,
                     int* q) {
    float xmin = x[0], xmax = x[0];
    for (int i = 1; i < n; ++i) {
        xmin = std::min(xmin, x[i]);
        xmax = std::max(xmax, x[i]);
    }
    // Stage 1: rounding from the minimum, over the whole window of scales.
    const float origin0 = nonpositive_offset ? std::min(xmin, 0.0f) : xmin;
    const float s_full = xmax > origin0 ? (qmax + 0.5f) / (xmax - origin0) : 1.0f;
    const float window = window_fraction(qmax);
    Fit best = sweep_scale_offset(n, x, w, qmax, origin0, s_full * (1 - window),
                                  s_full * (1 + window), nonpositive_offset, q);
    // Stage 2: the origin decides where the rounding thresholds fall, which the scale sweep
    // does not cover: origins spread over one step around the fitted offset, each with a narrow
    // window around the fitted scale. (More origins or wider windows gain < 0.1 % RMSE.)
    constexpr int kOrigins = 3;
    constexpr float kNarrow = 0.06f;
    if (best.scale > 0.0f && std::isfinite(1.0f / best.scale)) {
        const float a = best.scale, c = best.offset;
        int trial[kMaxGroup];
        for (int k = 0; k < kOrigins; ++k) {
            float origin = c + a * (float(k) / kOrigins - 0.5f);
            if (nonpositive_offset) origin = std::min(origin, 0.0f);
            const Fit f = sweep_scale_offset(n, x, w, qmax, origin, (1 - kNarrow) / a,
                                             (1 + kNarrow) / a, nonpositive_offset, trial);
            if (f.error < best.error) {
                best = f;
                std::copy(trial, trial + n, q);
            }
        }
    }
    return polish_scale_offset(n, x, w, qmax, nonpositive_offset, best, q);
}

MW_SEARCH_CLONES
Fit fit_scale_grid(int n, const float* x, const float* w, int qmin, int qmax, int steps,
                   float spread, int* q) {
    // The value of largest magnitude goes to the longer side of the range (-qmin of -8..7): the
    // scale takes the sign that puts it there.
    Lanes hi = {}, lo = {}, sxx = {};
    int i0 = 0;
    for (; i0 + kLanes <= n; i0 += kLanes) {
        Lanes xv;
        load_lanes(xv, x + i0);
        hi = hi < xv ? xv : hi;  // std::max, std::min
        lo = xv < lo ? xv : lo;
        Lanes wv;
        load_lanes(wv, w + i0);
        sxx += wv * xv * xv;
    }
    for (; i0 < n; ++i0) {
        hi[0] = std::max(hi[0], x[i0]);
        lo[0] = std::min(lo[0], x[i0]);
        sxx[0] += w[i0] * x[i0] * x[i0];
    }
    float pmax = 0.0f, nmin = 0.0f;
    double xx = 0;
    for (int j = 0; j < kLanes; ++j) {
        pmax = std::max(pmax, hi[j]);
        nmin = std::min(nmin, lo[j]);
        xx += sxx[j];
    }
    const float big = pmax >= -nmin ? pmax : nmin;
    Fit fit;
    fit.error = xx;
    std::fill(q, q + n, 0);
    if (big == 0.0f) return fit;
    const int side = std::max(-qmin, qmax);
    const float sign = -qmin >= qmax ? -1.0f : 1.0f;
    const float extent = sign * big;  // maps big to `side` levels of the longer side
    QuantSums best_sums;
    float best_s = 0.0f;
    double best = 0.0;
    for (int k = 0; k < steps; ++k) {
        const float s_k = grid_point(k, steps, float(side), spread, extent);
        if (!std::isfinite(s_k)) continue;
        const QuantSums m = quant_sums(n, x, w, 0.0f, s_k, float(qmin), float(qmax));
        if (m.qq > 0 && m.xq * m.xq > best * m.qq) {
            best = m.xq * m.xq / m.qq;
            best_s = s_k;
            best_sums = m;
        }
    }
    if (best_s == 0.0f) return fit;
    // Polish: re-round with the fitted scale; keep whichever rounding fits better.
    const float a0 = float(best_sums.xq / best_sums.qq);
    for (int round = 0; round < kGridPolishRounds && a0 != 0.0f; ++round) {
        const float s1 = 1.0f / a0;
        if (!std::isfinite(s1)) break;
        const QuantSums m = quant_sums(n, x, w, 0.0f, s1, float(qmin), float(qmax));
        if (m.qq > 0 && m.xq * m.xq > best * m.qq) {
            best = m.xq * m.xq / m.qq;
            best_s = s1;
            best_sums = m;
        }
    }
    for (int i = 0; i < n; ++i) q[i] = int(round_clamped(x[i] * best_s, float(qmin), float(qmax)));
    fit.scale = float(best_sums.xq / best_sums.qq);
    fit.error = std::max(0.0, xx - best);
    return fit;
}

MW_SEARCH_CLONES
Fit fit_scale_offset_grid(int n, const float* x, const float* w, int qmax, bool nonpositive_offset,
                          int steps, float spread, int* q) {
    Lanes hi = (Lanes{} + x[0]), lo = (Lanes{} + x[0]), sw = {}, sx = {}, sxx = {};
    int i0 = 0;
    for (; i0 + kLanes <= n; i0 += kLanes) {
        Lanes v, wv;
        load_lanes(v, x + i0);
        load_lanes(wv, w + i0);
        hi = hi < v ? v : hi;  // std::max, std::min
        lo = v < lo ? v : lo;
        sw += wv;
        sx += wv * v;
        sxx += wv * v * v;
    }
    for (; i0 < n; ++i0) {
        hi[0] = std::max(hi[0], x[i0]);
        lo[0] = std::min(lo[0], x[i0]);
        sw[0] += w[i0];
        sx[0] += w[i0] * x[i0];
        sxx[0] += w[i0] * x[i0] * x[i0];
    }
    AffineSums m;
    float xmin = lo[0], xmax = hi[0];
    for (int j = 0; j < kLanes; ++j) {
        xmin = std::min(xmin, lo[j]);
        xmax = std::max(xmax, hi[j]);
        m.W += sw[j];
        m.X += sx[j];
        m.XX += sxx[j];
    }
    const float origin = nonpositive_offset ? std::min(xmin, 0.0f) : xmin;
    if (!(xmax > origin)) {
        std::fill(q, q + n, 0);
        return solve_affine(m, nonpositive_offset);
    }
    // As in the sweep: what the fit removes from XX, num / den, compared by cross multiplication.
    auto gain = [&](const QuantSums& c, double* num, double* den) {
        const double det = m.W * c.qq - c.q * c.q;
        const double a_num = m.W * c.xq - c.q * m.X;
        const double c_num = c.qq * m.X - c.q * c.xq;
        if (det > 0 && a_num >= 0 && (!nonpositive_offset || c_num <= 0)) {
            *num = m.W * c.xq * c.xq - 2 * c.q * m.X * c.xq + c.qq * m.X * m.X;
            *den = det;
        } else {
            *num = c.xq > 0 ? c.xq * c.xq : 0.0;
            *den = c.qq > 0 ? c.qq : 1.0;
        }
    };
    double best_num = -1.0, best_den = 1.0;
    float best_s = 0.0f, best_origin = origin;
    QuantSums best_sums;
    auto consider = [&](float o, float s_k) {
        if (!std::isfinite(s_k) || !(s_k > 0.0f)) return;
        const QuantSums c = quant_sums(n, x, w, o, s_k, 0.0f, float(qmax));
        double num, den;
        gain(c, &num, &den);
        if (num * best_den > best_num * den) {
            best_num = num;
            best_den = den;
            best_s = s_k;
            best_origin = o;
            best_sums = c;
        }
    };
    for (int k = 0; k < steps; ++k)
        consider(origin, grid_point(k, steps, float(qmax), spread, xmax - origin));
    auto fit_of = [&](const QuantSums& c) {
        AffineSums f = m;
        f.Q = c.q;
        f.QQ = c.qq;
        f.XQ = c.xq;
        return solve_affine(f, nonpositive_offset);
    };
    // Polish: re-round from the fitted offset with the fitted scale (where the rounding
    // thresholds fall is what the grid does not search).
    for (int round = 0; round < kGridPolishRounds && best_s > 0.0f; ++round) {
        const Fit f = fit_of(best_sums);
        if (!(f.scale > 0.0f)) break;
        consider(nonpositive_offset ? std::min(f.offset, 0.0f) : f.offset, 1.0f / f.scale);
    }
    for (int i = 0; i < n; ++i) {
        q[i] = best_s > 0.0f ? int(round_clamped((x[i] - best_origin) * best_s, 0.0f, float(qmax)))
                             : 0;
    }
    return fit_of(best_s > 0.0f ? best_sums : QuantSums{});
}

MW_SEARCH_CLONES
float group_error(int n, const float* x, const float* w, float scale, float offset, int qmin,
                  int qmax) {
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    const float use = std::isfinite(inv) ? inv : 0.0f;
    Lanes e = {};
    const Lanes vo = (Lanes{} + offset), vu = (Lanes{} + use), va = (Lanes{} + scale);
    const Lanes vlo = (Lanes{} + float(qmin)), vhi = (Lanes{} + float(qmax));
    int i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        Lanes xv;
        load_lanes(xv, x + i);
        Lanes l = (xv - vo) * vu;
        round_clamp(l, vlo, vhi);
        const Lanes d = xv - (va * l + vo);
        Lanes wv;
        load_lanes(wv, w + i);
        e += wv * d * d;
    }
    for (; i < n; ++i) {
        const float l = round_clamped((x[i] - offset) * use, float(qmin), float(qmax));
        const float d = x[i] - (scale * l + offset);
        e[0] += w[i] * d * d;
    }
    float total = 0;
    for (int j = 0; j < kLanes; ++j) total += e[j];
    return total;
}

}  // namespace mw::qsearch
