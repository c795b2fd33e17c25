// Speculative decoding in the server: four slots speculating at once (n-gram lookup, and the
// model as its own draft) give every request the greedy text the server gives without
// speculation, on stories260K and on recurrent tiny models (qwen35: DeltaNet state, lfm2: short
// convolutions), in contexts that fill; the responses and /metrics count the drafts; bad
// speculation parameters are refused when the server is created, and by `memwall serve` at start.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "memwall.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "runtime/speculative.h"
#include "server/http_server.h"
#include "support/test_server.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;

using mw::test::post;
using mw::test::Server;

struct Reply {
    std::string text;
    json timings;
};

Reply complete(const Server& s, const std::string& prompt, int max_tokens) {
    int status = 0;
    const json r = post(
        s, "/v1/completions",
        json{{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}}.dump(), &status);
    EXPECT_EQ(status, 200) << r.dump();
    if (!r.is_object() || !r.contains("choices")) return {};
    return {r["choices"][0]["text"].get<std::string>(), r.value("timings", json::object())};
}

// Prompts of different lengths, so that prompt chunks and verification passes share steps.
const std::vector<std::string> kPrompts = {
    "Once upon a time", "The little dog ran to the park and saw a big red ball. The dog",
    "Lily wanted to", "One day, a big bird flew over the house. One day, a big"};

// Each prompt's greedy text from a server without speculation, one request at a time.
std::vector<std::string> plain_texts(const std::string& model, uint32_t n_ctx, int max_tokens) {
    Server s(mw_server_default_params(), 4, n_ctx, model);
    std::vector<std::string> texts;
    for (const std::string& p : kPrompts) texts.push_back(complete(s, p, max_tokens).text);
    return texts;
}

mw_spec_params ngram_params(int draft_max) {
    mw_spec_params sp = mw_spec_default_params();
    sp.type = MW_SPEC_NGRAM;
    sp.draft_max = draft_max;
    sp.ngram_size_n = 2;  // short keys: the tiny models' texts repeat, lookup finds matches
    return sp;
}

struct SpecCase {
    const char* model;
    uint32_t n_ctx;  // for 4 slots; the small ones fill (finish "length") before max_tokens
    int max_tokens;
};

class ServerSpec : public ::testing::TestWithParam<SpecCase> {};

TEST_P(ServerSpec, FourSlotsSpeculatingGiveThePlainGreedyTexts) {
    const SpecCase c = GetParam();
    const std::vector<std::string> plain = plain_texts(c.model, c.n_ctx, c.max_tokens);
    for (const std::string& t : plain) ASSERT_FALSE(t.empty());

    mw_model* draft = nullptr;
    ASSERT_EQ(mw_model_load(mw::test::shared_path(c.model).c_str(), nullptr, &draft), MW_OK)
        << mw_last_error();
    for (const char* mode : {"ngram k=3", "ngram k=8", "self-draft k=4"}) {
        SCOPED_TRACE(std::string(c.model) + ", " + mode);
        mw_spec_params spec = ngram_params(mode[6] == '3' ? 3 : 8);
        mw_server_params sp = mw_server_default_params();
        if (mode[0] == 's') {
            spec.type = MW_SPEC_DRAFT;
            spec.draft_max = 4;
            sp.draft_model = draft;
        }
        sp.speculative = &spec;
        Server s(sp, 4, c.n_ctx, c.model);
        ASSERT_NE(s.server, nullptr) << mw_last_error();
        std::vector<std::future<Reply>> together;
        for (const std::string& p : kPrompts) {
            together.push_back(
                std::async(std::launch::async, [&, p] { return complete(s, p, c.max_tokens); }));
        }
        int64_t drafted = 0, accepted = 0;
        for (size_t i = 0; i < kPrompts.size(); ++i) {
            const Reply r = together[i].get();
            EXPECT_EQ(r.text, plain[i]) << "prompt " << i;
            ASSERT_TRUE(r.timings.contains("draft_n")) << r.timings.dump();
            drafted += r.timings["draft_n"].get<int64_t>();
            accepted += r.timings["draft_n_accepted"].get<int64_t>();
        }
        // Random-weight models seldom repeat themselves: n-gram lookup may find nothing there.
        if (mode[0] == 's' || std::string(c.model).find("stories") != std::string::npos) {
            EXPECT_GT(drafted, 0);
        }
        EXPECT_LE(accepted, drafted);
        // The model as its own draft proposes what the target picks: all accepted.
        if (mode[0] == 's') {
            EXPECT_EQ(accepted, drafted);
        }
        const mw_spec_stats st = mw_server_spec_stats(s.server);
        EXPECT_EQ(st.n_drafted, drafted);
        EXPECT_EQ(st.n_accepted, accepted);
        EXPECT_EQ(st.n_passes > 0, drafted > 0);
        auto metrics = s.client().Get("/metrics");
        ASSERT_TRUE(metrics);
        EXPECT_NE(metrics->body.find("memwall_spec_draft_tokens_total " + std::to_string(drafted)),
                  std::string::npos)
            << metrics->body;
        EXPECT_NE(metrics->body.find("memwall_spec_draft_tokens_accepted_total " +
                                     std::to_string(accepted)),
                  std::string::npos);
    }
    mw_model_free(draft);
}

