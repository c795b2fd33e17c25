// memwall against llama.cpp's reference outputs (../shared/reference, rules in its README.md):
// prompt tokens, all-position logits within the case's rel_rms, argmax at the required positions,
// and the greedy continuation under the fragile-step rule. Runs through the public C API.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "memwall.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;

// The families of ../shared/reference/index-pending.json that memwall runs now (the model name
// before the first '.' of a case id, e.g. "qwen35-tiny-F16"): one line per family as it lands.
bool pending_family_runs(const std::string& id) {
    // clang-format off
    static const std::vector<std::string> kRunning = {
        // Quantization types (issue 38):
        "kq-tiny-IQ4_NL", "kq-tiny-IQ4_XS", "kq-tiny-MXFP4",   "kq-tiny-TQ1_0",
        "kq-tiny-TQ2_0",  "kq-tiny-IQ3_S",  "kq-tiny-IQ3_XXS", "kq-tiny-IQ2_XXS",
        "kq-tiny-IQ2_XS", "kq-tiny-IQ2_S",  "kq-tiny-IQ1_S",   "kq-tiny-IQ1_M",
        // Architectures (issues 37, 41):
        "qwen35-tiny-F16",
        "qwen35-tiny-Q8_0",
        "qwen35-tiny-Q4_K_M",
        "qwen35moe-tiny-F16",
        "qwen35moe-tiny-Q8_0",
        "qwen35moe-tiny-Q4_K_M",
        "lfm2-tiny-F16",
        "lfm2-tiny-Q4_K_M",
        "lfm2moe-tiny-F16",
        "lfm2moe-tiny-Q4_K_M",
        "smollm3-tiny-F16",
        "smollm3-tiny-Q4_K_M",
        "gpt-oss-tiny-F16",
        "gpt-oss-tiny-MXFP4",
        "gemma4moe-tiny-F16",
        "gemma4moe-tiny-Q4_K_M",
        "gemma4-tiny-F16",
        "gemma4-tiny-Q4_K_M",
    };
    // clang-format on
    const std::string model = id.substr(0, id.find('.'));
    for (const std::string& family : kRunning) {
        if (model == family) return true;
    }
    return false;
}

std::vector<std::string> case_ids() {
    std::vector<std::string> ids;
    try {
        const std::string dir = mw::test::shared_dir() + "/reference/";
        const json index = json::parse(mw::test::read_text(dir + "index.json"));
        for (const json& c : index.at("cases")) ids.push_back(c.at("id").get<std::string>());
        const json pending = json::parse(mw::test::read_text(dir + "index-pending.json"));
        for (const json& c : pending.at("cases")) {
            const std::string id = c.at("id").get<std::string>();
            if (pending_family_runs(id)) ids.push_back(id);
        }
    } catch (...) {
        ids.push_back("missing_shared_reference");
    }
    return ids;
}

std::vector<float> read_f32(const std::string& path) {
    const std::vector<uint8_t> bytes = mw::test::read_file(path);
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
}

mw_type kv_type(const std::string& name) {
    if (name == "f32") return MW_TYPE_F32;
    if (name == "f16") return MW_TYPE_F16;
    ADD_FAILURE() << "unexpected KV type in case: " << name;
    return MW_TYPE_F16;
}

int argmax(const float* v, size_t n) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i) {
        if (v[i] > v[best]) best = i;
    }
    return int(best);
}

std::string hex(const std::string& s) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

class Reference : public ::testing::TestWithParam<std::string> {};

