// Converting LFM2-MoE, Gemma 4 (dense with per-layer embeddings and KV sharing; MoE with K = V
// full layers) and gpt-oss from Hugging Face (issue 41): the reference models (lfm2moe-tiny,
// gemma4-tiny, gemma4moe-tiny, gpt-oss-tiny, in the layout of llama.cpp's converter) are written
// back as Hugging Face checkpoints with the inverse of each mapping stated here independently
// (LFM2-MoE: lfm2's names, feed_forward.gate / expert_bias, experts.N.w1/w3/w2 per expert except
// one layer in transformers' fused gate_up_proj; Gemma 4: norms as stored, no k/v on the sharing
// layers, no v on K = V layers, router.proj / scale / per_expert_scale, experts.gate_up_proj /
// down_proj, layer_scalar; rope_freqs is the converter's own; gpt-oss: sinks, router, gate and up
// interleaved in gate_up_proj (and its bias), either dequantized [expert, in, out] or MXFP4
// blocks + scales), converted, and must give the reference files' tensors, keys and logits.
// Bad configs are refused naming the field.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "convert/convert.h"
#include "convert/hf_config.h"
#include "format/ggml_types.h"
#include "format/gguf.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace mw {
namespace {

using test::HfTensor;
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
        const HfTensor x{test::hf_shape(t), test::gguf_values(t)};
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
// model.language_model., a vision tower beside it; K = V full layers with 1 KV head, their head
// size and KV heads in per_layer_config (as newer transformers save it); MoE.
const char* kGemma4MoeConfig = R"({"architectures": ["Gemma4ForConditionalGeneration"],
    "model_type": "gemma4", "tie_word_embeddings": true, "vision_config": {"hidden_size": 4},
    "text_config": {"model_type": "gemma4_text", "vocab_size": 512, "hidden_size": 256,
    "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "attention_k_eq_v": true, "head_dim": 64,
    "per_layer_config": {"0": {"head_dim": 64}, "1": {"head_dim": 128, "num_key_value_heads": 1}},
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-06, "sliding_window": 32,
    "final_logit_softcapping": 0.3, "num_kv_shared_layers": 0,
    "layer_types": ["sliding_attention", "full_attention"], "hidden_size_per_layer_input": 0,
    "enable_moe_block": true, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 256,
    "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
      "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                         "rope_theta": 1000000.0}}}})";

const char* kGptOssConfig = R"({"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
    "vocab_size": 512, "hidden_size": 256, "intermediate_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64, "num_local_experts": 4,
    "num_experts_per_tok": 2, "experts_per_token": 2, "hidden_act": "silu", "attention_bias": true,
    "max_position_embeddings": 131072, "initial_context_length": 4096, "rms_norm_eps": 1e-05,
    "rope_theta": 150000, "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
      "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false},
    "sliding_window": 32, "swiglu_limit": 7.0, "layer_types": ["sliding_attention",
    "full_attention"], "tie_word_embeddings": false, "quantization_config": null})";

const std::map<std::string, std::string> kGptOssNames = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_output.bias", "self_attn.o_proj.bias"},
    {"attn_sinks.weight", "self_attn.sinks"},
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate_inp.weight", "mlp.router.weight"},
    {"ffn_gate_inp.bias", "mlp.router.bias"},
    {"ffn_down_exps.bias", "mlp.experts.down_proj_bias"},
};

