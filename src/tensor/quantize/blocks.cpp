// File quantizers of the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0), with the
// round-to-nearest reference as a floor, so a block is never worse than llama.cpp's encoding of
// it without an importance matrix. The fast search refits that encoding's scale (and offset) by
// least squares and re-rounds; with an importance matrix it first picks the best of trial scales
// as llama.cpp does (Q8_0 excepted, as there). The thorough one runs the scale (and offset)
// search of tensor/quantize/search.h per block and tries the fp16 neighbours of the result.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/fp16.h"
#include "tensor/quantize/quantize.h"
#include "tensor/quantize/search.h"
#include "tensor/quants.h"
#include "tensor/types.h"

namespace mw {
namespace {

struct BlockFit {
    uint16_t d = 0, m = 0;  // fp16 scale and offset (offset 0 for the symmetric types)
    int q[kQK];             // set whenever error is finite
    double error = std::numeric_limits<double>::infinity();
};

// The fp16 values next to `bits` (same sign), skipping infinities.
int fp16_neighbours(uint16_t bits, uint16_t out[3]) {
    int count = 0;
    out[count++] = bits;
    if ((bits & 0x7fff) != 0) out[count++] = uint16_t(bits - 1);
    if ((bits & 0x7fff) < 0x7bff) out[count++] = uint16_t(bits + 1);
    return count;
}

// The search result with its scale (and offset) rounded to fp16: the best of the neighbouring
// fp16 values, each with re-rounded quants.
BlockFit fit_block(const float* x, const float* w, int qmin, int qmax, bool has_offset) {
    int q[kQK];
    const qsearch::Fit f = has_offset ? qsearch::fit_scale_offset(kQK, x, w, qmax, false, q)
                                      : qsearch::fit_scale(kQK, x, w, qmin, qmax, qmin != -qmax, q);
    uint16_t ds[3], ms[3] = {0};
    const int n_d = fp16_neighbours(f32_to_fp16(f.scale), ds);
    const int n_m = has_offset ? fp16_neighbours(f32_to_fp16(f.offset), ms) : 1;
    BlockFit best;
    for (int i = 0; i < n_d; ++i) {
        for (int j = 0; j < n_m; ++j) {
            BlockFit t;
            t.d = ds[i];
            t.m = ms[j];
            t.error = qsearch::quantize_with(kQK, x, w, fp16_to_f32(t.d),
                                             has_offset ? fp16_to_f32(t.m) : 0.0f, qmin, qmax, t.q);
            if (t.error < best.error) best = t;
        }
    }
    return best;
}

// The fast search: llama.cpp's round-to-nearest scale (and offset) for the block, rounded to fp16,
// each value rounded to its nearest level at that scale (which is never worse than llama.cpp's
// rounding with the unrounded scale), then one least-squares refit of the scale (and offset) for
// those quants, rounded to fp16, with the quants re-rounded; the better of the two. Rounding to
// the nearest level is each value's best quant at a given scale, so the refit is better whenever
// its least-squares error with the old quants is; its exact error then confirms it. Returns
// false when the scale does not fit in fp16 (the caller falls back to llama.cpp's encoding).
// With an importance matrix, the best least-squares scale over the quants of 19 trial scales
// around `d` (the largest magnitude on qmin, as llama.cpp's make_qx_quants tries them): the
// weights move the best scale away from the one that fits the largest value. Symmetric types.
float weighted_scale(const float* x, const float* w, float d, int qmin, int qmax) {
    constexpr int kLanes = 8;
    double best = 0;
    float best_d = d;
    for (int k = -9; k <= 9; ++k) {
        const float iscale = (float(qmin) + 0.1f * float(k)) / (d * float(qmin));
        float XQ[kLanes] = {}, QQ[kLanes] = {};
        for (int i = 0; i < kQK; i += kLanes) {
            for (int j = 0; j < kLanes; ++j) {
                const float l =
                    std::min(std::max(float(qsearch::round_int(x[i + j] * iscale)), float(qmin)),
                             float(qmax));
                XQ[j] += w[i + j] * x[i + j] * l;
                QQ[j] += w[i + j] * l * l;
            }
        }
        double sxq = 0, sqq = 0;
        for (int j = 0; j < kLanes; ++j) sxq += XQ[j], sqq += QQ[j];
        // The error at the least-squares scale is sum w x^2 - sxq^2 / sqq: the largest
        // sxq^2 / sqq wins.
        if (sqq > 0 && sxq * sxq > best * sqq) {
            best = sxq * sxq / sqq;
            best_d = float(sxq / sqq);
        }
    }
    return best_d;
}

// The offset types' counterpart (llama.cpp's make_qkx3_quants tries 37 scales from
// (qmax - 0.9) / (max - min) up): the least-squares scale and offset of each trial's quants,
// the one of least weighted error. Returns false when no trial fits.
bool weighted_scale_offset(const float* x, const float* w, float xmin, float xmax, int qmax,
                           float* d, float* m) {
    constexpr int kLanes = 8;
    double best = std::numeric_limits<double>::infinity();
    for (int k = 0; k <= 36; ++k) {
        const float iscale = (float(qmax) - 0.9f + 0.05f * float(k)) / (xmax - xmin);
        float W[kLanes] = {}, X[kLanes] = {}, XX[kLanes] = {}, Q[kLanes] = {}, QQ[kLanes] = {},
              XQ[kLanes] = {};
        for (int i = 0; i < kQK; i += kLanes) {
            for (int j = 0; j < kLanes; ++j) {
                const float v = x[i + j], wv = w[i + j];
                const float l = std::min(
                    std::max(float(qsearch::round_int((v - xmin) * iscale)), 0.0f), float(qmax));
                const float wl = wv * l;
                W[j] += wv;
                X[j] += wv * v;
                XX[j] += wv * v * v;
                Q[j] += wl;
                QQ[j] += wl * l;
                XQ[j] += wl * v;
            }
        }
        double sw = 0, sx = 0, sxx = 0, sq = 0, sqq = 0, sxq = 0;
        for (int j = 0; j < kLanes; ++j) {
            sw += W[j], sx += X[j], sxx += XX[j], sq += Q[j], sqq += QQ[j], sxq += XQ[j];
        }
        const double det = sw * sqq - sq * sq;
        if (!(det > 1e-12 * sw * sqq)) continue;
        const double a = (sw * sxq - sq * sx) / det, c = (sqq * sx - sq * sxq) / det;
        const double e = sxx + a * a * sqq + c * c * sw - 2 * a * sxq - 2 * c * sx + 2 * a * c * sq;
        if (e < best) {
            best = e;
            *d = float(a);
            *m = float(c);
        }
    }
    return best < std::numeric_limits<double>::infinity();
}

bool fast_block(const float* x, const float* w, int qmin, int qmax, bool has_offset, bool weighted,
                BlockFit* out) {
    constexpr int kLanes = 8;
    float hi[kLanes], lo[kLanes];
    std::fill(hi, hi + kLanes, x[0]);
    std::fill(lo, lo + kLanes, x[0]);
    for (int i = 0; i < kQK; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) {
            hi[j] = std::max(hi[j], x[i + j]);
            lo[j] = std::min(lo[j], x[i + j]);
        }
    }
    float xmax = hi[0], xmin = lo[0];
    for (int j = 1; j < kLanes; ++j) {
        xmax = std::max(xmax, hi[j]);
        xmin = std::min(xmin, lo[j]);
    }
    // llama.cpp's choice: the offset types span [min, max]; Q8_0 maps |x| max to 127; Q4_0 and
    // Q5_0 map the value of largest magnitude to the end of the longer side (-8, -16).
    float d, m = 0.0f;
    if (has_offset) {
        d = (xmax - xmin) / float(qmax);
        m = xmin;
        if (weighted && xmax > xmin && weighted_scale_offset(x, w, xmin, xmax, qmax, &d, &m) &&
            !(d > 0.0f)) {
            d = (xmax - xmin) / float(qmax);  // a degenerate fit: llama.cpp's choice instead
            m = xmin;
        }
    } else if (qmin == -qmax) {
        d = std::max(xmax, -xmin) / float(qmax);
    } else {
        d = (xmax >= -xmin ? xmax : xmin) / float(qmin);
        if (weighted && d != 0.0f) d = weighted_scale(x, w, d, qmin, qmax);
    }
    const uint16_t d0 = f32_to_fp16(d), m0 = has_offset ? f32_to_fp16(m) : 0;
    if ((d0 & 0x7c00) == 0x7c00 || (m0 & 0x7c00) == 0x7c00) return false;
    const float d16 = fp16_to_f32(d0), m16 = fp16_to_f32(m0);
    const float inv = d16 != 0.0f && std::isfinite(1.0f / d16) ? 1.0f / d16 : 0.0f;

