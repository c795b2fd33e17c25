// config.json fields of granite, cohere (command-r), gemma2, gemma3_text, phi3, deepseek_v2/v3,
// qwen3_5, lfm2 / lfm2_moe, smollm3, gemma4 and gpt_oss: what each block does beyond llama's,
// read with the defaults transformers uses, and refused where memwall's graph (and llama.cpp's,
// whose GGUF keys are written) would compute something else than the original model.
#include <charconv>
#include <cmath>
#include <optional>
#include <vector>

#include "convert/hf_config.h"
#include "convert/hf_fields.h"

namespace mw::convert {
namespace {

using nlohmann::json;

// Written always: transformers' default multiplier is 1 (no 1/sqrt(head size) either), where
// llama.cpp's converter leaves absent ones out.
void read_granite(const Fields& f, HfConfig& c) {
    c.attention_multiplier = f.number("attention_multiplier", 1.0, 1e-9, 1e9);
    c.embedding_multiplier = f.number("embedding_multiplier", 1.0, 1e-9, 1e9);
    c.residual_multiplier = f.number("residual_multiplier", 1.0, 1e-9, 1e9);
    c.logits_scaling = f.number("logits_scaling", 1.0, 1e-9, 1e9);
}

void read_cohere(const Fields& f, HfConfig& c) {
    c.layer_norm = true;
    c.rms_norm_eps = f.number("layer_norm_eps", 1e-5, 0.0, 0.5);
    c.logit_scale = f.number("logit_scale", 0.0625, 1e-9, 1e9);
    c.tie_word_embeddings = f.flag("tie_word_embeddings", true);  // CohereConfig's default
    // As llama.cpp's converter: config.json's max_position_embeddings (8192) understates the
    // context Command R was trained for (model_max_length, 128k).
    c.n_ctx_train = f.opt_count("model_max_length", 1, 1u << 24).value_or(c.n_ctx_train);
    if (f.flag("use_qk_norm", false)) {
        f.unsupported("use_qk_norm",
                      "= true is not supported (Command R+'s per-head LayerNorm of Q and K)");
    }
}

// layer_types of a model with two kinds of layer: true for each `yes` layer, false for each `no`
// one; another kind, or a list that is not one string a layer, is refused. nullopt without
// layer_types.
std::optional<std::vector<bool>> two_kind_layers(const Fields& f, uint32_t n_layer, const char* yes,
                                                 const char* no) {
    const json* types = f.get("layer_types");
    if (!types) return std::nullopt;
    if (!types->is_array() || types->size() != n_layer) {
        f.bad("layer_types",
              fmt::format("is not an array of num_hidden_layers = {} strings", n_layer));
    }
    std::vector<bool> kinds(n_layer);
    for (uint32_t i = 0; i < n_layer; ++i) {
        const json& t = (*types)[i];
        if (t != yes && t != no) {
            f.unsupported("layer_types", fmt::format("[{}] = {} is not supported ({} or {})", i,
                                                     json_brief(t), yes, no));
        }
        kinds[i] = t == yes;
    }
    return kinds;
}

// The layers' attention kinds of Gemma as a pattern: every pattern-th layer is global.
uint32_t gemma_swa_pattern(const Fields& f, const HfConfig& c, uint32_t fallback) {
    uint32_t pattern = fallback;
    if (c.arch == "gemma3") {
        pattern = f.opt_count("sliding_window_pattern", 1, c.n_layer + 1).value_or(fallback);
    }
    const json* types = f.get("layer_types");
    if (!types) return pattern;
    if (!types->is_array() || types->size() != c.n_layer) {
        f.bad("layer_types",
              fmt::format("is not an array of num_hidden_layers = {} strings", c.n_layer));
    }
    // Derive the pattern from the first global layer, then require every layer to follow it.
    uint32_t first_global = c.n_layer;
    for (uint32_t i = 0; i < c.n_layer && first_global == c.n_layer; ++i) {
        if ((*types)[i] == "full_attention") first_global = i;
    }
    pattern = first_global + 1;
    for (uint32_t i = 0; i < c.n_layer; ++i) {
        const json& t = (*types)[i];
        if (t != "full_attention" && t != "sliding_attention") {
            f.unsupported("layer_types", fmt::format("[{}] = {} is not supported (full_attention "
                                                     "or sliding_attention)",
                                                     i, json_brief(t)));
        }
        const bool global = i % pattern == pattern - 1;
        if ((t == "full_attention") != global) {
            f.unsupported("layer_types",
                          fmt::format("[{}] = {} breaks the pattern of one global layer in {}: "
                                      "memwall (as llama.cpp) repeats one pattern",
                                      i, json_brief(t), pattern));
        }
    }
    return pattern;
}

void read_gemma(const Fields& f, HfConfig& c) {
    const bool g2 = c.arch == "gemma2";
    c.norm_plus_one = true;
    c.tie_word_embeddings = f.flag("tie_word_embeddings", true);
    if (!f.has("head_dim")) f.missing("head_dim");
    // Queries are scaled by 1/sqrt(query_pre_attn_scalar); the GGUF has no key for it: llama.cpp
    // and memwall use the head size, except for the 27B models (n_embd / n_head).
    const bool big = (g2 && c.n_layer == 46) || (!g2 && c.n_layer == 62);
    const double want = big ? double(c.n_embd / c.n_head) : double(c.head_dim);
    const double scalar = f.number("query_pre_attn_scalar", want, 1e-9, 1e9);
    if (scalar != want) {
        f.unsupported("query_pre_attn_scalar",
                      fmt::format("= {} is not supported: a {}-layer {} model scales queries by "
                                  "1/sqrt({}) in GGUF",
                                  scalar, c.n_layer, c.model_type, want));
    }
    if (g2) {
        c.sliding_window = f.count_or("sliding_window", 4096, 1, UINT32_MAX);
        // Gemma 2's graph always caps; null (no cap) cannot be written.
        for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
            if (f.is_null(key)) f.unsupported(key, "= null is not supported for gemma2");
        }
        c.attn_softcap = f.number("attn_logit_softcapping", 50.0, 1e-6, 1e9);
        c.final_softcap = f.number("final_logit_softcapping", 30.0, 1e-6, 1e9);
        c.sliding_window_pattern = gemma_swa_pattern(f, c, 2);
    } else {
        c.sliding_window = f.opt_count("sliding_window", 1, UINT32_MAX).value_or(0);
        if (f.has("attn_logit_softcapping")) {
            f.unsupported("attn_logit_softcapping",
                          "is set: gemma3 has no attention soft-capping in GGUF");
        }
        c.final_softcap = f.number("final_logit_softcapping", 0.0, 1e-6, 1e9);
        c.rope_local_base = f.number("rope_local_base_freq", 10000.0, 1.0 + 1e-9, 1e12);
        if (f.flag("use_bidirectional_attention", false)) {
            f.unsupported("use_bidirectional_attention",
                          "= true (an embedding model) is not supported: memwall's attention is "
                          "causal");
        }
        c.sliding_window_pattern = gemma_swa_pattern(f, c, 6);
    }
}

void read_phi3(const Fields& f, HfConfig& c) {
    const RopeScalingKind kind = c.rope_scaling.kind;
    if (kind != RopeScalingKind::none && kind != RopeScalingKind::longrope) {
        f.unsupported("rope_scaling", "is not supported for phi3 (only none or longrope)");
    }
    const double partial = f.number("partial_rotary_factor", 1.0, 1e-6, 1.0);
    c.n_rot = uint32_t(std::lround(partial * c.head_dim));
    if (c.n_rot == 0 || c.n_rot % 2 != 0 || std::abs(partial * c.head_dim - c.n_rot) > 1e-6) {
        f.bad("partial_rotary_factor",
              fmt::format("= {} gives {} rotated dims of a head of {}: not an even count", partial,
                          partial * c.head_dim, c.head_dim));
    }
    c.original_context =
        f.opt_count("original_max_position_embeddings", 1, 1u << 24).value_or(c.n_ctx_train);
    if (kind == RopeScalingKind::longrope) {
        const Fields rs(*f.get("rope_scaling"), f.file(), "rope_scaling.");
        for (const auto* factors : {&c.rope_scaling.long_factor, &c.rope_scaling.short_factor}) {
            if (factors->size() != c.n_rot / 2) {
                rs.bad(factors == &c.rope_scaling.long_factor ? "long_factor" : "short_factor",
                       fmt::format("has {} factors, expected one per rotated pair: {}",
                                   factors->size(), c.n_rot / 2));
            }
        }
        // As llama.cpp's converter: LongRoPE's magnitude correction for the extended context.
        const double scale = double(c.n_ctx_train) / c.original_context;
        c.rope_attn_factor =
            scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(double(c.original_context)))
                        : 1.0;
    }
    c.sliding_window = f.opt_count("sliding_window", 1, UINT32_MAX).value_or(0);
    if (c.sliding_window > 0 && c.sliding_window < c.n_ctx_train) {
        c.warnings.push_back(fmt::format(
            "sliding_window = {} is smaller than max_position_embeddings = {}: memwall attends to "
            "the whole context, so outputs after {} tokens differ from the original model",
            c.sliding_window, c.n_ctx_train, c.sliding_window));
    }
}