// An MXFP4 expert stack of the GGUF (per 32 elements: the exponent, then byte j holding elements
// j and j + 16) as HF's blocks [X][rows][n / 32][16] (byte i: elements 2i and 2i + 1) and scales
// [X][rows][n / 32]; HF row step * r + first takes GGUF row r of each expert.
void mxfp4_to_hf(const gguf::TensorInfo& t, uint64_t hf_rows, uint64_t step, uint64_t first,
                 std::vector<uint8_t>& blocks, std::vector<uint8_t>& scales) {
    const uint64_t n = t.ne[0], rows = t.ne[1], X = t.ne[2], nb = n / 32;
    blocks.resize(X * hf_rows * nb * 16);
    scales.resize(X * hf_rows * nb);
    for (uint64_t x = 0; x < X; ++x) {
        for (uint64_t r = 0; r < rows; ++r) {
            const uint64_t to = x * hf_rows + step * r + first;
            for (uint64_t j = 0; j < nb; ++j) {
                const uint8_t* blk = t.data + ((x * rows + r) * nb + j) * 17;
                scales[to * nb + j] = blk[0];
                const auto e = [&](uint64_t k) {
                    return k < 16 ? blk[1 + k] & 0x0F : blk[1 + k - 16] >> 4;
                };
                for (uint64_t i = 0; i < 16; ++i) {
                    blocks[(to * nb + j) * 16 + i] = uint8_t(e(2 * i) | e(2 * i + 1) << 4);
                }
            }
        }
    }
}

// gpt-oss as HF writes it: from the F16 reference, the experts dequantized ([expert, in, out]
// gate_up_proj with gate and up interleaved, down_proj likewise transposed) or, with `mx` (the
// MXFP4 reference), as that file's MXFP4 blocks and scales.
std::vector<test::SafetensorsEntry> gptoss_entries(const gguf::GgufFile& f,
                                                   const gguf::GgufFile* mx) {
    std::vector<test::SafetensorsEntry> out;
    const auto add = [&](const std::string& name, std::vector<uint64_t> shape,
                         const std::vector<double>& v) {
        out.push_back({name, "F32", std::move(shape), test::encode_values(v, "F32")});
    };
    for (const gguf::TensorInfo& t : f.tensors()) {
        const std::string n(t.name);
        std::vector<uint64_t> shape;
        for (uint32_t d = t.n_dims; d-- > 0;) shape.push_back(t.ne[d]);
        static const std::map<std::string, std::string> globals = {
            {"token_embd.weight", "model.embed_tokens.weight"},
            {"output_norm.weight", "model.norm.weight"},
            {"output.weight", "lm_head.weight"},
        };
        if (const auto it = globals.find(n); it != globals.end()) {
            add(it->second, shape, test::gguf_values(t));
            continue;
        }
        unsigned layer = 0;
        char rest[128] = {};
        if (std::sscanf(n.c_str(), "blk.%u.%127s", &layer, rest) != 2) {
            ADD_FAILURE() << "unexpected tensor " << n;
            continue;
        }
        const std::string r(rest), hf = fmt::format("model.layers.{}.", layer);
        if (const auto it = kGptOssNames.find(r); it != kGptOssNames.end()) {
            add(hf + it->second, shape, test::gguf_values(t));
            continue;
        }
        if (r == "ffn_up_exps.weight" || r == "ffn_up_exps.bias" || r == "ffn_down_exps.weight") {
            continue;  // with gate's
        }
        const std::string ex = hf + "mlp.experts.";
        const std::string g = fmt::format("blk.{}.", layer);
        const gguf::TensorInfo* up = f.find_tensor(
            g + (r == "ffn_gate_exps.bias" ? "ffn_up_exps.bias" : "ffn_up_exps.weight"));
        if (!up || (r != "ffn_gate_exps.weight" && r != "ffn_gate_exps.bias")) {
            ADD_FAILURE() << "unmapped tensor " << n;
            continue;
        }
        const std::vector<double> gv = test::gguf_values(t), uv = test::gguf_values(*up);
        if (r == "ffn_gate_exps.bias") {  // [X][F] twice -> [X][2F] interleaved
            std::vector<double> gu(2 * gv.size());
            for (size_t i = 0; i < gv.size(); ++i) {
                gu[2 * i] = gv[i];
                gu[2 * i + 1] = uv[i];
            }
            add(ex + "gate_up_proj_bias", {shape[0], 2 * shape[1]}, gu);
            continue;
        }
        const gguf::TensorInfo& down = *f.find_tensor(g + "ffn_down_exps.weight");
        const uint64_t X = t.ne[2], F = t.ne[1], E = t.ne[0];
        if (mx) {
            std::vector<uint8_t> gb, gs, ub, us, db, ds;
            mxfp4_to_hf(*mx->find_tensor(g + "ffn_gate_exps.weight"), 2 * F, 2, 0, gb, gs);
            mxfp4_to_hf(*mx->find_tensor(g + "ffn_up_exps.weight"), 2 * F, 2, 1, ub, us);
            for (size_t i = 0; i < gb.size(); ++i) gb[i] |= ub[i];  // disjoint rows, zero-filled
            for (size_t i = 0; i < gs.size(); ++i) gs[i] |= us[i];
            mxfp4_to_hf(*mx->find_tensor(g + "ffn_down_exps.weight"), E, 1, 0, db, ds);
            out.push_back({ex + "gate_up_proj_blocks", "U8", {X, 2 * F, E / 32, 16}, gb});
            out.push_back({ex + "gate_up_proj_scales", "U8", {X, 2 * F, E / 32}, gs});
            out.push_back({ex + "down_proj_blocks", "U8", {X, E, F / 32, 16}, db});
            out.push_back({ex + "down_proj_scales", "U8", {X, E, F / 32}, ds});
            continue;
        }
        std::vector<double> gu(X * E * 2 * F), dn(X * F * E);
        const std::vector<double> dv = test::gguf_values(down);
        for (uint64_t x = 0; x < X; ++x) {
            for (uint64_t f2 = 0; f2 < F; ++f2) {
                for (uint64_t e = 0; e < E; ++e) {
                    gu[(x * E + e) * 2 * F + 2 * f2] = gv[(x * F + f2) * E + e];
                    gu[(x * E + e) * 2 * F + 2 * f2 + 1] = uv[(x * F + f2) * E + e];
                    dn[(x * F + f2) * E + e] = dv[(x * E + e) * F + f2];
                }
            }
        }
        add(ex + "gate_up_proj", {X, E, 2 * F}, gu);
        add(ex + "down_proj", {X, F, E}, dn);
    }
    return out;
}

