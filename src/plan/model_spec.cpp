#include "plan/model_spec.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "base/error.h"
#include "format/gguf_writer.h"

namespace mw {
namespace {

bool has_qk_norm(const std::string& arch) {
    return arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3";
}
bool is_gemma(const std::string& arch) {
    return arch == "gemma2" || arch == "gemma3";
}
bool is_qwen35(const std::string& arch) {
    return arch == "qwen35" || arch == "qwen35moe";
}

class TensorList {
  public:
    void matrix(std::string name, std::vector<uint64_t> ne) {
        list_.push_back({std::move(name), std::move(ne), GgmlType::F16});
    }
    void vector(std::string name, uint64_t n) {
        list_.push_back({std::move(name), {n}, GgmlType::F32});
    }
    // Converters keep the MoE router in F32.
    void router(std::string name, uint64_t n_embd, uint64_t n_expert) {
        list_.push_back({std::move(name), {n_embd, n_expert}, GgmlType::F32});
    }
    // A matrix the converter forces to F32 (Qwen3.5's conv kernels).
    void matrix_f32(std::string name, std::vector<uint64_t> ne) {
        list_.push_back({std::move(name), std::move(ne), GgmlType::F32});
    }
    std::vector<TensorDesc> take() { return std::move(list_); }

  private:
    std::vector<TensorDesc> list_;
};

// Qwen3.5's mixers as llama.cpp's converter writes them. A DeltaNet layer: the fused q|k|v
// projection (before the causal conv), the output gate z, the conv kernel [kernel, channels]
// (F32), beta and alpha per value head, dt bias and A = -exp(A_log), the per-head output norm,
// the output projection. A full-attention layer: Q with its sigmoid gate (per head 2 x head_dim
// rows: query, then gate), K, V, per-head Q/K norms, output.
void add_qwen35_mixer(TensorList& t, const ModelSpec& s, const std::string& p, uint32_t layer) {
    const uint64_t E = s.n_embd;
    if (s.is_recurrent_layer(layer)) {
        const uint64_t S = s.ssm_head_dim, nv = s.ssm_v_heads;
        const uint64_t key = uint64_t(s.ssm_k_heads) * S, value = nv * S;
        t.matrix(p + "attn_qkv.weight", {E, 2 * key + value});
        t.matrix(p + "attn_gate.weight", {E, value});
        t.matrix_f32(p + "ssm_conv1d.weight", {s.ssm_conv_kernel, 2 * key + value});
        t.vector(p + "ssm_dt.bias", nv);
        t.vector(p + "ssm_a", nv);
        t.matrix(p + "ssm_beta.weight", {E, nv});
        t.matrix(p + "ssm_alpha.weight", {E, nv});
        t.vector(p + "ssm_norm.weight", S);
        t.matrix(p + "ssm_out.weight", {value, E});
        return;
    }
    const uint64_t hd = s.head_dim_or_default();
    const uint64_t Q = uint64_t(s.n_head) * hd, K = uint64_t(s.n_head_kv) * hd;
    t.matrix(p + "attn_q.weight", {E, 2 * Q});
    t.vector(p + "attn_q_norm.weight", hd);
    t.matrix(p + "attn_k.weight", {E, K});
    t.vector(p + "attn_k_norm.weight", hd);
    t.matrix(p + "attn_v.weight", {E, K});
    t.matrix(p + "attn_output.weight", {Q, E});
}

void add_attention(TensorList& t, const ModelSpec& s, const std::string& p) {
    const uint64_t E = s.n_embd, hd = s.head_dim_or_default();
    const uint64_t Q = uint64_t(s.n_head) * hd, K = uint64_t(s.n_head_kv) * hd;
    if (s.kv_lora_rank > 0) {  // DeepSeek-V2 multi-head latent attention (llama.cpp's split form)
        const uint64_t q_head = uint64_t(s.qk_nope_dim) + s.qk_rope_dim;
        if (s.q_lora_rank > 0) {
            t.matrix(p + "attn_q_a.weight", {E, s.q_lora_rank});
            t.vector(p + "attn_q_a_norm.weight", s.q_lora_rank);
            t.matrix(p + "attn_q_b.weight", {s.q_lora_rank, s.n_head * q_head});
        } else {
            t.matrix(p + "attn_q.weight", {E, s.n_head * q_head});
        }
        t.matrix(p + "attn_kv_a_mqa.weight", {E, uint64_t(s.kv_lora_rank) + s.qk_rope_dim});
        t.vector(p + "attn_kv_a_norm.weight", s.kv_lora_rank);
        t.matrix(p + "attn_k_b.weight", {s.qk_nope_dim, s.kv_lora_rank, s.n_head});
        t.matrix(p + "attn_v_b.weight", {s.kv_lora_rank, s.v_head_dim, s.n_head});
        t.matrix(p + "attn_output.weight", {uint64_t(s.n_head) * s.v_head_dim, E});
        return;
    }
    if (s.arch == "phi3") {  // fused QKV
        t.matrix(p + "attn_qkv.weight", {E, Q + 2 * K});
        t.matrix(p + "attn_output.weight", {Q, E});
        return;
    }
    t.matrix(p + "attn_q.weight", {E, Q});
    t.matrix(p + "attn_k.weight", {E, K});
    t.matrix(p + "attn_v.weight", {E, K});
    t.matrix(p + "attn_output.weight", {Q, E});
    if (s.arch == "qwen2" || s.arch == "qwen2moe" || s.arch == "gpt-oss") {
        t.vector(p + "attn_q.bias", Q);
        t.vector(p + "attn_k.bias", K);
        t.vector(p + "attn_v.bias", K);
    }
    if (s.arch == "gpt-oss") {
        t.vector(p + "attn_output.bias", E);
        t.vector(p + "attn_sinks.weight", s.n_head);
    }
    if (has_qk_norm(s.arch)) {
        t.vector(p + "attn_q_norm.weight", hd);
        t.vector(p + "attn_k_norm.weight", hd);
    }
}

void add_ffn(TensorList& t, const ModelSpec& s, const std::string& p, uint32_t layer) {
    const uint64_t E = s.n_embd;
    if (s.n_expert > 0 && layer >= s.n_leading_dense) {
        const uint64_t F = s.n_ff_expert, N = s.n_expert;
        t.router(p + "ffn_gate_inp.weight", E, N);
        t.matrix(p + "ffn_gate_exps.weight", {E, F, N});
        t.matrix(p + "ffn_up_exps.weight", {E, F, N});
        t.matrix(p + "ffn_down_exps.weight", {F, E, N});
        if (s.arch == "gpt-oss") {  // the router's and every expert's biases
            t.vector(p + "ffn_gate_inp.bias", N);
            t.matrix_f32(p + "ffn_gate_exps.bias", {F, N});
            t.matrix_f32(p + "ffn_up_exps.bias", {F, N});
            t.matrix_f32(p + "ffn_down_exps.bias", {E, N});
        }
        if (s.n_ff_shared > 0) {
            if (s.arch == "qwen2moe") t.matrix(p + "ffn_gate_inp_shexp.weight", {E, 1});
            if (s.arch == "qwen35moe") t.vector(p + "ffn_gate_inp_shexp.weight", E);
            t.matrix(p + "ffn_gate_shexp.weight", {E, s.n_ff_shared});
            t.matrix(p + "ffn_up_shexp.weight", {E, s.n_ff_shared});
            t.matrix(p + "ffn_down_shexp.weight", {s.n_ff_shared, E});
        }
        return;
    }
    if (s.arch == "phi3") {  // fused gate and up
        t.matrix(p + "ffn_up.weight", {E, 2 * uint64_t(s.n_ff)});
        t.matrix(p + "ffn_down.weight", {s.n_ff, E});
        return;
    }
    t.matrix(p + "ffn_gate.weight", {E, s.n_ff});
    t.matrix(p + "ffn_up.weight", {E, s.n_ff});
    t.matrix(p + "ffn_down.weight", {s.n_ff, E});
}

// A Gemma 4 layer as llama.cpp's converter writes it: attention with per-head Q/K norms (a
// KV-sharing layer: Q and output only; a full layer of a K = V model: no attn_v), the norms around
// attention and FFN, the dense MLP of the layer's width, the MoE branch beside it (fused gate/up
// experts, router input scale, per-expert output scales, the norms of both branches), the
// per-layer input branch and the layer's output scale.
void add_gemma4_layer(TensorList& t, const ModelSpec& s, const std::string& p, uint32_t il) {
    const uint64_t E = s.n_embd, hd = s.head_dim_of(il), kv = s.n_head_kv_of(il);
    t.matrix(p + "attn_q.weight", {E, s.n_head * hd});
    t.vector(p + "attn_q_norm.weight", hd);
    if (s.has_own_kv(il)) {
        t.matrix(p + "attn_k.weight", {E, kv * hd});
        t.vector(p + "attn_k_norm.weight", hd);
        if (!(s.full_k_eq_v && !s.is_swa_layer(il))) t.matrix(p + "attn_v.weight", {E, kv * hd});
    }
    t.matrix(p + "attn_output.weight", {s.n_head * hd, E});
    t.vector(p + "post_attention_norm.weight", E);
    t.vector(p + "ffn_norm.weight", E);
    const uint64_t F = s.n_ff_of(il);
    t.matrix(p + "ffn_gate.weight", {E, F});
    t.matrix(p + "ffn_up.weight", {E, F});
    t.matrix(p + "ffn_down.weight", {F, E});
    if (s.n_expert > 0) {
        const uint64_t FE = s.n_ff_expert, N = s.n_expert;
        t.vector(p + "post_ffw_norm_1.weight", E);
        t.vector(p + "pre_ffw_norm_2.weight", E);
        t.vector(p + "post_ffw_norm_2.weight", E);
        t.router(p + "ffn_gate_inp.weight", E, N);
        t.vector(p + "ffn_gate_inp.scale", E);
        t.matrix(p + "ffn_gate_up_exps.weight", {E, 2 * FE, N});
        t.matrix(p + "ffn_down_exps.weight", {FE, E, N});
        t.vector(p + "ffn_down_exps.scale", N);
    }
    t.vector(p + "post_ffw_norm.weight", E);
    if (s.n_embd_per_layer > 0) {
        t.matrix(p + "inp_gate.weight", {E, s.n_embd_per_layer});
        t.matrix(p + "proj.weight", {s.n_embd_per_layer, E});
        t.vector(p + "post_norm.weight", E);
    }
    t.vector(p + "layer_output_scale.weight", 1);
}

// An LFM2 layer: a gated short convolution (in_proj to B, C and X; the depthwise kernel, F32;
// out_proj) or GQA with per-head Q/K norms, then the FFN (lfm2moe: sigmoid-routed experts with a
// selection bias after the leading dense layers).
void add_lfm2_layer(TensorList& t, const ModelSpec& s, const std::string& p, uint32_t il) {
    const uint64_t E = s.n_embd;
    if (s.is_conv_layer(il)) {
        t.matrix(p + "shortconv.in_proj.weight", {E, 3 * E});
        t.matrix_f32(p + "shortconv.conv.weight", {s.shortconv_l_cache, E});
        t.matrix(p + "shortconv.out_proj.weight", {E, E});
    } else {
        const uint64_t hd = s.head_dim_or_default();
        t.matrix(p + "attn_q.weight", {E, s.n_head * hd});
        t.matrix(p + "attn_k.weight", {E, s.n_head_kv * hd});
        t.matrix(p + "attn_v.weight", {E, s.n_head_kv * hd});
        t.vector(p + "attn_q_norm.weight", hd);
        t.vector(p + "attn_k_norm.weight", hd);
        t.matrix(p + "attn_output.weight", {s.n_head * hd, E});
    }
    t.vector(p + "ffn_norm.weight", E);
    add_ffn(t, s, p, il);
    if (s.n_expert > 0 && il >= s.n_leading_dense) t.vector(p + "exp_probs_b.bias", s.n_expert);
}

// nlohmann accessors that name the file and the field in errors.
class Config {
  public:
    Config(const nlohmann::json& j, const std::string& source) : j_(j), source_(source) {}

    bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
    uint32_t u32(const char* key) const {
        if (!has(key)) fail(ErrorKind::invalid_argument, "{}: \"{}\" is missing", source_, key);
        const auto& v = j_[key];
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > int64_t(1) << 31) {
            fail(ErrorKind::invalid_argument, "{}: \"{}\" = {} is not a valid count", source_, key,
                 v.dump());
        }
        return v.get<uint32_t>();
    }
    uint32_t u32_or(const char* key, uint32_t fallback) const {
        return has(key) ? u32(key) : fallback;
    }
    double number_or(const char* key, double fallback) const {
        return has(key) && j_[key].is_number() ? j_[key].get<double>() : fallback;
    }
    bool bool_or(const char* key, bool fallback) const {
        return has(key) && j_[key].is_boolean() ? j_[key].get<bool>() : fallback;
    }
    std::string string_or(const char* key, const std::string& fallback) const {
        return has(key) && j_[key].is_string() ? j_[key].get<std::string>() : fallback;
    }
    const nlohmann::json& json() const { return j_; }

  private:
    const nlohmann::json& j_;
    const std::string& source_;
};

// Qwen3.5's text model (qwen3_5_text, qwen3_5_moe_text, or text_config of the multimodal
// configs): the DeltaNet shape, the layer pattern, partial M-RoPE. The MTP layer
// (mtp_num_hidden_layers) is not part of the spec: memwall does not run it.
void read_qwen35_fields(const Config& c, ModelSpec& s, const std::string& source) {
    s.head_dim = c.u32_or("head_dim", 256);
    s.ssm_conv_kernel = c.u32("linear_conv_kernel_dim");
    s.ssm_head_dim = c.u32("linear_key_head_dim");
    s.ssm_k_heads = c.u32("linear_num_key_heads");
    s.ssm_v_heads = c.u32("linear_num_value_heads");
    const uint32_t v_dim = c.u32_or("linear_value_head_dim", s.ssm_head_dim);
    if (v_dim != s.ssm_head_dim) {
        fail(ErrorKind::invalid_argument,
             "{}: linear_value_head_dim = {} differs from linear_key_head_dim = {}: GGUF's "
             "ssm.state_size holds one head size",
             source, v_dim, s.ssm_head_dim);
    }
    if (s.ssm_conv_kernel == 0 || s.ssm_head_dim == 0 || s.ssm_k_heads == 0 || s.ssm_v_heads == 0 ||
        s.ssm_v_heads % s.ssm_k_heads != 0) {
        fail(ErrorKind::invalid_argument,
             "{}: linear_conv_kernel_dim, linear_key_head_dim and linear_num_key_heads must be "
             "positive and linear_num_value_heads = {} a multiple of linear_num_key_heads = {}",
             source, s.ssm_v_heads, s.ssm_k_heads);
    }
    s.full_attn_interval = c.u32_or("full_attention_interval", 4);
    if (s.full_attn_interval == 0) {
        fail(ErrorKind::invalid_argument, "{}: \"full_attention_interval\" = 0", source);
    }
    if (c.has("layer_types")) {
        const nlohmann::json& types = c.json()["layer_types"];
        if (!types.is_array() || types.size() != s.n_layer) {
            fail(ErrorKind::invalid_argument,
                 "{}: \"layer_types\" is not an array of num_hidden_layers = {} strings", source,
                 s.n_layer);
        }
        s.recurrent_layers.assign(s.n_layer, false);
        for (uint32_t i = 0; i < s.n_layer; ++i) {
            if (types[i] != "linear_attention" && types[i] != "full_attention") {
                fail(ErrorKind::invalid_argument,
                     "{}: \"layer_types\"[{}] = {} is neither linear_attention nor full_attention",
                     source, i, types[i].dump());
            }
            s.recurrent_layers[i] = types[i] == "linear_attention";
        }
    }
    // rope_parameters (transformers 5) or the top-level fields of older configs.
    const nlohmann::json* rope = c.has("rope_parameters") && c.json()["rope_parameters"].is_object()
                                     ? &c.json()["rope_parameters"]
                                     : nullptr;
    const Config r(rope ? *rope : c.json(), source);
    s.rope_freq_base = float(r.number_or("rope_theta", c.number_or("rope_theta", 1e7)));
    const double partial =
        r.number_or("partial_rotary_factor", c.number_or("partial_rotary_factor", 0.25));
    s.n_rot = partial > 0.0 && partial <= 1.0 ? uint32_t(partial * s.head_dim + 0.5) : 0;
    if (s.n_rot == 0 || s.n_rot % 2 != 0) {
        fail(ErrorKind::invalid_argument,
             "{}: partial_rotary_factor = {} gives {} rotated dims of a head of {}", source,
             partial, s.n_rot, s.head_dim);
    }
    // llama.cpp's converter writes [11, 11, 10, 0] when the config has no mrope_section.
    s.rope_sections = {11, 11, 10, 0};
    if (r.has("mrope_section") && r.json()["mrope_section"].is_array()) {
        s.rope_sections.clear();
        for (const auto& v : r.json()["mrope_section"]) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1024) {
                fail(ErrorKind::invalid_argument,
                     "{}: \"mrope_section\" = {} is not a list of counts", source,
                     r.json()["mrope_section"].dump());
            }
            s.rope_sections.push_back(int32_t(v.get<int64_t>()));
        }
        if (s.rope_sections.size() > 4) {
            fail(ErrorKind::invalid_argument, "{}: \"mrope_section\" has more than 4 sections",
                 source);
        }
        s.rope_sections.resize(4, 0);
    }
    if (s.arch == "qwen35moe") {
        s.n_expert = c.u32("num_experts");
        s.n_expert_used = c.u32("num_experts_per_tok");
        s.n_ff_expert = c.u32("moe_intermediate_size");
        s.n_ff_shared = c.u32_or("shared_expert_intermediate_size", 0);
        s.n_ff = 0;  // no dense layers
    }
}

