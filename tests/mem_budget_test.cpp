// The memory budget (docs/memory-budget.md): a MoE model's experts served from an expert cache
// filled from the file give exactly the in-RAM path's logits at every cache size (down to one
// that evicts every token), with and without the prefetch, with pread or O_DIRECT; budgets too
// small are refused with the numbers; a file truncated under a running model is an error, not a
// crash; the CLI flag's bad values are errors naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "memwall.h"
#include "runtime/context.h"
#include "runtime/expert_cache.h"
#include "runtime/layer_stream.h"
#include "runtime/loaded_model.h"
#include "runtime/weight_reads.h"
#include "support/test_support.h"

namespace mw {
namespace {

using nlohmann::json;

struct Case {
    std::string id;  // a reference case: its model and prompt tokens
};

json read_case(const std::string& id) {
    return json::parse(test::read_text(test::shared_dir() + "/reference/cases/" + id + ".json"));
}

// All-position logits of the prompt as one batch, then `n_greedy` greedy steps' logits.
struct Logits {
    std::vector<float> logits;  // [prompt positions + steps] x n_vocab
    std::vector<int32_t> tokens;
    ExpertCacheStats stats;
    uint32_t n_slots = 0;
    LayerStreamStats layers;  // a dense model's
};

ContextParams context_params(size_t n_prompt) {
    ContextParams cp;
    cp.n_ctx = uint32_t(n_prompt + 16);
    cp.n_batch = uint32_t(n_prompt);
    cp.n_threads = 2;
    return cp;
}

Logits run(const LoadedModel& m, const std::vector<int32_t>& prompt, int n_greedy) {
    Context ctx(m, context_params(prompt.size()));
    const size_t n_vocab = m.model.hp.n_vocab;
    Logits r;
    ctx.decode(prompt.data(), uint32_t(prompt.size()), true);
    for (size_t i = 0; i < prompt.size(); ++i) {
        const float* row = ctx.logits(int32_t(i));
        r.logits.insert(r.logits.end(), row, row + n_vocab);
    }
    for (int step = 0; step < n_greedy; ++step) {
        const float* last = r.logits.data() + r.logits.size() - n_vocab;
        const int32_t next = int32_t(std::max_element(last, last + n_vocab) - last);
        r.tokens.push_back(next);
        ctx.decode(&next, 1, false);
        const float* row = ctx.logits(-1);
        r.logits.insert(r.logits.end(), row, row + n_vocab);
    }
    if (m.budget && m.budget->experts()) {
        r.stats = m.budget->experts()->stats();
        r.n_slots = m.budget->experts()->n_slots();
    }
    if (m.budget && m.budget->layers()) r.layers = m.budget->layers()->stats();
    return r;
}

// What a budget must hold for `slots` expert slots (a dense model's: layer slots) with this
// context: measured on a load with an ample budget (the resident part, one slot, one context's
// KV cache and scratch).
uint64_t budget_for(const std::string& path, size_t n_prompt, uint32_t slots) {
    LoadOptions o;
    o.mem_budget = uint64_t(1) << 40;
    const auto m = LoadedModel::load(path, o);
    const Context ctx(*m, context_params(n_prompt));
    const uint64_t slot = m->budget->experts() ? m->budget->experts()->slot_bytes()
                                               : m->budget->layers()->slot_bytes();
    return budget_leaving(
               m->budget->resident() + ctx.kv_bytes() + ctx.scratch_bytes() + slots * slot,
               m->model.hp.n_vocab) +
           slot / 2;
}

// The in-RAM path's logits without repacking (what a budget with repack=false must give).
Logits in_ram_unpacked(const std::string& path, const std::vector<int32_t>& prompt, int n_greedy) {
    LoadOptions p;
    p.repack = false;
    return run(*LoadedModel::load(path, p), prompt, n_greedy);
}

void expect_bitwise(const Logits& got, const Logits& want, const char* what) {
    ASSERT_EQ(got.logits.size(), want.logits.size());
    EXPECT_EQ(got.tokens, want.tokens);
    EXPECT_EQ(std::memcmp(got.logits.data(), want.logits.data(), got.logits.size() * 4), 0) << what;
}

class MemBudget : public ::testing::TestWithParam<std::string> {};

TEST_P(MemBudget, LogitsEqualTheInRamPathAtEveryCacheSize) {
    const json c = read_case(GetParam());
    const std::string path = test::shared_path(c.at("model").get<std::string>());
    const auto prompt = c.at("prompt_tokens").get<std::vector<int32_t>>();
    constexpr int kGreedy = 6;

    const auto in_ram = LoadedModel::load(path, {});
    const Logits want = run(*in_ram, prompt, kGreedy);
    const HParams& hp = in_ram->model.hp;
    uint32_t moe_layers = 0;
    for (const Layer& l : in_ram->model.layers) moe_layers += l.moe ? 1 : 0;
    const uint32_t all = moe_layers * hp.n_expert;

    // Against llama.cpp (the reference's tolerance), as the in-RAM path is in reference_test.
    const std::vector<uint8_t> ref_bytes = test::read_file(
        test::shared_dir() + "/reference/cases/" + c.at("logits_file").get<std::string>());
    const auto positions = c.at("logits_positions").get<std::vector<int>>();
    const size_t n_vocab = hp.n_vocab;
    std::vector<float> ref(ref_bytes.size() / 4);
    std::memcpy(ref.data(), ref_bytes.data(), ref.size() * 4);
    std::vector<int> excused;
    if (c.at("tolerance").contains("routing_fragile_positions")) {
        excused = c.at("tolerance").at("routing_fragile_positions").get<std::vector<int>>();
    }

    struct Setting {
        uint32_t slots;
        bool prefetch;
        bool direct;
        bool repack;
        bool repack_on_fill;  // repack_streamed (else the file's layout throughout)
    };
    const std::vector<Setting> settings = {
        {hp.n_expert_used, true, false, true, true},   // every token evicts
        {hp.n_expert_used, false, false, true, true},  // the same without the I/O thread
        {hp.n_expert_used + 1, true, true, true, true},
        {all / 2, true, false, true, true},
        {all, true, false, true, true},  // everything fits: each expert read once
        {hp.n_expert_used, true, false, false, true},
        {hp.n_expert_used, true, false, true, false},  // the default: the file's layout
    };
    for (const Setting& s : settings) {
        SCOPED_TRACE(testing::Message()
                     << "slots " << s.slots << (s.prefetch ? " prefetch" : "")
                     << (s.direct ? " O_DIRECT" : "") << (s.repack ? "" : " no-repack"));
        LoadOptions o;
        o.mem_budget = budget_for(path, prompt.size(), s.slots);
        o.expert_prefetch = s.prefetch;
        o.direct_io = s.direct;
        o.repack = s.repack;
        o.repack_streamed = s.repack_on_fill;
        const auto m = LoadedModel::load(path, o);
        ASSERT_NE(m->budget, nullptr);
        ASSERT_NE(m->budget->experts(), nullptr);
        const Logits got = run(*m, prompt, kGreedy);
        EXPECT_EQ(got.n_slots, s.slots);
        EXPECT_EQ(got.stats.hits + got.stats.prefetched + got.stats.waited + got.stats.misses,
                  got.stats.acquires);
        EXPECT_GT(got.stats.reads, 0u);
        EXPECT_EQ(got.stats.bytes_read, got.stats.reads * m->budget->experts()->expert_bytes());
        if (s.slots == all) {
            EXPECT_LE(got.stats.reads, uint64_t(all));
        }
        if (s.slots == hp.n_expert_used && !s.prefetch && moe_layers > 1) {
            // Nothing survives a token when a layer's experts fill the cache: the next layer
            // evicts them. Every use after the first of a step's experts is a miss.
            EXPECT_GT(got.stats.misses, got.stats.acquires / 2);
        }
        expect_bitwise(got,
                       s.repack && s.repack_on_fill ? want : in_ram_unpacked(path, prompt, kGreedy),
                       "the expert cache changed the logits");
        const double tol = c.at("tolerance").at("rel_rms").get<double>();
        for (size_t row = 0; row < positions.size(); ++row) {
            const int pos = positions[row];
            if (std::find(excused.begin(), excused.end(), pos) != excused.end()) continue;
            EXPECT_LE(test::rel_rms(got.logits.data() + size_t(pos) * n_vocab,
                                    ref.data() + row * n_vocab, n_vocab),
                      tol)
                << "position " << pos;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(MoeModels, MemBudget,
                         ::testing::Values("moe-tiny-F16.wap", "moe-tiny-Q4_K_M.wap",
                                           "deepseek2-tiny-Q4_K_M.once", "qwen35moe-tiny-F16.wap",
                                           "qwen35moe-tiny-Q4_K_M.wap", "gpt-oss-tiny-F16.wap",
                                           "gpt-oss-tiny-MXFP4.wap"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                             std::string name = param_info.param;
                             for (char& ch : name) {
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             }
                             return name;
                         });

// A dense model under a budget smaller than its weights: its layers stream through slots, the
// first that fit staying, the rest taking turns; the logits are the in-RAM path's, bit for bit.
class MemBudgetDense : public ::testing::TestWithParam<std::string> {};

TEST_P(MemBudgetDense, LogitsEqualTheInRamPathAtEveryStreamSize) {
    const json c = read_case(GetParam());
    const std::string path = test::shared_path(c.at("model").get<std::string>());
    const auto prompt = c.at("prompt_tokens").get<std::vector<int32_t>>();
    constexpr int kGreedy = 6;
    const auto in_ram = LoadedModel::load(path, {});
    const Logits want = run(*in_ram, prompt, kGreedy);
    const uint32_t n_layer = in_ram->model.hp.n_layer;
    ASSERT_GE(n_layer, 2u) << "a model of one layer streams nothing";

    struct Setting {
        uint32_t slots;
        bool prefetch;
        bool direct;
        bool repack;
        bool repack_on_fill;  // repack_streamed (else the file's layout throughout)
    };
    const std::vector<Setting> settings = {
        {1, true, true, true, true},   // one slot: every layer read when needed, no I/O thread
        {2, true, true, true, true},   // two take turns: the next layer read while one computes
        {2, false, true, true, true},  // without the I/O thread: one stays, one takes turns
        {std::min(3u, n_layer), true, false, true, true},  // one stays (3 or more); pread
        {n_layer, true, true, true, true},                 // every layer fits: each read once
        {2, true, true, false, true},
        {2, true, true, true, false},  // the default: a streaming model is not repacked
    };
    for (const Setting& s : settings) {
        SCOPED_TRACE(testing::Message()
                     << "slots " << s.slots << (s.prefetch ? " prefetch" : "")
                     << (s.direct ? " O_DIRECT" : " pread") << (s.repack ? "" : " no-repack"));
        LoadOptions o;
        o.mem_budget = budget_for(path, prompt.size(), s.slots);
        o.expert_prefetch = s.prefetch;
        o.layer_direct_io = s.direct;
        o.repack = s.repack;
        o.repack_streamed = s.repack_on_fill;
        const auto m = LoadedModel::load(path, o);
        ASSERT_NE(m->budget, nullptr);
        ASSERT_NE(m->budget->layers(), nullptr);
        EXPECT_EQ(m->model.layer_source, m->budget->layers());
        const Logits got = run(*m, prompt, kGreedy);
        const LayerStreamStats& st = got.layers;
        EXPECT_EQ(st.n_slots, s.slots);
        const uint32_t turns = s.slots == n_layer ? 0 : s.prefetch && s.slots >= 2 ? 2 : 1;
        EXPECT_EQ(st.pinned, s.slots - turns);
        const uint64_t steps = 1 + kGreedy;  // the prompt as one batch, then one per token
        EXPECT_EQ(st.acquires, steps * n_layer);
        EXPECT_EQ(st.hits + st.prefetched + st.waited + st.misses, st.acquires);
        uint64_t all_layers = 0;
        for (uint32_t il = 0; il < n_layer; ++il) all_layers += layer_matrix_bytes(m->model, il);
        if (s.slots == n_layer) {
            EXPECT_EQ(st.bytes_read, all_layers);  // read once, then hits
            EXPECT_EQ(st.hits, st.acquires - n_layer);
        } else {
            // The turn layers are read again every step; the pinned ones once.
            EXPECT_GE(st.reads, steps * (n_layer - st.pinned));
            EXPECT_EQ(st.hits, (steps - 1) * st.pinned);
        }
        if (!s.prefetch || s.slots == 1) {
            EXPECT_EQ(st.prefetched + st.waited, 0u);
        }
        expect_bitwise(got,
                       s.repack && s.repack_on_fill ? want : in_ram_unpacked(path, prompt, kGreedy),
                       "the layer stream changed the logits");
    }
}

INSTANTIATE_TEST_SUITE_P(DenseModels, MemBudgetDense,
                         ::testing::Values("stories260K.wap", "kq-tiny-Q4_K_M.wap",
                                           "kq-tiny-Q4_0.wap", "kq-tiny-Q8_0.wap",
                                           "phi3-tiny-Q4_K_M.wap", "qwen2-tiny-Q8_0.wap",
                                           "gemma3-tiny-Q4_K_M.wap", "command-r-tiny-Q4_K_M.wap"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                             std::string name = param_info.param;
                             for (char& ch : name) {
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             }
                             return name;
                         });

TEST(MemBudgetErrors, TooSmallForTheDensePartIsRefusedWithTheNumbers) {
    const std::string path = test::shared_path("reference/models/moe-tiny-F16.gguf");
    mw_model_params p = mw_model_default_params();
    EXPECT_EQ(p.mem_budget, 0u);
    p.mem_budget = 8 << 20;  // below the process reserve alone
    mw_model* model = nullptr;
    ASSERT_EQ(mw_model_load(path.c_str(), &p, &model), MW_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(model, nullptr);
    const std::string why = mw_last_error();
    EXPECT_NE(why.find("moe-tiny-F16.gguf"), std::string::npos) << why;
    EXPECT_NE(why.find("a memory budget of 8.0 MiB is too small"), std::string::npos) << why;
    EXPECT_NE(why.find("the dense part"), std::string::npos) << why;
    EXPECT_NE(why.find("2 experts one token needs"), std::string::npos) << why;
}

TEST(MemBudgetErrors, AContextThatDoesNotFitIsRefusedBeforeItsFirstToken) {
    const std::string path = test::shared_path("reference/models/moe-tiny-F16.gguf");
    const uint64_t budget = budget_for(path, 8, 2);
    mw_model_params p = mw_model_default_params();
    p.mem_budget = budget;
    mw_model* model = nullptr;
    ASSERT_EQ(mw_model_load(path.c_str(), &p, &model), MW_OK) << mw_last_error();
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 2048;  // a KV cache far beyond what is left
    cp.type_k = cp.type_v = MW_TYPE_F32;
    mw_context* ctx = nullptr;
    EXPECT_EQ(mw_context_create(model, &cp, &ctx), MW_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(ctx, nullptr);
    const std::string why = mw_last_error();
    EXPECT_NE(why.find("too small for this context"), std::string::npos) << why;
    EXPECT_NE(why.find("KV cache"), std::string::npos) << why;
    mw_expert_cache_stats s;
    ASSERT_EQ(mw_model_expert_cache_stats(model, &s), MW_OK);
    EXPECT_EQ(s.budget_bytes, budget);
    EXPECT_EQ(s.n_slots, 0u);  // the refused context left the cache unsized
    // A context that fits still can be created afterwards.
    cp = mw_context_default_params();
    cp.n_ctx = 24;
    cp.n_batch = 8;
    cp.n_threads = 2;
    ASSERT_EQ(mw_context_create(model, &cp, &ctx), MW_OK) << mw_last_error();
    ASSERT_EQ(mw_model_expert_cache_stats(model, &s), MW_OK);
    EXPECT_GE(s.n_slots, 2u);
    mw_context_free(ctx);
    mw_model_free(model);
}

// Loads a copy of the case's model under a budget of two slots, decodes four prompt tokens,
// cuts the file in half under the running model and expects the next tokens to fail with an I/O
// error naming the file and saying "truncated" and `what`. What is in memory already is not read
// again; what comes from the file is, and the mapping's pages past the end would be SIGBUS if
// they were touched.
void expect_truncation_is_an_error(const std::string& case_id, const std::string& copy,
                                   bool prefetch, const std::string& what) {
    const json c = read_case(case_id);
    const std::string path = test::temp_dir() + "/" + copy;
    std::filesystem::copy_file(test::shared_path(c.at("model").get<std::string>()), path);
    const auto prompt = c.at("prompt_tokens").get<std::vector<int32_t>>();
    LoadOptions o;
    o.mem_budget = budget_for(path, prompt.size(), 2);
    o.expert_prefetch = prefetch;
    const auto m = LoadedModel::load(path, o);
    Context ctx(*m, context_params(prompt.size()));
    ctx.decode(prompt.data(), 4, false);
    const uint64_t size = std::filesystem::file_size(path);
    ASSERT_EQ(::truncate(path.c_str(), off_t(size / 2)), 0);
    try {
        for (size_t i = 4; i < prompt.size(); ++i) ctx.decode(&prompt[i], 1, false);
        FAIL() << "decoding after the truncation did not fail";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::io);
        const std::string why = e.what();
        EXPECT_NE(why.find(path), std::string::npos) << why;
        EXPECT_NE(why.find("truncated"), std::string::npos) << why;
        EXPECT_NE(why.find(what), std::string::npos) << why;
    }
}

TEST(MemBudgetErrors, AFileTruncatedWhileRunningIsAnErrorNotACrash) {
    expect_truncation_is_an_error("moe-tiny-F16.wap", "moe.gguf", true, "expert");
}

TEST(MemBudgetErrors, ADenseModelTooSmallForItsEmbeddingsIsRefusedWithTheNumbers) {
    const std::string path = test::shared_path("reference/models/kq-tiny-Q4_K_M.gguf");
    mw_model_params p = mw_model_default_params();
    p.mem_budget = 8 << 20;
    mw_model* model = nullptr;
    ASSERT_EQ(mw_model_load(path.c_str(), &p, &model), MW_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(model, nullptr);
    const std::string why = mw_last_error();
    EXPECT_NE(why.find("kq-tiny-Q4_K_M.gguf"), std::string::npos) << why;
    EXPECT_NE(why.find("a memory budget of 8.0 MiB is too small"), std::string::npos) << why;
    EXPECT_NE(why.find("outside the layers' matrices"), std::string::npos) << why;
    EXPECT_NE(why.find("one layer streamed from storage"), std::string::npos) << why;
}

TEST(MemBudgetErrors, AFileTruncatedUnderAStreamedDenseModelIsAnErrorNotACrash) {
    // stories260K: five layers, of which two take turns (read again every token).
    expect_truncation_is_an_error("stories260K.wap", "dense-a.gguf", true, "layer");
    expect_truncation_is_an_error("stories260K.wap", "dense-b.gguf", false, "layer");
}

// A prediction the next layer does not use must not keep its slot: unused guesses, protected as
// prefetches, once filled a small cache (moe-750m at 50 %: 4.8 % hits instead of 67 %).
TEST(ExpertCachePolicy, AWrongGuessIsEvictedBeforeWhatWasUsed) {
    const std::string path = test::shared_path("reference/models/moe-tiny-F16.gguf");
    LoadOptions o;
    o.mem_budget = budget_for(path, 8, 4);
    const auto m = LoadedModel::load(path, o);
    const Context ctx(*m, context_params(8));
    ExpertCache& cache = *m->budget->experts();
    ASSERT_EQ(cache.n_slots(), 4u);
    ASSERT_GE(m->model.hp.n_expert, 4u);
    ASSERT_GE(m->model.hp.n_layer, 2u);
    const auto use = [&](uint32_t il, std::vector<int32_t> experts) {
        cache.prefetch(il, experts, false);  // the layer's FFN begins with these experts
        for (const int32_t e : experts) {
            (void)cache.acquire(il, e);
            cache.release(il, e);
        }
    };
    const uint64_t hits0 = cache.stats().hits;
    use(0, {0, 1});
    const std::vector<int32_t> guess = {2, 3};
    cache.prefetch(1, guess, true);  // a guess for layer 1, into the two free slots
    // Read on the I/O threads: wait for them (a slot being read cannot be evicted at all).
    for (int i = 0; i < 2000 && cache.stats().reads < 4; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(cache.stats().reads, 4u);
    use(1, {0, 1});  // wrong: layer 1 uses others, which take the guesses' slots
    use(0, {0, 1});  // the next token: layer 0's experts are still there
    EXPECT_EQ(cache.stats().hits - hits0, 2u);
    EXPECT_EQ(cache.stats().misses, 4u);  // layer 0's and layer 1's first uses, nothing more
}

TEST(ReadPartner, TakesOneShareAtATimeAndPassesItsErrorBack) {
    ReadPartner partner;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> ran{0};
    ASSERT_TRUE(partner.try_start([&] {
        released.wait();
        ++ran;
    }));
    EXPECT_FALSE(partner.try_start([&] { ran += 100; }));  // busy: the caller reads alone
    release.set_value();
    partner.finish();
    EXPECT_EQ(ran.load(), 1);

    ASSERT_TRUE(partner.try_start([] { fail(ErrorKind::io, "model.gguf: cannot read layer 3"); }));
    try {
        partner.finish();
        ADD_FAILURE() << "the share's error was lost";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("layer 3"), std::string::npos) << e.what();
    }
    ASSERT_TRUE(partner.try_start([&] { ++ran; }));  // usable again after an error
    partner.finish();
    EXPECT_EQ(ran.load(), 2);
}

TEST(MemBudgetCli, BadSizesAreErrorsNamingTheFlagAndValue) {
    const std::string model = test::shared_path("reference/models/moe-tiny-F16.gguf");
    for (const char* bad : {"abc", "12Q", "-1G", "0"}) {
        const auto r = test::run_command(test::cli_path() + " run -m " + model +
                                         " -p hi -n 1 --mem-budget " + bad);
        EXPECT_NE(r.exit_code, 0) << bad;
        EXPECT_NE(r.err.find(std::string("--mem-budget ") + bad), std::string::npos) << r.err;
    }
    const auto small =
        test::run_command(test::cli_path() + " bench -m " + model + " -p 0 -n 1 --mem-budget 8M");
    EXPECT_NE(small.exit_code, 0);
    EXPECT_NE(small.err.find("too small"), std::string::npos) << small.err;
}

TEST(MemBudgetCli, RunVerboseReportsTheExpertCache) {
    const std::string model = test::shared_path("reference/models/moe-tiny-Q4_K_M.gguf");
    const std::string base =
        test::cli_path() + " run -m " + model + " -p 'Once upon a time' -n 8 --temp 0 -t 2 -c 64";
    // Under a budget the experts keep the file's layout, so the text is the in-RAM path's
    // without repacking, bit for bit; the repacked kernels add in another order, which can turn
    // a near tie of this random model's greedy choice.
    const auto plain = test::run_command(base + " --no-repack");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    const auto budget = test::run_command(base + " --verbose --mem-budget 34.5MiB");
    ASSERT_EQ(budget.exit_code, 0) << budget.err;
    EXPECT_EQ(budget.out, plain.out);  // the same text
    EXPECT_NE(budget.err.find("memory budget 34.5 MiB: peak RSS"), std::string::npos) << budget.err;
    EXPECT_NE(budget.err.find("expert cache:"), std::string::npos) << budget.err;
    EXPECT_NE(budget.err.find("MiB per token"), std::string::npos) << budget.err;
}

// bench measured the machine's read bandwidth after the run, with arrays of 1 GiB or more: the
// process then held several times its budget (2.2 GiB under 206 MiB), and in a memory cgroup of
// the budget's size it would be killed at the end of a run that had fitted.
TEST(MemBudgetCli, BenchStaysUnderTheBudgetAndRecordsNothing) {
    const std::string model = test::shared_path("reference/models/moe-tiny-Q4_K_M.gguf");
    const std::string base =
        test::cli_path() + " bench -m " + model + " -p 4 -n 4 -r 1 -t 2 --mem-budget 34.5MiB";
    const auto r = test::run_command(base + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json results = json::parse(r.out);
    ASSERT_TRUE(results.is_array() && !results.empty()) << r.out;
    for (const json& row : results) {
        EXPECT_EQ(row["read_bandwidth_gb_s"].get<double>(), 0.0) << row.dump();
#ifndef MW_TEST_SANITIZED  // the sanitizers' shadow memory alone is more than this budget
        EXPECT_LE(row["peak_rss_bytes"].get<uint64_t>(), row["mem_budget_bytes"].get<uint64_t>())
            << row.dump();
#else
        // Still far below the probe's arrays of 1 GiB or more.
        EXPECT_LT(row["peak_rss_bytes"].get<uint64_t>(), uint64_t(512) << 20) << row.dump();
#endif
    }
    const auto text = test::run_command(base);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("not measured under --mem-budget"), std::string::npos) << text.out;

    const auto record = test::run_command(base + " --record");
    EXPECT_NE(record.exit_code, 0);
    EXPECT_NE(record.err.find("--record keeps the in-RAM decode efficiency"), std::string::npos)
        << record.err;
}

TEST(MemBudgetCli, RunVerboseReportsTheLayerStreamOfADenseModel) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    const std::string base =
        test::cli_path() + " run -m " + model + " -p 'Once upon a time' -n 8 --temp 0 -t 2 -c 64";
    const auto plain = test::run_command(base + " --no-repack");  // the layout a stream keeps
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    // What the embeddings, the process, this context and two of its five layers take.
    const auto budget = test::run_command(base + " --verbose --mem-budget 33.2MiB");
    ASSERT_EQ(budget.exit_code, 0) << budget.err;
    EXPECT_EQ(budget.out, plain.out);  // the same text
    EXPECT_NE(budget.err.find("memory budget 33.2 MiB: peak RSS"), std::string::npos) << budget.err;
    EXPECT_NE(budget.err.find("layer stream: 2 of 5 layers in memory at once"), std::string::npos)
        << budget.err;
    EXPECT_NE(budget.err.find("layers from storage"), std::string::npos) << budget.err;
    EXPECT_NE(budget.err.find("MiB per token"), std::string::npos) << budget.err;
}

}  // namespace
}  // namespace mw
