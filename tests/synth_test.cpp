// memwall synth: the files must load in llama.cpp as well as in memwall. llama.cpp sizes the
// FFN tensors of the llama architecture, expert tensors included, by feed_forward_length; a
// Mixtral-style file with 0 there aborts its loader (GGML_ASSERT ne >= 1), so the header of every
// preset is checked against its tensors. One small preset is written, run, and rewritten to check
// that a seed gives the same file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "plan/catalogue.h"
#include "plan/planner.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "support/model_inputs.h"
#include "support/test_support.h"
#include "synth/synth.h"

namespace mw {
namespace {

TEST(Synth, FeedForwardLengthMatchesTheFfnTensorsOfEveryPreset) {
    for (const SynthPreset& p : synth_presets()) {
        SCOPED_TRACE(p.id);
        const std::vector<uint8_t> header = spec_gguf_header(p.spec, QuantRecipe::Q4_K_M);
        const gguf::GgufFile f = gguf::GgufFile::parse(header, p.id, {.header_only = true});
        const std::string a = p.spec.arch + ".";
        if (p.spec.double_wide_shared_ffn) {  // gemma-4-e2b: a width per layer
            for (uint32_t il = 0; il < p.spec.n_layer; ++il) {
                const std::string name = "blk." + std::to_string(il) + ".ffn_gate.weight";
                ASSERT_NE(f.find_tensor(name), nullptr) << name;
                EXPECT_EQ(f.find_tensor(name)->ne[1], p.spec.n_ff_of(il)) << name;
            }
            continue;
        }
        const auto n_ff = f.get_u32(a + "feed_forward_length");
        if (p.spec.arch == "qwen35moe") {  // as llama.cpp's converter: no dense width
            EXPECT_FALSE(n_ff.has_value());
            continue;
        }
        ASSERT_TRUE(n_ff.has_value());
        if (const gguf::TensorInfo* t = f.find_tensor("blk.0.ffn_gate.weight")) {
            EXPECT_EQ(*n_ff, t->ne[1]);
        } else if (p.spec.arch == "llama") {
            const gguf::TensorInfo* e = f.find_tensor("blk.0.ffn_gate_exps.weight");
            ASSERT_NE(e, nullptr);
            EXPECT_EQ(*n_ff, e->ne[1]) << "llama.cpp sizes llama experts by feed_forward_length";
            EXPECT_EQ(f.get_u32(a + "expert_feed_forward_length"), e->ne[1]);
        }
    }
}

std::vector<char> slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Synth, SmallPresetRunsAndIsDeterministic) {
#ifdef MW_TEST_SANITIZED
    GTEST_SKIP() << "writes and runs a 0.5 B model: release builds only";
#endif
    const std::string dir = test::temp_dir();
    const std::string a = dir + "/a.gguf", b = dir + "/b.gguf";
    const std::string cli = test::cli_path();
    const auto synth = [&](const std::string& out) {
        return test::run_command(cli + " synth --preset qwen2.5-0.5b --type Q4_0 --seed 7 -o " +
                                 out);
    };
    ASSERT_EQ(synth(a).exit_code, 0);
    const test::CommandResult run =
        test::run_command(cli + " run -m " + a + " -p 'Once upon a time' -n 4 --temp 0 -c 64");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(synth(b).exit_code, 0);
    EXPECT_TRUE(slurp(a) == slurp(b)) << "the same seed must give the same file";
    std::remove(a.c_str());
    std::remove(b.c_str());
}

// The scaled-down models' context: 64 positions on 2 threads.
ContextParams ci_context() {
    ContextParams p;
    p.n_ctx = 64;
    p.n_threads = 2;
    return p;
}

// A fixed 24-token prompt decoded in one batch by `batch` and token by token by `steps`: the last
// logits of both are finite and agree to `tolerance` (rel_rms).
void expect_batch_matches_steps(Context& batch, Context& steps, uint32_t n_vocab,
                                double tolerance) {
    std::vector<int32_t> tokens;
    for (int32_t i = 0; i < 24; ++i) tokens.push_back(3 + (i * 37) % 1000);
    batch.decode(tokens.data(), uint32_t(tokens.size()), false);
    for (const int32_t t : tokens) steps.decode(&t, 1, false);
    const float *a = batch.logits(-1), *b = steps.logits(-1);
    ASSERT_TRUE(a && b);
    for (uint32_t i = 0; i < n_vocab; ++i) {
        ASSERT_TRUE(std::isfinite(a[i]) && std::isfinite(b[i])) << "logit " << i;
    }
    EXPECT_LT(test::rel_rms(a, b, n_vocab), tolerance);
}

// A preset's layout at a CI size: the Qwen3.5 presets with 256-wide layers, 4 layers (3 DeltaNet
// + 1 attention), a 1024-token vocabulary, written at Q4_K_M, load and run: a prompt in one
// batch (DeltaNet's chunked form) and the same tokens one by one (its recurrent form) give the
// same logits, finite ones.
ModelSpec scaled_down(const std::string& id) {
    ModelSpec s = *find_catalogue_model(id);
    s.n_vocab = 1024;
    s.n_embd = 256;
    s.n_layer = 4;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.ssm_head_dim = 64;
    s.ssm_k_heads = 2;
    s.ssm_v_heads = 4;
    if (s.n_expert > 0) {
        s.n_expert = 8;
        s.n_expert_used = 2;
        s.n_ff_expert = s.n_ff_shared = 256;
    } else {
        s.n_ff = 512;
    }
    return s;
}

TEST(Synth, Qwen35AtAScaledDownShapeRuns) {
    for (const char* id : {"qwen3.5-2b", "qwen3.5-35b-a3b"}) {
        SCOPED_TRACE(id);
        SynthOptions o;
        o.spec = scaled_down(id);
        o.seed = 3;
        const std::string path = test::temp_dir() + "/q35.gguf";
        write_synth_model(o, path);
        const auto m = LoadedModel::load(path, LoadOptions{});
        EXPECT_EQ(m->model.hp.n_recurrent_layers(), 3u);
        Context batch(*m, ci_context()), steps(*m, ci_context());
        expect_batch_matches_steps(batch, steps, m->model.hp.n_vocab, 0.02);
        std::remove(path.c_str());
    }
}

// The gpt-oss-20b preset's layout at a CI size (256 wide, 4 layers, 8 experts, window 8), in
// MXFP4_MOE: it loads, and a prompt longer than the window gives the same finite logits in one
// batch as token by token.
TEST(Synth, GptOssAtAScaledDownShapeRuns) {
    ModelSpec s = synth_preset("gpt-oss-20b");
    s.n_vocab = 1024;
    s.n_embd = 256;
    s.n_layer = 4;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ff = s.n_ff_expert = 256;
    s.n_expert = 8;
    s.n_expert_used = 2;
    s.n_swa = 8;
    SynthOptions o;
    o.spec = s;
    o.recipe = QuantRecipe::MXFP4_MOE;
    o.seed = 5;
    const std::string path = test::temp_dir() + "/gptoss.gguf";
    write_synth_model(o, path);
    const auto m = LoadedModel::load(path, LoadOptions{});
    EXPECT_TRUE(m->model.hp.swa_layer(0));
    EXPECT_FALSE(m->model.hp.swa_layer(1));
    const std::vector<uint8_t> bytes = test::read_file(path);
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, "gptoss", {.header_only = true});
    EXPECT_EQ(GgmlType(f.find_tensor("blk.0.ffn_gate_exps.weight")->type), GgmlType::MXFP4);
    EXPECT_EQ(GgmlType(f.find_tensor("blk.0.attn_q.weight")->type), GgmlType::Q8_0);
    Context batch(*m, ci_context()), steps(*m, ci_context());
    expect_batch_matches_steps(batch, steps, m->model.hp.n_vocab, 0.02);
    std::remove(path.c_str());
}

