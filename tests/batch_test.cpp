// Several sequences in one context: a batch of N sequences must give what N separate
// single-sequence contexts give (greedy tokens and logits), for dense, MoE and qwen2 models;
// sequences never see each other; prefixes copied between sequences share cache pages and give
// the same logits as recomputing them; a full cache refuses a batch without changing anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "support/test_support.h"

namespace mw {
namespace {

std::unique_ptr<LoadedModel> load(const std::string& relative) {
    return LoadedModel::load(test::shared_path(relative), LoadOptions{});
}

// Four prompts of different lengths cut from War and Peace.
std::vector<std::vector<int32_t>> prompts(const LoadedModel& m) {
    const std::string text =
        test::read_text(test::shared_path("testdata/text/war-and-peace.txt")).substr(2000, 6000);
    const size_t lengths[] = {5, 37, 1, 70};
    const size_t starts[] = {0, 400, 1800, 3000};
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < 4; ++i) {
        std::vector<int32_t> t = m.vocab->tokenize(text.substr(starts[i], 600), true, false);
        t.resize(std::min(t.size(), lengths[i]));
        out.push_back(t);
    }
    return out;
}

int32_t argmax(const float* logits, uint32_t n) {
    return int32_t(std::max_element(logits, logits + n) - logits);
}

struct Steps {
    std::vector<int32_t> tokens;             // greedy continuation
    std::vector<std::vector<float>> logits;  // logits of each step (prompt's last, then each)
};

ContextParams params(uint32_t n_seq, uint32_t n_ctx = 256) {
    ContextParams p;
    p.n_ctx = n_ctx;
    p.n_threads = 2;
    p.n_seq_max = n_seq;
    return p;
}

// Each prompt alone in its own context, then n_steps greedy tokens.
std::vector<Steps> separately(const LoadedModel& m, const std::vector<std::vector<int32_t>>& ps,
                              int n_steps) {
    std::vector<Steps> runs;
    const uint32_t n_vocab = m.model.hp.n_vocab;
    for (const auto& p : ps) {
        Context ctx(m, params(1));
        Steps r;
        ctx.decode(p.data(), uint32_t(p.size()), false);
        for (int s = 0; s < n_steps; ++s) {
            const float* l = ctx.logits(-1);
            r.logits.emplace_back(l, l + n_vocab);
            r.tokens.push_back(argmax(l, n_vocab));
            if (s + 1 < n_steps) ctx.decode(&r.tokens.back(), 1, false);
        }
        runs.push_back(std::move(r));
    }
    return runs;
}

// All prompts in one batch (tokens of the sequences interleaved), then one batch per step with
// a token of every sequence: the token `follow` (the separate runs) chose, so that a near tie
// decided the other way (tokens recorded as chosen here) does not send the two runs down
// different texts.
std::vector<Steps> together(const LoadedModel& m, const std::vector<std::vector<int32_t>>& ps,
                            int n_steps, const std::vector<Steps>& follow, uint32_t n_batch = 512) {
    const uint32_t n = uint32_t(ps.size());
    const uint32_t n_vocab = m.model.hp.n_vocab;
    ContextParams cp = params(n);
    cp.n_batch = n_batch;
    Context ctx(m, cp);
    std::vector<BatchToken> batch;
    std::vector<size_t> last(n);
    for (size_t i = 0;; ++i) {
        bool any = false;
        for (uint32_t s = 0; s < n; ++s) {
            if (i >= ps[s].size()) continue;
            any = true;
            last[s] = batch.size();
            batch.push_back({ps[s][i], s, int32_t(i), i + 1 == ps[s].size()});
        }
        if (!any) break;
    }
    ctx.decode(batch);
    std::vector<Steps> runs(n);
    for (int step = 0; step < n_steps; ++step) {
        for (uint32_t s = 0; s < n; ++s) {
            const float* l = ctx.logits(int32_t(step == 0 ? last[s] : s));
            EXPECT_NE(l, nullptr);
            if (!l) return runs;
            runs[s].logits.emplace_back(l, l + n_vocab);
            runs[s].tokens.push_back(argmax(l, n_vocab));
        }
        if (step + 1 == n_steps) break;
        batch.clear();
        for (uint32_t s = 0; s < n; ++s) {
            batch.push_back({follow[s].tokens[size_t(step)], s, -1, true});
        }
        ctx.decode(batch);
    }
    for (uint32_t s = 0; s < n; ++s) {
        EXPECT_EQ(ctx.seq_len(s), ps[s].size() + size_t(n_steps) - 1);
        const auto held = ctx.seq_tokens(s);
        EXPECT_TRUE(std::equal(ps[s].begin(), ps[s].end(), held.begin()));
    }
    return runs;
}

// Two logits vectors within relative RMS `tolerance` of each other can only disagree on the
// top token where b's top two are closer than sqrt(2) * tolerance * ||b||.
bool near_tie(const std::vector<float>& b, double tolerance) {
    float first = -INFINITY, second = -INFINITY;
    double norm = 0.0;
    for (float v : b) {
        norm += double(v) * double(v);
        if (v > first) {
            second = first;
            first = v;
        } else if (v > second) {
            second = v;
        }
    }
    return double(first) - double(second) < std::sqrt(2.0 * norm) * tolerance;
}

// a's logits within `tolerance` of b's at every step, and the same greedy tokens but at near
// ties (a followed b's tokens, or made the same choices).
void expect_same(const std::vector<Steps>& a, const std::vector<Steps>& b, double tolerance) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t s = 0; s < a.size(); ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        ASSERT_EQ(a[s].tokens.size(), b[s].tokens.size());
        ASSERT_EQ(a[s].logits.size(), b[s].logits.size());
        for (size_t i = 0; i < a[s].logits.size(); ++i) {
            EXPECT_LT(
                test::rel_rms(a[s].logits[i].data(), b[s].logits[i].data(), a[s].logits[i].size()),
                tolerance)
                << "step " << i;
            if (!near_tie(b[s].logits[i], tolerance)) {
                EXPECT_EQ(a[s].tokens[i], b[s].tokens[i]) << "step " << i;
            }
        }
    }
}