// One case; with n_gpu_layers > 0 every matrix product with a shader runs on the GPU.
void check_case(const std::string& id, int n_gpu_layers) {
    const std::string dir = mw::test::shared_dir() + "/reference";
    ASSERT_NE(id, "missing_shared_reference") << "cannot read " << dir << "/index.json";
    const json c = json::parse(mw::test::read_text(dir + "/cases/" + id + ".json"));
    const json& tol = c.at("tolerance");
    const json& settings = c.at("llama_cpp").at("settings");
    const std::string model_path = mw::test::shared_path(c.at("model").get<std::string>());

    mw_model_params mp = mw_model_default_params();
    mp.n_gpu_layers = n_gpu_layers;
    mw_model* model = nullptr;
    ASSERT_EQ(mw_model_load(model_path.c_str(), &mp, &model), MW_OK) << mw_last_error();
    if (n_gpu_layers > 0) {
        const char* report = mw_model_gpu_report(model);
        ASSERT_NE(report, nullptr);
        if (std::string(report).find("gpu: none") == 0) {
            mw_model_free(model);
            GTEST_SKIP() << "SKIPPED: " << report;
        }
        std::printf("[ %s ] %s", id.c_str(), report);
    }
    const size_t n_vocab = size_t(mw_model_n_vocab(model));
    ASSERT_EQ(n_vocab, c.at("n_vocab").get<size_t>());

    // 1. Tokens of the prompt (add_special per the vocab, parse_special = true).
    const std::string prompt = c.at("prompt").get<std::string>();
    const auto expected_tokens = c.at("prompt_tokens").get<std::vector<int32_t>>();
    std::vector<int32_t> tokens(prompt.size() + 16);
    const int32_t n_tok = mw_tokenize(model, prompt.data(), int32_t(prompt.size()), tokens.data(),
                                      int32_t(tokens.size()), true, true);
    ASSERT_GT(n_tok, 0) << mw_last_error();
    tokens.resize(size_t(n_tok));
    EXPECT_EQ(tokens, expected_tokens);

    // 2. All-position logits of the prompt as one batch.
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = uint32_t(expected_tokens.size() + c.at("greedy_n").get<size_t>() + 8);
    cp.n_batch = uint32_t(expected_tokens.size());
    cp.n_threads = 2;
    cp.type_k = kv_type(settings.at("type_k").get<std::string>());
    cp.type_v = kv_type(settings.at("type_v").get<std::string>());
    mw_context* ctx = nullptr;
    ASSERT_EQ(mw_context_create(model, &cp, &ctx), MW_OK) << mw_last_error();
    ASSERT_EQ(mw_decode(ctx, expected_tokens.data(), int32_t(expected_tokens.size()), true), MW_OK)
        << mw_last_error();

    const std::vector<float> ref =
        read_f32(dir + "/cases/" + c.at("logits_file").get<std::string>());
    const auto positions = c.at("logits_positions").get<std::vector<int>>();
    ASSERT_EQ(ref.size(), positions.size() * n_vocab);
    std::set<int> excused;  // MoE: positions where another expert choice is legitimate
    if (tol.contains("routing_fragile_positions")) {
        for (int p : tol.at("routing_fragile_positions")) excused.insert(p);
    }
    const std::set<int> top1_required = tol.at("top1_required_positions").get<std::set<int>>();
    const double rel_rms_tol = tol.at("rel_rms").get<double>();
    double worst = 0.0;
    int worst_pos = -1;
    for (size_t row = 0; row < positions.size(); ++row) {
        const int pos = positions[row];
        const float* ours = mw_get_logits(ctx, pos);
        ASSERT_NE(ours, nullptr);
        const float* theirs = ref.data() + row * n_vocab;
        double diff = 0.0, norm = 0.0;
        for (size_t v = 0; v < n_vocab; ++v) {
            diff += double(ours[v] - theirs[v]) * double(ours[v] - theirs[v]);
            norm += double(theirs[v]) * double(theirs[v]);
        }
        const double rel = std::sqrt(diff / norm);
        if (excused.count(pos)) continue;
        if (rel > worst) {
            worst = rel;
            worst_pos = pos;
        }
        EXPECT_LE(rel, rel_rms_tol) << "position " << pos;
        if (top1_required.count(pos)) {
            EXPECT_EQ(argmax(ours, n_vocab), argmax(theirs, n_vocab))
                << "argmax at position " << pos;
        }
    }
    ::testing::Test::RecordProperty("worst_rel_rms", std::to_string(worst));
    std::printf("[ %s ] worst rel_rms %.3g at position %d (tolerance %.3g)\n", id.c_str(), worst,
                worst_pos, rel_rms_tol);

    // 3. Greedy continuation, one token per step through the KV cache.
    const auto greedy = c.at("greedy_tokens").get<std::vector<int32_t>>();
    const auto margins = c.at("greedy_margins").get<std::vector<double>>();
    const double fragile = tol.at("fragile_margin").get<double>();
    std::set<int> fragile_steps;
    if (tol.contains("greedy_routing_fragile_steps")) {
        for (int s : tol.at("greedy_routing_fragile_steps")) fragile_steps.insert(s);
    }
    std::vector<int32_t> ours;
    int32_t next = argmax(mw_get_logits(ctx, int32_t(expected_tokens.size()) - 1), n_vocab);
    for (size_t step = 0; step < greedy.size(); ++step) {
        ours.push_back(next);
        if (next != greedy[step]) {
            EXPECT_TRUE(margins[step] < fragile || fragile_steps.count(int(step)))
                << "greedy token " << step << " is " << next << ", llama.cpp's is " << greedy[step]
                << " with a margin of " << margins[step] << " (fragile below " << fragile << ")";
            break;
        }
        ASSERT_EQ(mw_decode(ctx, &next, 1, false), MW_OK) << mw_last_error();
        next = argmax(mw_get_logits(ctx, -1), n_vocab);
    }
    std::printf(
        "[ %s ] greedy: %zu/%zu tokens identical\n", id.c_str(),
        ours.size() -
            (ours == std::vector<int32_t>(greedy.begin(), greedy.begin() + ours.size()) ? 0 : 1),
        greedy.size());

    // 4. When the whole continuation matches, its text must too (byte for byte).
    if (ours == greedy) {
        std::string text;
        char buf[256];
        for (int32_t t : ours) {
            const int32_t n = mw_token_to_piece(model, t, buf, sizeof buf, false);
            ASSERT_GE(n, 0);
            text.append(buf, size_t(n));
        }
        EXPECT_EQ(hex(text), c.at("greedy_text_utf8_hex").get<std::string>());
    }
    mw_context_free(ctx);
    mw_model_free(model);
}