INSTANTIATE_TEST_SUITE_P(
    Models, ServerSpec,
    ::testing::Values(SpecCase{"models/stories260K.gguf", 1024, 60},
                      SpecCase{"models/stories260K.gguf", 4 * 48, 200},  // slots of 48 fill
                      SpecCase{"reference/models/qwen35-tiny-F16.gguf", 1024, 48},
                      SpecCase{"reference/models/qwen35-tiny-F16.gguf", 4 * 40, 200},
                      SpecCase{"reference/models/lfm2-tiny-F16.gguf", 1024, 48}),
    [](const ::testing::TestParamInfo<SpecCase>& i) {
        std::string n = i.param.model;
        n = n.substr(n.rfind('/') + 1);
        n = n.substr(0, n.find('.'));
        for (char& ch : n) {
            if (ch == '-') ch = '_';
        }
        return n + "_ctx" + std::to_string(i.param.n_ctx);
    });

// The model as its own draft, each drafted token replaced by a wrong one with probability
// 1 - p_right: drafts accepted and rejected in the same steps, so that rejected slots of a
// recurrent model go back to their marks and replay together, beside accepting slots and prompt
// chunks. (Real drafts on random-weight models are all accepted or all rejected.)
class NoisyDrafter final : public mw::Drafter {
  public:
    NoisyDrafter(std::unique_ptr<mw::Drafter> inner, double p_right, uint64_t seed, int32_t n_vocab)
        : inner_(std::move(inner)), p_right_(p_right), rng_(seed), n_vocab_(n_vocab) {}
    const char* name() const override { return "noisy self-draft"; }
    void propose(std::span<const int32_t> context, uint32_t n_max, mw::Draft& out) override {
        inner_->propose(context, n_max, out);
        for (int32_t& t : out.tokens) {
            if (std::uniform_real_distribution<double>(0, 1)(rng_) >= p_right_) {
                t = int32_t((uint64_t(t) + 1 + rng_() % uint64_t(n_vocab_ - 1)) %
                            uint64_t(n_vocab_));
            }
        }
    }

  private:
    std::unique_ptr<mw::Drafter> inner_;
    double p_right_;
    std::mt19937_64 rng_;
    int32_t n_vocab_;
};

TEST_P(ServerSpec, DraftsAcceptedAndRejectedInTheSameStepsKeepTheGreedyTexts) {
    const SpecCase c = GetParam();
    const std::vector<std::string> plain = plain_texts(c.model, c.n_ctx, c.max_tokens);
    const auto model = mw::LoadedModel::load(mw::test::shared_path(c.model), mw::LoadOptions{});
    mw::ContextParams cp;
    cp.n_ctx = c.n_ctx;
    cp.n_seq_max = 4;
    cp.n_threads = 2;
    mw::Context ctx(*model, cp);
    mw::Context draft_ctx(*model, cp);
    mw::server::ServerOptions o;
    o.port = 0;
    o.spec.draft_max = 5;
    const int32_t n_vocab = int32_t(model->model.hp.n_vocab);
    o.make_drafter = [&](uint32_t slot) {
        return std::make_unique<NoisyDrafter>(mw::make_model_drafter(draft_ctx, 0.0f, slot), 0.75,
                                              1234 + slot, n_vocab);
    };
    mw::server::HttpServer server(*model, ctx, std::move(o));
    server.bind();
    std::thread serving([&] { server.run(); });
    auto complete_at = [&](const std::string& prompt) {
        httplib::Client client("127.0.0.1", server.port());
        client.set_read_timeout(60, 0);
        auto res = client.Post(
            "/v1/completions",
            json{{"prompt", prompt}, {"max_tokens", c.max_tokens}, {"temperature", 0}}.dump(),
            "application/json");
        EXPECT_TRUE(res && res->status == 200);
        return res ? json::parse(res->body, nullptr, false) : json();
    };
    for (int round = 0; round < 2; ++round) {  // the second reuses the slots' caches
        std::vector<std::future<json>> together;
        for (const std::string& p : kPrompts) {
            together.push_back(std::async(std::launch::async, [&, p] { return complete_at(p); }));
        }
        for (size_t i = 0; i < kPrompts.size(); ++i) {
            const json r = together[i].get();
            ASSERT_TRUE(r.contains("choices")) << r.dump();
            EXPECT_EQ(r["choices"][0]["text"].get<std::string>(), plain[i])
                << "round " << round << ", prompt " << i;
        }
    }
    const mw::SpecStats st = server.stats().spec;
    server.stop(1.0);
    serving.join();
    // Both outcomes happened, many times.
    EXPECT_GT(st.accepted, 10);
    EXPECT_GT(st.drafted - st.accepted, 10);
}

