// Qwen3.5's hybrid layers beyond the reference cases (reference_test.cpp): the recurrent state
// continues exactly across decode calls and sequences, goes back to its checkpoints only, is
// refused a context shift, is planned at a size constant in the context; the delta-rule step
// against an fp64 reference; and files with inconsistent recurrent metadata or tensors give
// errors naming the key or tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/recurrent_state.h"
#include "plan/planner.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "support/gguf_edit.h"
#include "support/model_inputs.h"
#include "support/test_support.h"
#include "support/tiny_model.h"
#include "tensor/attention_kernels.h"

namespace mw {
namespace {

const char* kDense = "reference/models/qwen35-tiny-F16.gguf";
const char* kMoe = "reference/models/qwen35moe-tiny-F16.gguf";

std::vector<float> last_logits(const Context& ctx, const LoadedModel& m) {
    const float* l = ctx.logits(-1);
    EXPECT_NE(l, nullptr);
    return l ? std::vector<float>(l, l + m.model.hp.n_vocab) : std::vector<float>{};
}

std::vector<float> fresh(const LoadedModel& m, const std::vector<int32_t>& tokens) {
    Context ctx(m, test::small_context());
    ctx.decode(tokens.data(), uint32_t(tokens.size()), false);
    return last_logits(ctx, m);
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A prompt, then single-token steps, then a new part in one call (a chat's next turn): the
// state carried across the calls gives the logits of one fresh pass over all of it.
TEST(Qwen35, StateCarriedAcrossCallsMatchesOneFreshPass) {
    for (const char* path : {kDense, kMoe}) {
        SCOPED_TRACE(path);
        const auto m = test::load_shared(path);
        const auto a = test::book_tokens(*m, 0, 40), b = test::book_tokens(*m, 3000, 25);
        Context ctx(*m, test::small_context());
        ctx.decode(a.data(), uint32_t(a.size()), false);
        std::vector<int32_t> all = a;
        for (int i = 0; i < 6; ++i) {
            const int32_t t = b[size_t(i)];
            ctx.decode(&t, 1, false);
            all.push_back(t);
        }
        ctx.decode(b.data() + 6, uint32_t(b.size() - 6), false);
        all.insert(all.end(), b.begin() + 6, b.end());
        const auto got = last_logits(ctx, *m);
        const auto want = fresh(*m, all);
        EXPECT_LT(test::rel_rms(got.data(), want.data(), got.size()), 3e-3);
    }
}

// Each prompt's end is a checkpoint: truncating to it (prefix reuse) and continuing another way
// gives a fresh pass's logits; a length between checkpoints is not keepable, the checkpoint
// below it is.
TEST(Qwen35, TruncationGoesBackToAPromptCheckpointExactly) {
    const auto m = test::load_shared(kDense);
    const auto a = test::book_tokens(*m, 0, 30), b = test::book_tokens(*m, 2000, 20),
               c = test::book_tokens(*m, 4000, 15);
    Context ctx(*m, test::small_context());
    ctx.decode(a.data(), uint32_t(a.size()), false);
    ctx.decode(b.data(), uint32_t(b.size()), false);
    const uint32_t n_a = uint32_t(a.size());
    EXPECT_EQ(ctx.seq_keepable(0, n_a + 5), n_a);  // between checkpoints: the one below
    EXPECT_EQ(ctx.seq_keepable(0, n_a), n_a);
    EXPECT_EQ(ctx.seq_keepable(0, n_a - 1), 0u);  // nothing kept below the first prompt
    EXPECT_EQ(ctx.seq_keepable(0, 1000), n_a + b.size());
    EXPECT_THROW(ctx.seq_truncate(0, n_a + 5), Error);
    EXPECT_EQ(ctx.seq_len(0), n_a + b.size());  // the refused truncation changed nothing
    ctx.seq_truncate(0, n_a);
    ctx.decode(c.data(), uint32_t(c.size()), false);
    const auto got = last_logits(ctx, *m);
    const auto want = fresh(*m, concat(a, c));
    EXPECT_LT(test::rel_rms(got.data(), want.data(), got.size()), 3e-3);
    // Back to nothing, then the same prompt again: the state starts from zero.
    ctx.seq_truncate(0, 0);
    ctx.decode(c.data(), uint32_t(c.size()), false);
    const auto again = last_logits(ctx, *m);
    const auto want_c = fresh(*m, c);
    EXPECT_LT(test::rel_rms(again.data(), want_c.data(), again.size()), 3e-3);
}

// A copied sequence takes the source's state (at its end or at a checkpoint) and goes on alone.
TEST(Qwen35, CopiedSequenceContinuesFromTheSourceState) {
    const auto m = test::load_shared(kMoe);
    const auto a = test::book_tokens(*m, 0, 33), b = test::book_tokens(*m, 1000, 12),
               c = test::book_tokens(*m, 5000, 9);
    Context ctx(*m, test::small_context(3));
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < a.size(); ++i) batch.push_back({a[i], 0, -1, false});
    ctx.decode(batch);
    batch.clear();
    for (size_t i = 0; i < b.size(); ++i) batch.push_back({b[i], 0, -1, i + 1 == b.size()});
    ctx.decode(batch);
    ctx.seq_copy(0, 1, uint32_t(a.size() + b.size()));  // the end
    ctx.seq_copy(0, 2, uint32_t(a.size()));             // a checkpoint
    batch.clear();
    for (uint32_t s = 1; s <= 2; ++s) {
        for (size_t i = 0; i < c.size(); ++i) batch.push_back({c[i], s, -1, i + 1 == c.size()});
    }
    ctx.decode(batch);
    const uint32_t n_vocab = m->model.hp.n_vocab;
    const float* l1 = ctx.logits(int32_t(c.size() - 1));
    const float* l2 = ctx.logits(int32_t(2 * c.size() - 1));
    ASSERT_TRUE(l1 && l2);
    const auto want1 = fresh(*m, concat(concat(a, b), c));
    const auto want2 = fresh(*m, concat(a, c));
    EXPECT_LT(test::rel_rms(l1, want1.data(), n_vocab), 3e-3);
    EXPECT_LT(test::rel_rms(l2, want2.data(), n_vocab), 3e-3);
    EXPECT_THROW(ctx.seq_copy(0, 1, uint32_t(a.size()) + 3), Error);
}

TEST(Qwen35, ContextShiftOverRecurrentLayersIsRefusedClearly) {
    const auto m = test::load_shared(kDense);
    const auto a = test::book_tokens(*m, 0, 40);
    Context ctx(*m, test::small_context());
    ctx.decode(a.data(), uint32_t(a.size()), false);
    EXPECT_FALSE(ctx.can_shift());
    try {
        ctx.seq_shift(0, 4, 10);
        FAIL() << "the shift was not refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("recurrent layers"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ctx.seq_len(0), a.size());
}

// KV only for the one attention layer; the DeltaNet state per sequence is constant in the
// context: 3 layers x ((4 - 1) x 512 conv floats + 4 x 64 x 64 state floats) x 4 bytes.
TEST(Qwen35, PlanCountsKvOnAttentionLayersAndAConstantState) {
    const auto m = test::load_shared(kDense);
    const HParams& hp = m->model.hp;
    ASSERT_EQ(hp.n_recurrent_layers(), 3u);
    const uint64_t per_seq = 3ull * (3 * 512 + 4 * 64 * 64) * 4;
    EXPECT_EQ(RecurrentState::bytes_per_sequence(hp), per_seq);
    EXPECT_EQ(RecurrentState::bytes_needed(hp, 4),
              4 * per_seq * (1 + RecurrentState::kDefaultCheckpoints));
    // One layer of 1 KV head x 256 (F16 K and V): 1 KiB per position.
    EXPECT_EQ(KvCache::bytes_per_position(hp, GgmlType::F16, GgmlType::F16), 1024u);
    Context ctx(*m, test::small_context());
    EXPECT_EQ(ctx.kv_bytes(), KvCache::bytes_needed(hp, 512, GgmlType::F16, GgmlType::F16) +
                                  RecurrentState::bytes_per_sequence(hp));
}

// The delta-rule step of every kernel set this CPU runs against a double-precision
// transcription of its definition, on sizes around the vector widths.
TEST(Qwen35, DeltaRuleStepOfEveryKernelSetMatchesAnFp64Reference) {
    int sets = 0;
    for (const AttentionKernels* kern : {attention_kernels_scalar(), attention_kernels_avx2(),
                                         attention_kernels_avx512(), attention_kernels_neon()}) {
        if (!kern) continue;
        ++sets;
        SCOPED_TRACE(kern->isa);
        std::mt19937 rng(7);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (int d : {1, 7, 8, 16, 33, 64, 67, 128}) {
            SCOPED_TRACE(d);
            const size_t n = static_cast<size_t>(d);
            std::vector<float> s(n * n), q(n), k(n), v(n), out(n), tmp(n);
            for (float& x : s) x = nd(rng);
            std::vector<double> sd(s.begin(), s.end());
            for (int step = 0; step < 5; ++step) {
                for (size_t i = 0; i < n; ++i) q[i] = nd(rng), k[i] = nd(rng), v[i] = nd(rng);
                const float decay = 0.9f, beta = 0.6f, scale = 0.25f;
                kern->delta_step(s.data(), q.data(), k.data(), v.data(), decay, beta, scale,
                                 out.data(), tmp.data(), d);
                std::vector<double> delta(n, 0.0), want(n, 0.0);
                for (auto& x : sd) x *= decay;
                for (size_t j = 0; j < n; ++j) {
                    double ks = 0;
                    for (size_t i = 0; i < n; ++i) ks += sd[i * n + j] * k[i];
                    delta[j] = beta * (v[j] - ks);
                }
                for (size_t i = 0; i < n; ++i) {
                    for (size_t j = 0; j < n; ++j) sd[i * n + j] += k[i] * delta[j];
                }
                for (size_t j = 0; j < n; ++j) {
                    for (size_t i = 0; i < n; ++i) want[j] += sd[i * n + j] * q[i] * scale;
                    EXPECT_NEAR(out[j], want[j], 1e-4 * (1 + std::abs(want[j]) + d / 16.0));
                }
            }
            double worst = 0, largest = 0;
            for (size_t i = 0; i < n * n; ++i) {
                worst = std::max(worst, std::abs(s[i] - sd[i]));
                largest = std::max(largest, std::abs(sd[i]));
            }
            EXPECT_LT(worst, 1e-5 * (1 + largest)) << "the state drifted";
        }
    }
    EXPECT_GE(sets, 2) << "no SIMD set ran";
}

// A copy of the model with `edit` applied (test::edited_gguf_copy).
std::string edited_copy(const std::string& name, const std::function<void(gguf::GgufWriter&)>& edit,
                        const std::string& drop_tensor = "") {
    return test::edited_gguf_copy(test::shared_path(kDense), "" + name, edit, drop_tensor);
}

// A file with an MTP block after the four that run (block_count 5, nextn_predict_layers 1, only
// some of its tensors): the model's own pass never runs it, the logits are the same.
TEST(Qwen35, MtpBlocksAreSkipped) {
    const std::string path = edited_copy("mtp", [](gguf::GgufWriter& w) {
        w.set_u32("qwen35.block_count", 5);
        w.set_u32("qwen35.nextn_predict_layers", 1);
        w.remove("qwen35.attention.recurrent_layers");  // the interval pattern: 3 of 4
        w.add_tensor("blk.4.nextn.eh_proj.weight", GgmlType::F32, {512, 256},
                     [](uint8_t* dst) { std::memset(dst, 0, 512 * 256 * 4); });
    });
    const auto m = LoadedModel::load(path, LoadOptions{});
    EXPECT_EQ(m->model.hp.n_layer, 4u);
    EXPECT_EQ(m->model.hp.n_nextn_layers, 1u);
    EXPECT_NE(m->desc.find("1 MTP layer (incomplete: not runnable)"), std::string::npos) << m->desc;
    const auto base = test::load_shared(kDense);
    const auto tokens = test::book_tokens(*base, 0, 20);
    const auto a = fresh(*m, tokens), b = fresh(*base, tokens);
    EXPECT_EQ(a, b);
}

// --spec-type mtp on a file whose MTP block is incomplete is refused naming what is missing (run,
// chat, serve); on a file without MTP layers before anything is loaded. (tests/mtp_test.cpp runs
// complete heads.)
TEST(Qwen35, SpecTypeMtpIsRefusedForIncompleteOrMissingLayers) {
    const std::string path = edited_copy("mtp-cli", [](gguf::GgufWriter& w) {
        w.set_u32("qwen35.block_count", 5);
        w.set_u32("qwen35.nextn_predict_layers", 1);
        w.remove("qwen35.attention.recurrent_layers");
        w.add_tensor("blk.4.nextn.eh_proj.weight", GgmlType::F32, {512, 256},
                     [](uint8_t* dst) { std::memset(dst, 0, 512 * 256 * 4); });
    });
    for (const std::string& cmd :
         {std::string("run -p hi -n 2"), std::string("chat -n 2"), std::string("serve --port 0")}) {
        SCOPED_TRACE(cmd);
        const test::CommandResult with = test::run_command(test::cli_path() + " " + cmd + " -m " +
                                                           path + " --spec-type mtp < /dev/null");
        EXPECT_NE(with.exit_code, 0) << with.err;
        EXPECT_NE(with.err.find("has 1 MTP layer(s)"), std::string::npos) << with.err;
        EXPECT_NE(with.err.find("cannot be run"), std::string::npos) << with.err;
        EXPECT_NE(with.err.find("blk.4.attn_q.weight"), std::string::npos) << with.err;
    }
    const test::CommandResult without = test::run_command(
        test::cli_path() + " run -m " + test::shared_path(kDense) + " --spec-type mtp -p hi");
    EXPECT_EQ(without.exit_code, 2);
    EXPECT_NE(without.err.find("has no MTP layers"), std::string::npos) << without.err;
    EXPECT_EQ(without.err.find("model: "), std::string::npos) << "loaded first: " << without.err;
}

TEST(Qwen35, InconsistentRecurrentFilesAreClearErrors) {
    test::expect_load_error(
        edited_copy("conv0", [](gguf::GgufWriter& w) { w.set_u32("qwen35.ssm.conv_kernel", 0); }),
        {"ssm.conv_kernel = 0"});
    test::expect_load_error(
        edited_copy("inner", [](gguf::GgufWriter& w) { w.set_u32("qwen35.ssm.inner_size", 300); }),
        {"ssm.inner_size = 300"});
    test::expect_load_error(
        edited_copy("heads",
                    [](gguf::GgufWriter& w) { w.set_u32("qwen35.ssm.time_step_rank", 3); }),
        {"time_step_rank = 3"});
    test::expect_load_error(edited_copy(
                                "missing", [](gguf::GgufWriter&) {}, "blk.1.ssm_a"),
                            {"missing tensor", "blk.1.ssm_a"});
    // A pattern that makes layer 1 an attention layer: its attention tensors are missing.
    test::expect_load_error(edited_copy("pattern",
                                        [](gguf::GgufWriter& w) {
                                            w.remove("qwen35.attention.recurrent_layers");
                                            w.set_u32("qwen35.full_attention_interval", 2);
                                        }),
                            {"blk.1.attn_q.weight"});
    // A conv kernel of 3 taps where the tensor has 4.
    test::expect_load_error(
        edited_copy("taps", [](gguf::GgufWriter& w) { w.set_u32("qwen35.ssm.conv_kernel", 3); }),
        {"blk.0.ssm_conv1d.weight has shape [4, 512], expected [3, 512]"});
}

}  // namespace
}  // namespace mw
