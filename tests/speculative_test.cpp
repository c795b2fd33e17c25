// Speculative decoding: greedy text with every drafter (oracle, the model as its own draft,
// n-gram lookup) equals greedy text without speculation, on paged, sliding-window (ring) and
// recurrent models, F16 and Q4_K_M, for several draft lengths, in a context that fills (and
// shifts where the model can); rollback leaves a recurrent state where a fresh pass would; with
// sampling and deliberately bad drafts, the first token's distribution is the target's
// (chi-square); bad parameters and vocabularies are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "plan/spec_estimate.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "runtime/speculative.h"
#include "support/model_inputs.h"
#include "support/spec_generate.h"
#include "support/test_support.h"

namespace mw {
namespace {

ContextParams params(uint32_t n_ctx, uint32_t n_batch) {
    ContextParams p;
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_threads = 2;
    return p;
}

SamplerParams greedy() {
    SamplerParams s;
    s.temperature = 0.0f;
    return s;
}

struct GenRun {
    std::vector<int32_t> tokens;  // generated (prompt excluded)
    SpecStats stats;
};

using MakeDrafter = std::function<std::unique_ptr<Drafter>(const std::vector<int32_t>& ref)>;

// Generates n tokens after the prompt, greedy, shifting a full context (keeping the prompt's
// first 4 tokens, dropping half the rest) when the model can, stopping at a full one otherwise;
// with speculation when make_drafter is given (`ref`: the plain run's prompt + text).
GenRun generate(const LoadedModel& m, const std::vector<int32_t>& prompt, uint32_t n,
                uint32_t n_ctx, uint32_t n_batch, const MakeDrafter& make_drafter = nullptr,
                uint32_t k = 4, const std::vector<int32_t>& ref = {}) {
    Context ctx(m, params(n_ctx, n_batch));
    Sampler sampler(greedy());
    for (int32_t t : prompt) sampler.accept(t);
    ctx.decode(prompt.data(), uint32_t(prompt.size()), false);
    std::unique_ptr<Speculator> spec;
    if (make_drafter) {
        SpecParams sp;
        sp.draft_max = k;
        spec = std::make_unique<Speculator>(ctx, 0, make_drafter(ref), sp);
    }
    GenRun r;
    r.tokens = test::generate_tokens(ctx, sampler, spec.get(), n, true);
    if (spec) r.stats = spec->stats();
    return r;
}

struct GreedyCase {
    const char* path;
    uint32_t n_ctx;  // small enough to fill (and shift) within the generated tokens
    uint32_t n_gen;
    uint32_t n_batch;
    uint32_t window;  // > 0: the sliding window shrunk to this (the ring then wraps)
};

class SpecGreedy : public testing::TestWithParam<GreedyCase> {};

TEST_P(SpecGreedy, EveryDrafterGivesThePlainGreedyText) {
    const GreedyCase& c = GetParam();
    auto m = test::load_shared(c.path);
    if (c.window) {
        ASSERT_GT(m->model.hp.n_swa, 0u);
        m->model.hp.n_swa = c.window;
    }
    const auto prompt = test::book_tokens(*m, 3000, 24, 1200, 1);
    const GenRun plain = generate(*m, prompt, c.n_gen, c.n_ctx, c.n_batch);
    ASSERT_GE(plain.tokens.size(), 20u);
    std::vector<int32_t> ref = prompt;
    ref.insert(ref.end(), plain.tokens.begin(), plain.tokens.end());
    const uint32_t n = uint32_t(plain.tokens.size());
    const int32_t n_vocab = int32_t(m->model.hp.n_vocab);

    for (uint32_t k : {1u, 3u, 8u}) {
        for (float p : {0.0f, 0.5f, 0.9f}) {
#ifdef MW_TEST_SANITIZED
            // Under the sanitizers (several times slower) each draft length with one acceptance
            // rate, each rate with one length: three of the nine.
            if ((k == 1) != (p == 0.0f) || (k == 3) != (p == 0.5f)) continue;
#endif
            SCOPED_TRACE("oracle p=" + std::to_string(p) + " k=" + std::to_string(k));
            const GenRun r = generate(
                *m, prompt, n, c.n_ctx, c.n_batch,
                [&](const auto& rf) { return make_oracle_drafter(rf, p, 7 + k, n_vocab); }, k, ref);
            EXPECT_EQ(r.tokens, plain.tokens);
            EXPECT_GT(r.stats.passes, 0);
            if (p == 0.0f) {
                EXPECT_EQ(r.stats.accepted, 0);
            }
        }
    }
    // Before a shift (the oracle follows the sequence's own tokens, which a shift changes) the
    // drafts of p = 0.9 are mostly accepted: the passes produce several tokens each.
    {
        const GenRun r = generate(
            *m, prompt, n, c.n_ctx, c.n_batch,
            [&](const auto& rf) { return make_oracle_drafter(rf, 1.0f, 1, n_vocab); }, 4, ref);
        EXPECT_EQ(r.tokens, plain.tokens);
        EXPECT_GT(double(r.stats.generated) / double(r.stats.passes + r.stats.plain_steps), 1.5);
    }
    // The model as its own draft (in a context of its own): drafts are mostly right.
    for (uint32_t k : {2u, 5u}) {
        SCOPED_TRACE("self-draft k=" + std::to_string(k));
        Context draft_ctx(*m, params(c.n_ctx, c.n_batch));
        const GenRun r = generate(
            *m, prompt, n, c.n_ctx, c.n_batch,
            [&](const auto&) { return make_model_drafter(draft_ctx, 0.0f); }, k, ref);
        EXPECT_EQ(r.tokens, plain.tokens);
        EXPECT_GT(r.stats.accepted, 0);
    }
    {
        SCOPED_TRACE("ngram");
        const GenRun r = generate(
            *m, prompt, n, c.n_ctx, c.n_batch,
            [&](const auto&) { return make_ngram_drafter(2, 8); }, 6, ref);
        EXPECT_EQ(r.tokens, plain.tokens);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Models, SpecGreedy,
    testing::Values(
        // Paged KV: a context of 96 fills after 72 generated tokens and shifts.
        GreedyCase{"models/stories260K.gguf", 96, 140, 512, 0},
        GreedyCase{"reference/models/kq-tiny-Q4_K_M.gguf", 80, 100, 512, 0},
        // Recurrent (DeltaNet) + attention: rollback restores the state and replays; the
        // context fills (no shift over a recurrent state).
        GreedyCase{"reference/models/qwen35-tiny-F16.gguf", 80, 70, 512, 0},
        GreedyCase{"reference/models/qwen35-tiny-Q4_K_M.gguf", 80, 70, 512, 0},
        // Short convolutions (LFM2).
        GreedyCase{"reference/models/lfm2-tiny-F16.gguf", 80, 70, 512, 0},
        // Sliding window 16 with batches of 16: a ring of 32 positions, wrapped many times,
        // drafts up to 8 written into it and rejected.
        GreedyCase{"reference/models/gemma3-tiny-F16.gguf", 96, 140, 16, 16},
        GreedyCase{"reference/models/gemma3-tiny-Q4_K_M.gguf", 96, 140, 16, 16}),
    [](const testing::TestParamInfo<GreedyCase>& p) {
        std::string name = p.param.path;
        name = name.substr(name.rfind('/') + 1);
        name = name.substr(0, name.find(".gguf"));
        std::replace(name.begin(), name.end(), '-', '_');
        return name;
    });

// Rolled back to the middle of a verification pass, a recurrent state continues as a fresh
// pass over the kept tokens does.
TEST(SpecRollback, RecurrentStateContinuesLikeAFreshPass) {
    const auto m = test::load_shared("reference/models/qwen35-tiny-F16.gguf");
    const auto t = test::book_tokens(*m, 1000, 40, 1200, 1);
    const uint32_t n_vocab = m->model.hp.n_vocab;
    Context ctx(*m, params(128, 512));
    ctx.decode(t.data(), 30, false);
    ctx.seq_mark(0);
    std::vector<BatchToken> batch;
    for (uint32_t i = 30; i < 38; ++i) batch.push_back({t[i], 0, -1, true});
    ctx.decode_drafts(batch);
    const std::vector<float> at33(ctx.logits(3), ctx.logits(3) + n_vocab);
    ctx.seq_rollback(0, 34);
    EXPECT_EQ(ctx.seq_len(0), 34u);
    // The pass's logits stay readable after the replay.
    ASSERT_NE(ctx.logits(3), nullptr);
    EXPECT_EQ(std::vector<float>(ctx.logits(3), ctx.logits(3) + n_vocab), at33);
    ctx.decode(&t[34], 1, false);
    Context fresh(*m, params(128, 512));
    fresh.decode(t.data(), 35, false);
    EXPECT_LT(test::rel_rms(ctx.logits(-1), fresh.logits(-1), n_vocab), 3e-3);
    // Outside [mark, length]: refused.
    EXPECT_THROW(ctx.seq_rollback(0, 20), Error);
}

// A drafter that proposes from a distribution far from the target's: tokens drawn from q,
// which puts most mass on one token the target finds unlikely.
class BadDrafter final : public Drafter {
  public:
    explicit BadDrafter(uint64_t seed) : rng_(seed) {}
    const char* name() const override { return "bad"; }
    void propose(std::span<const int32_t>, uint32_t n_max, Draft& out) override {
        out.clear();
        for (uint32_t i = 0; i < n_max; ++i) {
            std::vector<TokenProb> q;
            for (int32_t id = 0; id < 8; ++id) q.push_back({id * 3 + 1, id == 0 ? 0.5f : 0.5f / 7});
            const double u = double(rng_() >> 11) * (1.0 / 9007199254740992.0);
            double cum = 0.0;
            int32_t pick = q.back().id;
            for (const TokenProb& t : q) {
                cum += t.p;
                if (u < cum) {
                    pick = t.id;
                    break;
                }
            }
            out.tokens.push_back(pick);
            out.q.push_back(std::move(q));
        }
    }

  private:
    std::mt19937_64 rng_;
};

// The chi-square statistic's critical value at significance alpha (Wilson-Hilferty).
double chi2_critical(int dof, double z) {
    const double d = dof;
    const double a = 2.0 / (9.0 * d);
    return d * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// With sampling, the token after the pending one is drawn from the target's distribution
// whatever the draft: 2000 steps (fixed seeds) against the exact probabilities, for a drawn bad
// draft (q far from p) and a deterministic wrong one; chi-square below its 0.1 % critical value.
TEST(SpecSampling, FirstTokenKeepsTheTargetDistributionWithABadDraft) {
    const auto m = test::load_shared("models/stories260K.gguf");
    const auto prompt = test::book_tokens(*m, 500, 12, 1200, 1);
    const int32_t n_vocab = int32_t(m->model.hp.n_vocab);
    SamplerParams sp;
    sp.temperature = 1.0f;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    const int32_t pending = prompt.back();
    const std::vector<int32_t> prefix(prompt.begin(), prompt.end() - 1);

    // The exact distribution after prefix + pending.
    Context ref_ctx(*m, params(64, 512));
    ref_ctx.decode(prompt.data(), uint32_t(prompt.size()), false);
    Sampler ref_sampler(sp);
    for (int32_t t : prompt) ref_sampler.accept(t);
    std::vector<TokenProb> p;
    ref_sampler.distribution(ref_ctx.logits(-1), n_vocab, p);

    for (int kind = 0; kind < 2; ++kind) {
        SCOPED_TRACE(kind == 0 ? "drawn bad draft" : "deterministic wrong draft");
        Context ctx(*m, params(64, 512));
        ctx.decode(prefix.data(), uint32_t(prefix.size()), false);
        // Deterministic proposals (q = 1 at d): the target's likeliest token half of the time,
        // a random other one otherwise.
        std::vector<int32_t> ref = prompt;
        ref.insert(ref.end(), 3, p.front().id);
        std::unique_ptr<Drafter> d =
            kind == 0 ? std::unique_ptr<Drafter>(std::make_unique<BadDrafter>(99))
                      : make_oracle_drafter(ref, 0.5f, 5, n_vocab);
        SpecParams spp;
        spp.draft_max = 3;
        Speculator spec(ctx, 0, std::move(d), spp);
        const int n_draws = 2000;
        std::vector<int> counts(size_t(n_vocab), 0);
        std::vector<int32_t> out;
        for (int i = 0; i < n_draws; ++i) {
            SamplerParams s = sp;
            s.seed = 1000 + uint64_t(i);
            Sampler sampler(s);
            for (int32_t t : prompt) sampler.accept(t);
            out.clear();
            spec.step(pending, sampler, 4, out);
            ASSERT_FALSE(out.empty());
            ++counts[size_t(out[0])];
            ctx.seq_truncate(0, uint32_t(prefix.size()));
        }
        EXPECT_GT(spec.stats().drafted, n_draws);
        // Bins of expected count >= 5, the rest pooled.
        double chi2 = 0.0, rest_e = 0.0, rest_o = 0.0;
        int bins = 0;
        for (const TokenProb& t : p) {
            const double e = double(t.p) * n_draws, o = counts[size_t(t.id)];
            if (e >= 5.0) {
                chi2 += (o - e) * (o - e) / e;
                ++bins;
            } else {
                rest_e += e;
                rest_o += o;
            }
        }
        for (size_t id = 0; id < counts.size(); ++id) {  // tokens outside p: never drawn
            if (counts[id] > 0 && std::none_of(p.begin(), p.end(), [&](const TokenProb& t) {
                    return size_t(t.id) == id;
                })) {
                ADD_FAILURE() << "token " << id << " drawn, outside the target's distribution";
            }
        }
        if (rest_e > 0.0) {
            chi2 += (rest_o - rest_e) * (rest_o - rest_e) / rest_e;
            ++bins;
        }
        ASSERT_GE(bins, 5);
        const double critical = chi2_critical(bins - 1, 3.09);  // alpha = 0.001
        std::printf(
            "[ spec sampling ] chi2 %.1f over %d bins (critical %.1f), accepted %lld/%lld\n", chi2,
            bins, critical, (long long)spec.stats().accepted, (long long)spec.stats().drafted);
        EXPECT_LT(chi2, critical);
    }
}

TEST(SpecErrors, BadParametersAndVocabulariesAreRefused) {
    const auto m = test::load_shared("models/stories260K.gguf");
    Context ctx(*m, params(64, 512));
    SpecParams sp;
    sp.draft_max = 0;
    EXPECT_THROW(Speculator(ctx, 0, make_ngram_drafter(2, 4), sp), Error);
    sp.draft_max = 2;
    sp.draft_min = 3;
    EXPECT_THROW(Speculator(ctx, 0, make_ngram_drafter(2, 4), sp), Error);
    EXPECT_THROW(make_ngram_drafter(0, 4), Error);
    EXPECT_THROW(make_oracle_drafter({}, 1.5f, 1, 512), Error);
    // (The tiny reference models share stories260K's vocabulary: they pair; qwen2-tiny does not.)
    const auto other = test::load_shared("reference/models/qwen2-tiny-F16.gguf");
    try {
        check_draft_pairs(*m, *other);
        ADD_FAILURE() << "a draft with another vocabulary was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("vocabulary"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(check_draft_pairs(*m, *m));
}

TEST(SpecMath, ExpectedTokensPerPass) {
    EXPECT_DOUBLE_EQ(expected_tokens_per_pass(0.0, 4), 1.0);
    EXPECT_DOUBLE_EQ(expected_tokens_per_pass(1.0, 4), 5.0);
    EXPECT_NEAR(expected_tokens_per_pass(0.8, 4), 1 + 0.8 + 0.64 + 0.512 + 0.4096, 1e-12);
    // plan --draft-acceptance: 10 tok/s decode, 100 tok/s prefill, k = 4: a pass costs the
    // step plus 4 tokens of arithmetic (1.4 steps) and yields 3.36 tokens.
    const SpecEstimate e = estimate_speculative(10, 100, 0.8, 4);
    EXPECT_NEAR(e.pass_cost, 1.4, 1e-12);
    EXPECT_NEAR(e.decode_tok_s, 10 * 3.3616 / 1.4, 1e-9);
    EXPECT_EQ(estimate_speculative(0, 100, 0.8, 4).decode_tok_s, 0.0);
    // A draft reading a tenth of the target's bytes per token adds 4 x 0.1 steps.
    EXPECT_NEAR(estimate_speculative(10, 100, 0.8, 4, 0.1).pass_cost, 1.8, 1e-12);
}

}  // namespace
}  // namespace mw