// Sampling with speculation: the rejection rule draws from the request's own generator, so a
// seed gives the same text again (with drafts accepted and rejected on the way).
TEST(ServerSpecSampling, ASeedGivesTheSameTextAgain) {
    mw_model* draft = nullptr;
    ASSERT_EQ(
        mw_model_load(mw::test::shared_path("models/stories260K.gguf").c_str(), nullptr, &draft),
        MW_OK);
    mw_spec_params spec = ngram_params(4);
    spec.type = MW_SPEC_DRAFT;
    mw_server_params sp = mw_server_default_params();
    sp.speculative = &spec;
    sp.draft_model = draft;
    {
        Server s(sp);
        const json body = {
            {"prompt", "Once upon a time"}, {"max_tokens", 40}, {"seed", 77}, {"temperature", 0.9}};
        json r[2];
        for (json& one : r) {
            int status = 0;
            one = post(s, "/v1/completions", body.dump(), &status);
            ASSERT_EQ(status, 200) << one.dump();
        }
        EXPECT_EQ(r[0]["choices"][0]["text"], r[1]["choices"][0]["text"]);
        EXPECT_EQ(r[0]["usage"]["completion_tokens"], 40);
        EXPECT_GT(r[0]["timings"]["draft_n"].get<int>(), 0);
        EXPECT_LT(r[0]["timings"]["draft_n_accepted"].get<int>(),
                  r[0]["timings"]["draft_n"].get<int>());
    }
    mw_model_free(draft);
}