// model: a reference model's name; "gpt-oss-tiny-mxfp4" is gpt-oss-tiny with MXFP4 experts.
std::string write_folder(const std::string& model) {
    if (model.starts_with("gpt-oss")) {
        const bool mxfp4 = model.ends_with("mxfp4");
        const std::vector<uint8_t> bytes =
            test::read_file(test::shared_path("reference/models/gpt-oss-tiny-F16.gguf"));
        const std::vector<uint8_t> mx_bytes =
            mxfp4 ? test::read_file(test::shared_path("reference/models/gpt-oss-tiny-MXFP4.gguf"))
                  : std::vector<uint8_t>{};
        const gguf::GgufFile f = gguf::GgufFile::parse(bytes, model);
        std::optional<gguf::GgufFile> mx;
        if (mxfp4) mx.emplace(gguf::GgufFile::parse(mx_bytes, model));
        const std::string dir = test::temp_dir() + "/" + model + "-hf";
        std::filesystem::create_directories(dir);
        test::write_binary_file(dir + "/model.safetensors",
                                test::safetensors_bytes(gptoss_entries(f, mx ? &*mx : nullptr)));
        std::string config = kGptOssConfig;
        if (mxfp4) {
            const std::string q = R"("quantization_config": null)";
            config.replace(config.find(q), q.size(),
                           R"("quantization_config": {"quant_method": "mxfp4", )"
                           R"("modules_to_not_convert": ["model.layers.*.self_attn", )"
                           R"("model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]})");
        }
        test::write_text_file(dir + "/config.json", config);
        test::write_hf_tokenizer(dir);
        return dir;
    }
    const bool gemma4 = model.starts_with("gemma4");
    const bool multimodal = model == "gemma4moe-tiny";
    const std::vector<uint8_t> bytes =
        test::read_file(test::shared_path("reference/models/" + model + "-F16.gguf"));
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, model);
    HfTensors tensors = hf_tensors(f, gemma4, multimodal ? "model.language_model." : "model.");
    if (multimodal) {
        tensors["model.vision_tower.patch_embedder.input_proj.weight"] = {
            {4, 4}, std::vector<double>(16, 0.5)};
    }
    return test::write_hf_checkpoint(model + "-hf", tensors,
                                     model == "lfm2moe-tiny" ? kLfm2MoeConfig
                                     : multimodal            ? kGemma4MoeConfig
                                                             : kGemma4Config);
}

