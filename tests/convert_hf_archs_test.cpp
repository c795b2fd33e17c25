// Hugging Face -> GGUF conversion of granite, command-r, gemma2, gemma3, phi3 and deepseek2, by
// round trip through the reference models (written with llama.cpp's gguf-py; llama.cpp's logits
// for them are the reference cases): each is written back as a Hugging Face checkpoint, undoing
// what llama.cpp's converter does (Q/K row permutation, Gemma's norm + 1, expert stacking,
// DeepSeek's kv_b_proj split), with a config.json holding its hyper-parameters; memwall's
// converter must then give back every tensor byte for byte, the same hyper-parameters as memwall
// reads them, and the same logits.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "convert/hf_config.h"
#include "format/gguf.h"
#include "memwall.h"
#include "model/hparams.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace {

using mw::test::SafetensorsEntry;
using nlohmann::json;
namespace cv = mw::convert;

const std::vector<int32_t> kTokens = {1, 17, 3, 42, 300, 8, 63, 511, 29, 11, 50, 2};

// The HF name of a GGUF tensor of a block (suffix after "blk.N.").
std::string hf_block_name(const std::string& arch, const std::string& suffix) {
    const bool gemma = arch == "gemma2" || arch == "gemma3";
    static const std::map<std::string, std::string> common = {
        {"attn_norm.weight", "input_layernorm.weight"},
        {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"},
        {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_qkv.weight", "self_attn.qkv_proj.weight"},
        {"attn_output.weight", "self_attn.o_proj.weight"},
        {"attn_q_norm.weight", "self_attn.q_norm.weight"},
        {"attn_k_norm.weight", "self_attn.k_norm.weight"},
        {"attn_q_a.weight", "self_attn.q_a_proj.weight"},
        {"attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight"},
        {"attn_q_b.weight", "self_attn.q_b_proj.weight"},
        {"attn_kv_a_mqa.weight", "self_attn.kv_a_proj_with_mqa.weight"},
        {"attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight"},
        {"post_attention_norm.weight", "post_attention_layernorm.weight"},
        {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"},
        {"ffn_gate_inp.weight", "mlp.gate.weight"},
        {"exp_probs_b.bias", "mlp.gate.e_score_correction_bias"},
        {"ffn_gate_shexp.weight", "mlp.shared_experts.gate_proj.weight"},
        {"ffn_up_shexp.weight", "mlp.shared_experts.up_proj.weight"},
        {"ffn_down_shexp.weight", "mlp.shared_experts.down_proj.weight"},
    };
    if (suffix == "ffn_norm.weight") {
        return gemma ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight";
    }
    if (suffix == "ffn_up.weight")
        return arch == "phi3" ? "mlp.gate_up_proj.weight" : "mlp.up_proj.weight";
    const auto it = common.find(suffix);
    if (it == common.end()) ADD_FAILURE() << "no HF name for " << suffix;
    return it == common.end() ? suffix : it->second;
}

size_t element_size(uint32_t type) {
    EXPECT_TRUE(type == 0 || type == 1) << "reference tensors are F32 or F16";
    return type == 0 ? 4 : 2;
}

// The HF checkpoint a reference GGUF came from, as safetensors entries.
std::vector<SafetensorsEntry> hf_tensors_of(const mw::gguf::GgufFile& f, const std::string& arch) {
    std::vector<SafetensorsEntry> out;
    const uint32_t n_head = *f.get_u32(arch + ".attention.head_count");
    const uint32_t n_rot = *f.get_u32(arch + ".rope.dimension_count");
    for (const mw::gguf::TensorInfo& t : f.tensors()) {
        const std::string name(t.name);
        SafetensorsEntry e;
        e.dtype = t.type == 0 ? "F32" : "F16";
        for (uint32_t d = t.n_dims; d-- > 0;) e.shape.push_back(t.ne[d]);
        e.bytes.assign(t.data, t.data + t.n_bytes);
        const size_t es = element_size(t.type);
        std::string block, suffix;
        if (name.rfind("blk.", 0) == 0) {
            const size_t dot = name.find('.', 4);
            block = "model.layers." + name.substr(4, dot - 4) + ".";
            suffix = name.substr(dot + 1);
        }
        // Gemma's norms: HF stores w, the model multiplies by 1 + w.
        if ((arch == "gemma2" || arch == "gemma3") && name.ends_with("norm.weight")) {
            for (size_t i = 0; i < e.bytes.size(); i += 4) {
                float v;
                std::memcpy(&v, &e.bytes[i], 4);
                v -= 1.0f;
                std::memcpy(&e.bytes[i], &v, 4);
            }
        }
        // Granite (llama layout): GGUF Q/K rows pair adjacent dims; HF rotates halves.
        if (arch == "granite" && (suffix == "attn_q.weight" || suffix == "attn_k.weight")) {
            const size_t row = t.ne[0] * es, half = n_rot / 2;
            std::vector<uint8_t> hf(e.bytes.size());
            for (uint64_t r = 0; r < t.ne[1]; ++r) {
                const uint64_t head = r / n_rot, within = r % n_rot;
                const uint64_t hf_row = head * n_rot + (within % 2) * half + within / 2;
                std::memcpy(&hf[hf_row * row], &e.bytes[r * row], row);
            }
            e.bytes = std::move(hf);
        }
        if (name == "token_embd.weight") {
            e.name = "model.embed_tokens.weight";
        } else if (name == "output_norm.weight") {
            e.name = "model.norm.weight";
        } else if (name == "output.weight") {
            e.name = "lm_head.weight";
        } else if (suffix.ends_with("_exps.weight")) {
            // One [rows, cols] matrix per expert.
            const std::string which = suffix.substr(4, suffix.find("_exps") - 4);
            const size_t bytes = t.ne[0] * t.ne[1] * es;
            for (uint64_t x = 0; x < t.ne[2]; ++x) {
                out.push_back(
                    {block + "mlp.experts." + std::to_string(x) + "." + which + "_proj.weight",
                     e.dtype,
                     {t.ne[1], t.ne[0]},
                     std::vector<uint8_t>(t.data + x * bytes, t.data + (x + 1) * bytes)});
            }
            continue;
        } else if (suffix == "attn_k_b.weight") {
            // kv_b_proj [n_head * (nope + v), rank]: per head K's rows (k_b transposed), V's.
            const mw::gguf::TensorInfo* vb =
                f.find_tensor(name.substr(0, name.size() - suffix.size()) + "attn_v_b.weight");
            const uint64_t nope = t.ne[0], rank = t.ne[1], vd = vb->ne[1];
            EXPECT_EQ(t.ne[2], n_head);
            std::vector<uint8_t> kv(n_head * (nope + vd) * rank * es);
            for (uint64_t h = 0; h < n_head; ++h) {
                for (uint64_t j = 0; j < nope; ++j) {
                    for (uint64_t r = 0; r < rank; ++r) {
                        std::memcpy(&kv[((h * (nope + vd) + j) * rank + r) * es],
                                    t.data + ((h * rank + r) * nope + j) * es, es);
                    }
                }
                std::memcpy(&kv[(h * (nope + vd) + nope) * rank * es],
                            vb->data + h * vd * rank * es, vd * rank * es);
            }
            out.push_back({block + "self_attn.kv_b_proj.weight",
                           e.dtype,
                           {n_head * (nope + vd), rank},
                           std::move(kv)});
            continue;
        } else if (suffix == "attn_v_b.weight") {
            continue;  // in kv_b_proj
        } else {
            e.name = block + hf_block_name(arch, suffix);
        }
        out.push_back(std::move(e));
    }
    return out;
}

// Every hyper-parameter memwall reads, for comparison.
std::string hparams_text(const mw::HParams& h) {
    return fmt::format(
        "ctx {} embd {} layer {} ff {} head {}/{} hd {}/{} eps {} rope {} {} rot {} base {} scale "
        "{} orig {} ext {} attn {} beta {}/{} | exp {}/{} ff {} sh {} norm {} scale {} gating {} "
        "shared {} groups {}/{} dense {} | norm {} act {} post {} par {} embd {} res {} attn {} "
        "caps {}/{} logit {} | swa {} pattern {} base {} scale {} | mla {} {} {}/{} yarn {}",
        h.n_ctx_train, h.n_embd, h.n_layer, h.n_ff, h.n_head, h.n_head_kv, h.head_dim_k,
        h.head_dim_v, h.norm_eps, int(h.rope_style), int(h.rope_scaling), h.n_rot, h.rope_freq_base,
        h.rope_freq_scale, h.rope_n_ctx_orig, h.yarn_ext_factor, h.yarn_attn_factor,
        h.yarn_beta_fast, h.yarn_beta_slow, h.n_expert, h.n_expert_used, h.n_ff_expert,
        h.n_ff_shared_expert, h.expert_weights_norm, h.expert_weights_scale, int(h.expert_gating),
        h.n_expert_shared, h.n_expert_groups, h.n_group_used, h.n_layer_dense_lead, int(h.norm),
        int(h.ffn_act), h.post_norms, h.parallel_residual, h.embd_scale, h.residual_scale,
        h.attn_scale, h.attn_softcap, h.final_softcap, h.logit_scale, h.n_swa, h.swa_pattern,
        h.rope_freq_base_swa, h.rope_freq_scale_swa, h.q_lora_rank, h.kv_lora_rank,
        h.head_dim_k_mla, h.head_dim_v_mla, h.yarn_log_mul);
}

// The config.json of each reference model, as its makers' transformers classes write it.
json reference_config(const std::string& arch) {
    json c = {{"vocab_size", 512},
              {"hidden_size", 256},
              {"num_hidden_layers", 2},
              {"intermediate_size", 512},
              {"max_position_embeddings", 2048},
              {"rope_theta", 10000.0},
              {"torch_dtype", "float16"}};
    if (arch == "granite") {
        c.update({{"model_type", "granite"},
                  {"architectures", json::array({"GraniteForCausalLM"})},
                  {"num_attention_heads", 8},
                  {"num_key_value_heads", 2},
                  {"rms_norm_eps", 1e-5},
                  {"hidden_act", "silu"},
                  {"attention_multiplier", 0.03125},
                  {"embedding_multiplier", 12.0},
                  {"residual_multiplier", 0.22},
                  {"logits_scaling", 3.0},
                  {"tie_word_embeddings", true},
                  {"attention_bias", false},
                  {"mlp_bias", false}});
    } else if (arch == "command-r") {
        c.update({{"model_type", "cohere"},
                  {"architectures", json::array({"CohereForCausalLM"})},
                  {"num_attention_heads", 8},
                  {"num_key_value_heads", 2},
                  {"layer_norm_eps", 1e-5},
                  {"logit_scale", 0.5},
                  {"hidden_act", "silu"},
                  {"use_qk_norm", false}});
    } else if (arch == "gemma2") {
        c.update({{"model_type", "gemma2"},
                  {"architectures", json::array({"Gemma2ForCausalLM"})},
                  {"num_attention_heads", 8},
                  {"num_key_value_heads", 4},
                  {"head_dim", 64},
                  {"rms_norm_eps", 1e-6},
                  {"hidden_act", "gelu_pytorch_tanh"},
                  {"hidden_activation", "gelu_pytorch_tanh"},
                  {"query_pre_attn_scalar", 64},
                  {"sliding_window", 32},
                  {"attn_logit_softcapping", 5.0},
                  {"final_logit_softcapping", 0.3},
                  {"tie_word_embeddings", true}});
    } else if (arch == "gemma3") {
        c.update({{"model_type", "gemma3_text"},
                  {"architectures", json::array({"Gemma3ForCausalLM"})},
                  {"num_attention_heads", 4},
                  {"num_key_value_heads", 1},
                  {"head_dim", 128},
                  {"rms_norm_eps", 1e-6},
                  {"hidden_activation", "gelu_pytorch_tanh"},
                  {"query_pre_attn_scalar", 128},
                  {"sliding_window", 32},
                  {"sliding_window_pattern", 2},
                  {"rope_theta", 1000000.0},
                  {"rope_local_base_freq", 10000.0},
                  {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}},
                  {"attn_logit_softcapping", nullptr},
                  {"final_logit_softcapping", nullptr}});
    } else if (arch == "phi3") {
        c.update({{"model_type", "phi3"},
                  {"architectures", json::array({"Phi3ForCausalLM"})},
                  {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},
                  {"rms_norm_eps", 1e-5},
                  {"hidden_act", "silu"},
                  {"original_max_position_embeddings", 2048},
                  {"rope_scaling", nullptr},
                  {"tie_word_embeddings", false}});
    } else if (arch == "deepseek2") {
        c.update({{"model_type", "deepseek_v3"},
                  {"architectures", json::array({"DeepseekV3ForCausalLM"})},
                  {"num_attention_heads", 4},
                  {"num_key_value_heads", 4},
                  {"q_lora_rank", 256},
                  {"kv_lora_rank", 256},
                  {"qk_nope_head_dim", 64},
                  {"qk_rope_head_dim", 32},
                  {"v_head_dim", 64},
                  {"moe_intermediate_size", 256},
                  {"n_routed_experts", 4},
                  {"num_experts_per_tok", 2},
                  {"n_shared_experts", 1},
                  {"routed_scaling_factor", 2.5},
                  {"norm_topk_prob", true},
                  {"scoring_func", "sigmoid"},
                  {"topk_method", "noaux_tc"},
                  {"n_group", 1},
                  {"topk_group", 1},
                  {"first_k_dense_replace", 1},
                  {"moe_layer_freq", 1},
                  {"rms_norm_eps", 1e-6},
                  {"hidden_act", "silu"},
                  {"tie_word_embeddings", false}});
    }
    return c;
}

std::string reference_path(const std::string& arch) {
    return mw::test::shared_path("reference/models/" + arch + "-tiny-F16.gguf");
}

// Writes the HF folder of a reference model; returns its path.
std::string write_hf_from_reference(const std::string& arch, const json& config) {
    const std::string dir = mw::test::temp_dir();
    const std::vector<uint8_t> bytes = mw::test::read_file(reference_path(arch));
    const auto f = mw::gguf::GgufFile::parse(bytes, arch);
    mw::test::write_text_file(dir + "/config.json", config.dump(1));
    mw::test::write_binary_file(dir + "/model.safetensors",
                                mw::test::safetensors_bytes(hf_tensors_of(f, arch)));
    mw::test::write_hf_tokenizer(dir);
    return dir;
}

// Converts the HF folder of the reference model and checks that it gives the reference back
// (plus `extra_tensors` the config adds); returns the converted file.
std::string expect_round_trip(const std::string& arch, const json& config,
                              size_t extra_tensors = 0) {
    const std::string dir = write_hf_from_reference(arch, config);
    const std::string out = dir + "/out.gguf";
    mw_convert_params p = mw_convert_default_params();
    p.outtype = "f16";
    mw_convert_result r;
    EXPECT_EQ(mw_convert_hf(dir.c_str(), out.c_str(), &p, &r), MW_OK) << mw_last_error();
    if (!std::filesystem::exists(out)) return out;

    const std::vector<uint8_t> ref_bytes = mw::test::read_file(reference_path(arch));
    const std::vector<uint8_t> out_bytes = mw::test::read_file(out);
    const auto ref = mw::gguf::GgufFile::parse(ref_bytes, "reference");
    const auto conv = mw::gguf::GgufFile::parse(out_bytes, "converted");
    EXPECT_EQ(conv.get_string("general.architecture"), arch);
    EXPECT_EQ(conv.tensors().size(), ref.tensors().size() + extra_tensors);
    for (const mw::gguf::TensorInfo& t : ref.tensors()) {
        const mw::gguf::TensorInfo* c = conv.find_tensor(t.name);
        if (!c) {
            ADD_FAILURE() << arch << ": " << t.name << " missing";
            continue;
        }
        EXPECT_EQ(c->type, t.type) << t.name;
        EXPECT_EQ(c->n_dims, t.n_dims) << t.name;
        for (uint32_t d = 0; d < 4; ++d) EXPECT_EQ(c->ne[d], t.ne[d]) << t.name << " dim " << d;
        EXPECT_TRUE(c->n_bytes == t.n_bytes && std::memcmp(c->data, t.data, t.n_bytes) == 0)
            << arch << ": " << t.name << " differs";
    }
    EXPECT_EQ(hparams_text(mw::read_hparams(conv)), hparams_text(mw::read_hparams(ref)));
    // Everything the forward pass reads, at once (the vocabularies differ; ids do not matter).
    EXPECT_EQ(mw::test::memwall_logits(out, kTokens),
              mw::test::memwall_logits(reference_path(arch), kTokens))
        << arch;
    return out;
}

TEST(ConvertHfArchs, GraniteRoundTrip) {
    expect_round_trip("granite", reference_config("granite"));
}
TEST(ConvertHfArchs, CommandRRoundTrip) {
    expect_round_trip("command-r", reference_config("command-r"));
}
TEST(ConvertHfArchs, Gemma2RoundTrip) {
    expect_round_trip("gemma2", reference_config("gemma2"));
}
TEST(ConvertHfArchs, Gemma3RoundTrip) {
    expect_round_trip("gemma3", reference_config("gemma3"));
}
TEST(ConvertHfArchs, Phi3RoundTrip) {
    expect_round_trip("phi3", reference_config("phi3"));
}
TEST(ConvertHfArchs, DeepSeek2RoundTrip) {
    expect_round_trip("deepseek2", reference_config("deepseek2"));
}

// Phi-3's LongRoPE: the factors become rope_factors_long / _short and the magnitude correction
// rope.scaling.attn_factor; within the original context the short factors apply (here 1: the
// reference's logits).
TEST(ConvertHfArchs, Phi3LongRopeFactors) {
    json config = reference_config("phi3");
    std::vector<double> long_factor, short_factor(32, 1.0);
    for (int i = 0; i < 32; ++i) long_factor.push_back(1.0 + 0.25 * i);
    config["rope_scaling"] = {
        {"type", "longrope"}, {"long_factor", long_factor}, {"short_factor", short_factor}};
    config["sliding_window"] = 2047;  // as Phi-3-mini: written, as llama.cpp does, not applied
    const std::string out = expect_round_trip("phi3", config, 2);
    const std::vector<uint8_t> bytes = mw::test::read_file(out);
    const auto f = mw::gguf::GgufFile::parse(bytes, out);
    const mw::gguf::TensorInfo* lf = f.find_tensor("rope_factors_long.weight");
    ASSERT_NE(lf, nullptr);
    ASSERT_EQ(lf->type, 0u);
    ASSERT_EQ(lf->ne[0], 32u);
    for (int i = 0; i < 32; ++i) {
        float v;
        std::memcpy(&v, lf->data + 4 * i, 4);
        EXPECT_EQ(v, float(long_factor[size_t(i)])) << i;
    }
    EXPECT_EQ(f.get_f32("phi3.rope.scaling.attn_factor"), 1.0f);
    EXPECT_EQ(f.get_u32("phi3.attention.sliding_window"), 2047u);

    config["max_position_embeddings"] = 8192;  // 4x the original 2048
    const std::string text = config.dump();
    const cv::HfConfig c =
        cv::parse_hf_config(std::vector<uint8_t>(text.begin(), text.end()), "config.json");
    EXPECT_NEAR(c.rope_attn_factor, std::sqrt(1.0 + std::log(4.0) / std::log(2048.0)), 1e-12);
    config["rope_scaling"]["long_factor"] = std::vector<double>(16, 1.0);
    const std::string short_list = config.dump();
    EXPECT_THROW(cv::parse_hf_config(std::vector<uint8_t>(short_list.begin(), short_list.end()),
                                     "config.json"),
                 mw::Error);
}

// DeepSeek's YaRN (mscale_all_dim as yarn_log_multiplier) and V3's expert groups reach memwall's
// hyper-parameters; a V2-Lite config (no q_lora_rank, softmax, greedy) reads as such.
TEST(ConvertHfArchs, DeepSeekYarnGroupsAndV2Lite) {
    json config = reference_config("deepseek2");
    config["rope_scaling"] = {
        {"type", "yarn"},  {"factor", 4.0},           {"original_max_position_embeddings", 512},
        {"mscale", 0.707}, {"mscale_all_dim", 0.707}, {"beta_fast", 32},
        {"beta_slow", 1}};
    config["n_group"] = 2;
    config["topk_group"] = 1;
    const std::string dir = write_hf_from_reference("deepseek2", config);
    const std::string out = dir + "/out.gguf";
    ASSERT_EQ(mw_convert_hf(dir.c_str(), out.c_str(), nullptr, nullptr), MW_OK) << mw_last_error();
    const std::vector<uint8_t> bytes = mw::test::read_file(out);
    const auto f = mw::gguf::GgufFile::parse(bytes, out);
    const mw::HParams h = mw::read_hparams(f);
    EXPECT_EQ(int(h.rope_scaling), int(mw::RopeScaling::yarn));
    EXPECT_FLOAT_EQ(h.rope_freq_scale, 0.25f);
    EXPECT_EQ(h.rope_n_ctx_orig, 512u);
    EXPECT_NEAR(h.yarn_log_mul, 0.707f, 1e-6);
    EXPECT_EQ(h.n_expert_groups, 2u);
    EXPECT_EQ(h.n_group_used, 1u);
    const std::vector<float> logits = mw::test::memwall_logits(out, kTokens);
    ASSERT_EQ(logits.size(), kTokens.size() * 512);
    for (float x : logits) ASSERT_TRUE(std::isfinite(x));

    json lite = reference_config("deepseek2");
    lite.update({{"model_type", "deepseek_v2"},
                 {"architectures", json::array({"DeepseekV2ForCausalLM"})},
                 {"q_lora_rank", nullptr},
                 {"scoring_func", "softmax"},
                 {"topk_method", "greedy"},
                 {"routed_scaling_factor", 1.0},
                 {"norm_topk_prob", false}});
    const std::string text = lite.dump();
    const cv::HfConfig c =
        cv::parse_hf_config(std::vector<uint8_t>(text.begin(), text.end()), "config.json");
    EXPECT_EQ(c.arch, "deepseek2");
    EXPECT_EQ(c.q_lora_rank, 0u);
    EXPECT_FALSE(c.sigmoid_gating);
    EXPECT_EQ(c.n_expert_groups, 0u);
    EXPECT_EQ(c.head_dim, 96u);
    EXPECT_EQ(c.n_rot, 32u);
}

// DeepSeek-V3's multi-token-prediction layer (model.layers.N, N = num_hidden_layers) is left
// out, as llama.cpp leaves it; without num_nextn_predict_layers its tensors are refused.
TEST(ConvertHfArchs, DeepSeekMtpLayerLeftOut) {
    json config = reference_config("deepseek2");
    config["num_nextn_predict_layers"] = 1;
    const std::string dir = write_hf_from_reference("deepseek2", config);
    const std::vector<uint8_t> bytes = mw::test::read_file(reference_path("deepseek2"));
    const auto f = mw::gguf::GgufFile::parse(bytes, "deepseek2");
    std::vector<SafetensorsEntry> entries = hf_tensors_of(f, "deepseek2");
    entries.push_back({"model.layers.2.eh_proj.weight", "F32", {2, 2}, std::vector<uint8_t>(16)});
    mw::test::write_binary_file(dir + "/model.safetensors", mw::test::safetensors_bytes(entries));
    const std::string out = dir + "/out.gguf";
    ASSERT_EQ(mw_convert_hf(dir.c_str(), out.c_str(), nullptr, nullptr), MW_OK) << mw_last_error();
    EXPECT_EQ(mw::test::memwall_logits(out, kTokens),
              mw::test::memwall_logits(reference_path("deepseek2"), kTokens));
    config.erase("num_nextn_predict_layers");
    mw::test::write_text_file(dir + "/config.json", config.dump());
    EXPECT_EQ(mw_convert_hf(dir.c_str(), out.c_str(), nullptr, nullptr), MW_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(mw_last_error()).find("model.layers.2.eh_proj.weight"), std::string::npos)
        << mw_last_error();
}

// Defaults and overrides as transformers and llama.cpp's converter have them: Command R's context
// is model_max_length where given; Granite's absent multipliers are 1.
TEST(ConvertHfArchs, CommandRContextAndGraniteDefaults) {
    auto parse = [](const json& config) {
        const std::string text = config.dump();
        return cv::parse_hf_config(std::vector<uint8_t>(text.begin(), text.end()), "config.json");
    };
    json cohere = reference_config("command-r");
    EXPECT_EQ(parse(cohere).n_ctx_train, 2048u);
    EXPECT_TRUE(parse(cohere).tie_word_embeddings);  // CohereConfig's default
    cohere["model_max_length"] = 131072;
    EXPECT_EQ(parse(cohere).n_ctx_train, 131072u);
    json granite = reference_config("granite");
    for (const char* key : {"attention_multiplier", "embedding_multiplier", "residual_multiplier",
                            "logits_scaling"}) {
        granite.erase(key);
    }
    const cv::HfConfig g = parse(granite);
    EXPECT_EQ(g.attention_multiplier, 1.0);
    EXPECT_EQ(g.embedding_multiplier, 1.0);
    EXPECT_EQ(g.residual_multiplier, 1.0);
    EXPECT_EQ(g.logits_scaling, 1.0);
}

// The error parse_hf_config raises for a reference config with some fields changed.
mw::Error config_error(const std::string& arch, const json& changes) {
    json config = reference_config(arch);
    config.update(changes);
    const std::string text = config.dump();
    try {
        cv::parse_hf_config(std::vector<uint8_t>(text.begin(), text.end()), "config.json");
    } catch (const mw::Error& e) {
        return e;
    }
    ADD_FAILURE() << "no error for " << arch << " with " << changes.dump();
    return mw::Error(mw::ErrorKind::bad_file, "");
}

TEST(ConvertHfArchs, RefusedVariantsNameTheFileFieldAndValue) {
    struct Case {
        std::string arch;
        json changes;
        std::vector<std::string> words;
        mw::ErrorKind kind = mw::ErrorKind::unsupported;
    };
    const std::vector<Case> cases = {
        {"command-r", {{"use_qk_norm", true}}, {"use_qk_norm", "true"}},
        {"command-r", {{"model_type", "cohere2"}}, {"model_type", "cohere2"}},
        {"granite", {{"model_type", "granitemoe"}}, {"model_type", "granitemoe"}},
        {"gemma2", {{"hidden_activation", "gelu"}}, {"hidden_activation", "gelu"}},
        {"gemma2", {{"query_pre_attn_scalar", 100}}, {"query_pre_attn_scalar", "100"}},
        {"gemma2", {{"final_logit_softcapping", nullptr}}, {"final_logit_softcapping", "null"}},
        {"gemma3", {{"model_type", "gemma3"}}, {"model_type", "gemma3", "gemma3_text"}},
        {"gemma3", {{"attn_logit_softcapping", 50.0}}, {"attn_logit_softcapping"}},
        {"gemma3", {{"use_bidirectional_attention", true}}, {"use_bidirectional_attention"}},
        {"gemma3",
         {{"layer_types", json::array({"full_attention", "sliding_attention"})}},
         {"layer_types", "[1]", "sliding_attention"}},
        {"phi3", {{"rope_scaling", {{"type", "yarn"}, {"factor", 2.0}}}}, {"rope_scaling", "phi3"}},
        {"phi3",
         {{"rope_scaling", {{"type", "longrope"}, {"short_factor", {1.0}}}}},
         {"rope_scaling.long_factor", "missing"},
         mw::ErrorKind::bad_file},
        {"phi3",
         {{"partial_rotary_factor", 0.3}},
         {"partial_rotary_factor", "0.3"},
         mw::ErrorKind::bad_file},
        {"granite",  // LongRoPE is phi3's only
         {{"rope_scaling", {{"type", "longrope"}, {"factor", 2.0}}}},
         {"rope_scaling.type", "longrope"}},
        {"deepseek2", {{"scoring_func", "tanh"}}, {"scoring_func", "tanh"}},
        {"deepseek2",
         {{"topk_method", "group_limited_greedy"}, {"n_group", 2}, {"topk_group", 1}},
         {"topk_method", "group_limited_greedy"}},
        {"deepseek2", {{"moe_layer_freq", 2}}, {"moe_layer_freq", "2"}},
        {"deepseek2",
         {{"rope_scaling",
           {{"type", "yarn"}, {"factor", 4.0}, {"mscale", 1.0}, {"mscale_all_dim", 0.5}}}},
         {"rope_scaling.mscale", "mscale_all_dim"}},
    };
    for (const Case& c : cases) {
        const mw::Error e = config_error(c.arch, c.changes);
        EXPECT_EQ(int(e.kind()), int(c.kind)) << e.what();
        EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
        for (const std::string& w : c.words) {
            EXPECT_NE(std::string(e.what()).find(w), std::string::npos)
                << e.what() << " lacks " << w;
        }
    }
    // A missing field that the architecture needs.
    json no_rank = reference_config("deepseek2");
    no_rank.erase("kv_lora_rank");
    const std::string text = no_rank.dump();
    try {
        cv::parse_hf_config(std::vector<uint8_t>(text.begin(), text.end()), "config.json");
        ADD_FAILURE() << "no error without kv_lora_rank";
    } catch (const mw::Error& e) {
        EXPECT_EQ(int(e.kind()), int(mw::ErrorKind::bad_file));
        EXPECT_NE(std::string(e.what()).find("kv_lora_rank"), std::string::npos) << e.what();
    }
}

// A checkpoint that does not match its config.json is refused naming the tensor: Gemma 2
// without its post-FFN norms, DeepSeek with a kv_b_proj of the wrong size.
TEST(ConvertHfArchs, RefusesCheckpointsThatDoNotMatchTheConfig) {
    const std::string dir = write_hf_from_reference("gemma2", reference_config("gemma2"));
    json config = reference_config("gemma2");
    config["head_dim"] = 32;
    mw::test::write_text_file(dir + "/config.json", config.dump());
    EXPECT_EQ(mw_convert_hf(dir.c_str(), (dir + "/o.gguf").c_str(), nullptr, nullptr),
              MW_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(mw_last_error()).find("query_pre_attn_scalar"), std::string::npos)
        << mw_last_error();
    config["query_pre_attn_scalar"] = 32;
    mw::test::write_text_file(dir + "/config.json", config.dump());
    EXPECT_EQ(mw_convert_hf(dir.c_str(), (dir + "/o.gguf").c_str(), nullptr, nullptr),
              MW_ERR_BAD_FILE);
    EXPECT_NE(std::string(mw_last_error()).find("model.layers.0.self_attn.q_proj.weight"),
              std::string::npos)
        << mw_last_error();

    json ds = reference_config("deepseek2");
    ds["v_head_dim"] = 32;
    const std::string ds_dir = write_hf_from_reference("deepseek2", ds);
    EXPECT_EQ(mw_convert_hf(ds_dir.c_str(), (ds_dir + "/o.gguf").c_str(), nullptr, nullptr),
              MW_ERR_BAD_FILE);
    EXPECT_NE(std::string(mw_last_error()).find("self_attn.kv_b_proj.weight"), std::string::npos)
        << mw_last_error();
}

// Gemma's + 1 is applied in F32 to a BF16 checkpoint's norms (as transformers computes it).
TEST(ConvertHfArchs, GemmaNormsFromBf16AddOneInF32) {
    const std::string dir = write_hf_from_reference("gemma2", reference_config("gemma2"));
    const std::vector<uint8_t> bytes = mw::test::read_file(reference_path("gemma2"));
    const auto f = mw::gguf::GgufFile::parse(bytes, "gemma2");
    std::vector<SafetensorsEntry> entries = hf_tensors_of(f, "gemma2");
    std::vector<double> want;
    for (SafetensorsEntry& e : entries) {
        if (e.name != "model.norm.weight") continue;
        const std::vector<double> v = mw::test::decode_values(e.bytes, "F32");
        e.bytes = mw::test::encode_values(v, "BF16");
        e.dtype = "BF16";
        for (double x : mw::test::decode_values(e.bytes, "BF16")) want.push_back(float(x) + 1.0f);
    }
    mw::test::write_binary_file(dir + "/model.safetensors", mw::test::safetensors_bytes(entries));
    const std::string out = dir + "/out.gguf";
    ASSERT_EQ(mw_convert_hf(dir.c_str(), out.c_str(), nullptr, nullptr), MW_OK) << mw_last_error();
    const std::vector<uint8_t> out_bytes = mw::test::read_file(out);
    const auto conv = mw::gguf::GgufFile::parse(out_bytes, "converted");
    const mw::gguf::TensorInfo* norm = conv.find_tensor("output_norm.weight");
    ASSERT_NE(norm, nullptr);
    ASSERT_EQ(norm->type, 0u);
    ASSERT_EQ(want.size(), norm->ne[0]);
    for (size_t i = 0; i < want.size(); ++i) {
        float v;
        std::memcpy(&v, norm->data + 4 * i, 4);
        EXPECT_EQ(v, float(want[i])) << i;
    }
}

}  // namespace
