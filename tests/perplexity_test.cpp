// Perplexity against llama-perplexity's numbers (../shared/reference/perplexity.json: -c 128 on
// the first 40 KiB of War and Peace, tolerance per model), and the KL divergence of quantized
// models from their F16 original. Runs through the public C API, as the CLI does.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "memwall.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;

#ifdef MW_TEST_SANITIZED
// Sanitized builds run ~20x slower: a prefix of the chunks, checked against the running value.
constexpr int kChunksLimit = 12;
#else
constexpr int kChunksLimit = 0;  // all
#endif

std::string corpus() {
    const std::string text =
        mw::test::read_text(mw::test::shared_path("testdata/text/war-and-peace.txt"));
    return text.substr(0, 40960);
}

struct ModelHandle {
    mw_model* model = nullptr;
    explicit ModelHandle(const std::string& relative) {
        const std::string path = mw::test::shared_path(relative);
        EXPECT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
    }
    ~ModelHandle() { mw_model_free(model); }
};

struct PplRun {
    mw_perplexity_result result{};
    std::vector<double> running;
};

bool record_running(const mw_perplexity_progress* p, void* user_data) {
    static_cast<std::vector<double>*>(user_data)->push_back(p->ppl);
    return true;
}

PplRun run(mw_model* model, mw_model* base, const std::string& text, int chunks,
           mw_type kv = MW_TYPE_F16) {
    PplRun r;
    mw_perplexity_params p = mw_perplexity_default_params();
    p.n_ctx = 128;
    p.n_batch = 128;
    p.n_chunks = chunks;
    p.n_threads = 2;
    p.type_k = kv;
    p.type_v = kv;
    p.progress = record_running;
    p.user_data = &r.running;
    EXPECT_EQ(mw_perplexity(model, base, text.data(), text.size(), &p, &r.result), MW_OK)
        << mw_last_error();
    return r;
}

struct ReferenceCase {
    const char* name;  // key in perplexity.json
    mw_type kv;        // KV cache type
};

class ReferencePerplexity : public ::testing::TestWithParam<ReferenceCase> {};

TEST_P(ReferencePerplexity, MatchesLlamaPerplexity) {
    const json ref =
        json::parse(mw::test::read_text(mw::test::shared_path("reference/perplexity.json")));
    const json& c = ref.at("results").at(GetParam().name);
    const double tolerance = c.at("tolerance_rel").get<double>();
    ModelHandle m(c.at("model").get<std::string>());
    ASSERT_NE(m.model, nullptr);
    const PplRun r = run(m.model, nullptr, corpus(), kChunksLimit, GetParam().kv);
    const mw_perplexity_result& res = r.result;
    EXPECT_EQ(res.n_text_tokens, c.at("n_tokens").get<int64_t>());
    EXPECT_EQ(res.n_ctx, 128u);
    EXPECT_FALSE(res.has_base);
    ASSERT_EQ(r.running.size(), size_t(res.n_chunks));
    EXPECT_EQ(r.running.back(), res.ppl);
    if (kChunksLimit > 0) {
        // The tolerance is derived for the final value over 188 chunks; after a few chunks the
        // rounding noise weighs more (measured within 1.3x of it for these cases), so 5x here.
        // Scoring the wrong positions would still be off by percents.
        ASSERT_EQ(res.n_chunks, kChunksLimit);
        const double expected = c.at("running_ppl").at(size_t(kChunksLimit - 1)).get<double>();
        EXPECT_LE(std::abs(res.ppl - expected) / expected, 5 * tolerance)
            << "memwall " << res.ppl << " vs llama.cpp " << expected << " after " << kChunksLimit
            << " chunks";
        return;
    }
    EXPECT_EQ(res.n_chunks, c.at("n_chunks").get<int32_t>());
    EXPECT_EQ(res.n_scored, c.at("n_chunks").get<int64_t>() * 63);  // positions 64..126
    const double expected = c.at("ppl").get<double>();
    EXPECT_LE(std::abs(res.ppl - expected) / expected, tolerance)
        << "memwall " << res.ppl << " vs llama.cpp " << expected << " (fp64 "
        << c.at("fp64_ppl").get<double>() << ")";
    const double expected_err = c.at("ppl_err").get<double>();
    EXPECT_LE(std::abs(res.ppl_err - expected_err) / expected_err, 1e-3)
        << res.ppl_err << " vs " << expected_err;
}

