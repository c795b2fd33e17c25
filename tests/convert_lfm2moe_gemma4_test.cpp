// Converting LFM2-MoE and Gemma 4 (dense with per-layer embeddings and KV sharing; MoE with K = V
// full layers) from Hugging Face (issue 41): the reference models (lfm2moe-tiny, gemma4-tiny,
// gemma4moe-tiny, in the layout of llama.cpp's converter) are written back as Hugging Face
// checkpoints with the inverse of each mapping stated here independently (LFM2-MoE: lfm2's names,
// feed_forward.gate / expert_bias, experts.N.w1/w3/w2 per expert except one layer in
// transformers' fused gate_up_proj; Gemma 4: norms as stored, no k/v on the sharing layers, no v
// on K = V layers, router.proj / scale / per_expert_scale, experts.gate_up_proj / down_proj,
// layer_scalar; rope_freqs is the converter's own), converted, and must give the reference
// files' tensors, keys and logits. Bad configs are refused naming the field.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/fp16.h"
#include "convert/convert.h"
#include "format/ggml_types.h"
#include "format/gguf.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace mw {
namespace {

std::vector<double> values_of(const gguf::TensorInfo& t) {
    std::vector<double> v(t.n_elements);
    for (uint64_t i = 0; i < t.n_elements; ++i) {
        if (t.type == uint32_t(GgmlType::F32)) {
            float f;
            std::memcpy(&f, t.data + 4 * i, 4);
            v[i] = f;
        } else {
            uint16_t h;
            std::memcpy(&h, t.data + 2 * i, 2);
            v[i] = fp16_to_f32(h);
        }
    }
    return v;
}

struct HfTensor {
    std::vector<uint64_t> shape;  // outermost first
    std::vector<double> values;
};
using HfTensors = std::map<std::string, HfTensor>;

const std::map<std::string, std::string> kLfm2Names = {
    {"attn_norm.weight", "operator_norm.weight"},
    {"shortconv.in_proj.weight", "conv.in_proj.weight"},
    {"shortconv.out_proj.weight", "conv.out_proj.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_layernorm.weight"},
    {"attn_k_norm.weight", "self_attn.k_layernorm.weight"},
    {"attn_output.weight", "self_attn.out_proj.weight"},
    {"ffn_norm.weight", "ffn_norm.weight"},
    {"ffn_gate.weight", "feed_forward.w1.weight"},
    {"ffn_up.weight", "feed_forward.w3.weight"},
    {"ffn_down.weight", "feed_forward.w2.weight"},
    {"ffn_gate_inp.weight", "feed_forward.gate.weight"},
    {"exp_probs_b.bias", "feed_forward.expert_bias"},
};

const std::map<std::string, std::string> kGemma4Names = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
    {"post_ffw_norm_1.weight", "post_feedforward_layernorm_1.weight"},
    {"pre_ffw_norm_2.weight", "pre_feedforward_layernorm_2.weight"},
    {"post_ffw_norm_2.weight", "post_feedforward_layernorm_2.weight"},
    {"ffn_gate_inp.weight", "router.proj.weight"},
    {"ffn_gate_inp.scale", "router.scale"},
    {"ffn_gate_up_exps.weight", "experts.gate_up_proj"},
    {"ffn_down_exps.weight", "experts.down_proj"},
    {"ffn_down_exps.scale", "router.per_expert_scale"},
    {"inp_gate.weight", "per_layer_input_gate.weight"},
    {"proj.weight", "per_layer_projection.weight"},
    {"post_norm.weight", "post_per_layer_input_norm.weight"},
    {"layer_output_scale.weight", "layer_scalar"},
};

