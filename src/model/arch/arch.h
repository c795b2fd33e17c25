// One home per architecture (as llama.cpp's src/models/*.cpp split them): what its GGUF keys
// mean beyond the common ones, which tensors its layers bind beyond the common ones, and its row
// in the registry (arch/registry.cpp) that hparams.cpp and model.cpp read. Internal to model/.
//
// Adding an architecture: a file arch/<name>.cpp with its hooks, its declarations below, and one
// row in kArchSpecs. The forward pass needs no change unless the architecture brings a new layer
// kind or operation (then forward*.cpp switch on HParams, never on the name).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "model/binder.h"
#include "model/hparams.h"
#include "model/model.h"

namespace mw {

struct ArchSpec {
    std::string_view name;
    RopeStyle rope = RopeStyle::normal;
    bool moe = false;  // expert_count is required
    // Its files' fewest tensors per block: a block count the tensor table cannot back is refused
    // before anything is sized by it.
    uint32_t min_tensors_per_block = 9;
    // attention.head_count_kv may differ per layer (0: a layer without attention); hp.n_head_kv
    // is the largest and the architecture's read hook says what the others mean.
    bool per_layer_kv_heads = false;
    // feed_forward_length may differ per layer (gemma4); hp.n_ff is the largest.
    bool per_layer_ff = false;
    std::string_view output_norm = "output_norm.weight";
    // Keys beyond the common ones, read after them (the MoE keys included); null: none.
    void (*read)(const gguf::GgufFile&, HParams&) = nullptr;
    // Layer il's mixer (attention or what replaces it) and the norms around it, the pre-FFN norm
    // included; null: the llama family's attention (bind_llama_attention).
    void (*bind_mixer)(Binder&, const HParams&, uint32_t il, Layer&) = nullptr;
    // A dense layer's FFN; null: gate, up and down.
    void (*bind_dense_ffn)(Binder&, const HParams&, uint32_t il, Layer&) = nullptr;
    // What a MoE layer binds beyond the router and the experts (shared experts, selection bias).
    void (*bind_moe_extra)(Binder&, const HParams&, uint32_t il, Layer&) = nullptr;
    // Model-wide tensors beyond the embedding, final norm and output.
    void (*bind_model_extra)(Binder&, Model&) = nullptr;
};

// The registry (arch/registry.cpp); nullptr for an architecture memwall does not run.
const ArchSpec* find_arch_spec(std::string_view name);
std::span<const ArchSpec> arch_specs();

// Metadata readers shared by the architectures (hparams.cpp). `<arch>.<key>` as u32: scalar, or
// a per-layer array whose entries are all equal.
std::optional<uint32_t> get_arch_u32(const gguf::GgufFile& f, const std::string& arch,
                                     const std::string& key);
uint32_t require_u32(const gguf::GgufFile& f, const std::string& arch, const std::string& key);
void check_range(const gguf::GgufFile& f, const char* what, uint64_t value, uint64_t lo,
                 uint64_t hi);
// `<key>` as a float that must be positive and finite; `fallback` when absent.
float positive_f32(const gguf::GgufFile& f, const std::string& key, float fallback);
// `<arch>.<key>` per layer: an array of n_layer entries, or a scalar for every layer; empty
// when absent.
std::vector<uint32_t> get_arch_u32_per_layer(const gguf::GgufFile& f, const std::string& arch,
                                             const std::string& key, uint32_t n_layer);

// The llama family's attention sublayer (model.cpp): Q, K, V (or fused QKV), output, optional
// biases, Q/K norms (required when `qk_norm`), post-norms when hp.post_norms, and the pre-FFN
// norm unless the block is parallel (hp.parallel_residual).
void bind_llama_attention(Binder& b, const HParams& hp, uint32_t il, Layer& l, bool qk_norm);

// Layer il's FFN as the architecture binds it: dense, or (l.moe) router, experts and what the
// architecture adds (model.cpp).
void bind_layer_ffn(Binder& b, const ArchSpec& arch, const HParams& hp, uint32_t il, Layer& l);

// llama, mistral, granite (scales), smollm3 (NoPE layers) (arch/llama.cpp).
void read_granite(const gguf::GgufFile& f, HParams& hp);
void read_smollm3(const gguf::GgufFile& f, HParams& hp);

// qwen2, qwen3 and their MoE variants (arch/qwen.cpp).
void read_qwen2moe(const gguf::GgufFile& f, HParams& hp);
void bind_qwen3_attention(Binder& b, const HParams& hp, uint32_t il, Layer& l);
// The gated shared expert of qwen2moe and qwen35moe.
void bind_qwen_shared_expert(Binder& b, const HParams& hp, uint32_t il, Layer& l);

// gemma2, gemma3 (arch/gemma.cpp): embedding scale, post-norms, GELU, soft caps, sliding windows.
void read_gemma2(const gguf::GgufFile& f, HParams& hp);
void read_gemma3(const gguf::GgufFile& f, HParams& hp);
void bind_gemma3_attention(Binder& b, const HParams& hp, uint32_t il, Layer& l);

// phi3 (arch/phi3.cpp): fused QKV and gate/up, LongRoPE factors.
void read_phi3(const gguf::GgufFile& f, HParams& hp);
void bind_phi3_ffn(Binder& b, const HParams& hp, uint32_t il, Layer& l);
void bind_phi3_model(Binder& b, Model& m);

// deepseek2 (arch/deepseek2.cpp): multi-head latent attention, grouped sigmoid routing.
void read_deepseek2(const gguf::GgufFile& f, HParams& hp);
void bind_deepseek2_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l);
void bind_deepseek2_moe(Binder& b, const HParams& hp, uint32_t il, Layer& l);

// command-r (arch/command_r.cpp): layer norm, parallel attention and FFN, logit scale.
void read_command_r(const gguf::GgufFile& f, HParams& hp);

// qwen35, qwen35moe (arch/qwen35.cpp): hybrid gated DeltaNet + gated attention.
void read_qwen35(const gguf::GgufFile& f, HParams& hp);
void bind_qwen35_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l);
// The MTP (next-n) blocks after the layers (model.nextn; model.nextn_error when incomplete).
void bind_qwen35_nextn(Binder& b, Model& m);

// lfm2, lfm2moe (arch/lfm2.cpp): gated short-convolution layers among GQA layers.
void read_lfm2(const gguf::GgufFile& f, HParams& hp);
void bind_lfm2_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l);
void bind_lfm2moe_extra(Binder& b, const HParams& hp, uint32_t il, Layer& l);

// gpt-oss (arch/gptoss.cpp): attention sinks, alternating sliding/full layers, biases
// everywhere, experts with the clamped SwiGLU.
void read_gptoss(const gguf::GgufFile& f, HParams& hp);
void bind_gptoss_layer(Binder& b, const HParams& hp, uint32_t il, Layer& l);

// gemma4 (arch/gemma4.cpp): dense with per-layer embeddings (E2B, E4B) or with experts beside a
// dense MLP (26B-A4B); sliding and full layers with their own head sizes, KV sharing.
void read_gemma4(const gguf::GgufFile& f, HParams& hp);
void bind_gemma4_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l);
void bind_gemma4_ffn(Binder& b, const HParams& hp, uint32_t il, Layer& l);
void bind_gemma4_moe(Binder& b, const HParams& hp, uint32_t il, Layer& l);
// The per-layer embedding table, its projection and norm; rope_freqs (required).
void bind_gemma4_model(Binder& b, Model& m);

}  // namespace mw