// llama.cpp's settings use an F16 KV cache. memwall's F16 cache rounds differently from
// llama.cpp's CPU flash attention (which also rounds Q to F16), and for stories260K that
// difference (4.0e-5 relative) exceeds the case's tight tolerance (2.4e-5: llama.cpp is 8e-6 from
// exact there), so stories260K is checked with the F32 cache, with which memwall is within 1e-6 of
// the fp64 perplexity. The kq-tiny cases pass with either cache type.
INSTANTIATE_TEST_SUITE_P(Models, ReferencePerplexity,
                         ::testing::Values(ReferenceCase{"kq-tiny-F16", MW_TYPE_F16},
                                           ReferenceCase{"kq-tiny-F16", MW_TYPE_F32},
                                           ReferenceCase{"kq-tiny-Q4_K_M", MW_TYPE_F16},
                                           ReferenceCase{"stories260K", MW_TYPE_F32}),
                         [](const ::testing::TestParamInfo<ReferenceCase>& param) {
                             std::string n = param.param.name;
                             for (char& ch : n) {
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             }
                             return n + (param.param.kv == MW_TYPE_F16 ? "_kv_f16" : "_kv_f32");
                         });

TEST(KlDivergence, ModelAgainstItselfIsZero) {
    ModelHandle m("reference/models/kq-tiny-F16.gguf");
    const PplRun r = run(m.model, m.model, corpus(), 6);
    const mw_perplexity_result& res = r.result;
    ASSERT_TRUE(res.has_base);
    EXPECT_EQ(res.n_scored, 6 * 63);
    EXPECT_EQ(res.kld_mean, 0.0);
    EXPECT_EQ(res.kld_p99, 0.0);
    EXPECT_EQ(res.kld_max, 0.0);
    EXPECT_EQ(res.top1_agreement, 1.0);
    EXPECT_EQ(res.ppl_ratio, 1.0);
    EXPECT_EQ(res.base_ppl, res.ppl);
}

TEST(KlDivergence, GrowsWithCoarserQuantization) {
    ModelHandle f16("reference/models/kq-tiny-F16.gguf");
    ModelHandle q8("reference/models/kq-tiny-Q8_0.gguf");
    ModelHandle q4("reference/models/kq-tiny-Q4_K_M.gguf");
    const std::string text = corpus();
    const int chunks = kChunksLimit > 0 ? 4 : 16;
    const mw_perplexity_result r8 = run(q8.model, f16.model, text, chunks).result;
    const mw_perplexity_result r4 = run(q4.model, f16.model, text, chunks).result;
    const mw_perplexity_result base = run(f16.model, nullptr, text, chunks).result;
    for (const mw_perplexity_result* r : {&r8, &r4}) {
        EXPECT_GT(r->kld_mean, 0.0);
        EXPECT_GE(r->kld_p99, r->kld_median);
        EXPECT_GE(r->kld_max, r->kld_p99);
        EXPECT_GT(r->kld_err, 0.0);
        EXPECT_LE(r->top1_agreement, 1.0);
        EXPECT_GT(r->top1_agreement, 0.0);
        EXPECT_DOUBLE_EQ(r->base_ppl, base.ppl);  // the base ran on the same chunks
        EXPECT_NEAR(r->ppl_ratio, r->ppl / r->base_ppl, 1e-9 * r->ppl_ratio);
    }
    EXPECT_GT(r4.kld_mean, r8.kld_mean) << "Q4_K_M " << r4.kld_mean << " vs Q8_0 " << r8.kld_mean;
    EXPECT_GT(r4.kld_p99, r8.kld_p99);
    EXPECT_LE(r4.top1_agreement, r8.top1_agreement);
    std::printf(
        "KLD vs F16 over %d chunks: Q8_0 mean %.6f p99 %.6f top-1 %.4f ratio %.6f; "
        "Q4_K_M mean %.6f p99 %.6f top-1 %.4f ratio %.6f\n",
        chunks, r8.kld_mean, r8.kld_p99, r8.top1_agreement, r8.ppl_ratio, r4.kld_mean, r4.kld_p99,
        r4.top1_agreement, r4.ppl_ratio);
}

