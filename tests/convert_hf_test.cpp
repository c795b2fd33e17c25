// Hugging Face -> GGUF conversion: synthetic checkpoints of every supported architecture are
// converted and run through memwall; the logits must equal an independent double-precision
// forward pass over the same weights with transformers' semantics (tests/support/hf_model.h).
// That checks the tensor names, the Q/K permutation, the expert stacking and the metadata at once.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "convert/convert.h"
#include "convert/hf_config.h"
#include "format/gguf.h"
#include "memwall.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace {

using mw::test::HfSpec;
namespace cv = mw::convert;

struct Converted {
    std::string dir;
    std::string gguf;
    mw::test::HfWeights weights;
};

Converted convert(const HfSpec& spec, const char* outtype = "f32") {
    Converted c;
    c.dir = mw::test::temp_dir();
    c.weights = mw::test::random_hf_weights(spec);
    mw::test::write_hf_folder(c.dir, spec, c.weights);
    c.gguf = c.dir + "/out.gguf";
    mw_convert_params p = mw_convert_default_params();
    p.outtype = outtype;
    mw_convert_result r;
    EXPECT_EQ(mw_convert_hf(c.dir.c_str(), c.gguf.c_str(), &p, &r), MW_OK) << mw_last_error();
    return c;
}

const std::vector<int32_t> kTokens = {5, 17, 3, 42, 42, 8, 63, 0, 29, 11, 50, 2};

// The largest relative RMS difference of a position's logits from the reference.
double worst_rel_rms(const std::vector<float>& ours, const std::vector<double>& ref,
                     size_t n_vocab) {
    double worst = 0.0;
    for (size_t t = 0; t * n_vocab < ref.size(); ++t) {
        double diff = 0.0, norm = 0.0;
        for (size_t v = 0; v < n_vocab; ++v) {
            const double d = double(ours[t * n_vocab + v]) - ref[t * n_vocab + v];
            diff += d * d;
            norm += ref[t * n_vocab + v] * ref[t * n_vocab + v];
        }
        worst = std::max(worst, std::sqrt(diff / norm));
    }
    return worst;
}

void expect_matches_reference(const HfSpec& spec, double tolerance = 1e-5) {
    const Converted c = convert(spec);
    const std::vector<float> ours = mw::test::memwall_logits(c.gguf, kTokens);
    const std::vector<double> ref = mw::test::hf_reference_logits(spec, c.weights, kTokens);
    ASSERT_EQ(ours.size(), ref.size());
    EXPECT_LT(worst_rel_rms(ours, ref, spec.vocab_size), tolerance) << spec.model_type;
}

TEST(ConvertHf, LlamaPermutesQKAndMatchesTheReference) {
    HfSpec s;
    s.dtype = "BF16";
    s.rope_theta = 500000.0;
    expect_matches_reference(s);
}

TEST(ConvertHf, Llama31RopeScalingBecomesRopeFreqs) {
    HfSpec s;
    s.llama3_factor = 8.0;  // head_dim 16: frequencies below, inside and above the smooth band
    s.tied = true;          // as Llama 3.2 1B
    const Converted c = convert(s);
    const std::vector<uint8_t> bytes = mw::test::read_file(c.gguf);
    const auto f = mw::gguf::GgufFile::parse(bytes, c.gguf);
    const mw::gguf::TensorInfo* freqs = f.find_tensor("rope_freqs.weight");
    ASSERT_NE(freqs, nullptr);
    EXPECT_EQ(freqs->ne[0], 8u);
    EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
    const std::vector<float> ours = mw::test::memwall_logits(c.gguf, kTokens);
    EXPECT_LT(
        worst_rel_rms(ours, mw::test::hf_reference_logits(s, c.weights, kTokens), s.vocab_size),
        1e-5);
    HfSpec unscaled = s;
    unscaled.llama3_factor = 0.0;  // the scaling must matter at these positions
    EXPECT_GT(worst_rel_rms(ours, mw::test::hf_reference_logits(unscaled, c.weights, kTokens),
                            s.vocab_size),
              1e-3);
}

TEST(ConvertHf, MistralWithExplicitHeadDimAndLinearRopeScaling) {
    HfSpec s;
    s.model_type = "mistral";
    s.head_dim = 32;  // n_head * head_dim = 128 != n_embd
    s.rope_linear_factor = 2.0;
    s.dtype = "F16";
    expect_matches_reference(s);
}

TEST(ConvertHf, Qwen2WithBiasesAndTiedEmbeddings) {
    HfSpec s;
    s.model_type = "qwen2";
    s.tied = true;
    s.dtype = "F16";
    s.rope_theta = 1e6;
    expect_matches_reference(s);
}

TEST(ConvertHf, Qwen3WithQKNorm) {
    HfSpec s;
    s.model_type = "qwen3";
    s.head_dim = 32;
    expect_matches_reference(s);
}