void read_deepseek(const Fields& f, HfConfig& c) {
    c.kv_lora_rank = f.count("kv_lora_rank", 1, 1u << 16);
    c.q_lora_rank = f.opt_count("q_lora_rank", 1, 1u << 16).value_or(0);
    c.qk_nope_head_dim = f.count("qk_nope_head_dim", 1, 4096);
    c.qk_rope_head_dim = f.count("qk_rope_head_dim", 2, 4096);
    c.v_head_dim = f.count("v_head_dim", 1, 4096);
    if (c.qk_rope_head_dim % 2 != 0) {
        f.bad("qk_rope_head_dim",
              fmt::format("= {} is odd: RoPE cannot rotate it", c.qk_rope_head_dim));
    }
    c.head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim;
    c.n_rot = c.qk_rope_head_dim;

    c.n_expert = f.count("n_routed_experts", 1, 1024);
    c.n_expert_used = f.count("num_experts_per_tok", 1, c.n_expert);
    c.n_ff_expert = f.count("moe_intermediate_size", 1, 1u << 20);
    c.n_expert_shared = f.opt_count("n_shared_experts", 0, 64).value_or(0);
    c.n_layer_dense_lead = f.opt_count("first_k_dense_replace", 0, c.n_layer).value_or(0);
    c.n_nextn_layers = f.opt_count("num_nextn_predict_layers", 0, 64).value_or(0);
    if (c.n_layer_dense_lead > 0 && c.n_ff == 0) f.missing("intermediate_size");
    if (const uint32_t freq = f.opt_count("moe_layer_freq", 0, 4096).value_or(1); freq != 1) {
        f.unsupported(
            "moe_layer_freq",
            fmt::format("= {}: dense layers between the MoE layers are not supported", freq));
    }
    c.expert_weights_scale = f.number("routed_scaling_factor", 1.0, 1e-9, 1e9);
    c.expert_weights_norm = f.flag("norm_topk_prob", false);
    const std::string scoring = f.text("scoring_func").value_or("softmax");
    if (scoring != "softmax" && scoring != "sigmoid") {
        f.unsupported("scoring_func",
                      fmt::format("= \"{}\" is not supported (softmax, sigmoid)", scoring));
    }
    c.sigmoid_gating = scoring == "sigmoid";
    const std::string topk = f.text("topk_method").value_or("greedy");
    const uint32_t n_group = f.opt_count("n_group", 1, c.n_expert).value_or(1);
    if (topk == "noaux_tc") {
        // DeepSeek-V3: groups ranked by the sum of their two best biased scores, as memwall.
        if (n_group > 1) {
            if (c.n_expert % n_group != 0) {
                f.bad("n_group", fmt::format("= {} does not divide n_routed_experts = {}", n_group,
                                             c.n_expert));
            }
            c.n_expert_groups = n_group;
            c.n_group_used = f.count("topk_group", 1, n_group);
        }
    } else if (topk == "group_limited_greedy" && n_group > 1) {
        f.unsupported("topk_method",
                      "= \"group_limited_greedy\" is not supported (groups ranked by their best "
                      "expert; memwall ranks them as noaux_tc does)");
    } else if (topk != "greedy" && topk != "group_limited_greedy") {
        f.unsupported("topk_method",
                      fmt::format("= \"{}\" is not supported (greedy, noaux_tc)", topk));
    }
    if (c.rope_scaling.kind == RopeScalingKind::yarn) {
        const Fields rs(*f.get("rope_scaling"), f.file(), "rope_scaling.");
        const double mscale = rs.number("mscale", 1.0, 0.0, 1e3);
        const double mscale_all = rs.number("mscale_all_dim", 0.0, 0.0, 1e3);
        if (mscale != mscale_all) {
            rs.unsupported("mscale", fmt::format("= {} differs from mscale_all_dim = {}: GGUF "
                                                 "has one YaRN magnitude factor",
                                                 mscale, mscale_all));
        }
        c.yarn_log_mul = 0.1 * mscale_all;
        if (rs.number("beta_fast", 32.0, -1e6, 1e6) != 32.0 ||
            rs.number("beta_slow", 1.0, -1e6, 1e6) != 1.0) {
            rs.unsupported("beta_fast", "/ beta_slow other than 32 / 1 are not supported");
        }
    } else if (c.rope_scaling.kind != RopeScalingKind::none) {
        f.unsupported("rope_scaling", "is not supported for deepseek (only yarn)");
    }
}

