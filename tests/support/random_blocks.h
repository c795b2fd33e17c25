// Random weights for the kernel tests: every bit pattern of a quantized type's codes, packed
// scales and mins occurs, while its fp16 scale fields stay finite and sane (random bytes there
// would be NaNs and huge values, which test nothing but the FPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "format/ggml_types.h"
#include "tensor/types.h"

namespace mw::test {

// An fp16 field of a block: its offset, and whether it is a min / offset (drawn 8x larger than
// a scale, either sign) rather than a scale (1e-3..1e-2, either sign).
struct HalfField {
    size_t offset;
    bool is_min;
};
std::vector<HalfField> half_fields(GgmlType type);

// n_rows rows of n_cols elements of t: random bytes with sane fp16 fields for the quantized
// types, normal floats of deviation `sigma` (encoded by the reference) for the others.
std::vector<uint8_t> random_weight_rows(const TypeTraits& t, int64_t n_rows, int64_t n_cols,
                                        std::mt19937& rng, float sigma = 0.1f);

}  // namespace mw::test