// The layer_types array of a config: per layer, whether it is `kind_a` (else `kind_b`).
std::vector<bool> layer_types_of(const Config& c, const ModelSpec& s, const std::string& source,
                                 const char* kind_a, const char* kind_b) {
    const nlohmann::json& types = c.json()["layer_types"];
    if (!types.is_array() || types.size() != s.n_layer) {
        fail(ErrorKind::invalid_argument,
             "{}: \"layer_types\" is not an array of num_hidden_layers = {} strings", source,
             s.n_layer);
    }
    std::vector<bool> out(s.n_layer);
    for (uint32_t i = 0; i < s.n_layer; ++i) {
        if (types[i] != kind_a && types[i] != kind_b) {
            fail(ErrorKind::invalid_argument, "{}: \"layer_types\"[{}] = {} is neither {} nor {}",
                 source, i, types[i].dump(), kind_a, kind_b);
        }
        out[i] = types[i] == kind_a;
    }
    return out;
}

// Gemma 4's text model (gemma4_text, or text_config of gemma4): sliding heads of head_dim, full
// heads of global_head_dim (num_global_key_value_heads of them, K = V with attention_k_eq_v), a
// full layer every n-th (layer_types, which must repeat so), KV sharing, per-layer embeddings,
// double-wide MLPs on the sharing layers, the MoE block.
void read_gemma4_fields(const Config& c, ModelSpec& s, const std::string& source) {
    s.head_dim_swa = c.u32_or("head_dim", 256);
    s.head_dim = c.u32_or("global_head_dim", s.head_dim_swa);
    s.n_head_kv_full = c.u32_or("num_global_key_value_heads", s.n_head_kv);
    s.full_k_eq_v = c.bool_or("attention_k_eq_v", false);
    s.n_kv_shared = c.u32_or("num_kv_shared_layers", 0);
    s.n_embd_per_layer = c.u32_or("hidden_size_per_layer_input", 0);
    s.double_wide_shared_ffn = c.bool_or("use_double_wide_mlp", false);
    s.n_swa = c.u32_or("sliding_window", 512);
    s.final_softcap = float(c.number_or("final_logit_softcapping", 30.0));
    s.rope_freq_base = 1e6f;
    s.rope_freq_base_swa = 10000.0f;
    s.rope_freqs = true;
    s.tied_embeddings = c.bool_or("tie_word_embeddings", true);
    if (s.n_kv_shared >= s.n_layer) {
        fail(ErrorKind::invalid_argument,
             "{}: \"num_kv_shared_layers\" = {} is not below num_hidden_layers = {}", source,
             s.n_kv_shared, s.n_layer);
    }
    s.swa_pattern = 6;
    if (c.has("layer_types")) {
        const std::vector<bool> swa =
            layer_types_of(c, s, source, "sliding_attention", "full_attention");
        uint32_t first_full = 0;
        while (first_full < s.n_layer && swa[first_full]) ++first_full;
        s.swa_pattern = first_full + 1;
        for (uint32_t i = 0; i < s.n_layer; ++i) {
            if (swa[i] != s.is_swa_layer(i)) {
                fail(ErrorKind::invalid_argument,
                     "{}: \"layer_types\" is not a full layer every {} (layer {}): the planner "
                     "describes repeating patterns only",
                     source, s.swa_pattern, i);
            }
        }
    }
    if (c.bool_or("enable_moe_block", false)) {
        s.n_expert = c.u32("num_experts");
        s.n_expert_used = c.u32("top_k_experts");
        s.n_ff_expert = c.u32("moe_intermediate_size");
    }
}