    // One pass (vectorised, lane by lane): the quants, their error and the sums of the refit.
    float E[kLanes] = {}, W[kLanes] = {}, X[kLanes] = {}, XX[kLanes] = {}, Q[kLanes] = {},
          QQ[kLanes] = {}, XQ[kLanes] = {};
    for (int i = 0; i < kQK; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) {
            const float v = x[i + j], wv = w[i + j];
            const float l = std::min(
                std::max(float(qsearch::round_int((v - m16) * inv)), float(qmin)), float(qmax));
            out->q[i + j] = int(l);
            const float e = v - (d16 * l + m16);
            const float wl = wv * l;
            E[j] += wv * e * e;
            W[j] += wv;
            X[j] += wv * v;
            XX[j] += wv * v * v;
            Q[j] += wl;
            QQ[j] += wl * l;
            XQ[j] += wl * v;
        }
    }
    double error = 0, sw = 0, sx = 0, sxx = 0, sq = 0, sqq = 0, sxq = 0;
    for (int j = 0; j < kLanes; ++j) {
        error += E[j];
        sw += W[j];
        sx += X[j];
        sxx += XX[j];
        sq += Q[j];
        sqq += QQ[j];
        sxq += XQ[j];
    }
    out->d = d0;
    out->m = m0;
    out->error = error;

