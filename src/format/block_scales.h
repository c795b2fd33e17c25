// Where a quantized block keeps its fp16 scales (d, and dmin or m where it has one), so that a
// file whose scales are inf or NaN can be refused at load: one such scale turns every value of
// its block, then every activation downstream, into NaN, and the run goes on printing garbage.
// Checking the scales reads two or four bytes per block (about 1/40 of the weights' bytes for
// Q4_K), not the decoded values `memwall verify` checks.
#pragma once

#include <cstdint>
#include <optional>

namespace mw {

// Whether blocks of this ggml type id carry fp16 scales checked by first_nonfinite_scale (the
// legacy, K and most IQ types; not F32/F16/BF16, whose every value is a weight, nor types whose
// scales are not fp16).
bool has_fp16_block_scales(uint32_t type_id);

// The index of the first of `n_blocks` blocks of type `type_id` at `data` whose fp16 scale is
// inf or NaN; nullopt when every scale is finite (or the type has none).
std::optional<uint64_t> first_nonfinite_scale(uint32_t type_id, const uint8_t* data,
                                              uint64_t n_blocks);

}  // namespace mw