// LFM2: convolution layers from layer_types ("conv") or full_attn_idxs; the FFN width as
// llama.cpp's converter derives it (block_ff_dim auto-adjusted: 2/3, times the multiplier,
// rounded up to block_multiple_of).
void read_lfm2_fields(const Config& c, ModelSpec& s, const std::string& source) {
    s.shortconv_l_cache = c.u32_or("conv_L_cache", 3);
    s.tied_embeddings = c.bool_or("tie_embedding", c.bool_or("tie_word_embeddings", true));
    uint64_t ff = c.has("block_ff_dim") ? c.u32("block_ff_dim") : c.u32("intermediate_size");
    if (c.bool_or("block_auto_adjust_ff_dim", false)) {
        ff = uint64_t(c.number_or("block_ffn_dim_multiplier", 1.0) * double(2 * ff / 3));
        const uint64_t m = std::max(1u, c.u32_or("block_multiple_of", 256));
        ff = (ff + m - 1) / m * m;
    }
    s.n_ff = uint32_t(ff);
    if (c.has("layer_types")) {
        s.conv_layers = layer_types_of(c, s, source, "conv", "full_attention");
    } else if (c.has("full_attn_idxs") && c.json()["full_attn_idxs"].is_array()) {
        s.conv_layers.assign(s.n_layer, true);
        for (const auto& i : c.json()["full_attn_idxs"]) {
            if (!i.is_number_unsigned() || i.get<uint64_t>() >= s.n_layer) {
                fail(ErrorKind::invalid_argument, "{}: \"full_attn_idxs\" holds {}", source,
                     i.dump());
            }
            s.conv_layers[i.get<size_t>()] = false;
        }
    } else {
        fail(ErrorKind::invalid_argument, "{}: \"layer_types\" is missing", source);
    }
}

}  // namespace