// Qwen3.5: the DeltaNet shape (linear_*), the layer pattern (layer_types, else every
// full_attention_interval-th layer is attention), partial interleaved M-RoPE from
// rope_parameters. The MTP layers (mtp_num_hidden_layers) are not converted.
void read_qwen35(const Fields& f, HfConfig& c) {
    c.norm_plus_one = true;  // (1 + w) RMSNorms, except the DeltaNet output norm
    c.head_dim = f.count_or("head_dim", 256, 2, 4096);
    c.head_dim_given = true;
    if (!f.flag("attn_output_gate", true)) {
        f.unsupported("attn_output_gate", "= false is not supported (Qwen3.5's gated attention)");
    }
    c.ssm_conv_kernel = f.count("linear_conv_kernel_dim", 1, 64);
    c.ssm_head_dim = f.count("linear_key_head_dim", 1, 1024);
    c.ssm_k_heads = f.count("linear_num_key_heads", 1, 1024);
    c.ssm_v_heads = f.count("linear_num_value_heads", 1, 1024);
    if (const uint32_t v = f.count_or("linear_value_head_dim", c.ssm_head_dim, 1, 1024);
        v != c.ssm_head_dim) {
        f.unsupported("linear_value_head_dim",
                      fmt::format("= {} differs from linear_key_head_dim = {}: not supported", v,
                                  c.ssm_head_dim));
    }
    if (c.ssm_v_heads % c.ssm_k_heads != 0) {
        f.bad("linear_num_value_heads", fmt::format("= {} is not a multiple of "
                                                    "linear_num_key_heads = {}",
                                                    c.ssm_v_heads, c.ssm_k_heads));
    }
    c.full_attn_interval = f.count_or("full_attention_interval", 4, 1, c.n_layer);
    c.recurrent_layers.assign(c.n_layer, false);
    for (uint32_t i = 0; i < c.n_layer; ++i) {
        c.recurrent_layers[i] = (i + 1) % c.full_attn_interval != 0;
    }
    if (auto kinds = two_kind_layers(f, c.n_layer, "linear_attention", "full_attention")) {
        c.recurrent_layers = std::move(*kinds);
    }
    const json* rope = f.get("rope_parameters");
    if (rope && !rope->is_object()) f.bad("rope_parameters", "is not an object");
    static const json kNone = json::object();
    const Fields r(rope ? *rope : kNone, f.file(), "rope_parameters.");
    if (const auto type = r.text("rope_type"); type && *type != "default") {
        r.unsupported("rope_type", fmt::format("= \"{}\" is not supported (default)", *type));
    }
    c.rope_theta =
        r.number("rope_theta", f.number("rope_theta", 1e7, 1.0 + 1e-9, 1e12), 1.0 + 1e-9, 1e12);
    const double partial = r.number("partial_rotary_factor",
                                    f.number("partial_rotary_factor", 0.25, 1e-6, 1.0), 1e-6, 1.0);
    c.n_rot = uint32_t(std::lround(partial * c.head_dim));
    if (c.n_rot == 0 || c.n_rot % 2 != 0) {
        r.bad("partial_rotary_factor", fmt::format("= {} gives {} rotated dims of a head of {}",
                                                   partial, partial * c.head_dim, c.head_dim));
    }
    // As llama.cpp's converter: [11, 11, 10, 0] when the config names no sections.
    c.rope_sections = {11, 11, 10, 0};
    if (const json* sec = r.get("mrope_section")) {
        if (!sec->is_array() || sec->size() > 4) r.bad("mrope_section", "is not a list of counts");
        c.rope_sections.assign(4, 0);
        for (size_t i = 0; i < sec->size(); ++i) {
            const json& v = (*sec)[i];
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 4096) {
                r.bad("mrope_section", fmt::format("holds {}, expected counts", json_brief(v)));
            }
            c.rope_sections[i] = int32_t(v.get<int64_t>());
        }
    }
    if (c.arch == "qwen35moe") {
        c.n_ff = 0;  // every layer is MoE; the file has no dense width
        if (!c.expert_weights_norm) {
            f.unsupported("norm_topk_prob",
                          "= false is not supported (qwen35moe renormalises the top-k weights)");
        }
    }
}

