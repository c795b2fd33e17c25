// The grids of the lattice i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M): the
// sets of 8-value (4-value for IQ3) points a group of weights is rounded to, before its signs and
// scale. They are part of the file format: iq_grids.cpp holds each as a subset of a small lattice
// (8 coordinates of 3 levels, or 4 of 8 levels), point k of a grid being the k-th member of its
// set in lattice order; tests/iquants_lattice_test.cpp checks the decoding against ggml's.
#pragma once

#include <cstdint>

namespace mw {

struct IqGrids {
    // Byte j of a point is coordinate j.
    uint64_t iq2xxs[256];  // levels 8, 25, 43
    uint64_t iq2xs[512];   // the same levels
    uint64_t iq2s[1024];   // the same levels
    uint64_t iq1s[2048];   // int8 -1, 0, 1 (IQ1_S and IQ1_M)
    uint32_t iq3xxs[256];  // levels 4, 12, 20, 28, 36, 44, 52, 62
    uint32_t iq3s[512];    // levels 1, 3, ..., 15
    uint8_t signs[128];    // 7 sign bits and the parity bit that makes the count even
};

// Built on first use (thread-safe), then constant.
const IqGrids& iq_grids();

}  // namespace mw