// LFM2-MoE's stacked experts [n][rows][cols] as HF keeps them: one matrix per expert, except in
// layer 3, which holds transformers' fused gate_up_proj [n][gate rows | up rows][cols] and
// down_proj as they are.
void split_experts(HfTensors& out, const std::string& hf, uint32_t layer, const std::string& kind,
                   const HfTensor& t) {
    const uint64_t n = t.shape[0], rows = t.shape[1], cols = t.shape[2];
    if (layer == 3) {
        if (kind == "down") {
            out[hf + "feed_forward.experts.down_proj"] = t;
            return;
        }
        HfTensor& fused = out[hf + "feed_forward.experts.gate_up_proj"];
        fused.shape = {n, 2 * rows, cols};
        fused.values.resize(n * 2 * rows * cols);
        for (uint64_t e = 0; e < n; ++e) {
            std::copy_n(t.values.begin() + int64_t(e * rows * cols), rows * cols,
                        fused.values.begin() + int64_t((2 * e + (kind == "up")) * rows * cols));
        }
        return;
    }
    const char* w = kind == "gate" ? "w1" : kind == "up" ? "w3" : "w2";
    for (uint64_t e = 0; e < n; ++e) {
        HfTensor& x = out[fmt::format("{}feed_forward.experts.{}.{}.weight", hf, e, w)];
        x.shape = {rows, cols};
        x.values.assign(t.values.begin() + int64_t(e * rows * cols),
                        t.values.begin() + int64_t((e + 1) * rows * cols));
    }
}

HfTensors hf_tensors(const gguf::GgufFile& f, bool gemma4, const std::string& m) {
    HfTensors out;
    for (const gguf::TensorInfo& t : f.tensors()) {
        const std::string n(t.name);
        HfTensor x{{}, values_of(t)};
        for (uint32_t d = t.n_dims; d-- > 0;) x.shape.push_back(t.ne[d]);
        static const std::map<std::string, std::string> globals = {
            {"token_embd.weight", "embed_tokens.weight"},
            {"token_embd_norm.weight", "embedding_norm.weight"},
            {"output_norm.weight", "norm.weight"},
            {"per_layer_token_embd.weight", "embed_tokens_per_layer.weight"},
            {"per_layer_model_proj.weight", "per_layer_model_projection.weight"},
            {"per_layer_proj_norm.weight", "per_layer_projection_norm.weight"},
        };
        if (n == "rope_freqs.weight") continue;  // Gemma 4's: made by the converter
        if (const auto it = globals.find(n); it != globals.end()) {
            out[m + it->second] = x;
            continue;
        }
        unsigned layer = 0;
        char rest[128] = {};
        if (std::sscanf(n.c_str(), "blk.%u.%127s", &layer, rest) != 2) {
            ADD_FAILURE() << "unexpected tensor " << n;
            continue;
        }
        const std::string r(rest), hf = fmt::format("{}layers.{}.", m, layer);
        const auto& names = gemma4 ? kGemma4Names : kLfm2Names;
        if (!gemma4 && r == "shortconv.conv.weight") {  // [L, channels] -> [channels, 1, L]
            out[hf + "conv.conv.weight"] = {{x.shape[0], 1, x.shape[1]}, x.values};
        } else if (!gemma4 && r.starts_with("ffn_") && r.ends_with("_exps.weight")) {
            split_experts(out, hf, layer, r.substr(4, r.size() - 16), x);
        } else if (const auto it = names.find(r); it != names.end()) {
            out[hf + it->second] = x;
        } else {
            ADD_FAILURE() << "unmapped tensor " << n;
        }
    }
    return out;
}

const char* kLfm2MoeConfig = R"({"architectures": ["Lfm2MoeForCausalLM"], "model_type": "lfm2_moe",
    "vocab_size": 512, "hidden_size": 256, "intermediate_size": 768, "moe_intermediate_size": 256,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 128000, "norm_eps": 1e-05, "conv_bias": false, "conv_L_cache": 3,
    "num_dense_layers": 2, "num_experts": 4, "num_experts_per_tok": 2, "use_expert_bias": true,
    "routed_scaling_factor": 1.0, "norm_topk_prob": true, "rope_theta": 1000000.0,
    "tie_embedding": true, "layer_types": ["conv", "conv", "full_attention", "conv"]})";

// Text-only (Gemma4ForCausalLM): 2 of 4 layers share K/V, double-wide MLPs there, per-layer
// embeddings of 64.
const char* kGemma4Config = R"({"architectures": ["Gemma4ForCausalLM"],
    "model_type": "gemma4_text", "vocab_size": 512, "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 64,
    "global_head_dim": 128, "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-06, "sliding_window": 32,
    "final_logit_softcapping": 0.3, "num_kv_shared_layers": 2, "use_double_wide_mlp": true,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    "hidden_size_per_layer_input": 64, "vocab_size_per_layer_input": 512,
    "attention_k_eq_v": false, "enable_moe_block": false, "tie_word_embeddings": true,
    "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
      "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                         "rope_theta": 1000000.0}}})";

