// Converting Qwen3.5 from Hugging Face: the reference models (qwen35-tiny, qwen35moe-tiny, in the
// layout of llama.cpp's converter) are written back as Hugging Face checkpoints with the inverse
// of each transformation stated here independently (norms as w - 1 except the DeltaNet output
// norm, A_log = log(-ssm_a), the conv kernel as [channels, 1, kernel], value heads in HF's
// grouped order), converted, and must give the reference files' tensors, keys and logits. The
// value-head order is exercised: both models have 2 key heads and 4 value heads, and the
// grouped order read as tiled changes the logits by ~100 % (shared/reference/README.md).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "convert/convert.h"
#include "format/gguf.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace mw {
namespace {

// The reference models' DeltaNet shape.
constexpr uint32_t kKeyHeads = 2, kValueHeads = 4, kHeadDim = 64, kKernel = 4, kEmbd = 256;

// HF's grouped value head g (key head g / r, its (g % r)-th value head) is GGUF's tiled head
// (g % r) * n_k + g / r.
uint32_t tiled_of_grouped(uint32_t g) {
    const uint32_t r = kValueHeads / kKeyHeads;
    return (g % r) * kKeyHeads + g / r;
}

// Rows [first, first + n_heads * block) of a row-major [rows][cols] matrix, heads regrouped.
void regroup_rows(std::vector<double>& m, uint64_t cols, uint64_t first, uint64_t block) {
    const std::vector<double> src = m;
    for (uint32_t g = 0; g < kValueHeads; ++g) {
        const uint64_t to = first + g * block, from = first + tiled_of_grouped(g) * block;
        std::copy_n(src.begin() + int64_t(from * cols), block * cols,
                    m.begin() + int64_t(to * cols));
    }
}

using test::HfTensor;

// The Hugging Face tensors of a reference GGUF file, under `prefix` ("model." or
// "model.language_model.").
std::map<std::string, HfTensor> hf_tensors(const gguf::GgufFile& f, const std::string& prefix) {
    std::map<std::string, HfTensor> out;
    const uint64_t key = kKeyHeads * kHeadDim, value = kValueHeads * kHeadDim;
    for (const gguf::TensorInfo& t : f.tensors()) {
        const std::string n(t.name);
        std::vector<double> v = test::gguf_values(t);
        const std::vector<uint64_t> shape = test::hf_shape(t);
        const auto minus_one = [&v] {
            for (double& x : v) x = double(float(x - 1.0));
        };
        if (n == "token_embd.weight") {
            out[prefix + "embed_tokens.weight"] = {shape, v};
            continue;
        }
        if (n == "output.weight") {
            out["lm_head.weight"] = {shape, v};
            continue;
        }
        if (n == "output_norm.weight") {
            minus_one();
            out[prefix + "norm.weight"] = {shape, v};
            continue;
        }
        unsigned layer = 0;
        char rest[128] = {};
        if (std::sscanf(n.c_str(), "blk.%u.%127s", &layer, rest) != 2) {
            ADD_FAILURE() << "unexpected tensor " << n;
            continue;
        }
        const std::string r(rest), hf = fmt::format("{}layers.{}.", prefix, layer);
        const std::string la = hf + "linear_attn.", mlp = hf + "mlp.";
        static const std::map<std::string, std::string> plain = {
            {"attn_q.weight", "self_attn.q_proj.weight"},
            {"attn_k.weight", "self_attn.k_proj.weight"},
            {"attn_v.weight", "self_attn.v_proj.weight"},
            {"attn_output.weight", "self_attn.o_proj.weight"},
            {"ssm_norm.weight", "linear_attn.norm.weight"},
            {"ffn_gate.weight", "mlp.gate_proj.weight"},
            {"ffn_up.weight", "mlp.up_proj.weight"},
            {"ffn_down.weight", "mlp.down_proj.weight"},
            {"ffn_gate_inp.weight", "mlp.gate.weight"},
            {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
            {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
            {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
        };
        static const std::map<std::string, std::string> norms = {
            {"attn_norm.weight", "input_layernorm.weight"},
            {"post_attention_norm.weight", "post_attention_layernorm.weight"},
            {"attn_q_norm.weight", "self_attn.q_norm.weight"},
            {"attn_k_norm.weight", "self_attn.k_norm.weight"},
        };
        if (const auto it = plain.find(r); it != plain.end()) {
            out[hf + it->second] = {shape, v};
        } else if (const auto nt = norms.find(r); nt != norms.end()) {
            minus_one();
            out[hf + nt->second] = {shape, v};
        } else if (r == "attn_qkv.weight") {
            regroup_rows(v, kEmbd, 2 * key, kHeadDim);
            out[la + "in_proj_qkv.weight"] = {shape, v};
        } else if (r == "attn_gate.weight") {
            regroup_rows(v, kEmbd, 0, kHeadDim);
            out[la + "in_proj_z.weight"] = {shape, v};
        } else if (r == "ssm_beta.weight" || r == "ssm_alpha.weight") {
            regroup_rows(v, kEmbd, 0, 1);
            out[la + (r == "ssm_beta.weight" ? "in_proj_b.weight" : "in_proj_a.weight")] = {shape,
                                                                                            v};
        } else if (r == "ssm_conv1d.weight") {
            regroup_rows(v, kKernel, 2 * key, kHeadDim);
            out[la + "conv1d.weight"] = {{2 * key + value, 1, kKernel}, v};
        } else if (r == "ssm_dt.bias" || r == "ssm_a") {
            regroup_rows(v, 1, 0, 1);
            if (r == "ssm_a") {
                for (double& x : v) x = std::log(-x);
            }
            out[la + (r == "ssm_a" ? "A_log" : "dt_bias")] = {shape, v};
        } else if (r == "ssm_out.weight") {  // [n_embd][value]: the columns regrouped
            const std::vector<double> src = v;
            for (uint64_t e = 0; e < kEmbd; ++e) {
                for (uint32_t g = 0; g < kValueHeads; ++g) {
                    std::copy_n(src.begin() + int64_t(e * value + tiled_of_grouped(g) * kHeadDim),
                                kHeadDim, v.begin() + int64_t(e * value + g * kHeadDim));
                }
            }
            out[la + "out_proj.weight"] = {shape, v};
        } else if (r == "ffn_gate_inp_shexp.weight") {
            out[mlp + "shared_expert_gate.weight"] = {{1, shape[0]}, v};
        } else if (r == "ffn_down_exps.weight") {  // as stored: [expert][n_embd][n_ff]
            out[mlp + "experts.down_proj"] = {shape, v};
        } else if (r == "ffn_gate_exps.weight" || r == "ffn_up_exps.weight") {
            // Stacked as Qwen3.5's checkpoints: gate_up_proj [expert][gate rows | up rows][in].
            HfTensor& gu = out[mlp + "experts.gate_up_proj"];
            gu.shape = {shape[0], 2 * shape[1], shape[2]};
            gu.values.resize(shape[0] * 2 * shape[1] * shape[2]);
            const uint64_t per = shape[1] * shape[2];
            for (uint64_t e = 0; e < shape[0]; ++e) {
                std::copy_n(
                    v.begin() + int64_t(e * per), per,
                    gu.values.begin() + int64_t((2 * e + (r == "ffn_up_exps.weight")) * per));
            }
        } else {
            ADD_FAILURE() << "unmapped tensor " << n;
        }
    }
    return out;
}

std::string text_config(bool moe) {
    std::string types;
    for (int i = 0; i < 4; ++i) {
        types += i ? ", " : "";
        types += i == 3 ? "\"full_attention\"" : "\"linear_attention\"";
    }
    return fmt::format(
        R"("vocab_size": 512, "hidden_size": 256, "num_hidden_layers": 4,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 256,
        "max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "hidden_act": "silu",
        "attn_output_gate": true, "full_attention_interval": 4, "layer_types": [{}],
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 64, "linear_value_head_dim": 64,
        "linear_num_key_heads": 2, "linear_num_value_heads": 4, "mtp_num_hidden_layers": 1,
        "rope_parameters": {{"rope_type": "default", "rope_theta": 10000000,
          "partial_rotary_factor": 0.25, "mrope_section": [11, 11, 10], "mrope_interleaved": true}},
        {})",
        types,
        moe ? R"("num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
              "shared_expert_intermediate_size": 128, "norm_topk_prob": true,
              "tie_word_embeddings": false)"
            : R"("intermediate_size": 256, "tie_word_embeddings": true)");
}

// The dense model as Qwen's multimodal checkpoint (text_config, model.language_model.*, with a
// vision tensor and an MTP tensor that are left out), the MoE as a text-only one with its
// experts stacked (gate_up_proj, down_proj), as Qwen3.5-35B-A3B's checkpoint has them.
std::string write_folder(const std::string& model, bool moe) {
    const std::vector<uint8_t> bytes =
        test::read_file(test::shared_path("reference/models/" + model + "-F16.gguf"));
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, model);
    const std::string prefix = moe ? "model." : "model.language_model.";
    std::map<std::string, HfTensor> tensors = hf_tensors(f, prefix);
    if (!moe) {
        tensors["model.visual.patch_embed.proj.weight"] = {{4, 3}, std::vector<double>(12, 0.5)};
        tensors["mtp.fc.weight"] = {{2, 2}, std::vector<double>(4, 0.25)};
    }
    const std::string config =
        moe ? fmt::format(R"({{"architectures": ["Qwen3_5MoeForCausalLM"],
                           "model_type": "qwen3_5_moe_text", {}}})",
                          text_config(true))
            : fmt::format(R"({{"architectures": ["Qwen3_5ForConditionalGeneration"],
                           "model_type": "qwen3_5", "tie_word_embeddings": true,
                           "text_config": {{{}}}}})",
                          text_config(false));
    return test::write_hf_checkpoint(model + "-hf", tensors, config);
}