// The 2026 device-model presets' layouts at a CI size (256 wide, a 1024-token vocabulary): Gemma 4
// E2B (10 layers: sliding/full heads of 64/128, 4 KV-sharing layers with double-wide MLPs,
// per-layer embeddings), 26B-A4B (experts beside the MLP, K = V on full layers, other KV heads
// there) and 31B, LFM2 1.2B and 8B-A1B (convolution layers at their places, experts after the
// dense layers), SmolLM3 (NoPE layers). Each loads, the plan's KV cache and recurrent state are
// what a context allocates, and a prompt in one batch gives token by token's finite logits.
ModelSpec device_model_at_ci_size(const std::string& id) {
    ModelSpec s = synth_preset(id);
    s.n_vocab = 1024;
    s.n_embd = 256;
    s.n_head = 4;
    s.n_ff = 512;
    if (s.arch == "gemma4") {
        s.n_layer = 10;
        s.head_dim = 128;
        s.head_dim_swa = 64;
        s.n_head_kv = 2;
        s.n_head_kv_full = s.full_k_eq_v ? 1 : 2;
        s.n_swa = 8;
        if (s.n_kv_shared > 0) s.n_kv_shared = 4;
        if (s.n_embd_per_layer > 0) s.n_embd_per_layer = 64;
    } else if (s.arch == "lfm2" || s.arch == "lfm2moe") {
        s.n_layer = 6;
        s.n_head_kv = 2;
        s.conv_layers = {true, true, false, true, false, true};
        s.n_leading_dense = std::min(s.n_leading_dense, 2u);
    } else {
        s.n_layer = 8;  // smollm3: layers 3 and 7 without RoPE
        s.n_head_kv = 2;
        s.head_dim = 64;
    }
    if (s.n_expert > 0) {
        s.n_expert = 8;
        s.n_expert_used = 2;
        s.n_ff_expert = 256;
    }
    return s;
}

