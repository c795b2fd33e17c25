// Qwen3.5 around the model layer: the spec writes the GGUF layout of llama.cpp's converter (the
// reference files, made with its gguf-py, tensor by tensor and key by key), the quantization
// recipe gives llama-quantize's types (reference/quant/*.tensors.json), config.json gives the
// catalogue's spec, and plans of the real shapes count KV on the attention layers only plus a
// recurrent state that does not grow with the context (llama.cpp's recurrent memory formula).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/ggml_types.h"
#include "format/gguf.h"
#include "model/hparams.h"
#include "model/recurrent_state.h"
#include "plan/catalogue.h"
#include "plan/model_spec.h"
#include "plan/planner.h"
#include "plan/quant_mix.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace mw {
namespace {

using nlohmann::json;

// The reference files' shapes (shared/reference/README.md, "qwen35-tiny and qwen35moe-tiny").
ModelSpec tiny_spec(bool moe) {
    ModelSpec s;
    s.id = moe ? "qwen35moe-tiny" : "qwen35-tiny";
    s.name = s.id;
    s.arch = moe ? "qwen35moe" : "qwen35";
    s.n_vocab = 512;
    s.n_ctx_train = 2048;
    s.n_embd = 256;
    s.n_layer = 4;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.head_dim = 256;
    s.n_ff = moe ? 0 : 256;
    s.rope_freq_base = 1e7f;
    s.tied_embeddings = !moe;
    s.n_rot = 64;
    s.rope_sections = {11, 11, 10, 0};
    s.full_attn_interval = 4;
    s.ssm_conv_kernel = 4;
    s.ssm_head_dim = 64;
    s.ssm_k_heads = 2;
    s.ssm_v_heads = 4;
    if (moe) {
        s.n_expert = 4;
        s.n_expert_used = 2;
        s.n_ff_expert = 128;
        s.n_ff_shared = 128;
    }
    return s;
}

struct Layout {
    std::map<std::string, std::string> tensors;  // name -> "ne type"
    std::map<std::string, std::string> keys;     // arch keys -> value
};

Layout layout_of(const gguf::GgufFile& f, const std::string& arch) {
    Layout l;
    for (const gguf::TensorInfo& t : f.tensors()) {
        l.tensors[std::string(t.name)] = fmt::format("{} {} {} {} {}", t.ne[0], t.ne[1], t.ne[2],
                                                     t.n_dims, ggml_layout(t.type)->name);
    }
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (kv.key.starts_with(arch + "."))
            l.keys[std::string(kv.key)] = test::describe_value(kv.value);
    }
    return l;
}

TEST(Qwen35Spec, WritesTheConvertersLayout) {
    for (const bool moe : {false, true}) {
        const ModelSpec s = tiny_spec(moe);
        SCOPED_TRACE(s.arch);
        const std::vector<uint8_t> ref_bytes =
            test::read_file(test::shared_path("reference/models/" + s.id + "-F16.gguf"));
        const gguf::GgufFile ref = gguf::GgufFile::parse(ref_bytes, s.id);
        const std::vector<uint8_t> ours_bytes = spec_gguf_header(s, QuantRecipe::F16);
        const gguf::GgufFile ours =
            gguf::GgufFile::parse(ours_bytes, "spec", {.header_only = true});
        const Layout want = layout_of(ref, s.arch), got = layout_of(ours, s.arch);
        EXPECT_EQ(got.tensors.size(), want.tensors.size());
        for (const auto& [name, what] : want.tensors) {
            const auto it = got.tensors.find(name);
            ASSERT_NE(it, got.tensors.end()) << name;
            EXPECT_EQ(it->second, what) << name;
        }
        for (const auto& [key, value] : want.keys) {
            const auto it = got.keys.find(key);
            ASSERT_NE(it, got.keys.end()) << key;
            EXPECT_EQ(it->second, value) << key;
        }
        EXPECT_EQ(got.keys.size(), want.keys.size());
    }
}