// LFM2-MoE: the dense FFN of the first num_dense_layers layers is intermediate_size wide (not
// adjusted); the experts are routed as llama.cpp's lfm2moe graph (and memwall's) fixes it:
// sigmoid scores plus the selection bias expert_bias, the top-k weights renormalised, unscaled.
void read_lfm2moe(const Fields& f, HfConfig& c) {
    if (!f.has("intermediate_size")) f.missing("intermediate_size");
    c.n_layer_dense_lead = f.count_or("num_dense_layers", 2, 0, c.n_layer);
    c.sigmoid_gating = true;
    c.head_dim_given = true;  // written as attention.key_length / value_length, as llama.cpp does
    if (!f.flag("use_expert_bias", true)) {
        f.unsupported("use_expert_bias",
                      "= false is not supported (lfm2moe selects with the bias)");
    }
    if (!c.expert_weights_norm) {
        f.unsupported("norm_topk_prob",
                      "= false is not supported (lfm2moe renormalises the top-k weights)");
    }
    if (const double s = f.number("routed_scaling_factor", 1.0, 0.0, 1e6); s != 1.0) {
        f.unsupported(
            "routed_scaling_factor",
            fmt::format("= {} is not supported (lfm2moe leaves the weights unscaled)", s));
    }
}

// LFM2 (Liquid): layer_types ("conv" / "full_attention"), or the older full_attn_idxs; the FFN
// width as llama.cpp's converter derives it (block_ff_dim, else intermediate_size; with
// block_auto_adjust_ff_dim: 2/3 of it, times block_ffn_dim_multiplier, rounded up to
// block_multiple_of: LFM2-1.2B's 12288 gives 8192); norm_eps; tied (tie_embedding).
void read_lfm2(const Fields& f, HfConfig& c) {
    c.rms_norm_eps = f.number("norm_eps", f.number("rms_norm_eps", 1e-5, 0.0, 0.5), 0.0, 0.5);
    c.tie_word_embeddings = f.flag("tie_embedding", f.flag("tie_word_embeddings", true));
    if (!c.tie_word_embeddings) f.unsupported("tie_embedding", "= false is not supported");
    if (f.flag("conv_bias", false)) f.unsupported("conv_bias", "= true is not supported");
    c.shortconv_l_cache = f.count("conv_L_cache", 1, 64);
    if (c.arch == "lfm2moe") {
        read_lfm2moe(f, c);
    } else {
        const char* ff_key = f.has("block_ff_dim") ? "block_ff_dim" : "intermediate_size";
        uint64_t ff = f.count(ff_key, 1, 1u << 20);
        if (f.flag("block_auto_adjust_ff_dim", false)) {
            ff = 2 * ff / 3;
            ff = uint64_t(f.number("block_ffn_dim_multiplier", 1.0, 1e-3, 1e3) * double(ff));
            const uint64_t multiple = f.count_or("block_multiple_of", 256, 1, 1u << 16);
            ff = (ff + multiple - 1) / multiple * multiple;
        }
        c.n_ff = uint32_t(ff);
    }
    c.conv_layers.assign(c.n_layer, false);
    if (auto kinds = two_kind_layers(f, c.n_layer, "conv", "full_attention")) {
        c.conv_layers = std::move(*kinds);
    } else if (const json* idxs = f.get("full_attn_idxs")) {
        if (!idxs->is_array()) f.bad("full_attn_idxs", "is not an array of layer numbers");
        c.conv_layers.assign(c.n_layer, true);
        for (const json& i : *idxs) {
            if (!i.is_number_unsigned() || i.get<uint64_t>() >= c.n_layer) {
                f.bad("full_attn_idxs", fmt::format("holds {}, not a layer number below {}",
                                                    json_brief(i), c.n_layer));
            }
            c.conv_layers[i.get<size_t>()] = false;
        }
    } else {
        f.missing("layer_types");
    }
}

