// The scale searches behind the file quantizers (tensor/quantize/quantize.h): given a group of
// values x with importance weights w, find the scale a (and offset c) and the integer quants q that
// minimise the weighted squared error sum_i w_i (x_i - a q_i - c)^2.
//
// For fixed quants the best scale and offset are a small least-squares problem, so the search is
// over the quants, i.e. over the inverse scale s that rounds x into them: q_i changes only where
// s x_i crosses a half-integer. The sweep visits every such breakpoint inside a window around the
// scale that first saturates the range, updating the least-squares sums one quant at a time, so
// inside the window the optimum is exact, not a grid approximation. A few rounds of
// "re-round, re-fit" then polish the result.
#pragma once

#include <cstdint>
#include <cstring>

namespace mw::qsearch {

// One group's fit. Every quant lies in the range asked for.
struct Fit {
    float scale = 0.0f;   // a
    float offset = 0.0f;  // c (0 for the symmetric fits)
    double error = 0.0;   // sum_i w_i (x_i - a q_i - c)^2
};

// x ~ a q with q in [qmin, qmax] (qmin <= 0 < qmax). With `both_signs` the scale may be negative,
// which maps the largest |x| onto the longer side of an asymmetric range (e.g. -8 of -8..7);
// without it a >= 0 (for values known to be >= 0, e.g. sub-block scales).
Fit fit_scale(int n, const float* x, const float* w, int qmin, int qmax, bool both_signs, int* q);

// x ~ a q + c with q in [0, qmax] and a >= 0. With `nonpositive_offset` c is kept <= 0 (the
// K-quants store the offset as -dmin * m with m >= 0); otherwise c is free.
Fit fit_scale_offset(int n, const float* x, const float* w, int qmax, bool nonpositive_offset,
                     int* q);

// The fast searches (the default of `memwall quantize`): a fixed grid of `steps` inverse scales
// spread over +-`spread` levels around the one that saturates the range, each quant set scored by
// its least-squares fit from sums taken in one pass, then the best one re-rounded with its fitted
// scale (and offset) while that lowers the error. Inexact between grid points, at a fraction of
// the exact sweeps' cost; same contract as fit_scale / fit_scale_offset.
Fit fit_scale_grid(int n, const float* x, const float* w, int qmin, int qmax, int steps,
                   float spread, int* q);
Fit fit_scale_offset_grid(int n, const float* x, const float* w, int qmax, bool nonpositive_offset,
                          int steps, float spread, int* q);

// The quants for a given scale/offset: q_i = clamp(round((x_i - c) / a), qmin, qmax); 0 when a is
// 0. Returns the weighted squared error.
double quantize_with(int n, const float* x, const float* w, float scale, float offset, int qmin,
                     int qmax, int* q);

// The error of quantize_with in floats, without the quants (vectorised; for comparing trials).
float group_error(int n, const float* x, const float* w, float scale, float offset, int qmin,
                  int qmax);

// Rounds to nearest, ties to even, for |v| < 2^22: adding 1.5 * 2^23 leaves the integer in the
// low mantissa bits (no libm call, no dependence on the rounding mode).
inline int round_int(float v) {
    const float shifted = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace mw::qsearch