// llama-quantize's choices tensor by tensor, from the spec (all weights F16, as the converter).
TEST(Qwen35Spec, RecipeGivesLlamaQuantizesTypes) {
    for (const char* file : {"qwen35-tiny-Q4_K_M", "qwen35-tiny-Q8_0", "qwen35moe-tiny-Q4_K_M",
                             "qwen35moe-tiny-Q8_0"}) {
        SCOPED_TRACE(file);
        const json ref = json::parse(test::read_text(
            test::shared_path(std::string("reference/quant/") + file + ".tensors.json")));
        const auto recipe = recipe_from_file_type(ref["general.file_type"].get<uint32_t>());
        ASSERT_TRUE(recipe);
        const ModelSpec s = tiny_spec(std::string(file).starts_with("qwen35moe"));
        const std::vector<uint8_t> header = spec_gguf_header(s, *recipe);
        const gguf::GgufFile f = gguf::GgufFile::parse(header, file, {.header_only = true});
        uint64_t bytes = 0;
        for (const json& t : ref["tensors"]) {
            const gguf::TensorInfo* ours = f.find_tensor(t["name"].get<std::string>());
            ASSERT_NE(ours, nullptr) << t["name"];
            EXPECT_EQ(std::string(ggml_layout(ours->type)->name), t["type"].get<std::string>())
                << t["name"];
            bytes += ours->n_bytes;
        }
        EXPECT_EQ(bytes, ref["tensor_data_bytes"].get<uint64_t>());
    }
}

// llama.cpp counts a fused QKV projection as attn_v: phi3's attn_qkv follows the attn_v layer
// rule (Q6_K on the "more bits" layers under Q4_K_M), as its reference file shows.
TEST(Qwen35Spec, FusedQkvFollowsTheAttnVRuleAsInPhi3) {
    const std::vector<uint8_t> src_bytes =
        test::read_file(test::shared_path("reference/models/phi3-tiny-F16.gguf"));
    const std::vector<uint8_t> q_bytes =
        test::read_file(test::shared_path("reference/models/phi3-tiny-Q4_K_M.gguf"));
    const gguf::GgufFile src = gguf::GgufFile::parse(src_bytes, "phi3-tiny-F16");
    const gguf::GgufFile q = gguf::GgufFile::parse(q_bytes, "phi3-tiny-Q4_K_M");
    const HParams hp = read_hparams(src);
    QuantModelInfo info;
    info.arch = hp.arch;
    info.n_layer = hp.n_layer;
    info.n_head = hp.n_head;
    info.n_head_kv = hp.n_head_kv;
    info.has_output = src.find_tensor("output.weight") != nullptr;
    int checked = 0;
    for (const gguf::TensorInfo& t : q.tensors()) {
        const gguf::TensorInfo* s = src.find_tensor(t.name);
        ASSERT_NE(s, nullptr);
        const GgmlType got = tensor_type_for(QuantRecipe::Q4_K_M, info, t.name, s->n_dims,
                                             int64_t(s->ne[0]), GgmlType(s->type));
        EXPECT_EQ(std::string(ggml_layout(uint32_t(got))->name), ggml_layout(t.type)->name)
            << t.name;
        checked += std::string_view(t.name).find("attn_qkv") != std::string_view::npos;
    }
    EXPECT_GT(checked, 0);
}

ModelFacts facts_of(const ModelSpec& s, std::vector<uint8_t>& header) {
    header = spec_gguf_header(s, QuantRecipe::Q4_K_M);
    return model_facts(gguf::GgufFile::parse(header, s.name, {.header_only = true}), "Q4_K_M");
}