// (smollm3-tiny is a chaotic random model: its Q4_K_M logits move by 1-5 % under the batched
// kernels' other rounding, so only its F16 file is here; its near ties are what near_tie allows.)
struct ModelCase {
    const char* path;
    // Products of several rows run other kernels than one row's (GEMM tiles instead of the decode
    // kernels, activations rounded to F16 for F16 weights): the logits differ in rounding, far
    // below the reference tolerances. Where activations are quantized to 8 bits before each
    // product (Q8_K for the K-quants), a rounding difference of ~1e-7 now and then moves one
    // activation quant of the next product by a step (1/127 of its block's largest value), that
    // product's output for the token by ~1e-3, and the random 2-layer moe-tiny amplifies it
    // ~10x. moe-tiny-Q4_K_M, 13 prompt sets like these, the switch to the GEMM at 12, 16, 24 and
    // 40 tokens, AVX-512 and AVX2: batched vs separate up to 2.9e-2, while either is 0.11 from
    // the same weights with unquantized activations (an F32 copy, whose batched and separate
    // runs agree to 3e-6); one token of another sequence in a 37- or 70-token sequence moves
    // its logits by 0.11..1.6. Its bound lies between; moe-tiny-F16 (noise < 9e-4) keeps 3e-3.
    double tolerance;
};

class BatchedDecode : public testing::TestWithParam<ModelCase> {};

TEST_P(BatchedDecode, MatchesSeparateSingleSequenceRuns) {
    const auto m = load(GetParam().path);
    const auto ps = prompts(*m);
    const auto alone = separately(*m, ps, 12);
    expect_same(together(*m, ps, 12, alone), alone, GetParam().tolerance);
    // Prompt chunks smaller than the prompts: sequences split between forward steps.
    std::vector<Steps> first_steps = alone;
    for (Steps& r : first_steps) {
        r.tokens.resize(3);
        r.logits.resize(3);
    }
    expect_same(together(*m, ps, 3, alone, 16), first_steps, GetParam().tolerance);
}