TEST(ConvertHf, MixtralExpertsStackedFromShards) {
    HfSpec s;
    s.model_type = "mixtral";
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.shards = 3;
    expect_matches_reference(s);
}

TEST(ConvertHf, Qwen2MoeWithSharedExpert) {
    HfSpec s;
    s.model_type = "qwen2_moe";
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.norm_topk_prob = false;
    s.dtype = "BF16";
    expect_matches_reference(s);
}

TEST(ConvertHf, Qwen3Moe) {
    HfSpec s;
    s.model_type = "qwen3_moe";
    s.n_expert = 8;
    s.n_expert_used = 2;
    s.shards = 2;
    expect_matches_reference(s);
}

TEST(ConvertHf, OutTypesAndWhatStaysF32) {
    HfSpec s;
    s.n_ff = 72;  // ffn_down rows of 72 do not hold whole Q8_0 blocks: F16 instead
    const Converted f32 = convert(s, "f32");
    const std::vector<float> exact = mw::test::memwall_logits(f32.gguf, kTokens);
    for (const auto& [type, tolerance] : std::vector<std::pair<std::string, double>>{
             {"f16", 5e-3}, {"bf16", 3e-2}, {"q8_0", 2e-2}}) {
        const std::string out = f32.dir + "/" + type + ".gguf";
        mw_convert_params p = mw_convert_default_params();
        p.outtype = type.c_str();
        ASSERT_EQ(mw_convert_hf(f32.dir.c_str(), out.c_str(), &p, nullptr), MW_OK)
            << mw_last_error();
        const std::vector<uint8_t> bytes = mw::test::read_file(out);
        const auto f = mw::gguf::GgufFile::parse(bytes, out);
        const uint32_t matrix = type == "f16" ? 1 : type == "bf16" ? 30 : 8;
        EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type, matrix) << type;
        EXPECT_EQ(f.find_tensor("token_embd.weight")->type, matrix) << type;
        EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->type, 0u) << type;
        EXPECT_EQ(f.find_tensor("output_norm.weight")->type, 0u) << type;
        EXPECT_EQ(f.find_tensor("blk.1.ffn_down.weight")->type, type == "q8_0" ? 1u : matrix)
            << type;
        EXPECT_EQ(f.get_u32("general.file_type"), type == "f16" ? 1u : type == "bf16" ? 32u : 7u);
        const std::vector<float> approx = mw::test::memwall_logits(out, kTokens);
        std::vector<double> exact_d(exact.begin(), exact.end());
        EXPECT_LT(worst_rel_rms(approx, exact_d, s.vocab_size), tolerance) << type;
        EXPECT_GT(worst_rel_rms(approx, exact_d, s.vocab_size), 0.0) << type;
    }
}

// A repository's chat_template.jinja becomes tokenizer.chat_template, byte for byte, unless
// tokenizer_config.json has one.
TEST(ConvertHf, ChatTemplateJinjaFile) {
    HfSpec s;
    const std::string tmpl = mw::test::read_text(std::string(MEMWALL_TESTS_DIR) +
                                                 "/data/chat-templates/templates/Qwen3.5-4B.jinja");
    Converted c;
    c.dir = mw::test::temp_dir();
    mw::test::write_hf_folder(c.dir, s, mw::test::random_hf_weights(s));
    mw::test::write_text_file(c.dir + "/chat_template.jinja", tmpl);
    c.gguf = c.dir + "/out.gguf";
    mw_convert_params p = mw_convert_default_params();
    mw_convert_result r;
    ASSERT_EQ(mw_convert_hf(c.dir.c_str(), c.gguf.c_str(), &p, &r), MW_OK) << mw_last_error();
    {
        const std::vector<uint8_t> bytes = mw::test::read_file(c.gguf);
        EXPECT_EQ(mw::gguf::GgufFile::parse(bytes, c.gguf).get_string("tokenizer.chat_template"),
                  tmpl);
    }
    mw::test::write_text_file(
        c.dir + "/tokenizer_config.json",
        R"({"eos_token": "<|endoftext|>", "bos_token": null, "chat_template": "T"})");
    ASSERT_EQ(mw_convert_hf(c.dir.c_str(), c.gguf.c_str(), &p, &r), MW_OK) << mw_last_error();
    const std::vector<uint8_t> bytes = mw::test::read_file(c.gguf);
    EXPECT_EQ(mw::gguf::GgufFile::parse(bytes, c.gguf).get_string("tokenizer.chat_template"), "T");
}