// Multimodal (Gemma4ForConditionalGeneration): the text model in text_config and under
// model.language_model., a vision tower beside it; K = V full layers with 1 KV head; MoE.
const char* kGemma4MoeConfig = R"({"architectures": ["Gemma4ForConditionalGeneration"],
    "model_type": "gemma4", "tie_word_embeddings": true, "vision_config": {"hidden_size": 4},
    "text_config": {"model_type": "gemma4_text", "vocab_size": 512, "hidden_size": 256,
    "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_global_key_value_heads": 1, "attention_k_eq_v": true,
    "head_dim": 64, "global_head_dim": 128, "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-06, "sliding_window": 32,
    "final_logit_softcapping": 0.3, "num_kv_shared_layers": 0,
    "layer_types": ["sliding_attention", "full_attention"], "hidden_size_per_layer_input": 0,
    "enable_moe_block": true, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 256,
    "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
      "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                         "rope_theta": 1000000.0}}}})";

std::string write_folder(const std::string& model) {
    const bool gemma4 = model.starts_with("gemma4");
    const bool multimodal = model == "gemma4moe-tiny";
    const std::vector<uint8_t> bytes =
        test::read_file(test::shared_path("reference/models/" + model + "-F16.gguf"));
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, model);
    std::vector<test::SafetensorsEntry> entries;
    for (const auto& [name, t] :
         hf_tensors(f, gemma4, multimodal ? "model.language_model." : "model.")) {
        entries.push_back({name, "F32", t.shape, test::encode_values(t.values, "F32")});
    }
    if (multimodal) {
        entries.push_back({"model.vision_tower.patch_embedder.input_proj.weight",
                           "F32",
                           {4, 4},
                           test::encode_values(std::vector<double>(16, 0.5), "F32")});
    }
    const std::string dir = test::temp_dir() + "/" + model + "-hf";
    std::filesystem::create_directories(dir);
    test::write_binary_file(dir + "/model.safetensors", test::safetensors_bytes(entries));
    test::write_text_file(dir + "/config.json", model == "lfm2moe-tiny" ? kLfm2MoeConfig
                                                : multimodal            ? kGemma4MoeConfig
                                                                        : kGemma4Config);
    test::write_hf_tokenizer(dir);
    return dir;
}

std::string describe(const gguf::Value& v) {
    if (v.type == gguf::ValueType::string) return std::string(v.str);
    if (v.type != gguf::ValueType::array) return fmt::format("{}", v.as_f64());
    std::string out = "[";
    for (uint64_t i = 0; i < v.count; ++i) out += fmt::format("{} ", v.elem_f64(i));
    return out + "]";
}