std::vector<TensorDesc> spec_tensors(const ModelSpec& s) {
    TensorList t;
    const uint64_t E = s.n_embd;
    t.matrix("token_embd.weight", {E, s.n_vocab});
    // LFM2 keeps its final norm as token_embd_norm.
    t.vector(s.arch.rfind("lfm2", 0) == 0 ? "token_embd_norm.weight" : "output_norm.weight", E);
    if (!s.tied_embeddings) t.matrix("output.weight", {E, s.n_vocab});
    const uint64_t n_rot = s.n_rot ? s.n_rot : s.head_dim_or_default();
    if (s.rope_freqs) t.vector("rope_freqs.weight", n_rot / 2);
    if (s.n_embd_per_layer > 0) {  // Gemma 4's per-layer embeddings
        const uint64_t width = uint64_t(s.n_layer) * s.n_embd_per_layer;
        t.matrix("per_layer_token_embd.weight", {width, s.n_vocab});
        t.matrix("per_layer_model_proj.weight", {E, width});
        t.vector("per_layer_proj_norm.weight", s.n_embd_per_layer);
    }
    if (s.longrope) {
        t.vector("rope_factors_long.weight", n_rot / 2);
        t.vector("rope_factors_short.weight", n_rot / 2);
    }
    for (uint32_t i = 0; i < s.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        t.vector(p + "attn_norm.weight", E);
        if (s.arch == "gpt-oss") {  // post_attention_norm is the pre-FFN norm
            add_attention(t, s, p);
            t.vector(p + "post_attention_norm.weight", E);
            add_ffn(t, s, p, i);
            continue;
        }
        if (s.arch == "gemma4") {
            add_gemma4_layer(t, s, p, i);
            continue;
        }
        if (s.arch == "lfm2" || s.arch == "lfm2moe") {
            add_lfm2_layer(t, s, p, i);
            continue;
        }
        if (is_qwen35(s.arch)) {  // post_attention_norm is the pre-FFN norm
            add_qwen35_mixer(t, s, p, i);
            t.vector(p + "post_attention_norm.weight", E);
            add_ffn(t, s, p, i);
            continue;
        }
        add_attention(t, s, p);
        if (is_gemma(s.arch)) t.vector(p + "post_attention_norm.weight", E);
        // Command-R runs attention and FFN in parallel from one norm.
        if (s.arch != "command-r") t.vector(p + "ffn_norm.weight", E);
        add_ffn(t, s, p, i);
        if (is_gemma(s.arch)) t.vector(p + "post_ffw_norm.weight", E);
    }
    return t.take();
}

uint64_t count_params(const std::vector<TensorDesc>& tensors) {
    uint64_t n = 0;
    for (const TensorDesc& t : tensors) {
        uint64_t e = 1;
        for (uint64_t d : t.ne) e *= d;
        n += e;
    }
    return n;
}

