#include "convert/hf_config.h"

#include <cmath>

#include "base/error.h"
#include "convert/hf_fields.h"
#include "format/json_text.h"

namespace mw::convert {
namespace {

using nlohmann::json;

struct ModelType {
    const char* hf;    // config.json model_type
    const char* arch;  // GGUF general.architecture
    bool permute_qk;   // llama layout (RoPE on adjacent pairs in GGUF)
    bool moe;
};

// Mistral and Mixtral are llama in GGUF, as llama.cpp writes them; Gemma 3's text-only model
// (Gemma3ForCausalLM) is gemma3_text in config.json.
constexpr ModelType kModelTypes[] = {
    {"llama", "llama", true, false},
    {"mistral", "llama", true, false},
    {"mixtral", "llama", true, true},
    {"qwen2", "qwen2", false, false},
    {"qwen3", "qwen3", false, false},
    {"qwen2_moe", "qwen2moe", false, true},
    {"qwen3_moe", "qwen3moe", false, true},
    {"granite", "granite", true, false},
    {"cohere", "command-r", false, false},
    {"gemma2", "gemma2", false, false},
    {"gemma3_text", "gemma3", false, false},
    {"phi3", "phi3", false, false},
    {"deepseek_v2", "deepseek2", false, true},
    {"deepseek_v3", "deepseek2", false, true},
    {"qwen3_5_text", "qwen35", false, false},
    {"qwen3_5_moe_text", "qwen35moe", false, true},
    {"qwen3_5", "qwen35", false, false},
    {"qwen3_5_moe", "qwen35moe", false, true},
    {"lfm2", "lfm2", false, false},
    {"lfm2_moe", "lfm2moe", false, true},
    {"gemma4_text", "gemma4", false, false},
    {"gemma4", "gemma4", false, false},
    {"gpt_oss", "gpt-oss", false, true},
    {"smollm3", "smollm3", true, false},
};

// A list of positive numbers (LongRoPE's per-frequency factors).
std::vector<float> read_factors(const Fields& f, const char* key) {
    const nlohmann::json* v = f.get(key);
    if (!v) f.missing(key);
    if (!v->is_array() || v->empty()) f.bad(key, "is not a non-empty array of numbers");
    std::vector<float> out;
    for (const nlohmann::json& x : *v) {
        if (!x.is_number() || !(x.get<double>() > 0.0) || !std::isfinite(x.get<double>())) {
            f.bad(key, fmt::format("holds {}, expected positive numbers", json_brief(x)));
        }
        out.push_back(float(x.get<double>()));
    }
    return out;
}

// longrope: Phi-3's LongRoPE (per-frequency factors), which only phi3's graph applies.
RopeScalingConfig read_rope_scaling(const Fields& top, uint32_t n_ctx_train, bool longrope) {
    RopeScalingConfig rs;
    const json* v = top.get("rope_scaling");
    if (!v) return rs;
    if (!v->is_object()) {
        top.bad("rope_scaling",
                fmt::format("is {}, expected an object or null", json_type_word(*v)));
    }
    const Fields f(*v, top.file(), "rope_scaling.");
    // transformers writes "rope_type" (newer) or "type" (older).
    const char* type_key = f.has("rope_type") ? "rope_type" : "type";
    const std::string type = f.text(type_key).value_or("default");
    if (type == "default") return rs;
    if (type == "linear") {
        rs.kind = RopeScalingKind::linear;
    } else if (type == "yarn") {
        rs.kind = RopeScalingKind::yarn;
    } else if (type == "llama3") {
        rs.kind = RopeScalingKind::llama3;
    } else if (longrope && (type == "longrope" || type == "su")) {
        rs.kind = RopeScalingKind::longrope;
        rs.long_factor = read_factors(f, "long_factor");
        rs.short_factor = read_factors(f, "short_factor");
        return rs;
    } else {
        f.unsupported(type_key, fmt::format("= \"{}\" is not supported (memwall converts "
                                            "default, linear, yarn and llama3 RoPE scaling)",
                                            type));
    }
    if (!f.has("factor")) f.missing("factor");
    rs.factor = f.number("factor", 1.0, 1e-3, 1e6);
    rs.original_context =
        f.opt_count("original_max_position_embeddings", 1, 1u << 24)
            .value_or(top.opt_count("original_max_position_embeddings", 1, 1u << 24)
                          .value_or(n_ctx_train));
    if (rs.kind == RopeScalingKind::llama3) {
        rs.low_freq_factor = f.number("low_freq_factor", 1.0, 1e-6, 1e6);
        rs.high_freq_factor = f.number("high_freq_factor", 4.0, 1e-6, 1e6);
        if (rs.low_freq_factor == rs.high_freq_factor) {
            f.bad("high_freq_factor",
                  fmt::format("= {} equals low_freq_factor", rs.high_freq_factor));
        }
    }
    return rs;
}

void read_moe(const Fields& f, HfConfig& c) {
    if (c.model_type == "mixtral" || c.model_type == "gpt_oss") {
        c.n_expert = f.count("num_local_experts", 1, 1024);
        c.n_ff_expert = c.n_ff;
        // Mixtral renormalises its top-k weights; gpt-oss's softmax over the chosen experts'
        // logits is the same.
        c.expert_weights_norm = true;
    } else {
        c.n_expert = f.count("num_experts", 1, 1024);
        c.n_ff_expert = f.count("moe_intermediate_size", 1, 1u << 20);
        c.expert_weights_norm =
            f.flag("norm_topk_prob", c.arch == "qwen35moe" || c.arch == "lfm2moe");
        // Every layer must be a MoE layer: memwall's qwen MoE graphs have no dense layers.
        const uint32_t step = f.opt_count("decoder_sparse_step", 0, 4096).value_or(1);
        if (step != 1) {
            f.unsupported("decoder_sparse_step",
                          fmt::format("= {}: models with dense layers between the MoE layers are "
                                      "not supported",
                                      step));
        }
        if (const json* only = f.get("mlp_only_layers");
            only && !(only->is_array() && only->empty())) {
            f.unsupported("mlp_only_layers",
                          fmt::format("= {}: models with dense layers between the MoE layers are "
                                      "not supported",
                                      json_brief(*only)));
        }
        if (c.model_type == "qwen2_moe" || c.arch == "qwen35moe") {
            c.n_ff_shared_expert = f.count("shared_expert_intermediate_size", 1, 1u << 20);
        }
    }
    c.n_expert_used = f.count("num_experts_per_tok", 1, c.n_expert);
}

}  // namespace

const char* supported_hf_model_types() {
    return "llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe, granite, cohere, gemma2, "
           "gemma3_text, phi3, deepseek_v2, deepseek_v3, qwen3_5, qwen3_5_text, qwen3_5_moe, "
           "qwen3_5_moe_text, lfm2, lfm2_moe, smollm3, gemma4, gemma4_text, gpt_oss";
}

HfConfig parse_hf_config(std::span<const uint8_t> bytes, const std::string& name) {
    const json root = parse_json_strict(bytes, name, "config");
    if (!root.is_object()) {
        fail(ErrorKind::bad_file, "{}: the config is {}, expected an object", name,
             json_type_word(root));
    }
    const Fields top(root, name);
    HfConfig c;
    const auto model_type = top.text("model_type");
    if (!model_type) top.missing("model_type");
    c.model_type = *model_type;
    // The multimodal Qwen3.5 and Gemma 4 configs keep the language model's fields in
    // text_config (its tensors under model.language_model.); the vision (and audio) towers are
    // not converted.
    const bool multimodal =
        c.model_type == "qwen3_5" || c.model_type == "qwen3_5_moe" || c.model_type == "gemma4";
    const json* text = multimodal ? top.get("text_config") : nullptr;
    if (multimodal && (!text || !text->is_object())) top.missing("text_config");
    const Fields f(text ? *text : root, name, text ? "text_config." : "");
    if (multimodal) c.tensor_prefix = "model.language_model.";
    const ModelType* type = nullptr;
    for (const ModelType& t : kModelTypes) {
        if (c.model_type == t.hf) type = &t;
    }
    if (!type) {
        if (c.model_type == "gemma3") {
            f.unsupported(
                "model_type",
                "= \"gemma3\" is the multimodal Gemma 3 (Gemma3ForConditionalGeneration); "
                "memwall converts the text-only model (model_type gemma3_text)");
        }
        f.unsupported("model_type", fmt::format("= \"{}\" is not supported (memwall converts {})",
                                                c.model_type, supported_hf_model_types()));
    }
    c.arch = type->arch;
    c.permute_qk = type->permute_qk;
    if (const json* archs = top.get("architectures")) {
        if (!archs->is_array()) top.bad("architectures", "is not an array");
        for (const json& a : *archs) {
            if (!a.is_string()) top.bad("architectures", "holds a value that is not a string");
            const std::string& s = a.get_ref<const std::string&>();
            const bool causal = s.size() >= 11 && s.compare(s.size() - 11, 11, "ForCausalLM") == 0;
            if (!causal && !(multimodal && s.ends_with("ForConditionalGeneration"))) {
                top.unsupported(
                    "architectures",
                    fmt::format("= \"{}\": only causal language models (...ForCausalLM) "
                                "are converted",
                                s));
            }
        }
    }
    if (c.arch == "gpt-oss" && top.has("quantization_config")) {
        // gpt-oss ships its experts in MXFP4 (blocks + scales), which GGUF keeps as they are.
        const Fields q(*top.get("quantization_config"), name, "quantization_config.");
        if (const auto m = q.text("quant_method"); m != "mxfp4") {
            q.unsupported("quant_method", fmt::format("= {} is not supported for gpt_oss (mxfp4)",
                                                      m ? "\"" + *m + "\"" : "null"));
        }
    } else if (top.has("quantization_config")) {
        top.unsupported("quantization_config",
                        "is present: pre-quantized checkpoints (GPTQ, AWQ, FP8, ...) are not "
                        "supported; convert the original weights");
    }
    const bool gemma = c.arch == "gemma2" || c.arch == "gemma3" || c.arch == "gemma4";
    const bool deepseek = c.arch == "deepseek2";
    // Gemma's MLP is GELU (tanh approximation), written as hidden_activation by newer
    // transformers; every other architecture here is SiLU.
    const char* act_key = gemma && f.has("hidden_activation") ? "hidden_activation" : "hidden_act";
    const char* want_act = gemma ? "gelu_pytorch_tanh" : "silu";
    if (const auto act = f.text(act_key); act && *act != want_act) {
        f.unsupported(act_key, fmt::format("= \"{}\" is not supported (only {})", *act, want_act));
    }
    if (f.flag("mlp_bias", false)) f.unsupported("mlp_bias", "= true is not supported");
    if (c.model_type == "qwen2" || c.model_type == "qwen2_moe") {
        c.qkv_bias = true;  // Qwen2 and Qwen2-MoE always have Q/K/V biases
    } else if (c.arch == "gpt-oss") {
        // gpt-oss's Q, K, V and output biases, which memwall's gpt-oss graph adds.
        if (!f.flag("attention_bias", true)) {
            f.unsupported("attention_bias", "= false is not supported for gpt_oss");
        }
        c.qkv_bias = true;
    } else if (f.flag("attention_bias", false)) {
        // The output projection gets a bias too, which memwall's graph does not have.
        f.unsupported("attention_bias", "= true is not supported (an output projection bias)");
    }
    c.qk_norm = c.arch == "qwen3" || c.arch == "qwen3moe" || c.arch == "gemma3" ||
                c.arch == "qwen35" || c.arch == "qwen35moe";

    if (const auto n = top.text("_name_or_path")) {
        const size_t slash = n->find_last_of('/');
        c.name = slash == std::string::npos ? *n : n->substr(slash + 1);
    }
    c.vocab_size = f.count("vocab_size", 1, 1u << 24);
    c.n_embd = f.count("hidden_size", 1, 1u << 17);
    c.n_layer = f.count("num_hidden_layers", 1, 4096);
    c.n_head = f.count("num_attention_heads", 1, 4096);
    c.n_head_kv = f.opt_count("num_key_value_heads", 1, c.n_head).value_or(c.n_head);
    if (c.n_head % c.n_head_kv != 0) {
        f.bad("num_key_value_heads",
              fmt::format("= {} does not divide num_attention_heads = {}", c.n_head_kv, c.n_head));
    }
    if (deepseek) {
        // MLA: the head sizes are qk_nope_head_dim + qk_rope_head_dim (read_arch_fields).
    } else if (const auto hd = f.opt_count("head_dim", 2, 4096)) {
        c.head_dim = *hd;
        c.head_dim_given = true;
    } else {
        if (c.n_embd % c.n_head != 0) {
            f.bad("hidden_size", fmt::format("= {} is not a multiple of num_attention_heads = {} "
                                             "(and head_dim is not given)",
                                             c.n_embd, c.n_head));
        }
        c.head_dim = c.n_embd / c.n_head;
    }
    if (!deepseek && c.head_dim % 2 != 0) {
        f.bad(c.head_dim_given ? "head_dim" : "hidden_size",
              fmt::format("gives an odd head size {}, which RoPE cannot rotate", c.head_dim));
    }
    c.n_ff = f.opt_count("intermediate_size", 1, 1u << 20).value_or(0);
    if (c.n_ff == 0 && !deepseek && c.arch != "lfm2" &&  // lfm2: block_ff_dim (read_lfm2)
        (!type->moe || c.model_type == "mixtral" || c.model_type == "qwen2_moe" ||
         c.model_type == "gpt_oss")) {
        f.missing("intermediate_size");
    }
    c.n_ctx_train = f.opt_count("max_position_embeddings", 1, 1u << 24).value_or(2048);
    c.rms_norm_eps = f.number("rms_norm_eps", 1e-6, 0.0, 0.5);
    c.rope_theta = f.number("rope_theta", 10000.0, 1.0 + 1e-9, 1e12);
    c.rope_scaling = read_rope_scaling(f, c.n_ctx_train, c.arch == "phi3");
    // Gemma 4's configs leave it out: transformers' default there is tied.
    c.tie_word_embeddings =
        f.flag("tie_word_embeddings", top.flag("tie_word_embeddings", c.arch == "gemma4"));

    if (f.flag("use_sliding_window", false)) {
        f.unsupported("use_sliding_window", "= true: sliding-window attention is not supported");
    }
    if (c.model_type == "mistral" || c.model_type == "mixtral") {
        if (const auto window = f.opt_count("sliding_window", 1, UINT32_MAX);
            window && *window < c.n_ctx_train) {
            c.warnings.push_back(fmt::format(
                "sliding_window = {} is smaller than max_position_embeddings = {}: memwall attends "
                "to the whole context, so outputs after {} tokens differ from the original model",
                *window, c.n_ctx_train, *window));
        }
    }
    if (type->moe && !deepseek) read_moe(f, c);
    c.n_rot = c.head_dim;
    read_arch_fields(f, c);

    c.bos_token_id = f.token_id("bos_token_id");
    c.eos_token_id = f.token_id("eos_token_id");
    c.pad_token_id = f.token_id("pad_token_id");
    c.unk_token_id = f.token_id("unk_token_id");
    return c;
}

}  // namespace mw::convert
