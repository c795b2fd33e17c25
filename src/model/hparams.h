// Hyper-parameters of a transformer, read from GGUF metadata (`<arch>.*` keys), never hard-coded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/gguf.h"

namespace mw {

enum class RopeStyle {
    normal,  // rotate adjacent pairs (x[2i], x[2i+1]): llama, mistral
    neox,    // rotate halves (x[i], x[i + n_rot/2]): qwen2, qwen3
};

enum class RopeScaling { none, linear, yarn };

enum class NormKind {
    rms,    // x / rms(x) * w
    layer,  // (x - mean) / std(x) * w (command-r)
};

// The gate's activation: SwiGLU, GeGLU (gemma), or gpt-oss's clamped SwiGLU: with g = min(gate,
// 7) and u = clamp(up, -7, 7), g sigmoid(1.702 g) (u + 1).
enum class FfnActivation { silu, gelu, swiglu_oai };

enum class ExpertGating { softmax, sigmoid };  // router probabilities (deepseek2: either)

// What a layer's token mixer is. Its FFN is the same in every kind.
enum class LayerKind : uint8_t {
    attention,   // softmax attention over a KV cache (full or sliding window)
    delta_net,   // gated DeltaNet (qwen35): a fixed-size recurrent state per sequence, no KV
    short_conv,  // gated short convolution (lfm2): the last few inputs per sequence, no KV
};

// Gated DeltaNet sizes (qwen35's `ssm.*` keys): q/k heads of `head_dim`, v heads of the same
// size, each v head reading q/k head (v mod n_k_heads); a causal conv of conv_kernel taps over
// the q, k and v channels first.
struct DeltaNetShape {
    uint32_t conv_kernel = 0;  // ssm.conv_kernel
    uint32_t head_dim = 0;     // ssm.state_size
    uint32_t n_k_heads = 0;    // ssm.group_count
    uint32_t n_v_heads = 0;    // ssm.time_step_rank
    uint32_t conv_channels() const { return (2 * n_k_heads + n_v_heads) * head_dim; }
    uint32_t inner() const { return n_v_heads * head_dim; }
    // Floats of one sequence's state in one layer: the conv's last conv_kernel - 1 inputs and
    // one head_dim x head_dim matrix per v head.
    uint64_t state_floats() const {
        return uint64_t(conv_kernel - 1) * conv_channels() +
               uint64_t(n_v_heads) * head_dim * head_dim;
    }
};

struct HParams {
    std::string arch;  // general.architecture
    std::string name;  // general.name (may be empty)
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_ff = 0;  // dense FFN width (MoE: per expert, see n_ff_expert)
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim_k = 0;  // attention.key_length, default n_embd / n_head
    uint32_t head_dim_v = 0;  // attention.value_length, default n_embd / n_head
    float norm_eps = 1e-5f;

    // RoPE.
    RopeStyle rope_style = RopeStyle::normal;
    uint32_t n_rot = 0;  // rotated dims per head (rope.dimension_count), <= head_dim_k
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // 1 / scaling factor
    RopeScaling rope_scaling = RopeScaling::none;
    uint32_t rope_n_ctx_orig = 0;  // YaRN: original training context
    float yarn_ext_factor = 0.0f;
    float yarn_attn_factor = 1.0f;
    float yarn_beta_fast = 32.0f;
    float yarn_beta_slow = 1.0f;

    // Mixture of experts (0 = dense).
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_expert = 0;
    uint32_t n_ff_shared_expert = 0;
    bool expert_weights_norm = false;   // renormalise the top-k router weights to sum to 1
    float expert_weights_scale = 1.0f;  // deepseek2: the chosen experts' weights times this
    ExpertGating expert_gating = ExpertGating::softmax;
    uint32_t n_expert_shared = 0;     // deepseek2: shared experts, added unweighted
    uint32_t n_expert_groups = 0;     // group-limited routing (0/1: none)
    uint32_t n_group_used = 0;        // groups whose experts may be chosen
    uint32_t n_layer_dense_lead = 0;  // deepseek2: the first layers have a dense FFN

    // Block structure.
    NormKind norm = NormKind::rms;
    FfnActivation ffn_act = FfnActivation::silu;
    bool post_norms = false;         // gemma: RMSNorm of each sublayer's output before the add
    bool parallel_residual = false;  // command-r: attention and FFN both read the same norm
    float embd_scale = 1.0f;         // input embeddings times this (gemma sqrt(n_embd), granite)
    float residual_scale = 1.0f;     // granite: each sublayer's output times this before the add
    float attn_scale = 0.0f;         // q . k times this; 0: 1 / sqrt(head size)
    float attn_softcap = 0.0f;       // gemma2: scores = c tanh(scores / c); 0: none
    float final_softcap = 0.0f;      // gemma2: logits = c tanh(logits / c); 0: none
    float logit_scale = 1.0f;        // logits times this (command-r; granite divides)

    // Sliding-window attention (gemma2/3): layer il attends to its last n_swa positions when
    // swa_layer(il); those layers may have their own RoPE base and scale.
    uint32_t n_swa = 0;
    uint32_t swa_pattern = 0;  // every swa_pattern-th layer (the last of each group) is global
    float rope_freq_base_swa = 10000.0f;
    float rope_freq_scale_swa = 1.0f;
    // gemma4: which layers slide, from a bool array (empty: swa_pattern decides).
    std::vector<bool> swa_layers;
    bool swa_layer(uint32_t il) const {
        if (!swa_layers.empty()) return n_swa > 0 && swa_layers[il];
        return n_swa > 0 && (swa_pattern == 0 || il % swa_pattern < swa_pattern - 1);
    }