gguf::GgufWriter spec_gguf_writer(const ModelSpec& s, QuantRecipe recipe,
                                  const SpecTensorData& data) {
    gguf::GgufWriter w;
    const std::string a = s.arch + ".";
    const uint32_t hd = s.head_dim_or_default();
    w.set_string("general.architecture", s.arch);
    w.set_string("general.name", s.name);
    w.set_u32("general.file_type", recipe_file_type(recipe));
    w.set_u32(a + "context_length", s.n_ctx_train);
    w.set_u32(a + "embedding_length", s.n_embd);
    w.set_u32(a + "block_count", s.n_layer);
    // Mixtral-style files (arch llama with experts) carry the expert width here: llama.cpp sizes
    // the llama architecture's expert tensors by feed_forward_length.
    const bool llama_moe = s.arch == "llama" && s.n_expert > 0 && s.n_ff == 0;
    // qwen35moe files have no dense width.
    // Gemma 4 with double-wide sharing layers, and LFM2 (0 KV heads on its convolution layers)
    // and Gemma 4 with other KV heads on full layers, write per-layer arrays.
    std::vector<uint32_t> ff_l, kv_l;
    for (uint32_t i = 0; i < s.n_layer; ++i) {
        ff_l.push_back(s.n_ff_of(i));
        kv_l.push_back(s.is_conv_layer(i) ? 0 : s.n_head_kv_of(i));
    }
    if (s.double_wide_shared_ffn) {
        w.set_array_u32(a + "feed_forward_length", ff_l);
    } else if (s.arch != "qwen35moe") {
        w.set_u32(a + "feed_forward_length", llama_moe ? s.n_ff_expert : s.n_ff);
    }
    w.set_u32(a + "attention.head_count", s.n_head);
    if (!s.conv_layers.empty() || (s.n_head_kv_full > 0 && s.n_head_kv_full != s.n_head_kv)) {
        w.set_array_u32(a + "attention.head_count_kv", kv_l);
    } else {
        // MLA: the absorbed MQA view llama.cpp reads, one KV "head" of latent + rope key.
        w.set_u32(a + "attention.head_count_kv", s.kv_lora_rank > 0 ? 1 : s.n_head_kv);
    }
    if (s.arch == "command-r") {
        w.set_f32(a + "attention.layer_norm_epsilon", 1e-5f);
    } else if (!s.conv_layers.empty()) {
        w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);  // LFM2's norm_eps
    } else {
        w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    }
    w.set_f32(a + "rope.freq_base", s.rope_freq_base);
    if (s.kv_lora_rank > 0) {
        w.set_u32(a + "attention.key_length", s.kv_lora_rank + s.qk_rope_dim);
        w.set_u32(a + "attention.value_length", s.kv_lora_rank);
        w.set_u32(a + "attention.key_length_mla", s.qk_nope_dim + s.qk_rope_dim);
        w.set_u32(a + "attention.value_length_mla", s.v_head_dim);
        w.set_u32(a + "attention.kv_lora_rank", s.kv_lora_rank);
        if (s.q_lora_rank > 0) w.set_u32(a + "attention.q_lora_rank", s.q_lora_rank);
        w.set_u32(a + "rope.dimension_count", s.qk_rope_dim);
    } else {
        w.set_u32(a + "attention.key_length", hd);
        w.set_u32(a + "attention.value_length", hd);
        w.set_u32(a + "rope.dimension_count", s.n_rot ? s.n_rot : hd);
    }
    if (s.n_expert > 0) {
        w.set_u32(a + "expert_count", s.n_expert);
        w.set_u32(a + "expert_used_count", s.n_expert_used);
        w.set_u32(a + "expert_feed_forward_length", s.n_ff_expert);
        if (s.n_ff_shared > 0 && s.arch != "deepseek2")
            w.set_u32(a + "expert_shared_feed_forward_length", s.n_ff_shared);
        if (s.n_leading_dense > 0) w.set_u32(a + "leading_dense_block_count", s.n_leading_dense);
    }
    if (s.arch == "deepseek2") {
        w.set_u32(a + "expert_shared_count", s.n_shared_experts);
        w.set_f32(a + "expert_weights_scale", 1.0f);
        w.set_bool(a + "expert_weights_norm", false);
        w.set_u32(a + "expert_gating_func", 1);  // softmax
    }
    if (s.n_swa > 0) {
        w.set_u32(a + "attention.sliding_window", s.n_swa);
        if (s.arch == "gemma4") {  // which layers slide, as a bool per layer
            std::vector<bool> swa(s.n_layer);
            for (uint32_t i = 0; i < s.n_layer; ++i) swa[i] = s.is_swa_layer(i);
            w.set_array_bool(a + "attention.sliding_window_pattern", swa);
        } else if (s.swa_pattern > 0) {
            w.set_u32(a + "attention.sliding_window_pattern", s.swa_pattern);
        }
    }
    if (s.arch == "gemma4") {
        w.set_u32(a + "attention.key_length_swa", s.head_dim_swa);
        w.set_u32(a + "attention.value_length_swa", s.head_dim_swa);
        w.set_u32(a + "rope.dimension_count_swa", s.head_dim_swa);
        w.set_u32(a + "attention.shared_kv_layers", s.n_kv_shared);
        w.set_u32(a + "embedding_length_per_layer_input", s.n_embd_per_layer);
    }
    if (s.final_softcap > 0.0f) w.set_f32(a + "final_logit_softcapping", s.final_softcap);
    if (!s.conv_layers.empty()) {
        w.set_u32(a + "vocab_size", s.n_vocab);
        w.set_u32(a + "shortconv.l_cache", s.shortconv_l_cache);
        if (s.n_expert > 0) w.set_u32(a + "expert_gating_func", 2);  // sigmoid
    }
    if (s.arch == "smollm3") w.set_u32(a + "vocab_size", s.n_vocab);
    if (s.rope_freq_base_swa > 0.0f) w.set_f32(a + "rope.freq_base_swa", s.rope_freq_base_swa);
    if (s.rope_scale_linear > 0.0f) {
        w.set_string(a + "rope.scaling.type", "linear");
        w.set_f32(a + "rope.scaling.factor", s.rope_scale_linear);
    }
    if (s.yarn_factor > 0.0f) {
        w.set_string(a + "rope.scaling.type", "yarn");
        w.set_f32(a + "rope.scaling.factor", s.yarn_factor);
        w.set_u32(a + "rope.scaling.original_context_length", s.yarn_orig_ctx);
        if (s.yarn_mscale_all_dim > 0.0f)
            w.set_f32(a + "rope.scaling.yarn_log_multiplier", 0.1f * s.yarn_mscale_all_dim);
    }
    if (s.longrope) w.set_u32(a + "rope.scaling.original_context_length", 4096);
    if (s.arch == "gemma2") {
        w.set_f32(a + "attn_logit_softcapping", 50.0f);
        w.set_f32(a + "final_logit_softcapping", 30.0f);
    }
    if (s.has_delta_net()) {
        w.set_u32(a + "vocab_size", s.n_vocab);  // as the Qwen3.5 converter writes it
        w.set_u32(a + "ssm.conv_kernel", s.ssm_conv_kernel);
        w.set_u32(a + "ssm.state_size", s.ssm_head_dim);
        w.set_u32(a + "ssm.group_count", s.ssm_k_heads);
        w.set_u32(a + "ssm.time_step_rank", s.ssm_v_heads);
        w.set_u32(a + "ssm.inner_size", s.ssm_v_heads * s.ssm_head_dim);
        std::vector<bool> recurrent(s.n_layer);
        for (uint32_t i = 0; i < s.n_layer; ++i) recurrent[i] = s.is_recurrent_layer(i);
        w.set_array_bool(a + "attention.recurrent_layers", recurrent);
        w.set_u32(a + "full_attention_interval", s.full_attn_interval ? s.full_attn_interval : 4);
    }
    if (!s.rope_sections.empty()) w.set_array_i32(a + "rope.dimension_sections", s.rope_sections);
    if (s.logit_scale > 0.0f) w.set_f32(a + "logit_scale", s.logit_scale);
    if (s.embedding_scale > 0.0f) w.set_f32(a + "embedding_scale", s.embedding_scale);
    if (s.residual_scale > 0.0f) w.set_f32(a + "residual_scale", s.residual_scale);
    if (s.attention_scale > 0.0f) w.set_f32(a + "attention.scale", s.attention_scale);

    QuantModelInfo info;
    info.arch = s.arch;
    info.n_layer = s.n_layer;
    info.n_head = s.n_head;
    info.n_head_kv = s.n_head_kv;
    info.n_expert = s.n_expert;
    info.has_output = !s.tied_embeddings;
    info.is_70b_class = model_is_70b_class(s.arch, s.n_layer, s.n_head, s.n_head_kv);
    const std::vector<TensorDesc> tensors = spec_tensors(s);
    for (const TensorDesc& t : tensors) add_attn_v_tensor(info, t.name);
    for (const TensorDesc& t : tensors) {
        const GgmlType type =
            tensor_type_for(recipe, info, t.name, uint32_t(t.ne.size()), int64_t(t.ne[0]), t.type);
        w.add_tensor(t.name, type, t.ne, data ? data(t, type) : gguf::GgufWriter::Producer{});
    }
    return w;
}