TEST(ConvertHf, WritesLlamaCppMetadata) {
    HfSpec s;
    s.model_type = "qwen2_moe";
    s.n_expert = 4;
    s.norm_topk_prob = false;
    const Converted c = convert(s, "f16");
    const std::vector<uint8_t> bytes = mw::test::read_file(c.gguf);
    const auto f = mw::gguf::GgufFile::parse(bytes, c.gguf);
    EXPECT_EQ(f.get_string("general.architecture"), "qwen2moe");
    EXPECT_EQ(f.get_string("general.name"), "tiny-qwen2_moe");
    EXPECT_EQ(f.get_u32("qwen2moe.block_count"), 2u);
    EXPECT_EQ(f.get_u32("qwen2moe.embedding_length"), 64u);
    EXPECT_EQ(f.get_u32("qwen2moe.attention.head_count_kv"), 2u);
    EXPECT_EQ(f.get_u32("qwen2moe.expert_count"), 4u);
    EXPECT_EQ(f.get_u32("qwen2moe.expert_used_count"), 2u);
    EXPECT_EQ(f.get_u32("qwen2moe.expert_feed_forward_length"), 32u);
    EXPECT_EQ(f.get_u32("qwen2moe.expert_shared_feed_forward_length"), 48u);
    EXPECT_EQ(f.get_bool("qwen2moe.expert_weights_norm"), false);
    EXPECT_FLOAT_EQ(*f.get_f32("qwen2moe.attention.layer_norm_rms_epsilon"), 1e-5f);
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "gpt-2");
    EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id"), 5u);
    EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token"), false);
    const mw::gguf::TensorInfo* exps = f.find_tensor("blk.1.ffn_down_exps.weight");
    ASSERT_NE(exps, nullptr);
    EXPECT_EQ(exps->n_dims, 3u);
    EXPECT_EQ(exps->ne[0], 32u);
    EXPECT_EQ(exps->ne[1], 64u);
    EXPECT_EQ(exps->ne[2], 4u);
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_inp.weight")->type, 0u);  // the router stays F32
    EXPECT_NE(f.find_tensor("blk.0.ffn_gate_inp_shexp.weight"), nullptr);
    EXPECT_EQ(f.tensors().size(), size_t(1 + 2 * 17 + 2));
}

// The error raised by parse_hf_config for a config.json text.
mw::Error config_error(const std::string& text) {
    try {
        cv::parse_hf_config(std::vector<uint8_t>(text.begin(), text.end()), "config.json");
    } catch (const mw::Error& e) {
        return e;
    }
    ADD_FAILURE() << "no error for " << text;
    return mw::Error(mw::ErrorKind::bad_file, "");
}

// The default llama config.json with some fields set (replaced or added).
std::string with_fields(const std::string& fields) {
    nlohmann::json config = nlohmann::json::parse(mw::test::hf_config_json(HfSpec{}));
    config.update(nlohmann::json::parse("{" + fields + "}"));
    return config.dump();
}

TEST(ConvertHf, UnsupportedConfigsNameTheField) {
    const std::string llama = mw::test::hf_config_json(HfSpec{});
    EXPECT_NO_THROW(cv::parse_hf_config(std::vector<uint8_t>(llama.begin(), llama.end()), "c"));

    struct Case {
        std::string config;
        mw::ErrorKind kind;
        std::vector<std::string> words;
    };
    std::string bigcode = llama;
    bigcode.replace(bigcode.find("\"llama\""), 7, "\"gpt_bigcode\"");
    const std::vector<Case> cases = {
        {bigcode, mw::ErrorKind::unsupported, {"model_type", "gpt_bigcode"}},
        {with_fields(R"("rope_scaling": {"type": "dynamic", "factor": 2.0})"),
         mw::ErrorKind::unsupported,
         {"rope_scaling.type", "dynamic"}},
        {with_fields(R"("rope_scaling": {"rope_type": "longrope", "factor": 2.0})"),
         mw::ErrorKind::unsupported,
         {"rope_scaling.rope_type", "longrope"}},
        {with_fields(R"("use_sliding_window": true)"),
         mw::ErrorKind::unsupported,
         {"use_sliding_window"}},
        {with_fields(R"("attention_bias": true)"), mw::ErrorKind::unsupported, {"attention_bias"}},
        {with_fields(R"("hidden_act": "gelu")"),
         mw::ErrorKind::unsupported,
         {"hidden_act", "gelu"}},
        {with_fields(R"("quantization_config": {"quant_method": "gptq"})"),
         mw::ErrorKind::unsupported,
         {"quantization_config"}},
        {with_fields(R"("vocab_size": 0)"),
         mw::ErrorKind::bad_file,
         {"vocab_size", "out of range"}},
        {with_fields(R"("num_key_value_heads": 3)"),
         mw::ErrorKind::bad_file,
         {"num_key_value_heads"}},
        {with_fields(R"("hidden_size": "64")"),
         mw::ErrorKind::bad_file,
         {"hidden_size", "a string"}},
        {with_fields(R"("rms_norm_eps": -1)"), mw::ErrorKind::bad_file, {"rms_norm_eps"}},
        {R"({"model_type": "llama"})", mw::ErrorKind::bad_file, {"vocab_size", "missing"}},
        {R"([1, 2])", mw::ErrorKind::bad_file, {"expected an object"}},
        {R"({"model_type": "llama", "model_type": "qwen2"})", mw::ErrorKind::bad_file, {"twice"}},
    };
    for (const Case& c : cases) {
        const mw::Error e = config_error(c.config);
        EXPECT_EQ(int(e.kind()), int(c.kind)) << e.what();
        for (const std::string& w : c.words) {
            EXPECT_NE(std::string(e.what()).find(w), std::string::npos)
                << e.what() << " lacks " << w;
        }
    }
    HfSpec moe;
    moe.model_type = "qwen2_moe";
    moe.n_expert = 4;
    std::string sparse = mw::test::hf_config_json(moe);
    sparse.replace(sparse.find("\"decoder_sparse_step\": 1"), 24, "\"decoder_sparse_step\": 2");
    EXPECT_NE(std::string(config_error(sparse).what()).find("decoder_sparse_step"),
              std::string::npos);
}

