#include "support/spec_generate.h"

namespace mw::test {

std::vector<int32_t> generate_tokens(Context& ctx, Sampler& sampler, Speculator* spec, uint32_t n,
                                     bool shift) {
    const int32_t n_vocab = int32_t(ctx.model().model.hp.n_vocab);
    std::vector<int32_t> tokens;
    int32_t pending = sampler.sample(ctx.logits(-1), n_vocab);
    sampler.accept(pending);
    tokens.push_back(pending);
    std::vector<int32_t> out;
    while (tokens.size() < n) {
        if (ctx.n_past() >= ctx.n_ctx()) {
            if (!shift || !ctx.can_shift()) break;
            ctx.shift(4, (ctx.n_ctx() - 4) / 2);
        }
        out.clear();
        if (spec) {
            spec->step(pending, sampler, n - uint32_t(tokens.size()), out);
        } else {
            ctx.decode(&pending, 1, false);
            out.push_back(sampler.sample(ctx.logits(-1), n_vocab));
            sampler.accept(out.back());
        }
        tokens.insert(tokens.end(), out.begin(), out.end());
        pending = out.back();
    }
    return tokens;
}

}  // namespace mw::test
