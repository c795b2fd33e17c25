// The generation loop of the speculative decoding tests (tests/speculative_test.cpp,
// tests/mtp_test.cpp): greedy text with or without a speculator, to compare the two.
#pragma once

#include <cstdint>
#include <vector>

#include "model/sampler.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "runtime/speculative.h"

namespace mw::test {

// Continues the sequence whose prompt ctx has decoded (and sampler accepted) to n tokens: the
// first sampled from the prompt's last logits, then one plain decode or, with spec, one
// speculation pass at a time. A full context is shifted (the first 4 tokens kept, half the rest
// dropped) when `shift` and the model can; otherwise the text stops there. Returns the tokens.
std::vector<int32_t> generate_tokens(Context& ctx, Sampler& sampler, Speculator* spec, uint32_t n,
                                     bool shift);

}  // namespace mw::test