TEST(Synth, DeviceModelPresetsAtAScaledDownShapeRun) {
    for (const char* id : {"gemma-4-e2b", "gemma-4-26b-a4b", "gemma-4-31b", "lfm2-1.2b",
                           "lfm2-8b-a1b", "smollm3-3b"}) {
        SCOPED_TRACE(id);
        SynthOptions o;
        o.spec = device_model_at_ci_size(id);
        o.seed = 11;
        const std::string path = test::temp_dir() + "/device-model.gguf";
        write_synth_model(o, path);
        const auto m = LoadedModel::load(path, LoadOptions{});
        const HParams& hp = m->model.hp;
        EXPECT_EQ(hp.arch, o.spec->arch);
        if (o.spec->arch == "gemma4") {
            EXPECT_TRUE(hp.swa_layer(0));
            const uint32_t full = o.spec->swa_pattern - 1;  // the first full layer
            EXPECT_FALSE(hp.swa_layer(full));
            EXPECT_EQ(hp.head_dim_k_of(full), 128u);
            EXPECT_EQ(hp.n_head_kv_of(full), o.spec->n_head_kv_full);
            EXPECT_EQ(hp.has_kv(6), o.spec->n_kv_shared == 0);
            EXPECT_EQ(hp.n_ff_of(9), o.spec->double_wide_shared_ffn ? 1024u : 512u);
            EXPECT_EQ(bool(m->model.ple_embd.traits), o.spec->n_embd_per_layer > 0);
        }
        if (!o.spec->conv_layers.empty()) {
            EXPECT_EQ(hp.n_recurrent_layers(), 4u);
        }
        const test::PlannedFile planned = test::plan_file(path, "Q4_K_M", 64);
        ASSERT_TRUE(planned.facts.runnable) << planned.facts.note;
        const MemoryPlan& plan = planned.plan;
        Context batch(*m, ci_context()), steps(*m, ci_context());
        if (o.spec->conv_layers.empty()) {
            EXPECT_EQ(plan.kv_bytes, batch.kv_bytes());
        } else {  // the convolution state: counted per sequence, allocated on first use
            EXPECT_GT(plan.state_bytes, 0u);
            EXPECT_GE(plan.kv_bytes + plan.state_bytes, batch.kv_bytes());
        }
        // Experts: batch and step quantize activations apart, and a near-tie in a random router
        // can pick another expert.
        expect_batch_matches_steps(batch, steps, hp.n_vocab, o.spec->n_expert > 0 ? 0.05 : 0.02);
        std::remove(path.c_str());
    }
}