std::vector<uint8_t> spec_gguf_header(const ModelSpec& s, QuantRecipe recipe) {
    return spec_gguf_writer(s, recipe, {}).header_bytes();
}

ModelSpec spec_from_hf_config(std::string_view json_text, const std::string& source) {
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(json_text);
    } catch (const nlohmann::json::exception& e) {
        fail(ErrorKind::invalid_argument, "{}: not valid JSON: {}", source, e.what());
    }
    if (!root.is_object()) fail(ErrorKind::invalid_argument, "{}: not a JSON object", source);
    if (root.contains("model_type") && !root["model_type"].is_string()) {
        fail(ErrorKind::invalid_argument, "{}: \"model_type\" = {} is not a string", source,
             root["model_type"].dump());
    }
    const std::string model_type = root.value("model_type", std::string());
    // Multimodal Gemma 3 and Gemma 4 keep the language model's fields in text_config.
    const nlohmann::json& j = root.contains("text_config") && root["text_config"].is_object()
                                  ? root["text_config"]
                                  : root;
    const Config c(j, source);

    ModelSpec s;
    s.id = "hf-config";
    s.name = Config(root, source).string_or("_name_or_path", source);
    static const std::pair<const char*, const char*> kArchOf[] = {
        {"llama", "llama"},
        {"mistral", "llama"},
        {"mixtral", "llama"},
        {"qwen2", "qwen2"},
        {"qwen2_moe", "qwen2moe"},
        {"qwen3", "qwen3"},
        {"qwen3_moe", "qwen3moe"},
        {"gemma2", "gemma2"},
        {"gemma3", "gemma3"},
        {"gemma3_text", "gemma3"},
        {"phi3", "phi3"},
        {"cohere", "command-r"},
        {"deepseek_v2", "deepseek2"},
        {"qwen3_5", "qwen35"},
        {"qwen3_5_text", "qwen35"},
        {"qwen3_5_moe", "qwen35moe"},
        {"qwen3_5_moe_text", "qwen35moe"},
        {"gemma4", "gemma4"},
        {"gemma4_text", "gemma4"},
        {"lfm2", "lfm2"},
        {"smollm3", "smollm3"},
    };
    for (const auto& [hf, gguf_arch] : kArchOf) {
        if (model_type == hf) s.arch = gguf_arch;
    }
    if (s.arch.empty()) {
        fail(ErrorKind::invalid_argument,
             "{}: model_type \"{}\" is not known to the planner (known: llama, mistral, mixtral, "
             "qwen2, qwen2_moe, qwen3, qwen3_moe, gemma2, gemma3, phi3, cohere, deepseek_v2, "
             "qwen3_5, qwen3_5_moe, gemma4, lfm2, smollm3)",
             source, model_type);
    }
    s.n_vocab = c.u32("vocab_size");
    s.n_embd = c.u32("hidden_size");
    s.n_layer = c.u32("num_hidden_layers");
    s.n_head = c.u32("num_attention_heads");
    s.n_head_kv = c.u32_or("num_key_value_heads", s.n_head);
    s.n_ff = c.u32_or("intermediate_size", 0);
    s.n_ctx_train = c.u32_or("max_position_embeddings", 4096);
    s.head_dim = c.u32_or("head_dim", 0);
    s.rope_freq_base = float(c.number_or("rope_theta", 10000.0));
    // Qwen3.5's multimodal configs write it beside text_config.
    s.tied_embeddings =
        c.bool_or("tie_word_embeddings",
                  Config(root, source).bool_or("tie_word_embeddings", is_gemma(s.arch)));
    if (s.n_head == 0 || s.n_head_kv == 0 || s.n_embd == 0 || s.n_layer == 0) {
        fail(ErrorKind::invalid_argument,
             "{}: hidden_size, num_hidden_layers and the head counts "
             "must be positive",
             source);
    }
    if (c.has("rope_scaling") && c.json()["rope_scaling"].is_object()) {
        const auto& rs = c.json()["rope_scaling"];
        s.rope_freqs = rs.contains("rope_type") && rs["rope_type"] == "llama3";
    }
    if (model_type == "mixtral") {
        s.n_expert = c.u32("num_local_experts");
        s.n_expert_used = c.u32("num_experts_per_tok");
        s.n_ff_expert = s.n_ff;
    } else if (model_type == "qwen2_moe" || model_type == "qwen3_moe") {
        s.n_expert = c.u32("num_experts");
        s.n_expert_used = c.u32("num_experts_per_tok");
        s.n_ff_expert = c.u32("moe_intermediate_size");
        s.n_ff_shared = c.u32_or("shared_expert_intermediate_size", 0);
    } else if (model_type == "deepseek_v2") {
        s.n_expert = c.u32("n_routed_experts");
        s.n_expert_used = c.u32("num_experts_per_tok");
        s.n_ff_expert = c.u32("moe_intermediate_size");
        s.n_ff_shared = c.u32_or("n_shared_experts", 0) * s.n_ff_expert;
        s.n_leading_dense = c.u32_or("first_k_dense_replace", 0);
        s.kv_lora_rank = c.u32("kv_lora_rank");
        s.qk_rope_dim = c.u32("qk_rope_head_dim");
        s.qk_nope_dim = c.u32("qk_nope_head_dim");
        s.v_head_dim = c.u32("v_head_dim");
    } else if (is_qwen35(s.arch)) {
        read_qwen35_fields(c, s, source);
    } else if (s.arch == "gemma4") {
        read_gemma4_fields(c, s, source);
    } else if (s.arch == "lfm2") {
        read_lfm2_fields(c, s, source);
    }
    if (s.n_ff == 0 && s.n_expert == 0) {
        fail(ErrorKind::invalid_argument, "{}: \"intermediate_size\" is missing", source);
    }
    if (s.n_head % s.n_head_kv != 0) {
        fail(ErrorKind::invalid_argument,
             "{}: num_attention_heads = {} is not a multiple of num_key_value_heads = {}", source,
             s.n_head, s.n_head_kv);
    }
    // The GGUF reader's bounds (model/hparams.cpp): a config beyond them describes no file
    // memwall could read, and its header would list up to billions of tensors.
    const auto check = [&](const char* key, uint64_t value, uint64_t max) {
        if (value > max) {
            fail(ErrorKind::invalid_argument, "{}: \"{}\" = {} is out of range (at most {})",
                 source, key, value, max);
        }
    };
    check("hidden_size", s.n_embd, 1u << 17);
    check("num_hidden_layers", s.n_layer, 4096);
    check("num_attention_heads", s.n_head, 4096);
    check("head_dim", s.head_dim, 1u << 16);
    check("intermediate_size", s.n_ff, 1u << 20);
    check("max_position_embeddings", s.n_ctx_train, 1u << 24);
    check("vocab_size", s.n_vocab, 1u << 24);
    check("number of experts", s.n_expert, 1024);
    check("num_experts_per_tok", s.n_expert_used, s.n_expert);
    check("moe_intermediate_size", s.n_ff_expert, 1u << 20);
    check("shared expert width", s.n_ff_shared, 1u << 20);
    check("first_k_dense_replace", s.n_leading_dense, s.n_layer);
    check("kv_lora_rank", s.kv_lora_rank, 1u << 16);
    check("qk_rope_head_dim", s.qk_rope_dim, 1u << 16);
    check("qk_nope_head_dim", s.qk_nope_dim, 1u << 16);
    check("v_head_dim", s.v_head_dim, 1u << 16);
    check("linear_conv_kernel_dim", s.ssm_conv_kernel, 64);
    check("linear_key_head_dim", s.ssm_head_dim, 1024);
    check("linear_num_key_heads", s.ssm_k_heads, 1024);
    check("linear_num_value_heads", s.ssm_v_heads, 1024);
    return s;
}

}  // namespace mw
