// A Hugging Face config.json, read strictly for conversion to GGUF: every field memwall needs is
// checked for type and range, and a model it cannot convert faithfully (another architecture,
// dynamic RoPE scaling, sliding-window attention where the architecture has none, partly dense
// MoE, pre-quantized weights) is refused with an error naming the field and its value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mw::convert {

enum class RopeScalingKind { none, linear, yarn, llama3, longrope };

struct RopeScalingConfig {
    RopeScalingKind kind = RopeScalingKind::none;
    double factor = 1.0;
    uint32_t original_context = 0;  // yarn, llama3: the training context before scaling
    double low_freq_factor = 1.0;   // llama3
    double high_freq_factor = 4.0;  // llama3
    std::vector<float> long_factor, short_factor;  // longrope (phi3): one per rotated pair
};

struct HfConfig {
    std::string model_type;  // as written ("llama", "qwen2_moe", ...)
    std::string arch;        // the GGUF architecture: llama, qwen2, ..., granite, gemma2, deepseek2
    std::string name;        // _name_or_path (may be empty)

    uint32_t vocab_size = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;        // resolved: head_dim, else n_embd / n_head
    bool head_dim_given = false;  // written as attention.key_length / value_length
    uint32_t n_ff = 0;            // intermediate_size (0 when absent, MoE only)
    uint32_t n_ctx_train = 0;     // max_position_embeddings
    double rms_norm_eps = 1e-6;   // layer_norm_eps for command-r (LayerNorm, see layer_norm)
    bool layer_norm = false;      // command-r: LayerNorm without bias instead of RMSNorm
    double rope_theta = 10000.0;
    RopeScalingConfig rope_scaling;
    bool tie_word_embeddings = false;

    bool permute_qk = false;  // llama layout: HF's rotate-half Q/K rows become adjacent pairs
    bool qkv_bias = false;    // q_proj/k_proj/v_proj carry biases
    bool qk_norm = false;     // per-head RMSNorm of Q and K (qwen3, gemma3)
    uint32_t n_rot = 0;       // rotated dims per head (phi3: partial_rotary_factor), else head_dim

    // granite: multipliers of the attention scores, embeddings, sublayer outputs; logit divisor.
    double attention_multiplier = 1.0, embedding_multiplier = 1.0, residual_multiplier = 1.0,
           logits_scaling = 1.0;
    double logit_scale = 0.0625;  // command-r: logits times this

    // gemma2/3. RMSNorm weights are stored as w - 1 (the model multiplies by 1 + w).
    bool norm_plus_one = false;
    double attn_softcap = 0.0, final_softcap = 0.0;  // 0: none
    uint32_t sliding_window = 0;                     // 0: none (phi3: written, applied by neither)
    uint32_t sliding_window_pattern = 0;             // every n-th layer attends globally
    double rope_local_base = 10000.0;                // gemma3: RoPE base of the sliding layers

    uint32_t original_context = 0;  // phi3: original_max_position_embeddings
    double rope_attn_factor = 1.0;  // phi3 LongRoPE: the cos/sin magnitude correction

    // deepseek2 multi-head latent attention and routing.
    uint32_t q_lora_rank = 0;  // 0: a plain q_proj
    uint32_t kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
    uint32_t n_layer_dense_lead = 0;  // first_k_dense_replace
    uint32_t n_nextn_layers = 0;      // num_nextn_predict_layers: MTP layers, not converted
    uint32_t n_expert_shared = 0;
    double expert_weights_scale = 1.0;  // routed_scaling_factor
    bool sigmoid_gating = false;        // scoring_func = sigmoid (with e_score_correction_bias)
    uint32_t n_expert_groups = 0, n_group_used = 0;
    double yarn_log_mul = 0.0;  // 0.1 x rope_scaling.mscale_all_dim

    // qwen35 / qwen35moe (Qwen3.5): gated DeltaNet layers between gated full-attention layers.
    uint32_t ssm_conv_kernel = 0, ssm_head_dim = 0, ssm_k_heads = 0, ssm_v_heads = 0;
    std::vector<bool> recurrent_layers;  // per layer: DeltaNet (layer_types)
    uint32_t full_attn_interval = 0;
    std::vector<int32_t> rope_sections;  // M-RoPE sections (rotation pairs), 4 entries
    // Where the language model's tensors are: "model." or, in the multimodal Qwen3.5
    // checkpoints, "model.language_model." (beside model.visual.*, which is not converted).
    std::string tensor_prefix = "model.";

    // lfm2 / lfm2moe (LFM2): gated short-convolution layers (layer_types "conv") among GQA
    // layers; lfm2moe's first n_layer_dense_lead layers have a dense FFN.
    std::vector<bool> conv_layers;   // per layer: a short convolution
    uint32_t shortconv_l_cache = 0;  // conv_L_cache

    // gemma4 (Gemma 4): sliding layers with heads of head_dim_swa and n_head_kv KV heads, full
    // layers with heads of head_dim (global_head_dim) and n_head_kv_full KV heads, keys reused as
    // values there with k_eq_v; the last n_kv_shared layers reuse an earlier layer's K/V;
    // per-layer embeddings of n_embd_per_layer (0: none); the MoE block beside the dense MLP.
    std::vector<bool> swa_layers;  // per layer: sliding-window attention
    uint32_t head_dim_swa = 0, n_rot_swa = 0, n_head_kv_full = 0;
    bool k_eq_v = false;
    uint32_t n_kv_shared = 0;
    uint32_t n_embd_per_layer = 0;
    std::vector<uint32_t> n_ff_per_layer;  // empty: n_ff everywhere (else use_double_wide_mlp)
    uint32_t n_rot_full_pairs = 0;         // the full layers' rotated pairs (proportional RoPE)

    // gpt-oss: YaRN's correction range (rope_scaling.beta_fast / beta_slow), written as keys.
    double yarn_beta_fast = 32.0, yarn_beta_slow = 1.0;

    // Mixture of experts (n_expert == 0: dense).
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_expert = 0;
    uint32_t n_ff_shared_expert = 0;   // qwen2moe
    bool expert_weights_norm = false;  // renormalise the top-k router weights

    // Special token ids written in config.json (used when the tokenizer files do not name them).
    std::optional<uint32_t> bos_token_id, eos_token_id, pad_token_id, unk_token_id;

    std::vector<std::string> warnings;  // accepted, but worth telling the user
};

// Parses config.json bytes; `name` (normally the path) is used in error messages. Throws
// ErrorKind::bad_file for malformed JSON or fields of the wrong type or range, and
// ErrorKind::unsupported (naming the field and value) for models memwall cannot convert.
HfConfig parse_hf_config(std::span<const uint8_t> bytes, const std::string& name);

// The model_type values parse_hf_config accepts, for messages.
const char* supported_hf_model_types();

}  // namespace mw::convert