TEST(ConvertLfm2MoeGemma4GptOss, RoundTripGivesTheReferenceTensorsKeysAndLogits) {
    for (const auto& [model, arch] :
         std::vector<std::pair<std::string, std::string>>{{"lfm2moe-tiny", "lfm2moe"},
                                                          {"gemma4-tiny", "gemma4"},
                                                          {"gemma4moe-tiny", "gemma4"},
                                                          {"gpt-oss-tiny", "gpt-oss"}}) {
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
        test::expect_round_trip(test::shared_path("reference/models/" + model + "-F16.gguf"), out,
                                arch);
        std::filesystem::remove_all(dir);
        std::remove(out.c_str());
    }
}

// gpt-oss as published: MXFP4 experts (blocks + scales, quantization_config mxfp4), kept MXFP4
// byte for byte (the reference MXFP4_MOE file's experts, which llama-quantize made from the F16
// model); every other tensor as in the F16 reference. No reference file has that mix: the logits
// are held near the MXFP4 file's, whose other matrices are Q8_0 (memwall's Q8_0 encoder searches
// its scales, so a q8_0 conversion does not give llama-quantize's bytes).
TEST(ConvertLfm2MoeGemma4GptOss, GptOssMxfp4ExpertsAreKeptAsTheyAre) {
    const std::string dir = write_folder("gpt-oss-tiny-mxfp4");
    const std::string out = dir + ".gguf";
    const convert::ConvertResult r = convert::convert_hf(dir, out, {});
    EXPECT_EQ(r.arch, "gpt-oss");
    const std::string f16_path = test::shared_path("reference/models/gpt-oss-tiny-F16.gguf");
    const std::string mx_path = test::shared_path("reference/models/gpt-oss-tiny-MXFP4.gguf");
    const std::vector<uint8_t> f16_bytes = test::read_file(f16_path);
    const std::vector<uint8_t> mx_bytes = test::read_file(mx_path);
    const std::vector<uint8_t> got_bytes = test::read_file(out);
    const gguf::GgufFile f16 = gguf::GgufFile::parse(f16_bytes, f16_path);
    const gguf::GgufFile mx = gguf::GgufFile::parse(mx_bytes, mx_path);
    const gguf::GgufFile got = gguf::GgufFile::parse(got_bytes, out);
    EXPECT_EQ(got.tensors().size(), f16.tensors().size());
    size_t n_mxfp4 = 0;
    for (const gguf::TensorInfo& t : mx.tensors()) {
        const gguf::TensorInfo* g = got.find_tensor(t.name);
        ASSERT_NE(g, nullptr) << t.name;
        if (t.type == uint32_t(GgmlType::MXFP4)) {
            ++n_mxfp4;
            ASSERT_EQ(g->type, t.type) << t.name;
            ASSERT_EQ(g->n_bytes, t.n_bytes) << t.name;
            EXPECT_EQ(std::memcmp(g->data, t.data, t.n_bytes), 0) << t.name;
        } else {
            const gguf::TensorInfo* want = f16.find_tensor(t.name);
            ASSERT_EQ(g->type, want->type) << t.name;
            EXPECT_EQ(test::gguf_values(*g), test::gguf_values(*want)) << t.name;
        }
    }
    EXPECT_EQ(n_mxfp4, 6u);  // gate, up and down in 2 layers
    for (const gguf::KeyValue& kv : f16.metadata()) {
        if (!kv.key.starts_with("gpt-oss.")) continue;
        const gguf::Value* v = got.find(kv.key);
        ASSERT_NE(v, nullptr) << kv.key;
        EXPECT_EQ(test::describe_value(*v), test::describe_value(kv.value)) << kv.key;
    }
    const std::vector<int32_t> tokens = {1, 57, 300, 12, 499, 7, 211, 88, 402, 33};
    const std::vector<float> want = test::memwall_logits(mx_path, tokens);
    const std::vector<float> have = test::memwall_logits(out, tokens);
    ASSERT_EQ(want.size(), have.size());
    // Measured: 0.074 from the MXFP4 file (its Q8_0 attention), where the F16 model is 0.29 away
    // (its experts unquantized): the experts that run are the MXFP4 ones.
    const std::vector<float> dense = test::memwall_logits(f16_path, tokens);
    const double err = test::rel_rms(have.data(), want.data(), want.size());
    EXPECT_LT(err, 0.12);
    EXPECT_LT(err, 0.5 * test::rel_rms(dense.data(), want.data(), want.size()));
    std::filesystem::remove_all(dir);
    std::remove(out.c_str());
}

