// What speculative decoding would give a planned model (plan --draft-acceptance P
// --draft-max N), before any run: a verification pass reads the weights once, as a decode step
// does, and computes the k drafted tokens more, at the prefill rate.
#pragma once

#include <cstdint>

namespace mw {

struct SpecEstimate {
    double tokens_per_pass = 0;  // (1 - p^(k+1)) / (1 - p)
    double pass_cost = 0;        // a pass of k + 1 tokens against one decode step
    double decode_tok_s = 0;     // decode_tok_s x tokens_per_pass / pass_cost
};

// decode_tok_s, prefill_tok_s: the plan's expected speeds; p: the chance that each drafted token
// is accepted; k: tokens drafted per pass; draft_cost: drafting one token against a target
// decode step (0: free, as n-gram lookup; a draft model: its bytes per token over the target's).
SpecEstimate estimate_speculative(double decode_tok_s, double prefill_tok_s, double p, uint32_t k,
                                  double draft_cost = 0);

}  // namespace mw