TEST(Perplexity, RefusesTooShortTextsAndOtherVocabularies) {
    ModelHandle stories("models/stories260K.gguf");
    ModelHandle qwen("reference/models/qwen2-tiny-F16.gguf");
    mw_perplexity_params p = mw_perplexity_default_params();
    p.n_ctx = 128;
    mw_perplexity_result r;
    const std::string text = "Once upon a time";
    EXPECT_EQ(mw_perplexity(stories.model, nullptr, text.data(), text.size(), &p, &r),
              MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("fewer than one chunk"), std::string::npos);
    const std::string long_text = corpus();
    EXPECT_EQ(mw_perplexity(stories.model, qwen.model, long_text.data(), long_text.size(), &p, &r),
              MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("base model"), std::string::npos);
}

TEST(Perplexity, ProgressCanStopEarly) {
    ModelHandle m("models/stories260K.gguf");
    mw_perplexity_params p = mw_perplexity_default_params();
    p.n_ctx = 128;
    p.n_threads = 2;
    int calls = 0;
    p.progress = [](const mw_perplexity_progress* pr, void* user) {
        ++*static_cast<int*>(user);
        EXPECT_GT(pr->tokens_per_s, 0.0);
        return pr->chunk < 3;
    };
    p.user_data = &calls;
    mw_perplexity_result r;
    const std::string text = corpus();
    ASSERT_EQ(mw_perplexity(m.model, nullptr, text.data(), text.size(), &p, &r), MW_OK);
    EXPECT_EQ(calls, 3);
    EXPECT_EQ(r.n_chunks, 3);
    EXPECT_EQ(r.n_scored, 3 * 63);
}

TEST(Perplexity, BatchSizeDoesNotChangeTheResult) {
    ModelHandle m("models/stories260K.gguf");
    const std::string text = corpus();
    mw_perplexity_params p = mw_perplexity_default_params();
    p.n_ctx = 128;
    p.n_chunks = 2;
    p.n_threads = 2;
    p.type_k = p.type_v = MW_TYPE_F32;
    mw_perplexity_result whole, split;
    p.n_batch = 128;
    ASSERT_EQ(mw_perplexity(m.model, nullptr, text.data(), text.size(), &p, &whole), MW_OK);
    p.n_batch = 40;  // chunks decoded in 4 batches, the last one short
    ASSERT_EQ(mw_perplexity(m.model, nullptr, text.data(), text.size(), &p, &split), MW_OK);
    EXPECT_EQ(split.n_scored, whole.n_scored);
    EXPECT_NEAR(split.ppl, whole.ppl, 1e-5 * whole.ppl);
}

TEST(Perplexity, CliPrintsLlamaCppStyleResults) {
    const std::string dir = mw::test::temp_dir();
    mw::test::write_text_file(dir + "/text.txt", corpus());
    const std::string model = mw::test::shared_path("reference/models/kq-tiny-Q8_0.gguf");
    const std::string base = mw::test::shared_path("reference/models/kq-tiny-F16.gguf");
    const auto r =
        mw::test::run_command(mw::test::cli_path() + " perplexity -m " + model + " -f " + dir +
                              "/text.txt -c 128 --chunks 2 -t 2 --kld-base " + base);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Mean KLD"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("99th percentile KLD"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("[2/2] PPL"), std::string::npos) << r.err;  // plain progress lines
    const auto missing = mw::test::run_command(mw::test::cli_path() + " perplexity -m " + model +
                                               " -f " + dir + "/nothing.txt");
    EXPECT_NE(missing.exit_code, 0);
}

}  // namespace