INSTANTIATE_TEST_SUITE_P(Models, BatchedDecode,
                         testing::Values(ModelCase{"models/stories260K.gguf", 1e-4},
                                         ModelCase{"reference/models/moe-tiny-F16.gguf", 3e-3},
                                         ModelCase{"reference/models/moe-tiny-Q4_K_M.gguf", 5e-2},
                                         ModelCase{"reference/models/qwen2-tiny-Q8_0.gguf", 3e-3},
                                         ModelCase{"reference/models/kq-tiny-F16.gguf", 3e-3},
                                         ModelCase{"reference/models/qwen35-tiny-Q8_0.gguf", 3e-3},
                                         ModelCase{"reference/models/qwen35moe-tiny-F16.gguf",
                                                   3e-3},
                                         ModelCase{"reference/models/lfm2-tiny-F16.gguf", 3e-3},
                                         ModelCase{"reference/models/lfm2moe-tiny-F16.gguf", 3e-3},
                                         ModelCase{"reference/models/gpt-oss-tiny-F16.gguf", 3e-3},
                                         ModelCase{"reference/models/smollm3-tiny-F16.gguf", 3e-3}),
                         [](const testing::TestParamInfo<ModelCase>& p) {
                             std::string name = p.param.path;
                             name = name.substr(name.rfind('/') + 1);
                             name = name.substr(0, name.find('.'));
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// -ngl 99 (every matrix product on the GPU): batched sequences give what separate runs on the
// GPU give, and the CPU's greedy tokens. The GPU keeps activations in F32 where the CPU encodes
// them to 8 bits, so the logits of the two differ by that rounding.
TEST(BatchedDecode, OnTheGpuMatchesSeparateRunsAndTheCpu) {
    const std::string path = test::shared_path("models/stories260K.gguf");
    LoadOptions o;
    o.gpu.n_gpu_layers = 99;
    const auto gpu = LoadedModel::load(path, o);
    if (!gpu->offload) GTEST_SKIP() << "SKIPPED: no Vulkan device: " << gpu->warning;
    const auto cpu = load("models/stories260K.gguf");
    const auto ps = prompts(*gpu);
    const auto alone = separately(*gpu, ps, 8);
    expect_same(together(*gpu, ps, 8, alone), alone, 1e-4);
    expect_same(alone, separately(*cpu, ps, 8), 1e-2);
}

// Logits of the last token after `prefix` then `rest`, decoded from scratch in one sequence.
std::vector<float> fresh_logits(const LoadedModel& m, const std::vector<int32_t>& tokens) {
    Context ctx(m, params(1));
    ctx.decode(tokens.data(), uint32_t(tokens.size()), false);
    return {ctx.logits(-1), ctx.logits(-1) + m.model.hp.n_vocab};
}

TEST(Sequences, CopiedPrefixSharesPagesAndMatchesRecomputing) {
    const auto m = load("models/stories260K.gguf");
    const auto ps = prompts(*m);
    // A 70-token prefix: two full pages and part of a third, shared by three sequences that
    // then go different ways (each write into the shared partial page copies it first).
    const std::vector<int32_t>& prefix = ps[3];
    Context ctx(*m, params(3));
    ctx.decode(prefix.data(), uint32_t(prefix.size()), false);
    const uint32_t used_alone = ctx.kv_positions_used();
    ctx.seq_copy(0, 1, uint32_t(prefix.size()));
    ctx.seq_copy(0, 2, 40);
    EXPECT_EQ(ctx.kv_positions_used(), used_alone);  // nothing copied yet
    EXPECT_EQ(ctx.seq_len(1), prefix.size());
    EXPECT_EQ(ctx.seq_len(2), 40u);
    EXPECT_EQ(ctx.seq_common_prefix(1, prefix), prefix.size());

    const std::vector<int32_t> tails[3] = {{10, 20, 30}, {40, 50}, {60, 70, 80, 90}};
    std::vector<BatchToken> batch;
    for (uint32_t s = 0; s < 3; ++s) {
        for (size_t i = 0; i < tails[s].size(); ++i) {
            batch.push_back({tails[s][i], s, -1, i + 1 == tails[s].size()});
        }
    }
    ctx.decode(batch);
    for (uint32_t s = 0; s < 3; ++s) {
        std::vector<int32_t> all(prefix.begin(), prefix.begin() + (s == 2 ? 40 : prefix.size()));
        all.insert(all.end(), tails[s].begin(), tails[s].end());
        const std::vector<float> want = fresh_logits(*m, all);
        int32_t index = -1;  // the batch index of this sequence's last token
        for (size_t i = 0; i < batch.size(); ++i) {
            if (batch[i].seq == s && batch[i].logits) index = int32_t(i);
        }
        const float* got = ctx.logits(index);
        ASSERT_NE(got, nullptr);
        EXPECT_LT(test::rel_rms(got, want.data(), want.size()), 1e-5) << "sequence " << s;
        EXPECT_EQ(ctx.seq_len(s), all.size());
    }
}

TEST(Sequences, TruncateThenContinueMatchesFresh) {
    const auto m = load("models/stories260K.gguf");
    const auto ps = prompts(*m);
    Context ctx(*m, params(2));
    ctx.decode(ps[3].data(), uint32_t(ps[3].size()), false);
    ctx.seq_truncate(0, 33);
    EXPECT_EQ(ctx.seq_len(0), 33u);
    EXPECT_EQ(ctx.seq_tokens(0).size(), 33u);
    const std::vector<int32_t> more = {5, 6, 7};
    ctx.decode(more.data(), 3, false);
    std::vector<int32_t> all(ps[3].begin(), ps[3].begin() + 33);
    all.insert(all.end(), more.begin(), more.end());
    const std::vector<float> want = fresh_logits(*m, all);
    EXPECT_LT(test::rel_rms(ctx.logits(-1), want.data(), want.size()), 1e-6);
    // Clearing frees every page.
    ctx.seq_truncate(0, 0);
    EXPECT_EQ(ctx.kv_positions_used(), 0u);
}

TEST(Sequences, PerSequenceShiftMatchesTheSingleSequenceShift) {
    const auto m = load("models/stories260K.gguf");
    const auto ps = prompts(*m);
    Context one(*m, params(1));
    one.decode(ps[3].data(), uint32_t(ps[3].size()), false);
    one.shift(4, 30);
    const int32_t next = 42;
    one.decode(&next, 1, false);

    Context two(*m, params(2));
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < ps[3].size(); ++i) batch.push_back({ps[3][i], 1, -1, false});
    for (size_t i = 0; i < ps[1].size(); ++i) batch.push_back({ps[1][i], 0, -1, false});
    two.decode(batch);
    two.seq_copy(1, 0, 10);  // sequence 0 now shares pages with 1: the shift must not touch them
    two.seq_shift(1, 4, 30);
    EXPECT_EQ(two.seq_len(1), ps[3].size() - 30);
    batch = {{next, 1, -1, true}};
    two.decode(batch);
    EXPECT_LT(test::rel_rms(two.logits(0), one.logits(-1), m->model.hp.n_vocab), 1e-6);
    // Sequence 0 still holds the unshifted prefix.
    std::vector<int32_t> prefix(ps[3].begin(), ps[3].begin() + 10);
    EXPECT_EQ(two.seq_common_prefix(0, prefix), 10u);
    const int32_t t = 7;
    batch = {{t, 0, -1, true}};
    two.decode(batch);
    prefix.push_back(t);
    const std::vector<float> want = fresh_logits(*m, prefix);
    EXPECT_LT(test::rel_rms(two.logits(0), want.data(), want.size()), 1e-6);
}

TEST(Sequences, FullCacheRefusesTheBatchAndChangesNothing) {
    const auto m = load("models/stories260K.gguf");
    Context ctx(*m, params(2, 64));  // 2 pages of 32, plus one for the second sequence
    const std::vector<int32_t> a(60, 17), b(40, 23);
    ctx.decode(a.data(), uint32_t(a.size()), false);
    std::vector<BatchToken> batch;
    for (int32_t t : b) batch.push_back({t, 1, -1, false});
    try {
        ctx.decode(batch);
        FAIL() << "a batch larger than the free cache was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::context_full);
        EXPECT_NE(std::string(e.what()).find("context full"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ctx.seq_len(0), 60u);
    EXPECT_EQ(ctx.seq_len(1), 0u);
    batch.resize(30);
    ctx.decode(batch);  // what fits still runs
    EXPECT_EQ(ctx.seq_len(1), 30u);
}

TEST(Sequences, BadBatchesAreRefusedWithTheirIndex) {
    const auto m = load("models/stories260K.gguf");
    Context ctx(*m, params(2));
    auto message = [&](std::vector<BatchToken> batch) {
        try {
            ctx.decode(batch);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message({{1, 2, -1, true}}).find("sequence 2"), std::string::npos);
    EXPECT_NE(message({{1, 0, 3, true}}).find("next position is 0"), std::string::npos);
    EXPECT_NE(message({{1, 0, 0, false}, {2, 0, 0, true}}).find("batch index 1"),
              std::string::npos);
    EXPECT_NE(message({{100000, 0, -1, true}}).find("out of range"), std::string::npos);
    EXPECT_EQ(ctx.seq_len(0), 0u);
    EXPECT_EQ(message({{1, 1, 0, false}, {2, 0, 0, false}, {3, 1, 1, true}}), "accepted");
}

}  // namespace
}  // namespace mw