// KV for the attention layers only (every fourth), F16 K and V; the state per sequence as
// llama.cpp's recurrent memory sizes it: per DeltaNet layer (d_conv - 1) x (d_inner + 2 x
// n_group x d_state) conv floats and d_state x d_inner state floats, F32.
TEST(Qwen35Spec, PlanCountsKvOnAttentionLayersAndAConstantState) {
    for (const char* id : {"qwen3.5-0.8b", "qwen3.5-9b", "qwen3.5-35b-a3b", "qwen3.5-122b-a10b"}) {
        SCOPED_TRACE(id);
        const ModelSpec* s = find_catalogue_model(id);
        ASSERT_NE(s, nullptr);
        std::vector<uint8_t> header;
        const ModelFacts f = facts_of(*s, header);
        EXPECT_TRUE(f.runnable) << f.note;
        const uint64_t n_attn = s->n_layer / 4, n_rec = s->n_layer - n_attn;
        const uint64_t d_inner = uint64_t(s->ssm_v_heads) * s->ssm_head_dim;
        const uint64_t conv = 3 * (d_inner + 2 * uint64_t(s->ssm_k_heads) * s->ssm_head_dim);
        const uint64_t per_seq = n_rec * (conv + s->ssm_head_dim * d_inner) * 4;
        uint64_t state = 0;
        for (const uint32_t n_ctx : {4096u, 32768u}) {
            const MemoryPlan m = plan_memory(f, {.n_ctx = n_ctx});
            EXPECT_EQ(m.kv_bytes, n_attn * 2 * s->n_head_kv * 256 * 2 * uint64_t(n_ctx));
            EXPECT_EQ(m.state_bytes % per_seq, 0u) << "whole per-sequence states (checkpoints)";
            EXPECT_GE(m.state_bytes, per_seq);
            if (state) {
                EXPECT_EQ(m.state_bytes, state) << "the state does not grow with n_ctx";
            }
            state = m.state_bytes;
        }
    }
    // Qwen3.5-9B: 8 attention layers x 4 KV heads x 256 x 2 (K, V) x 2 bytes = 32 KiB per
    // token; 24 DeltaNet layers x (3 x 8192 + 128 x 4096) floats = 50.25 MiB per sequence.
    std::vector<uint8_t> header;
    const MemoryPlan m9 =
        plan_memory(facts_of(*find_catalogue_model("qwen3.5-9b"), header), {.n_ctx = 4096});
    EXPECT_EQ(m9.kv_bytes, 4096u * 32768u);
    EXPECT_EQ(m9.state_bytes % (24ull * (3 * 8192 + 128 * 4096) * 4), 0u);
}

// llama.cpp v0.5.0's load log (llama-cli -c 4096 -t 2, one sequence) on memwall synth Q4_K_M files
// of the presets: "llama_kv_cache: size = 48.00 MiB (4096 cells, 6 layers ...)" and
// "llama_memory_recurrent: size = 19.27 MiB (1 cells, 24 layers, 1 seqs 0 rs_seq), R (f32): 1.27
// MiB, S (f32): 18.00 MiB" for qwen3.5-0.8b and qwen3.5-2b; 128.00 MiB and 50.25 MiB (R 2.25,
// S 48.00) for qwen3.5-4b. The plan of the same headers gives the same KV and, per sequence, the
// same state (memwall also keeps checkpoints of it, counted in state_bytes).
TEST(Qwen35Spec, PlanMatchesLlamaCppsLoadLog) {
    const struct {
        const char* id;
        double kv_mib, state_mib;
    } cases[] = {{"qwen3.5-0.8b", 48.00, 19.27},
                 {"qwen3.5-2b", 48.00, 19.27},
                 {"qwen3.5-4b", 128.00, 50.25}};
    for (const auto& c : cases) {
        SCOPED_TRACE(c.id);
        std::vector<uint8_t> header;
        const ModelFacts f = facts_of(*find_catalogue_model(c.id), header);
        const MemoryPlan m = plan_memory(f, {.n_ctx = 4096});
        EXPECT_EQ(m.kv_bytes, uint64_t(c.kv_mib * 1024 * 1024));
        const double per_seq = double(RecurrentState::bytes_per_sequence(f.hp)) / (1024 * 1024);
        EXPECT_NEAR(per_seq, c.state_mib, 0.005);  // the log's two decimals
        EXPECT_EQ(m.state_bytes, RecurrentState::bytes_per_sequence(f.hp) *
                                     (1 + RecurrentState::kDefaultCheckpoints));
    }
}