// llama-server's per-request fields: "speculative.n_max": 0 turns drafting off for that request
// while another slot drafts beside it; n_max and n_min cap the drafts; bad values are 400s in
// OpenAI's error JSON naming the field.
TEST(ServerSpecRequest, PerRequestLimitsAndBadValues) {
    const std::string model = "models/stories260K.gguf";
    mw_model* draft = nullptr;
    ASSERT_EQ(mw_model_load(mw::test::shared_path(model).c_str(), nullptr, &draft), MW_OK);
    mw_spec_params spec = ngram_params(6);
    spec.type = MW_SPEC_DRAFT;
    mw_server_params sp = mw_server_default_params();
    sp.speculative = &spec;
    sp.draft_model = draft;
    {
        Server s(sp, 2, 512, model);
        ASSERT_NE(s.server, nullptr) << mw_last_error();
        auto ask = [&](const json& extra) {
            json body = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}};
            for (const auto& item : extra.items()) body[item.key()] = item.value();
            int status = 0;
            json r = post(s, "/v1/completions", body.dump(), &status);
            return std::make_pair(status, r);
        };
        // Two at once: one with drafting off, one with the server's limits (the self-draft
        // accepts every draft, so it drafts at every step).
        auto off = std::async(std::launch::async, [&] { return ask({{"speculative.n_max", 0}}); });
        auto on = std::async(std::launch::async, [&] { return ask(json::object()); });
        const auto [off_status, off_r] = off.get();
        const auto [on_status, on_r] = on.get();
        ASSERT_EQ(off_status, 200) << off_r.dump();
        ASSERT_EQ(on_status, 200) << on_r.dump();
        EXPECT_EQ(off_r["timings"]["draft_n"], 0) << off_r["timings"].dump();
        EXPECT_GT(on_r["timings"]["draft_n"].get<int>(), 0) << on_r["timings"].dump();
        EXPECT_EQ(off_r["choices"][0]["text"], on_r["choices"][0]["text"]);  // greedy either way
        const int with_server_limit = on_r["timings"]["draft_n"].get<int>();

        // n_max 2: at most 2 drafts a pass, so about a third of the tokens are drafted (40
        // tokens: at most 2 of every 3), fewer than with the server's 6.
        const auto [two_status, two_r] = ask({{"speculative.n_max", 2}});
        ASSERT_EQ(two_status, 200) << two_r.dump();
        const int two = two_r["timings"]["draft_n"].get<int>();
        EXPECT_GT(two, 0);
        EXPECT_LE(two, 2 * 40 / 3 + 2);
        EXPECT_LT(two, with_server_limit);
        EXPECT_EQ(two_r["choices"][0]["text"], on_r["choices"][0]["text"]);
        // p_min 1: the draft model stops as soon as its top token is not certain.
        const auto [p_status, p_r] = ask({{"speculative.p_min", 1.0}});
        ASSERT_EQ(p_status, 200) << p_r.dump();
        EXPECT_LT(p_r["timings"]["draft_n"].get<int>(), with_server_limit);

        struct Bad {
            json extra;
            std::string field, says;
        };
        const std::vector<Bad> bad = {
            {{{"speculative.n_max", -1}}, "speculative.n_max", "between 0 and 6"},
            {{{"speculative.n_max", 7}}, "speculative.n_max", "between 0 and 6"},
            {{{"speculative.n_max", "4"}}, "speculative.n_max", "must be an integer"},
            {{{"speculative.n_max", 2.5}}, "speculative.n_max", "must be an integer"},
            {{{"speculative.n_min", -2}}, "speculative.n_min", "between 0 and 6"},
            {{{"speculative.n_max", 2}, {"speculative.n_min", 3}},
             "speculative.n_min",
             "between 0 and 2"},
            {{{"speculative.p_min", 1.5}}, "speculative.p_min", "between 0 and 1"},
            {{{"speculative.p_min", true}}, "speculative.p_min", "must be a number"},
        };
        for (const Bad& b : bad) {
            const auto [status, r] = ask(b.extra);
            EXPECT_EQ(status, 400) << b.extra.dump() << ": " << r.dump();
            ASSERT_TRUE(r.contains("error")) << r.dump();
            EXPECT_EQ(r["error"]["param"], b.field) << r.dump();
            EXPECT_EQ(r["error"]["type"], "invalid_request_error");
            EXPECT_NE(r["error"]["message"].get<std::string>().find(b.says), std::string::npos)
                << r.dump();
        }
    }
    // A server that does not speculate takes n_max 0 only.
    {
        Server s(mw_server_default_params(), 1, 256, model);
        int status = 0;
        json r = post(s, "/v1/completions",
                      json{{"prompt", "Once"}, {"max_tokens", 4}, {"speculative.n_max", 0}}.dump(),
                      &status);
        EXPECT_EQ(status, 200) << r.dump();
        r = post(s, "/v1/completions",
                 json{{"prompt", "Once"}, {"max_tokens", 4}, {"speculative.n_max", 3}}.dump(),
                 &status);
        EXPECT_EQ(status, 400) << r.dump();
        EXPECT_NE(r.dump().find("does not speculate"), std::string::npos) << r.dump();
    }
    mw_model_free(draft);
}