    float a, c = 0.0f;
    if (has_offset) {
        const double det = sw * sqq - sq * sq;
        if (!(det > 1e-12 * sw * sqq)) return true;
        a = float((sw * sxq - sq * sx) / det);
        c = float((sqq * sx - sq * sxq) / det);
    } else {
        if (!(sqq > 0)) return true;
        a = float(sxq / sqq);
    }
    const uint16_t a16 = f32_to_fp16(a), c16 = has_offset ? f32_to_fp16(c) : 0;
    if ((a16 & 0x7c00) == 0x7c00 || (c16 & 0x7c00) == 0x7c00 || (a16 == d0 && c16 == m0)) {
        return true;
    }
    const double a1 = fp16_to_f32(a16), c1 = fp16_to_f32(c16);
    // sum w (x - a1 q - c1)^2 with the old quants.
    const double predicted =
        sxx + a1 * a1 * sqq + c1 * c1 * sw - 2 * a1 * sxq - 2 * c1 * sx + 2 * a1 * c1 * sq;
    if (!(predicted < error)) return true;
    BlockFit f;
    f.d = a16;
    f.m = c16;
    f.error = qsearch::quantize_with(kQK, x, w, float(a1), float(c1), qmin, qmax, f.q);
    if (f.error < error) *out = f;
    return true;
}

double block_error(const float* x, const float* w, const float* decoded) {
    constexpr int kLanes = 8;
    float e[kLanes] = {};
    for (int i = 0; i < kQK; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) {
            const float d = x[i + j] - decoded[i + j];
            e[j] += w[i + j] * d * d;
        }
    }
    double total = 0;
    for (int j = 0; j < kLanes; ++j) total += e[j];
    return total;
}

// Runs the search on every block; `pack` writes a BlockFit into a block. The round-to-nearest
// reference encoding replaces it when that is better.
template <typename Block, typename Pack>
void quantize_blocks(const float* src, void* dst, int64_t n, const float* importance, int qmin,
                     int qmax, bool has_offset, FromFloatFn reference, ToFloatFn decode,
                     QuantSearch search, Pack pack) {
    auto* blocks = static_cast<Block*>(dst);
    const float mean = qdetail::mean_importance(importance, n);
    float w[kQK], decoded[kQK], x[kQK];
    if (!importance) qdetail::block_weights(nullptr, 0.0f, kQK, w);  // all ones
    for (int64_t i = 0; i < n / kQK; ++i) {
        qdetail::finite_copy(src + i * kQK, kQK, x);
        if (importance) qdetail::block_weights(importance + i * kQK, mean, kQK, w);
        if (search == QuantSearch::fast) {
            BlockFit f;
            if (fast_block(x, w, qmin, qmax, has_offset, importance != nullptr, &f)) {
                pack(f, blocks[i]);
            } else {
                reference(x, &blocks[i], kQK);  // a scale beyond fp16: llama.cpp's encoding
            }
            continue;
        }
        Block rtn;
        reference(x, &rtn, kQK);
        decode(&rtn, decoded, kQK);
        const BlockFit f = fit_block(x, w, qmin, qmax, has_offset);
        if (f.error < block_error(x, w, decoded)) {
            pack(f, blocks[i]);
        } else {
            blocks[i] = rtn;
        }
    }
}