    // Multi-head latent attention (deepseek2). The cache holds, per position, the normalised KV
    // latent (kv_lora_rank) followed by the rotated shared key part (n_rot): head_dim_k =
    // kv_lora_rank + n_rot, head_dim_v = kv_lora_rank, one KV head (the absorbed MQA view).
    uint32_t q_lora_rank = 0;     // 0: a plain attn_q projection
    uint32_t kv_lora_rank = 0;    // 0: not MLA
    uint32_t head_dim_k_mla = 0;  // per query head: qk_nope + qk_rope
    uint32_t head_dim_v_mla = 0;
    float yarn_log_mul = 0.0f;  // deepseek2's mscale_all_dim (kq scale correction under YaRN)
    bool mla() const { return kv_lora_rank > 0; }

    // Per-layer kinds (empty: every layer is attention). qwen35: three DeltaNet layers of every
    // four, from attention.recurrent_layers (or full_attention_interval).
    std::vector<LayerKind> layer_kinds;
    LayerKind kind(uint32_t il) const {
        return layer_kinds.empty() ? LayerKind::attention : layer_kinds[il];
    }
    // An attention layer with a KV cache of its own: not recurrent, and not one of gemma4's
    // KV-sharing layers (they attend to kv_layer(il)'s keys and values).
    bool has_kv(uint32_t il) const {
        return kind(il) == LayerKind::attention && kv_layer(il) == il;
    }
    // The layer whose cache layer il attends to: itself, or (gemma4's last n_kv_shared layers) the
    // last layer of the same kind (sliding or full) before them that has its own.
    uint32_t kv_layer(uint32_t il) const {
        if (n_kv_shared == 0 || il < n_layer - n_kv_shared) return il;
        for (uint32_t j = n_layer - n_kv_shared; j-- > 0;) {
            if (swa_layer(j) == swa_layer(il)) return j;
        }
        return il;  // read_gemma4 refuses a model where no such layer exists
    }
    uint32_t n_kv_shared = 0;  // attention.shared_kv_layers
    // Per-layer attention sizes (gemma4: sliding and full layers differ); empty: the scalars.
    std::vector<uint32_t> head_dim_k_l, head_dim_v_l, n_head_kv_l;
    uint32_t head_dim_k_of(uint32_t il) const {
        return head_dim_k_l.empty() ? head_dim_k : head_dim_k_l[il];
    }
    uint32_t head_dim_v_of(uint32_t il) const {
        return head_dim_v_l.empty() ? head_dim_v : head_dim_v_l[il];
    }
    uint32_t n_head_kv_of(uint32_t il) const {
        return n_head_kv_l.empty() ? n_head_kv : n_head_kv_l[il];
    }
    std::vector<uint32_t> n_ff_l;  // gemma4: per-layer FFN widths (empty: n_ff everywhere)
    uint32_t n_ff_of(uint32_t il) const { return n_ff_l.empty() ? n_ff : n_ff_l[il]; }
    uint32_t n_rot_swa = 0;  // gemma4: rotated dims of the sliding layers (0: n_rot)
    // gemma4: V normalised per head (RMSNorm without weight); a layer without attn_v uses K's
    // projection as V (before K's norm and RoPE).
    bool v_norm = false;
    // gemma4 MoE: every MoE layer also has a dense MLP, each branch with its own norms.
    bool moe_with_dense = false;
    // gemma4 per-layer embeddings (PLE): n_embd_per_layer floats per layer and token (0: none).
    uint32_t n_embd_per_layer = 0;
    // Layers with a per-sequence recurrent state instead of a KV cache.
    uint32_t n_recurrent_layers() const;
    DeltaNetShape delta_net;
    uint32_t shortconv_l_cache = 0;  // lfm2: taps of the short convolution
    // Floats of one recurrent layer's state per sequence: the conv's kept inputs, and (DeltaNet)
    // the state matrices after them.
    uint64_t recurrent_conv_floats() const;
    uint64_t recurrent_state_floats() const;
    // smollm3: every nope_interval-th layer ((il + 1) % interval == 0) has no RoPE (0: none).
    uint32_t nope_interval = 0;
    bool rope_layer(uint32_t il) const {
        return nope_interval == 0 || (il + 1) % nope_interval != 0;
    }
    // Multi-token-prediction (next-n) blocks after the n_layer that run: block_count counts
    // them; memwall skips them (their tensors stay unbound).
    uint32_t n_nextn_layers = 0;
    // qwen35: attn_q also yields, per head, a gate: out = attention * sigmoid(gate).
    bool attn_output_gate = false;

    // The largest over the layers (head_dim_k, head_dim_v and n_head_kv are the largest too).
    uint32_t n_embd_k_gqa() const { return head_dim_k * n_head_kv; }
    uint32_t n_embd_v_gqa() const { return head_dim_v * n_head_kv; }
};

// The common keys, then what the architecture's home adds (model/arch/: one row per
// architecture memwall runs). Throws ErrorKind::unsupported naming the architecture and the
// supported ones.
HParams read_hparams(const gguf::GgufFile& file);

bool is_supported_arch(const std::string& arch);
// The registry's names, comma-separated.
std::string supported_archs();

}  // namespace mw