TEST(ConvertQwen35, RoundTripGivesTheReferenceTensorsKeysAndLogits) {
    for (const bool moe : {false, true}) {
        const std::string model = moe ? "qwen35moe-tiny" : "qwen35-tiny";
        const std::string arch = moe ? "qwen35moe" : "qwen35";
        SCOPED_TRACE(model);
        const std::string dir = write_folder(model, moe);
        const std::string out = dir + ".gguf";
        const convert::ConvertResult r = convert::convert_hf(dir, out, {});
        EXPECT_EQ(r.arch, arch);
        if (!moe) {
            EXPECT_EQ(r.warnings.size(), 1u) << "the vision and MTP tensors left out";
        }

        // A = -exp(A_log) and the norms (w - 1 + 1 in F32) come back to within an ulp, not bit
        // for bit; the SIMD sets' F16-rounded activations and the MoE's routing amplify that in
        // the logits (5e-4 on avx2 and avx512, 0 on the scalar set). The wrong value-head order
        // would be ~1.
        test::expect_round_trip(test::shared_path("reference/models/" + model + "-F16.gguf"), out,
                                arch, {.values = 1e-6, .logits = 1e-3});
    }
}

TEST(ConvertQwen35, BadConfigsNameTheField) {
    const std::string dir = write_folder("qwen35-tiny", false);
    const std::string config = test::read_text(dir + "/config.json");
    const auto refused = [&](const std::string& from, const std::string& to,
                             const std::string& word) {
        test::expect_config_refused(dir, config, from, to, word);
    };
    refused("\"linear_num_value_heads\": 4", "\"linear_num_value_heads\": 3",
            "linear_num_value_heads");
    refused("\"linear_conv_kernel_dim\": 4", "\"linear_conv_kernel_dim\": 0",
            "linear_conv_kernel_dim");
    refused("\"linear_value_head_dim\": 64", "\"linear_value_head_dim\": 32",
            "linear_value_head_dim");
    refused("\"full_attention\"]", "\"sliding_attention\"]", "layer_types");
    // A DeltaNet layer's conv kernel of the wrong size: the tensor is named.
    refused("\"linear_conv_kernel_dim\": 4", "\"linear_conv_kernel_dim\": 3", "conv1d.weight");
}

}  // namespace
}  // namespace mw