// Nibbles as the 32-element types store them: element j in the low nibble of qs[j], element
// j + 16 in its high nibble; bit 4 (Q5) of element j is bit j of qh.
void pack_nibbles(const int* u, uint8_t* qs) {
    for (int j = 0; j < kQK / 2; ++j) qs[j] = uint8_t((u[j] & 0xF) | ((u[j + kQK / 2] & 0xF) << 4));
}

void pack_qh(const int* u, uint8_t qh[4]) {
    uint32_t bits = 0;
    for (int j = 0; j < kQK; ++j) bits |= uint32_t((u[j] >> 4) & 1) << j;
    for (int i = 0; i < 4; ++i) qh[i] = uint8_t(bits >> (8 * i));
}

template <QuantSearch kSearch>
void encode_q4_0(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ4_0>(src, dst, n, importance, -8, 7, false, ref::quantize_row_q4_0,
                               ref::dequantize_row_q4_0, kSearch,
                               [](const BlockFit& f, BlockQ4_0& b) {
                                   int u[kQK];
                                   for (int j = 0; j < kQK; ++j) u[j] = f.q[j] + 8;
                                   b.d = f.d;
                                   pack_nibbles(u, b.qs);
                               });
}

template <QuantSearch kSearch>
void encode_q4_1(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ4_1>(src, dst, n, importance, 0, 15, true, ref::quantize_row_q4_1,
                               ref::dequantize_row_q4_1, kSearch,
                               [](const BlockFit& f, BlockQ4_1& b) {
                                   b.d = f.d;
                                   b.m = f.m;
                                   pack_nibbles(f.q, b.qs);
                               });
}

template <QuantSearch kSearch>
void encode_q5_0(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ5_0>(src, dst, n, importance, -16, 15, false, ref::quantize_row_q5_0,
                               ref::dequantize_row_q5_0, kSearch,
                               [](const BlockFit& f, BlockQ5_0& b) {
                                   int u[kQK];
                                   for (int j = 0; j < kQK; ++j) u[j] = f.q[j] + 16;
                                   b.d = f.d;
                                   pack_nibbles(u, b.qs);
                                   pack_qh(u, b.qh);
                               });
}

template <QuantSearch kSearch>
void encode_q5_1(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ5_1>(src, dst, n, importance, 0, 31, true, ref::quantize_row_q5_1,
                               ref::dequantize_row_q5_1, kSearch,
                               [](const BlockFit& f, BlockQ5_1& b) {
                                   b.d = f.d;
                                   b.m = f.m;
                                   pack_nibbles(f.q, b.qs);
                                   pack_qh(f.q, b.qh);
                               });
}

template <QuantSearch kSearch>
void encode_q8_0(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ8_0>(src, dst, n, importance, -127, 127, false, ref::quantize_row_q8_0,
                               ref::dequantize_row_q8_0, kSearch,
                               [](const BlockFit& f, BlockQ8_0& b) {
                                   b.d = f.d;
                                   for (int j = 0; j < kQK; ++j) b.qs[j] = int8_t(f.q[j]);
                               });
}

}  // namespace

void quantize_q4_0(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q4_0<QuantSearch::fast>(src, dst, n, importance);
}
void quantize_q4_0_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q4_0<QuantSearch::thorough>(src, dst, n, importance);
}

void quantize_q4_1(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q4_1<QuantSearch::fast>(src, dst, n, importance);
}
void quantize_q4_1_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q4_1<QuantSearch::thorough>(src, dst, n, importance);
}

void quantize_q5_0(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q5_0<QuantSearch::fast>(src, dst, n, importance);
}
void quantize_q5_0_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q5_0<QuantSearch::thorough>(src, dst, n, importance);
}

void quantize_q5_1(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q5_1<QuantSearch::fast>(src, dst, n, importance);
}
void quantize_q5_1_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q5_1<QuantSearch::thorough>(src, dst, n, importance);
}

void quantize_q8_0(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q8_0<QuantSearch::fast>(src, dst, n, importance);
}
void quantize_q8_0_thorough(const float* src, void* dst, int64_t n, const float* importance) {
    encode_q8_0<QuantSearch::thorough>(src, dst, n, importance);
}

}  // namespace mw