TEST(ConvertLfm2MoeGemma4, RoundTripGivesTheReferenceTensorsKeysAndLogits) {
    for (const auto& [model, arch] :
         std::vector<std::pair<std::string, std::string>>{{"lfm2moe-tiny", "lfm2moe"},
                                                          {"gemma4-tiny", "gemma4"},
                                                          {"gemma4moe-tiny", "gemma4"}}) {
        SCOPED_TRACE(model);
        const std::string dir = write_folder(model);
        const std::string out = dir + ".gguf";
        const convert::ConvertResult r = convert::convert_hf(dir, out, {});
        EXPECT_EQ(r.arch, arch);
        if (model == "gemma4moe-tiny") {  // the vision tower is left out, and said so
            ASSERT_EQ(r.warnings.size(), 1u);
            EXPECT_NE(r.warnings[0].find("1 tensors of the vision or audio encoders"),
                      std::string::npos)
                << r.warnings[0];
        } else {
            EXPECT_TRUE(r.warnings.empty());
        }

        const std::string ref_path = test::shared_path("reference/models/" + model + "-F16.gguf");
        const std::vector<uint8_t> ref_bytes = test::read_file(ref_path);
        const std::vector<uint8_t> got_bytes = test::read_file(out);
        const gguf::GgufFile ref = gguf::GgufFile::parse(ref_bytes, model);
        const gguf::GgufFile got = gguf::GgufFile::parse(got_bytes, out);
        EXPECT_EQ(got.tensors().size(), ref.tensors().size());
        for (const gguf::TensorInfo& t : ref.tensors()) {
            const gguf::TensorInfo* g = got.find_tensor(t.name);
            ASSERT_NE(g, nullptr) << t.name;
            EXPECT_EQ(g->type, t.type) << t.name;
            ASSERT_EQ(g->n_dims, t.n_dims) << t.name;
            for (uint32_t d = 0; d < t.n_dims; ++d) EXPECT_EQ(g->ne[d], t.ne[d]) << t.name;
            EXPECT_EQ(values_of(*g), values_of(t)) << t.name;
        }
        for (const gguf::KeyValue& kv : ref.metadata()) {
            if (!kv.key.starts_with(arch + ".")) continue;
            const gguf::Value* v = got.find(kv.key);
            ASSERT_NE(v, nullptr) << kv.key;
            EXPECT_EQ(describe(*v), describe(kv.value)) << kv.key;
        }
        const std::vector<int32_t> tokens = {1, 57, 300, 12, 499, 7, 211, 88, 402, 33};
        const std::vector<float> want = test::memwall_logits(ref_path, tokens);
        const std::vector<float> have = test::memwall_logits(out, tokens);
        ASSERT_EQ(want.size(), have.size());
        EXPECT_EQ(std::memcmp(want.data(), have.data(), want.size() * sizeof(float)), 0);
        std::filesystem::remove_all(dir);
        std::remove(out.c_str());
    }
}

TEST(ConvertLfm2MoeGemma4, BadConfigsNameTheField) {
    const auto refused = [](const std::string& model, const std::string& from,
                            const std::string& to, const std::string& word) {
        SCOPED_TRACE(to);
        const std::string dir = write_folder(model);
        std::string c = test::read_text(dir + "/config.json");
        const size_t at = c.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        c.replace(at, from.size(), to);
        test::write_text_file(dir + "/config.json", c);
        try {
            convert::convert_hf(dir, dir + ".gguf", {});
            ADD_FAILURE() << "expected an error for " << to;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
        }
        std::filesystem::remove_all(dir);
    };
    refused("lfm2moe-tiny", R"("norm_topk_prob": true)", R"("norm_topk_prob": false)",
            "norm_topk_prob");
    refused("lfm2moe-tiny", R"("use_expert_bias": true)", R"("use_expert_bias": false)",
            "use_expert_bias");
    refused("lfm2moe-tiny", R"("num_dense_layers": 2)", R"("num_dense_layers": 5)",
            "num_dense_layers");
    // KV sharing by every layer, or by a full layer with no full layer before it.
    refused("gemma4-tiny", R"("num_kv_shared_layers": 2)", R"("num_kv_shared_layers": 4)",
            "num_kv_shared_layers");
    refused("gemma4-tiny", R"("num_kv_shared_layers": 2)", R"("num_kv_shared_layers": 3)",
            "num_kv_shared_layers");
    // Per-layer arrays that disagree with num_hidden_layers or with each other.
    refused("gemma4-tiny", R"(["sliding_attention", "full_attention", "sliding_attention", )",
            R"(["sliding_attention", "full_attention", )", "layer_types");
    refused("gemma4-tiny", R"("global_head_dim": 128)",
            R"("per_layer_config": {"1": {"head_dim": 128}, "3": {"head_dim": 64}})",
            "per_layer_config.3.head_dim");
    refused("gemma4-tiny", R"("rope_type": "proportional")", R"("rope_type": "yarn")",
            "rope_parameters.full_attention.rope_type");
    refused("gemma4-tiny", R"("vocab_size_per_layer_input": 512)",
            R"("vocab_size_per_layer_input": 256)", "vocab_size_per_layer_input");
    refused("gemma4moe-tiny", R"("top_k_experts": 2)", R"("top_k_experts": 9)", "top_k_experts");
}

}  // namespace
}  // namespace mw