// `plan --config` on the public config.json files (as quoted in public code; the catalogue rows'
// sources) gives the catalogue rows' numbers: Gemma 4 E2B's multimodal config (text_config),
// LFM2-1.2B's older one (block_ff_dim, full_attn_idxs), SmolLM3-3B's.
TEST(Synth, DeviceModelConfigsGiveTheCatalogueNumbers) {
    std::string e2b_types;
    for (int i = 0; i < 35; ++i) {
        e2b_types += (i ? ", " : "") +
                     std::string(i % 5 == 4 ? "\"full_attention\"" : "\"sliding_attention\"");
    }
    const std::pair<std::string, std::string> cases[] = {
        {"gemma-4-e2b",
         R"({"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
            "text_config": {"model_type": "gemma4_text", "hidden_size": 1536,
            "num_hidden_layers": 35, "intermediate_size": 6144, "num_attention_heads": 8,
            "head_dim": 256, "global_head_dim": 512, "vocab_size": 262144,
            "num_key_value_heads": 1, "num_kv_shared_layers": 20,
            "hidden_size_per_layer_input": 256, "sliding_window": 512,
            "max_position_embeddings": 131072, "use_double_wide_mlp": true,
            "final_logit_softcapping": 30.0, "tie_word_embeddings": true,
            "layer_types": [)" +
             e2b_types + "]}}"},
        {"lfm2-1.2b",
         R"({"architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "vocab_size": 65536,
            "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
            "num_key_value_heads": 8, "max_position_embeddings": 128000, "norm_eps": 1e-05,
            "conv_L_cache": 3, "block_ff_dim": 12288, "block_multiple_of": 256,
            "block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": true,
            "rope_theta": 1000000.0, "full_attn_idxs": [2, 5, 8, 10, 12, 14]})"},
        {"smollm3-3b",
         R"({"architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3",
            "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 11008,
            "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
            "max_position_embeddings": 65536, "rope_theta": 5000000.0,
            "tie_word_embeddings": true})"},
    };
    for (const auto& one : cases) {
        // Named, not a structured binding: clang before 16 cannot capture those in a lambda.
        const std::string& id = one.first;
        const std::string& config = one.second;
        SCOPED_TRACE(id);
        const ModelSpec from_config = spec_from_hf_config(config, id + "/config.json");
        const ModelSpec& row = *find_catalogue_model(id);
        EXPECT_EQ(count_params(spec_tensors(from_config)), count_params(spec_tensors(row)));
        // The same weights, KV cache, recurrent state and scratch (the header's size, in
        // overhead_bytes, differs by the names).
        const auto planned = [&](const ModelSpec& s) {
            const std::vector<uint8_t> h = spec_gguf_header(s, QuantRecipe::Q4_K_M);
            const gguf::GgufFile f = gguf::GgufFile::parse(h, id, {.header_only = true});
            const ModelFacts facts = model_facts(f, "Q4_K_M");
            EXPECT_TRUE(facts.runnable) << facts.note;
            const MemoryPlan m = plan_memory(facts, {.n_ctx = 4096});
            return m.total_bytes() - m.overhead_bytes;
        };
        EXPECT_EQ(planned(from_config), planned(row));
    }
    // A layer pattern that does not repeat is refused naming the field.
    std::string bad = cases[0].second;
    bad.replace(bad.find("\"sliding_attention\""), 19, "\"full_attention\"");
    try {
        spec_from_hf_config(bad, "gemma-4-e2b/config.json");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("layer_types"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace mw
