// mw_generate: the loop every app writes around the context (tokenize, decode the prompt, sample,
// decode, stream text), in one call. It adds nothing the low-level calls lack; the difference is
// that each piece of text it passes on is already in the KV cache, so calls can follow each other.
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "api/api_model.h"
#include "api/api_params.h"
#include "api/api_speculative.h"
#include "base/error.h"
#include "memwall.h"
#include "model/sampler.h"
#include "runtime/context.h"
#include "vocab/vocab.h"

extern "C" {

void mw_generate_params_init(mw_generate_params* out, size_t struct_size) {
    mw_generate_params p{};
    p.n_predict = -1;
    p.add_special = true;
    p.parse_special = true;
    p.render_special = false;
    p.sampling = mw_sampler_default_params();
    p.speculator = nullptr;
    mw::init_params(out, struct_size, p);
}

mw_status mw_generate(mw_context* ctx, const char* prompt, int32_t prompt_len,
                      const mw_generate_params* params, mw_piece_fn on_piece, void* user_data,
                      mw_generate_result* out) {
    using mw::ErrorKind;
    using mw::fail;
    if (out) *out = mw_generate_result{0, 0, MW_STOP_END_TOKEN};
    mw_generate_params p;
    if (!mw::read_params(params, mw_generate_default_params(), &p, "mw_generate_params"))
        return MW_ERR_INVALID_ARGUMENT;
    mw_generate_result r{0, 0, MW_STOP_END_TOKEN};
    const mw_status status = mw::guarded([&] {
        mw::Context* c = mw::context_of(ctx);
        if (!c) fail(ErrorKind::invalid_argument, "mw_generate: ctx is NULL");
        if (prompt_len < 0 || (!prompt && prompt_len > 0)) {
            fail(ErrorKind::invalid_argument, "mw_generate: prompt_len = {} with prompt {}",
                 prompt_len, prompt ? "given" : "NULL");
        }
        if (p.n_predict < -1) {
            fail(ErrorKind::invalid_argument,
                 "mw_generate: n_predict = {}: expected a token count, or -1 for \"until an end "
                 "token or a full context\"",
                 p.n_predict);
        }
        const mw::Vocab& vocab = *c->model().vocab;
        const std::vector<int32_t> tokens =
            vocab.tokenize(std::string_view(prompt ? prompt : "", size_t(prompt_len)),
                           p.add_special, p.parse_special);
        r.n_prompt_tokens = int32_t(tokens.size());
        if (c->n_past() + tokens.size() > c->n_ctx()) {
            fail(ErrorKind::context_full,
                 "mw_generate: the prompt ({} tokens) does not fit after the {} tokens already in "
                 "the context of {}",
                 tokens.size(), c->n_past(), c->n_ctx());
        }
        mw::Sampler sampler(mw::sampler_params_of(p.sampling));
        for (const int32_t t : tokens) sampler.accept(t);
        if (!tokens.empty()) {
            c->decode(tokens.data(), uint32_t(tokens.size()), false);
        } else if (!c->logits(-1)) {
            fail(ErrorKind::invalid_argument,
                 "mw_generate: empty prompt and nothing decoded yet: nothing to continue from");
        }

        mw::TokenTextStream stream(vocab, p.render_special);
        const int32_t n_vocab = int32_t(c->model().model.hp.n_vocab);
        auto emit = [&](const std::string& text) {
            return text.empty() || !on_piece || on_piece(user_data, text.data(), text.size());
        };
        r.stop = MW_STOP_N_PREDICT;
        if (mw::Speculator* spec = mw::speculator_of(p.speculator)) {
            if (&spec->target() != c) {
                fail(ErrorKind::invalid_argument,
                     "mw_generate: the speculator was made for another context");
            }
            // Each step decodes the pending token with the accepted drafts, and returns them
            // and the next pending one: the tokens passed on are the decoded ones, as below.
            std::vector<int32_t> next;
            int32_t pending = sampler.sample(c->logits(-1), n_vocab);
            while (p.n_predict < 0 || r.n_generated < p.n_predict) {
                if (vocab.is_eog(pending)) {
                    r.stop = MW_STOP_END_TOKEN;
                    break;
                }
                if (c->n_past() >= c->n_ctx()) {
                    r.stop = MW_STOP_CONTEXT_FULL;
                    break;
                }
                if (next.empty()) sampler.accept(pending);  // step() accepted the later ones
                const uint32_t left =
                    p.n_predict < 0 ? UINT32_MAX : uint32_t(p.n_predict - r.n_generated);
                next.clear();
                spec->step(pending, sampler, left, next);
                for (size_t i = 0; i < next.size(); ++i) {
                    const int32_t decoded = i == 0 ? pending : next[i - 1];
                    ++r.n_generated;
                    if (!emit(stream.push(decoded))) {
                        r.stop = MW_STOP_CALLBACK;
                        return;
                    }
                }
                pending = next.back();
            }
            emit(stream.finish());
            return;
        }
        while (p.n_predict < 0 || r.n_generated < p.n_predict) {
            const int32_t token = sampler.sample(c->logits(-1), n_vocab);
            if (vocab.is_eog(token)) {
                r.stop = MW_STOP_END_TOKEN;
                break;
            }
            if (c->n_past() >= c->n_ctx()) {
                r.stop = MW_STOP_CONTEXT_FULL;
                break;
            }
            sampler.accept(token);
            c->decode(&token, 1, false);  // before passing it on: what the app saw is cached
            ++r.n_generated;
            if (!emit(stream.push(token))) {
                r.stop = MW_STOP_CALLBACK;
                return;  // the app stopped: nothing more for it, not even held-back bytes
            }
        }
        emit(stream.finish());
    });
    if (out) *out = r;
    return status;
}

}  // extern "C"
