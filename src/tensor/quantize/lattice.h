// File quantizers of the lattice i-quants (lattice.cpp), one search each; what file_quantizer
// (quantize.h) returns for these types. Same contract as the other file quantizers: n a multiple
// of 256, `importance` null or n weights.
#pragma once

#include <cstdint>

namespace mw {

void quantize_iq3_s(const float* src, void* dst, int64_t n, const float* importance);
void quantize_iq3_xxs(const float* src, void* dst, int64_t n, const float* importance);
void quantize_iq2_xxs(const float* src, void* dst, int64_t n, const float* importance);
void quantize_iq2_xs(const float* src, void* dst, int64_t n, const float* importance);
void quantize_iq2_s(const float* src, void* dst, int64_t n, const float* importance);
void quantize_iq1_s(const float* src, void* dst, int64_t n, const float* importance);
void quantize_iq1_m(const float* src, void* dst, int64_t n, const float* importance);

}  // namespace mw