TEST_P(Reference, MatchesLlamaCpp) {
    check_case(GetParam(), 0);
}

// The same cases with -ngl 99 (CI: on Mesa's lavapipe). Types without a shader stay on the CPU.
class ReferenceGpu : public ::testing::TestWithParam<std::string> {};

// The cases the GPU runs. Under the sanitizers (lavapipe's shader compiles alone take seconds a
// process) a third of them, the host code's every path still: the longer prompt of each
// architecture's first model, of every kq-tiny type (each type's upload and shader choice) and of
// every MoE model (its experts' types). The release build runs them all.
std::vector<std::string> gpu_case_ids() {
    std::vector<std::string> ids = case_ids();
#ifdef MW_TEST_SANITIZED
    std::set<std::string> archs;
    std::erase_if(ids, [&](const std::string& id) {
        const std::string model = id.substr(0, id.find('.'));
        const std::string arch = model.substr(0, model.find("-tiny"));
        if (id == "missing_shared_reference") return false;
        if (!id.ends_with(".wap")) return true;
        const bool first_of_arch = archs.insert(arch).second;
        return !(first_of_arch || arch == "kq" || arch.find("moe") != std::string::npos ||
                 arch == "gpt-oss");
    });
#endif
    return ids;
}
TEST_P(ReferenceGpu, MatchesLlamaCppWithEveryLayerOnTheGpu) {
    check_case(GetParam(), 99);
}

std::string case_name(const ::testing::TestParamInfo<std::string>& param_info) {
    std::string name = param_info.param;
    for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, Reference, ::testing::ValuesIn(case_ids()), case_name);
INSTANTIATE_TEST_SUITE_P(Cases, ReferenceGpu, ::testing::ValuesIn(gpu_case_ids()), case_name);

// stories260K, greedy, "Once upon a time": the text equals llama2.c's documented output.
TEST(Stories260K, GreedyTextMatchesLlama2c) {
    const std::string expected = mw::test::read_text(
        mw::test::shared_path("testdata/reference/stories260K.greedy.llama2c.txt"));
    mw_model* model = nullptr;
    const std::string path = mw::test::shared_path("models/stories260K.gguf");
    ASSERT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
    mw_context* ctx = nullptr;
    ASSERT_EQ(mw_context_create(model, nullptr, &ctx), MW_OK) << mw_last_error();
    const std::string prompt = "Once upon a time";
    int32_t tokens[32];
    const int32_t n =
        mw_tokenize(model, prompt.data(), int32_t(prompt.size()), tokens, 32, true, true);
    ASSERT_GT(n, 0);
    ASSERT_EQ(mw_decode(ctx, tokens, n, false), MW_OK) << mw_last_error();
    std::string text = prompt;
    const int32_t n_vocab = mw_model_n_vocab(model);
    for (int i = 0; i < 200 && text.size() < expected.size(); ++i) {
        int32_t next = argmax(mw_get_logits(ctx, -1), size_t(n_vocab));
        if (mw_token_is_eog(model, next)) break;
        char buf[64];
        const int32_t len = mw_token_to_piece(model, next, buf, sizeof buf, false);
        ASSERT_GE(len, 0);
        text.append(buf, size_t(len));
        ASSERT_EQ(mw_decode(ctx, &next, 1, false), MW_OK) << mw_last_error();
    }
    ASSERT_GE(text.size(), 300u);
    EXPECT_EQ(text, expected.substr(0, text.size()));
    mw_context_free(ctx);
    mw_model_free(model);
}

}  // namespace
