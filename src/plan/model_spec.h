// A model known only by its hyper-parameters (the built-in catalogue, a Hugging Face config.json):
// enough to list every tensor a GGUF conversion of it holds, and so to write the GGUF header that
// llama-quantize would produce for any recipe. Planning then reads that header exactly like the
// header of a real file: one code path for files, configs and the catalogue.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf_writer.h"
#include "plan/quant_mix.h"

namespace mw {

struct ModelSpec {
    std::string id;    // "qwen2.5-7b": what --model accepts
    std::string name;  // "Qwen2.5 7B"
    std::string arch;  // GGUF general.architecture: llama, qwen2, qwen3, qwen3moe, gemma2, ...
    double nominal_params = 0;  // the parameter count its makers publish (sanity checks)

    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;  // 0: n_embd / n_head
    uint32_t n_ff = 0;      // dense FFN width (also the dense leading layers of an MoE)
    float rope_freq_base = 10000.0f;
    bool tied_embeddings = false;  // no output.weight: token_embd doubles as the output
    bool rope_freqs = false;       // Llama 3.1+ rope_freqs.weight

    // Mixture of experts.
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_expert = 0;
    uint32_t n_ff_shared = 0;      // total width of the shared experts (0: none)
    uint32_t n_leading_dense = 0;  // DeepSeek: the first layers have a dense FFN

    // Multi-head latent attention (DeepSeek-V2): the KV cache holds the compressed latent.
    uint32_t kv_lora_rank = 0;
    uint32_t qk_rope_dim = 0;
    uint32_t qk_nope_dim = 0;
    uint32_t v_head_dim = 0;
    uint32_t q_lora_rank = 0;  // 0: a plain attn_q (V2-Lite); else the Q bottleneck's width
    uint32_t n_shared_experts = 0;

    // What the other families add (written as their GGUF keys; 0 / 1: absent).
    uint32_t n_rot = 0;               // rotated dims per head, 0: all (Phi-4 mini rotates 3/4)
    uint32_t n_swa = 0;               // gemma: sliding window of the local layers
    uint32_t swa_pattern = 0;         // every swa_pattern-th layer is global
    float rope_freq_base_swa = 0.0f;  // gemma3: the local layers' RoPE base
    float rope_scale_linear = 0.0f;   // gemma3 4B+: linear RoPE scaling factor
    float yarn_factor = 0.0f;         // deepseek2: YaRN factor, original context, mscale_all_dim
    uint32_t yarn_orig_ctx = 0;
    float yarn_mscale_all_dim = 0.0f;
    bool longrope = false;         // phi3 128k: rope_factors_long/short, original context 4096
    float logit_scale = 0.0f;      // command-r: logits x this; granite: logits / this
    float embedding_scale = 0.0f;  // granite multipliers
    float residual_scale = 0.0f;
    float attention_scale = 0.0f;

    // Qwen3.5 (qwen35, qwen35moe): gated DeltaNet layers (a recurrent state, no KV cache) between
    // gated full-attention layers, as the ssm.* keys of llama.cpp's converter describe them.
    uint32_t full_attn_interval = 0;     // every n-th layer is full attention (0: no DeltaNet)
    std::vector<bool> recurrent_layers;  // from layer_types; empty: by full_attn_interval
    uint32_t ssm_conv_kernel = 0;        // linear_conv_kernel_dim
    uint32_t ssm_head_dim = 0;           // linear_key_head_dim (= linear_value_head_dim)
    uint32_t ssm_k_heads = 0;            // linear_num_key_heads (ssm.group_count)
    uint32_t ssm_v_heads = 0;            // linear_num_value_heads (ssm.time_step_rank)
    std::vector<int32_t> rope_sections;  // M-RoPE sections in rotation pairs (empty: none)

    // Gemma 4 (gemma4): sliding layers (every swa_pattern-th layer is full) with heads of
    // head_dim_swa, full layers with heads of head_dim; the last n_kv_shared layers read an
    // earlier layer's K/V; per-layer embeddings of n_embd_per_layer per layer and token.
    uint32_t head_dim_swa = 0;
    uint32_t n_head_kv_full = 0;          // the full layers' KV heads (0: n_head_kv)
    bool full_k_eq_v = false;             // full layers have no attn_v (K serves as V)
    uint32_t n_kv_shared = 0;             // num_kv_shared_layers
    uint32_t n_embd_per_layer = 0;        // hidden_size_per_layer_input (0: no PLE table)
    bool double_wide_shared_ffn = false;  // use_double_wide_mlp: sharing layers' FFN is 2 x n_ff
    float final_softcap = 0.0f;           // final_logit_softcapping

    // LFM2 (lfm2, lfm2moe): gated short-convolution layers between GQA layers.
    std::vector<bool> conv_layers;   // from layer_types / full_attn_idxs; empty: none
    uint32_t shortconv_l_cache = 0;  // conv_L_cache

    uint32_t head_dim_or_default() const { return head_dim ? head_dim : n_embd / n_head; }
    bool is_conv_layer(uint32_t il) const { return il < conv_layers.size() && conv_layers[il]; }
    // Gemma 4's layer kinds and per-layer sizes.
    bool is_swa_layer(uint32_t il) const {
        return head_dim_swa > 0 && swa_pattern > 0 && (il + 1) % swa_pattern != 0;
    }
    uint32_t head_dim_of(uint32_t il) const {
        return is_swa_layer(il) ? head_dim_swa : head_dim_or_default();
    }
    uint32_t n_head_kv_of(uint32_t il) const {
        return !is_swa_layer(il) && n_head_kv_full ? n_head_kv_full : n_head_kv;
    }
    bool has_own_kv(uint32_t il) const { return il + n_kv_shared < n_layer; }
    uint32_t n_ff_of(uint32_t il) const {
        return double_wide_shared_ffn && !has_own_kv(il) ? 2 * n_ff : n_ff;
    }
    bool has_delta_net() const { return full_attn_interval > 0 || !recurrent_layers.empty(); }
    bool is_recurrent_layer(uint32_t il) const {
        if (!recurrent_layers.empty()) return il < recurrent_layers.size() && recurrent_layers[il];
        return full_attn_interval > 0 && (il + 1) % full_attn_interval != 0;
    }
};

// One tensor of a GGUF file as planned: name, dimensions (ne[0] is the row length), type.
struct TensorDesc {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
};

// The tensors of a conversion of the spec, in source precision (matrices F16, vectors and the
// MoE router F32), ordered as GGUF converters write them.
std::vector<TensorDesc> spec_tensors(const ModelSpec& spec);

// Sum of the elements of the tensors.
uint64_t count_params(const std::vector<TensorDesc>& tensors);

// The GGUF header (metadata and tensor infos, no data) of the spec quantized with the recipe.
std::vector<uint8_t> spec_gguf_header(const ModelSpec& spec, QuantRecipe recipe);

// The same file as a writer: `data(tensor, type)` gives each tensor's producer (the type is the
// one the recipe chose). The caller adds what else the file needs (a vocabulary) and writes it.
using SpecTensorData =
    std::function<gguf::GgufWriter::Producer(const TensorDesc& tensor, GgmlType type)>;
gguf::GgufWriter spec_gguf_writer(const ModelSpec& spec, QuantRecipe recipe,
                                  const SpecTensorData& data);

// A spec from a Hugging Face config.json (text). Throws ErrorKind::invalid_argument naming the
// missing or unusable field; `source` names the file in messages.
ModelSpec spec_from_hf_config(std::string_view json_text, const std::string& source);

}  // namespace mw