// Gemma 4 E2B's config.json (its published shape: text_config beside vision and audio configs,
// null num_global_key_value_heads, EOS as a list) reads as the catalogue row gemma-4-e2b says.
TEST(ConvertLfm2MoeGemma4GptOss, Gemma4E2bConfigReadsAsPublished) {
    std::string types;
    for (int i = 0; i < 35; ++i) {
        types += fmt::format("{}\"{}_attention\"", i ? ", " : "", i % 5 == 4 ? "full" : "sliding");
    }
    const std::string json = fmt::format(
        R"({{"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
        "tie_word_embeddings": true, "eos_token_id": [1, 106], "text_config": {{
        "model_type": "gemma4_text", "hidden_size": 1536, "num_hidden_layers": 35,
        "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
        "global_head_dim": 512, "num_global_key_value_heads": null, "attention_k_eq_v": false,
        "sliding_window": 512, "vocab_size": 262144, "vocab_size_per_layer_input": 262144,
        "hidden_size_per_layer_input": 256, "num_kv_shared_layers": 20,
        "use_double_wide_mlp": true, "intermediate_size": 6144, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh",
        "final_logit_softcapping": 30.0, "bos_token_id": 2, "eos_token_id": 1,
        "layer_types": [{}], "rope_parameters": {{
        "full_attention": {{"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
        "rope_type": "proportional"}}, "sliding_attention": {{"rope_theta": 10000.0,
        "rope_type": "default"}}}}}}, "vision_config": {{"model_type": "gemma4_vision"}},
        "audio_config": {{"model_type": "gemma4_audio"}}}})",
        types);
    const convert::HfConfig c = convert::parse_hf_config(
        {reinterpret_cast<const uint8_t*>(json.data()), json.size()}, "config.json");
    EXPECT_EQ(c.arch, "gemma4");
    EXPECT_EQ(c.tensor_prefix, "model.language_model.");
    EXPECT_EQ(c.head_dim_swa, 256u);
    EXPECT_EQ(c.head_dim, 512u);
    EXPECT_EQ(c.n_head_kv_full, 1u);
    EXPECT_FALSE(c.k_eq_v);
    EXPECT_EQ(c.n_kv_shared, 20u);
    EXPECT_EQ(c.n_embd_per_layer, 256u);
    ASSERT_EQ(c.n_ff_per_layer.size(), 35u);
    EXPECT_EQ(c.n_ff_per_layer[14], 6144u);
    EXPECT_EQ(c.n_ff_per_layer[15], 12288u);
    ASSERT_EQ(c.swa_layers.size(), 35u);
    EXPECT_FALSE(c.swa_layers[4]);
    EXPECT_TRUE(c.swa_layers[5]);
    EXPECT_EQ(c.n_rot, 512u);
    EXPECT_EQ(c.n_rot_swa, 256u);
    EXPECT_EQ(c.n_rot_full_pairs, 64u);  // a quarter of 512 dims, in pairs
    EXPECT_EQ(c.rope_theta, 1e6);
    EXPECT_EQ(c.rope_local_base, 1e4);
    EXPECT_EQ(c.final_softcap, 30.0);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_EQ(c.n_expert, 0u);
    EXPECT_EQ(c.eos_token_id, std::optional<uint32_t>(1));
}

