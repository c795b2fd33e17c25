#include "plan/spec_estimate.h"

#include "runtime/speculative.h"

namespace mw {

SpecEstimate estimate_speculative(double decode_tok_s, double prefill_tok_s, double p, uint32_t k,
                                  double draft_cost) {
    SpecEstimate e;
    e.tokens_per_pass = expected_tokens_per_pass(p, k);
    if (!(decode_tok_s > 0)) return e;
    // The k extra tokens of a pass cost their arithmetic (prefill's rate), the weights are
    // read once; drafting costs k draft steps.
    const double extra = prefill_tok_s > 0 ? double(k) * decode_tok_s / prefill_tok_s : 0.0;
    e.pass_cost = 1.0 + extra + double(k) * draft_cost;
    e.decode_tok_s = decode_tok_s * e.tokens_per_pass / e.pass_cost;
    return e;
}

}  // namespace mw