// Gemma 4's per-layer attention shape: per_layer_config (newer transformers) may give a layer's
// head_dim and num_key_value_heads. GGUF holds one value per kind: every full layer must agree,
// and a sliding layer may only restate `swa_value`. Returns the full layers' value, if given.
std::optional<uint32_t> gemma4_full_layer_value(const Fields& f, const HfConfig& c, const char* key,
                                                uint32_t swa_value) {
    const json* plc = f.get("per_layer_config");
    if (!plc) return std::nullopt;
    if (!plc->is_object()) f.bad("per_layer_config", "is not an object of layer numbers");
    std::optional<uint32_t> value;
    for (const auto& [layer, cfg] : plc->items()) {
        uint32_t il = 0;
        const auto [end, ec] = std::from_chars(layer.data(), layer.data() + layer.size(), il);
        if (ec != std::errc() || end != layer.data() + layer.size() || il >= c.n_layer) {
            f.bad("per_layer_config",
                  fmt::format("names layer \"{}\", not one below {}", layer, c.n_layer));
        }
        if (!cfg.is_object()) f.bad("per_layer_config", fmt::format("[{}] is not an object", il));
        const Fields lf(cfg, f.file(), fmt::format("per_layer_config.{}.", il));
        const auto v = lf.opt_count(key, 1, 4096);
        if (!v) continue;
        if (c.swa_layers[il]) {
            if (*v != swa_value) {
                lf.unsupported(key, fmt::format("= {} differs from the sliding layers' {}: GGUF "
                                                "has one value for every sliding layer",
                                                *v, swa_value));
            }
            continue;
        }
        if (value && *v != *value) {
            lf.unsupported(key, fmt::format("= {} differs from another full layer's {}: GGUF has "
                                            "one value for every full layer",
                                            *v, *value));
        }
        value = v;
    }
    return value;
}