// The same refusals end to end, through the C API the CLI uses.
TEST(ConvertHf, RefusesThroughTheCApi) {
    const std::string dir = mw::test::temp_dir();
    HfSpec s;
    mw::test::write_hf_folder(dir, s, mw::test::random_hf_weights(s));
    std::string config = mw::test::hf_config_json(s);
    config.replace(config.find("\"llama\""), 7, "\"gpt_bigcode\"");
    mw::test::write_text_file(dir + "/config.json", config);
    EXPECT_EQ(mw_convert_hf(dir.c_str(), (dir + "/o.gguf").c_str(), nullptr, nullptr),
              MW_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(mw_last_error()).find("gpt_bigcode"), std::string::npos)
        << mw_last_error();
    EXPECT_FALSE(std::filesystem::exists(dir + "/o.gguf"));
    EXPECT_EQ(
        mw_convert_hf((dir + "/nowhere").c_str(), (dir + "/o.gguf").c_str(), nullptr, nullptr),
        MW_ERR_IO);
}

TEST(ConvertHf, RefusesTensorsTheArchitectureDoesNotHave) {
    HfSpec s;
    s.n_layer = 1;
    const std::string dir = mw::test::temp_dir();
    const mw::test::HfWeights w = mw::test::random_hf_weights(s);
    mw::test::write_hf_folder(dir, s, w);
    // Rewrite the shard with one extra tensor and one misshapen tensor.
    std::vector<mw::test::SafetensorsEntry> entries;
    for (const auto& t : mw::test::hf_tensor_shapes(s)) {
        entries.push_back({t.name, "F32", t.shape, mw::test::encode_values(w.at(t.name), "F32")});
    }
    entries.push_back({"model.vision_tower.weight", "F32", {2}, std::vector<uint8_t>(8, 0)});
    mw::test::write_binary_file(dir + "/model.safetensors", mw::test::safetensors_bytes(entries));
    EXPECT_EQ(mw_convert_hf(dir.c_str(), (dir + "/o.gguf").c_str(), nullptr, nullptr),
              MW_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(mw_last_error()).find("model.vision_tower.weight"), std::string::npos)
        << mw_last_error();

    entries.pop_back();
    entries[2].shape = {8, 64};  // q_proj: 16 rows expected... a different size
    entries[2].bytes.resize(8 * 64 * 4);
    entries.erase(entries.begin() + 5);  // o_proj missing
    mw::test::write_binary_file(dir + "/model.safetensors", mw::test::safetensors_bytes(entries));
    EXPECT_EQ(mw_convert_hf(dir.c_str(), (dir + "/o.gguf").c_str(), nullptr, nullptr),
              MW_ERR_BAD_FILE);
    const std::string msg = mw_last_error();
    EXPECT_NE(msg.find("model.layers.0.self_attn.o_proj.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find(entries[2].name + " (in model.safetensors) has shape [8, 64]"),
              std::string::npos)
        << msg;
}

TEST(ConvertHf, CliConvertsAFolder) {
    HfSpec s;
    s.n_layer = 1;
    const std::string dir = mw::test::temp_dir();
    mw::test::write_hf_folder(dir, s, mw::test::random_hf_weights(s));
    const auto r = mw::test::run_command(mw::test::cli_path() + " convert " + dir + " -o " + dir +
                                         "/m.gguf --outtype q8_0");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("llama model"), std::string::npos) << r.err;
    EXPECT_TRUE(std::filesystem::exists(dir + "/m.gguf"));
    const auto bad = mw::test::run_command(mw::test::cli_path() + " convert " + dir + " -o " + dir +
                                           "/m.gguf --outtype q4_0");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("q4_0"), std::string::npos) << bad.err;
}

}  // namespace
