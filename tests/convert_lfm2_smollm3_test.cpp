// Converting LFM2 and SmolLM3 from Hugging Face (issue 41): the reference models (lfm2-tiny,
// smollm3-tiny, in the layout of llama.cpp's converter) are written back as Hugging Face
// checkpoints with the inverse of each mapping stated here independently (LFM2: operator_norm,
// conv.in_proj / conv.conv [channels, 1, L] / conv.out_proj, self_attn.out_proj and q/k_layernorm,
// feed_forward.w1/w3/w2, embedding_norm as the final norm; SmolLM3: llama's names, Q/K rows in
// HF's rotate-half order), converted, and must give the reference files' tensors, keys and
// logits. Bad configs are refused naming the field.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "convert/convert.h"
#include "format/gguf.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace mw {
namespace {

using test::HfTensor;

// GGUF's Q/K rows (per head: pairs (x_i, x_{i + hd/2}) adjacent, as llama.cpp's converter
// permutes them) back in HF's rotate-half order: GGUF row h*hd + 2i + j is HF row
// h*hd + j*hd/2 + i.
std::vector<double> unpermute_rows(const std::vector<double>& v, uint64_t cols, uint64_t hd) {
    std::vector<double> out(v.size());
    const uint64_t rows = v.size() / cols;
    for (uint64_t r = 0; r < rows; ++r) {
        const uint64_t h = r / hd, i = (r % hd) / 2, j = r % 2;
        const uint64_t hf = h * hd + j * (hd / 2) + i;
        std::copy_n(v.begin() + int64_t(r * cols), cols, out.begin() + int64_t(hf * cols));
    }
    return out;
}

std::map<std::string, HfTensor> hf_tensors(const gguf::GgufFile& f, bool lfm2) {
    std::map<std::string, HfTensor> out;
    for (const gguf::TensorInfo& t : f.tensors()) {
        const std::string n(t.name);
        const std::vector<double> v = test::gguf_values(t);
        const std::vector<uint64_t> shape = test::hf_shape(t);
        if (n == "token_embd.weight") {
            out["model.embed_tokens.weight"] = {shape, v};
            continue;
        }
        if (n == "token_embd_norm.weight") {
            out["model.embedding_norm.weight"] = {shape, v};
            continue;
        }
        if (n == "output_norm.weight") {
            out["model.norm.weight"] = {shape, v};
            continue;
        }
        unsigned layer = 0;
        char rest[128] = {};
        if (std::sscanf(n.c_str(), "blk.%u.%127s", &layer, rest) != 2) {
            ADD_FAILURE() << "unexpected tensor " << n;
            continue;
        }
        const std::string r(rest), hf = fmt::format("model.layers.{}.", layer);
        static const std::map<std::string, std::string> lfm2_names = {
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
        };
        static const std::map<std::string, std::string> llama_names = {
            {"attn_norm.weight", "input_layernorm.weight"},
            {"attn_q.weight", "self_attn.q_proj.weight"},
            {"attn_k.weight", "self_attn.k_proj.weight"},
            {"attn_v.weight", "self_attn.v_proj.weight"},
            {"attn_output.weight", "self_attn.o_proj.weight"},
            {"ffn_norm.weight", "post_attention_layernorm.weight"},
            {"ffn_gate.weight", "mlp.gate_proj.weight"},
            {"ffn_up.weight", "mlp.up_proj.weight"},
            {"ffn_down.weight", "mlp.down_proj.weight"},
        };
        const auto& names = lfm2 ? lfm2_names : llama_names;
        if (lfm2 && r == "shortconv.conv.weight") {  // [L, channels] -> [channels, 1, L]
            out[hf + "conv.conv.weight"] = {{shape[0], 1, shape[1]}, v};
        } else if (const auto it = names.find(r); it != names.end()) {
            const bool qk = !lfm2 && (r == "attn_q.weight" || r == "attn_k.weight");
            out[hf + it->second] = {shape, qk ? unpermute_rows(v, shape[1], 64) : v};
        } else {
            ADD_FAILURE() << "unmapped tensor " << n;
        }
    }
    return out;
}

const char* kLfm2Config = R"({"architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2",
    "vocab_size": 512, "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "max_position_embeddings": 128000, "norm_eps": 1e-05,
    "conv_bias": false, "conv_L_cache": 3, "block_dim": 256, "block_ff_dim": 1152,
    "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": true,
    "rope_theta": 1000000.0, "tie_embedding": true,
    "layer_types": ["conv", "conv", "full_attention", "conv"]})";

const char* kSmolLm3Config = R"({"architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3",
    "vocab_size": 512, "hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 1, "max_position_embeddings": 65536,
    "rms_norm_eps": 1e-06, "rope_theta": 5000000.0, "hidden_act": "silu",
    "tie_word_embeddings": true, "use_sliding_window": false, "attention_bias": false,
    "mlp_bias": false, "no_rope_layers": [1, 1, 1, 0], "no_rope_layer_interval": 4})";

std::string write_folder(const std::string& model) {
    const bool lfm2 = model == "lfm2-tiny";
    const std::vector<uint8_t> bytes =
        test::read_file(test::shared_path("reference/models/" + model + "-F16.gguf"));
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, model);
    return test::write_hf_checkpoint(model + "-hf", hf_tensors(f, lfm2),
                                     lfm2 ? kLfm2Config : kSmolLm3Config);
}

TEST(ConvertLfm2SmolLm3, RoundTripGivesTheReferenceTensorsKeysAndLogits) {
    for (const std::string arch : {"lfm2", "smollm3"}) {
        const std::string model = arch + "-tiny";
        SCOPED_TRACE(model);
        const std::string dir = write_folder(model);
        const std::string out = dir + ".gguf";
        const convert::ConvertResult r = convert::convert_hf(dir, out, {});
        EXPECT_EQ(r.arch, arch);
        EXPECT_TRUE(r.warnings.empty());

        // Bit for bit: every mapping here is a rename, a reshape or a row permutation.
        test::expect_round_trip(test::shared_path("reference/models/" + model + "-F16.gguf"), out,
                                arch);
        std::filesystem::remove_all(dir);
        std::remove(out.c_str());
    }
}

TEST(ConvertLfm2SmolLm3, BadConfigsNameTheField) {
    const auto refused = [](const std::string& model, const std::string& from,
                            const std::string& to, const std::string& word) {
        const std::string dir = write_folder(model);
        test::expect_config_refused(dir, test::read_text(dir + "/config.json"), from, to, word);
        std::filesystem::remove_all(dir);
    };
    refused("lfm2-tiny", R"("conv", "conv", "full_attention")",
            R"("conv", "mamba", "full_attention")", "layer_types");
    refused("lfm2-tiny", R"("conv_bias": false)", R"("conv_bias": true)", "conv_bias");
    refused("lfm2-tiny", R"("conv_L_cache": 3)", R"("conv_L_cache": 0)", "conv_L_cache");
    refused("smollm3-tiny", R"("no_rope_layers": [1, 1, 1, 0])",
            R"("no_rope_layers": [1, 0, 1, 1])", "no_rope_layers");
}

}  // namespace
}  // namespace mw
