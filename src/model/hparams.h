// Hyper-parameters of a transformer, read from GGUF metadata (`<arch>.*` keys), never hard-coded.
#pragma once

#include <cstdint>
#include <string>

#include "format/gguf.h"

namespace mw {

enum class RopeStyle {
    normal,  // rotate adjacent pairs (x[2i], x[2i+1]): llama, mistral
    neox,    // rotate halves (x[i], x[i + n_rot/2]): qwen2, qwen3
};

enum class RopeScaling { none, linear, yarn };

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
    bool expert_weights_norm = false;  // renormalise the top-k router weights to sum to 1

    uint32_t n_embd_k_gqa() const { return head_dim_k * n_head_kv; }
    uint32_t n_embd_v_gqa() const { return head_dim_v * n_head_kv; }
};

// Architectures with the llama-family forward pass (llama, mistral, qwen2, qwen3, and MoE
// variants). Throws ErrorKind::unsupported naming the architecture and the supported ones.
HParams read_hparams(const gguf::GgufFile& file);

bool is_supported_arch(const std::string& arch);
const char* supported_archs();

}  // namespace mw