// gpt-oss-20b's config.json (MXFP4 quantization_config, YaRN, alternating layer_types) reads
// as the catalogue row gpt-oss-20b says.
TEST(ConvertLfm2MoeGemma4GptOss, GptOss20bConfigReadsAsPublished) {
    std::string types;
    for (int i = 0; i < 24; ++i) {
        types += fmt::format("{}\"{}_attention\"", i ? ", " : "", i % 2 ? "full" : "sliding");
    }
    const std::string json = fmt::format(
        R"({{"architectures": ["GptOssForCausalLM"], "attention_bias": true,
        "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu",
        "hidden_size": 2880, "initial_context_length": 4096, "intermediate_size": 2880,
        "layer_types": [{}], "max_position_embeddings": 131072, "model_type": "gpt_oss",
        "num_attention_heads": 64, "num_experts_per_tok": 4, "num_hidden_layers": 24,
        "num_key_value_heads": 8, "num_local_experts": 32, "pad_token_id": 199999,
        "quantization_config": {{"modules_to_not_convert": ["model.layers.*.self_attn",
        "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}},
        "rms_norm_eps": 1e-05, "rope_scaling": {{"beta_fast": 32.0, "beta_slow": 1.0,
        "factor": 32.0, "original_max_position_embeddings": 4096, "rope_type": "yarn",
        "truncate": false}}, "rope_theta": 150000, "sliding_window": 128, "swiglu_limit": 7.0,
        "tie_word_embeddings": false, "vocab_size": 201088}})",
        types);
    const convert::HfConfig c = convert::parse_hf_config(
        {reinterpret_cast<const uint8_t*>(json.data()), json.size()}, "config.json");
    EXPECT_EQ(c.arch, "gpt-oss");
    EXPECT_EQ(c.n_expert, 32u);
    EXPECT_EQ(c.n_expert_used, 4u);
    EXPECT_EQ(c.n_ff_expert, 2880u);
    EXPECT_EQ(c.head_dim, 64u);
    EXPECT_EQ(c.n_head_kv, 8u);
    EXPECT_EQ(c.sliding_window, 128u);
    EXPECT_TRUE(c.qkv_bias);
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_EQ(c.rope_scaling.kind, convert::RopeScalingKind::yarn);
    EXPECT_EQ(c.rope_scaling.factor, 32.0);
    EXPECT_EQ(c.rope_scaling.original_context, 4096u);
    EXPECT_EQ(c.rope_theta, 150000.0);
}

TEST(ConvertLfm2MoeGemma4GptOss, BadConfigsNameTheField) {
    const auto refused = [](const std::string& model, const std::string& from,
                            const std::string& to, const std::string& word) {
        SCOPED_TRACE(to);
        const std::string dir = write_folder(model);
        test::expect_config_refused(dir, test::read_text(dir + "/config.json"), from, to, word);
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
    refused("gemma4moe-tiny", R"("0": {"head_dim": 64})", R"("0": {"head_dim": 32})",
            "per_layer_config.0.head_dim");
    refused("gpt-oss-tiny", R"("swiglu_limit": 7.0)", R"("swiglu_limit": 5.0)", "swiglu_limit");
    refused("gpt-oss-tiny", R"(["sliding_attention",)", R"(["full_attention",)", "layer_types");
    refused("gpt-oss-tiny", R"("quantization_config": null)",
            R"("quantization_config": {"quant_method": "fp8"})", "quant_method");
}

}  // namespace
}  // namespace mw