// The recurrent checkpoint policy of a mixed step (Context::decode_mixed): the sequence reading a
// prompt keeps the checkpoint at the prompt's end, the one verifying drafts leaves none at the
// pass's end (its mark brings it back instead).
TEST(ServerSpecMixed, APromptBesideAVerificationPassKeepsItsCheckpoint) {
    const auto model = mw::LoadedModel::load(
        mw::test::shared_path("reference/models/qwen35-tiny-F16.gguf"), mw::LoadOptions{});
    mw::ContextParams cp;
    cp.n_ctx = 256;
    cp.n_seq_max = 2;
    cp.n_threads = 2;
    mw::Context ctx(*model, cp);
    const std::vector<int32_t> prompt = {5, 17, 42, 99, 7, 300, 12, 64};
    std::vector<mw::BatchToken> batch;
    for (size_t i = 0; i < 4; ++i) batch.push_back({prompt[i], 0, -1, i == 3});
    ctx.decode(batch);  // sequence 0: a prompt of 4, generating since
    batch.clear();
    // One step: sequence 0 verifies a pending token and 3 drafts, sequence 1 reads its prompt.
    ctx.seq_mark(0);
    for (int32_t t : {11, 12, 13, 14}) batch.push_back({t, 0, -1, true});
    for (size_t i = 0; i < prompt.size(); ++i) {
        batch.push_back({prompt[i], 1, -1, i + 1 == prompt.size()});
    }
    const uint32_t verify[] = {0};
    ctx.decode_mixed(batch, verify);
    // Both go on a few tokens: the lengths reached in that step are checkpoints, or not.
    batch.clear();
    for (uint32_t seq : {0u, 1u}) batch.push_back({3, seq, -1, true});
    ctx.decode(batch);
    EXPECT_EQ(ctx.seq_keepable(1, uint32_t(prompt.size())), prompt.size());
    EXPECT_EQ(ctx.seq_keepable(0, 8), 4u);  // the prompt's end, not the verification pass's
    // The verifying sequence rolls back to its mark's length plus what it keeps, after the
    // step, as the scheduler does when a draft is rejected.
    batch.clear();
    ctx.seq_mark(0);
    for (int32_t t : {21, 22, 23}) batch.push_back({t, 0, -1, true});
    ctx.decode_drafts(batch);
    const std::pair<uint32_t, uint32_t> keep[] = {{0u, 10u}};
    ctx.seq_rollback(keep);
    EXPECT_EQ(ctx.seq_len(0), 10u);
    EXPECT_EQ(ctx.seq_tokens(0).back(), 21);
}

TEST(ServerSpecBad, RefusedWhenTheServerIsCreated) {
    const std::string path = mw::test::shared_path("models/stories260K.gguf");
    mw_model* model = nullptr;
    ASSERT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
    mw_model* other = nullptr;  // another vocabulary: 4096 GPT-2 tokens, not 512
    ASSERT_EQ(mw_model_load(mw::test::shared_path("reference/models/qwen2-tiny-F16.gguf").c_str(),
                            nullptr, &other),
              MW_OK);
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 256;
    cp.n_seq_max = 2;
    auto refused = [&](const mw_spec_params& spec, mw_model* draft, const std::string& says) {
        mw_server_params sp = mw_server_default_params();
        sp.port = 0;
        sp.speculative = &spec;
        sp.draft_model = draft;
        mw_server* server = nullptr;
        EXPECT_EQ(mw_server_create(model, &cp, &sp, &server), MW_ERR_INVALID_ARGUMENT) << says;
        EXPECT_EQ(server, nullptr);
        EXPECT_NE(std::string(mw_last_error()).find(says), std::string::npos) << mw_last_error();
        mw_server_free(server);
    };
    mw_spec_params spec = ngram_params(0);
    refused(spec, nullptr, "--draft-max 0");
    spec.draft_max = -2;
    refused(spec, nullptr, "--draft-max -2");
    spec = ngram_params(4);
    spec.ngram_size_n = 0;
    refused(spec, nullptr, "n-gram");
    spec = ngram_params(4);
    spec.type = MW_SPEC_DRAFT;
    refused(spec, nullptr, "no draft_model");
    refused(spec, other, "vocabulary");
    spec.type = MW_SPEC_ORACLE;
    refused(spec, nullptr, "measurement device");
    mw_model_free(other);
    mw_model_free(model);
}

// memwall serve refuses bad speculation flags before it listens.
TEST(ServerSpecBad, ServeRefusesBadFlagsAtStart) {
    const std::string serve = mw::test::cli_path() + " serve -m " +
                              mw::test::shared_path("models/stories260K.gguf") +
                              " --port 0 -c 256 --parallel 2";
    const mw::test::CommandResult zero =
        mw::test::run_command(serve + " --spec-type ngram --draft-max 0");
    EXPECT_EQ(zero.exit_code, 2);
    EXPECT_NE(zero.err.find("--draft-max 0"), std::string::npos) << zero.err;
    const mw::test::CommandResult other = mw::test::run_command(
        serve + " -md " + mw::test::shared_path("reference/models/qwen2-tiny-F16.gguf"));
    EXPECT_EQ(other.exit_code, 1);
    EXPECT_NE(other.err.find("vocabulary"), std::string::npos) << other.err;
    EXPECT_EQ(other.err.find("memwall serve: http"), std::string::npos) << other.err;
}

}  // namespace