// Gemma 4 (gemma4_text, or text_config of gemma4), with transformers' defaults: layer_types
// (sliding_attention / full_attention; by default a full layer every sixth), heads of head_dim on
// the sliding layers and of global_head_dim on the full ones, which reuse their keys as values
// (and have num_global_key_value_heads KV heads) with attention_k_eq_v, or both from
// per_layer_config where newer transformers write it; RoPE per layer kind from
// rope_parameters, the full layers' "proportional" (partial) RoPE written as rope_freqs, as
// llama.cpp's converter does; KV sharing of the last num_kv_shared_layers layers; per-layer
// embeddings (hidden_size_per_layer_input); double-wide MLPs on the sharing layers; the MoE block
// (enable_moe_block). RMSNorm weights are used as stored (no 1 + w).
void read_gemma4(const Fields& f, HfConfig& c) {
    c.head_dim_swa = f.count_or("head_dim", 256, 2, 4096);
    c.n_ctx_train = f.count_or("max_position_embeddings", 131072, 1, 1u << 24);
    c.sliding_window = f.count_or("sliding_window", 512, 1, UINT32_MAX);
    c.final_softcap = f.number("final_logit_softcapping", 0.0, 0.0, 1e9);
    c.swa_layers.assign(c.n_layer, false);
    if (const json* types = f.get("layer_types")) {
        if (!types->is_array() || types->size() != c.n_layer) {
            f.bad("layer_types",
                  fmt::format("is not an array of num_hidden_layers = {} strings", c.n_layer));
        }
        for (uint32_t i = 0; i < c.n_layer; ++i) {
            const json& t = (*types)[i];
            if (t != "sliding_attention" && t != "full_attention") {
                f.unsupported("layer_types", fmt::format("[{}] = {} is not supported "
                                                         "(sliding_attention or full_attention)",
                                                         i, json_brief(t)));
            }
            c.swa_layers[i] = t == "sliding_attention";
        }
    } else {
        for (uint32_t i = 0; i < c.n_layer; ++i) c.swa_layers[i] = (i + 1) % 6 != 0;
    }
    if (c.swa_layers.back()) {  // transformers forces the last layer to full attention
        c.swa_layers.back() = false;
        if (f.has("layer_types")) {
            c.warnings.push_back(
                fmt::format("layer_types[{}] = \"sliding_attention\": the last "
                            "layer attends fully, as transformers makes it",
                            c.n_layer - 1));
        }
    }
    c.head_dim = gemma4_full_layer_value(f, c, "head_dim", c.head_dim_swa)
                     .value_or(f.count_or("global_head_dim", 512, 2, 4096));
    c.head_dim_given = true;
    if (c.head_dim % 2 != 0 || c.head_dim_swa % 2 != 0) {
        f.bad("head_dim", fmt::format("gives an odd head size ({} sliding, {} full), which RoPE "
                                      "cannot rotate",
                                      c.head_dim_swa, c.head_dim));
    }
    c.k_eq_v = f.flag("attention_k_eq_v", false);
    // The full layers' KV heads: per_layer_config's, else num_global_key_value_heads, which
    // transformers applies only with attention_k_eq_v.
    const std::optional<uint32_t> kv_full =
        gemma4_full_layer_value(f, c, "num_key_value_heads", c.n_head_kv);
    c.n_head_kv_full = kv_full.value_or(
        c.k_eq_v ? f.count_or("num_global_key_value_heads", c.n_head_kv, 1, c.n_head)
                 : c.n_head_kv);
    if (c.n_head_kv_full == 0 || c.n_head % c.n_head_kv_full != 0) {
        f.bad(kv_full ? "per_layer_config" : "num_global_key_value_heads",
              fmt::format("gives {} KV heads to the full layers, which does not divide "
                          "num_attention_heads = {}",
                          c.n_head_kv_full, c.n_head));
    }
    c.n_kv_shared = f.count_or("num_kv_shared_layers", 0, 0, UINT32_MAX);
    if (c.n_kv_shared >= c.n_layer) {
        f.bad("num_kv_shared_layers",
              fmt::format("= {} is not below num_hidden_layers = {}: no layer would compute K/V",
                          c.n_kv_shared, c.n_layer));
    }
    // A sharing layer reads the K/V of the last earlier layer of its kind: there must be one.
    const uint32_t first_shared = c.n_layer - c.n_kv_shared;
    for (uint32_t i = first_shared; i < c.n_layer; ++i) {
        bool found = false;
        for (uint32_t j = 0; j < first_shared; ++j) found |= c.swa_layers[j] == c.swa_layers[i];
        if (!found) {
            f.bad("num_kv_shared_layers",
                  fmt::format("= {}: layer {} ({}) shares the K/V of an earlier layer of its kind, "
                              "but layers 0-{} have none",
                              c.n_kv_shared, i, c.swa_layers[i] ? "sliding" : "full",
                              first_shared - 1));
        }
    }
    // transformers' default is 256 (per-layer embeddings on); the big models write 0 or null.
    c.n_embd_per_layer = f.is_null("hidden_size_per_layer_input")
                             ? 0
                             : f.count_or("hidden_size_per_layer_input", 256, 0, 1u << 16);
    if (c.n_embd_per_layer > 0) {
        const uint32_t v = f.count_or("vocab_size_per_layer_input", 262144, 1, 1u << 24);
        if (v != c.vocab_size) {
            f.unsupported("vocab_size_per_layer_input",
                          fmt::format("= {} differs from vocab_size = {}: GGUF's per-layer "
                                      "embedding table has a row per token",
                                      v, c.vocab_size));
        }
    }
    if (f.flag("use_double_wide_mlp", false) && c.n_kv_shared > 0) {
        for (uint32_t i = 0; i < c.n_layer; ++i) {
            c.n_ff_per_layer.push_back(i < first_shared ? c.n_ff : 2 * c.n_ff);
        }
    }
    if (f.flag("enable_moe_block", false)) {
        c.n_expert = f.count("num_experts", 1, 1024);
        c.n_expert_used = f.count("top_k_experts", 1, c.n_expert);
        c.n_ff_expert = f.count("moe_intermediate_size", 1, 1u << 20);
        c.expert_weights_norm = true;  // Gemma 4's router always renormalises
    }
    if (const auto bidir = f.text("use_bidirectional_attention"); bidir && *bidir == "all") {
        f.unsupported("use_bidirectional_attention",
                      "= \"all\" (an embedding model) is not supported: memwall's attention is "
                      "causal");
    }

    // rope_parameters: {"sliding_attention": {...}, "full_attention": {...}}.
    const json* rope = f.get("rope_parameters");
    if (rope && !rope->is_object()) f.bad("rope_parameters", "is not an object");
    static const json kNone = json::object();
    const auto kind = [&](const char* name) -> Fields {
        const json* k = rope ? Fields(*rope, f.file(), "rope_parameters.").get(name) : nullptr;
        if (k && !k->is_object())
            f.bad("rope_parameters", fmt::format("[{}] is not an object", name));
        return Fields(k ? *k : kNone, f.file(), fmt::format("rope_parameters.{}.", name));
    };
    const Fields swa = kind("sliding_attention");
    const Fields full = kind("full_attention");
    if (const auto t = swa.text("rope_type"); t && *t != "default") {
        swa.unsupported("rope_type", fmt::format("= \"{}\" is not supported (default)", *t));
    }
    if (const auto t = full.text("rope_type").value_or("proportional"); t != "proportional") {
        full.unsupported("rope_type", fmt::format("= \"{}\" is not supported (proportional)", t));
    }
    c.rope_local_base = swa.number("rope_theta", 10000.0, 1.0 + 1e-9, 1e12);
    c.rope_theta = full.number("rope_theta", 1e6, 1.0 + 1e-9, 1e12);
    const double p_swa = swa.number("partial_rotary_factor", 1.0, 1e-6, 1.0);
    c.n_rot_swa = uint32_t(p_swa * c.head_dim_swa);
    if (c.n_rot_swa == 0 || c.n_rot_swa % 2 != 0) {
        swa.bad("partial_rotary_factor",
                fmt::format("= {} gives {} rotated dims of a head of {}", p_swa,
                            p_swa * c.head_dim_swa, c.head_dim_swa));
    }
    const double p_full = full.number("partial_rotary_factor", 0.25, 1e-6, 1.0);
    c.n_rot_full_pairs = uint32_t(c.head_dim * p_full / 2);
    if (c.n_rot_full_pairs == 0) {
        full.bad("partial_rotary_factor",
                 fmt::format("= {} rotates no pair of a head of {}", p_full, c.head_dim));
    }
    // The full layers rotate all head_dim dims in GGUF; rope_freqs stops the unrotated pairs.
    c.n_rot = c.head_dim;
}