// Qwen/Qwen3.5-0.8B's config.json (its text_config as published, vision fields left out) gives
// the catalogue's spec, tensor for tensor.
const char* kConfig08 = R"({
  "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
  "tie_word_embeddings": true,
  "text_config": {
    "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 1024,
    "intermediate_size": 3584, "num_hidden_layers": 24, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 256, "attention_bias": false, "attn_output_gate": true,
    "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "rms_norm_eps": 1e-6,
    "full_attention_interval": 4, "max_position_embeddings": 262144, "tie_word_embeddings": true,
    "mtp_num_hidden_layers": 1,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10],
      "rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25}}})";

TEST(Qwen35Spec, HuggingFaceConfigGivesTheCatalogueSpec) {
    const ModelSpec hf = spec_from_hf_config(kConfig08, "config.json");
    const ModelSpec* cat = find_catalogue_model("Qwen3.5 0.8B");
    ASSERT_NE(cat, nullptr);
    const std::vector<uint8_t> a = spec_gguf_header(hf, QuantRecipe::Q4_K_M);
    const std::vector<uint8_t> b = spec_gguf_header(*cat, QuantRecipe::Q4_K_M);
    const Layout la = layout_of(gguf::GgufFile::parse(a, "hf", {.header_only = true}), "qwen35");
    const Layout lb = layout_of(gguf::GgufFile::parse(b, "cat", {.header_only = true}), "qwen35");
    EXPECT_EQ(la.tensors, lb.tensors);
    EXPECT_EQ(la.keys, lb.keys);

    // Qwen3.5-35B-A3B's text_config (shape fields as published).
    const std::string moe_types = [] {
        std::string t;
        for (int i = 0; i < 40; ++i) {
            t += i ? ", " : "";
            t += i % 4 == 3 ? "\"full_attention\"" : "\"linear_attention\"";
        }
        return t;
    }();
    const ModelSpec moe = spec_from_hf_config(
        R"({"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
        "tie_word_embeddings": false, "text_config": {"model_type": "qwen3_5_moe_text",
        "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
        "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
        "max_position_embeddings": 262144, "layer_types": [)" +
            moe_types +
            R"(], "rope_parameters": {"rope_theta": 10000000, "partial_rotary_factor": 0.25,
        "mrope_section": [11, 11, 10]}}})",
        "config.json");
    const std::vector<uint8_t> moe_hf = spec_gguf_header(moe, QuantRecipe::Q4_K_M);
    const std::vector<uint8_t> moe_cat =
        spec_gguf_header(*find_catalogue_model("qwen3.5-35b-a3b"), QuantRecipe::Q4_K_M);
    const Layout lc =
        layout_of(gguf::GgufFile::parse(moe_hf, "hf", {.header_only = true}), "qwen35moe");
    const Layout ld =
        layout_of(gguf::GgufFile::parse(moe_cat, "cat", {.header_only = true}), "qwen35moe");
    EXPECT_EQ(lc.tensors, ld.tensors);
    EXPECT_EQ(lc.keys, ld.keys);

    const auto refused = [](const std::string& text, const std::string& word) {
        try {
            spec_from_hf_config(text, "config.json");
            ADD_FAILURE() << "expected an error naming " << word;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
        }
    };
    const std::string config(kConfig08);
    const auto with = [&](const std::string& from, const std::string& to) {
        std::string c = config;
        c.replace(c.find(from), from.size(), to);
        return c;
    };
    refused(with("\"linear_value_head_dim\": 128", "\"linear_value_head_dim\": 64"),
            "linear_value_head_dim");
    refused(with("\"linear_num_value_heads\": 16", "\"linear_num_value_heads\": 24"),
            "linear_num_value_heads");
    refused(with("\"linear_conv_kernel_dim\": 4", "\"linear_conv_kernel_dim\": 0"),
            "linear_conv_kernel_dim");
    refused(with("\"linear_num_value_heads\": 16", "\"linear_num_value_heads\": 0"),
            "linear_num_value_heads");
    refused(with("\"partial_rotary_factor\": 0.25", "\"partial_rotary_factor\": -1"),
            "partial_rotary_factor");
    refused(with("\"full_attention\"]", "\"sliding_attention\"]"), "layer_types");
    refused(with("\"linear_attention\", \"full_attention\"]", "\"full_attention\"]"),
            "layer_types");
}

}  // namespace
}  // namespace mw