// gpt-oss: sliding-window attention on the even layers (as llama.cpp's gpt-oss graph, and
// memwall's, fix it), the clamped SwiGLU at transformers' limit 7, YaRN RoPE.
void read_gptoss(const Fields& f, HfConfig& c) {
    c.sliding_window = f.count_or("sliding_window", 128, 1, UINT32_MAX);
    if (const json* types = f.get("layer_types")) {
        if (!types->is_array() || types->size() != c.n_layer) {
            f.bad("layer_types",
                  fmt::format("is not an array of num_hidden_layers = {} strings", c.n_layer));
        }
        for (uint32_t i = 0; i < c.n_layer; ++i) {
            const char* want = i % 2 == 0 ? "sliding_attention" : "full_attention";
            if ((*types)[i] != want) {
                f.unsupported("layer_types",
                              fmt::format("[{}] = {}: only sliding_attention on the even layers "
                                          "and full_attention on the odd ones is supported",
                                          i, json_brief((*types)[i])));
            }
        }
    }
    if (const double limit = f.number("swiglu_limit", 7.0, 0.0, 1e9); limit != 7.0) {
        f.unsupported("swiglu_limit",
                      fmt::format("= {} is not supported (the GGUF graph clamps at 7)", limit));
    }
    const RopeScalingKind kind = c.rope_scaling.kind;
    if (kind == RopeScalingKind::yarn) {
        const Fields rs(*f.get("rope_scaling"), f.file(), "rope_scaling.");
        c.yarn_beta_fast = rs.number("beta_fast", 32.0, -1e6, 1e6);
        c.yarn_beta_slow = rs.number("beta_slow", 1.0, -1e6, 1e6);
    } else if (kind != RopeScalingKind::none) {
        f.unsupported("rope_scaling", "is not supported for gpt_oss (only yarn)");
    }
}

// SmolLM3: llama with no RoPE on every fourth layer, which llama.cpp (and memwall) fix at that
// interval rather than read: a config with other NoPE layers is refused.
void read_smollm3(const Fields& f, HfConfig& c) {
    if (const json* nope = f.get("no_rope_layers")) {
        if (!nope->is_array() || nope->size() != c.n_layer) {
            f.bad("no_rope_layers",
                  fmt::format("is not an array of num_hidden_layers = {} flags", c.n_layer));
        }
        for (uint32_t i = 0; i < c.n_layer; ++i) {
            const bool rope = (*nope)[i] == 1 || (*nope)[i] == true;
            if (rope != ((i + 1) % 4 != 0)) {
                f.unsupported("no_rope_layers",
                              fmt::format("[{}] = {}: only every fourth layer without RoPE (layers "
                                          "3, 7, ...) is supported",
                                          i, json_brief((*nope)[i])));
            }
        }
    } else if (const uint32_t step = f.count_or("no_rope_layer_interval", 4, 1, 4096); step != 4) {
        f.unsupported("no_rope_layer_interval",
                      fmt::format("= {} is not supported (every fourth layer)", step));
    }
}

}  // namespace

void read_arch_fields(const Fields& f, HfConfig& c) {
    if (c.arch == "granite") {
        read_granite(f, c);
    } else if (c.arch == "command-r") {
        read_cohere(f, c);
    } else if (c.arch == "gemma2" || c.arch == "gemma3") {
        read_gemma(f, c);
    } else if (c.arch == "phi3") {
        read_phi3(f, c);
    } else if (c.arch == "deepseek2") {
        read_deepseek(f, c);
    } else if (c.arch == "qwen35" || c.arch == "qwen35moe") {
        read_qwen35(f, c);
    } else if (c.arch == "lfm2" || c.arch == "lfm2moe") {
        read_lfm2(f, c);
    } else if (c.arch == "gemma4") {
        read_gemma4(f, c);
    } else if (c.arch == "gpt-oss") {
        read_gptoss(f, c);
    } else if (c.arch == "smollm3") {
        read_smollm3(f, c);
    }
}

}  // namespace mw::convert
