// A transformer's weights, bound by name to the tensors of a parsed GGUF file. The model does not
// own the file's bytes: whoever loads it (runtime/) keeps the mapping alive as long as the model.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "gpu/gpu.h"
#include "model/expert_source.h"
#include "model/hparams.h"
#include "model/layer_source.h"
#include "model/ple_source.h"
#include "tensor/ops.h"
#include "tensor/parallel.h"

namespace mw {

// A stack of equally-shaped matrices (one per expert), stored as one 3-D GGUF tensor.
struct ExpertWeights {
    WeightMatrix first;        // expert 0
    size_t expert_stride = 0;  // bytes between consecutive experts

    WeightMatrix expert(int64_t e) const {
        WeightMatrix w = first;
        w.data += size_t(e) * expert_stride;
        return w;
    }
    bool present() const { return first.data != nullptr; }
};

struct Layer {
    std::vector<float> attn_norm;
    WeightMatrix wq, wk, wv, wo;
    WeightMatrix wqkv;              // phi3: Q, K and V rows in one matrix (wq, wk, wv then absent)
    std::vector<float> bq, bk, bv;  // qwen2 biases (empty if absent)
    std::vector<float> bo;          // gpt-oss: attn_output's bias
    std::vector<float> attn_sinks;  // gpt-oss: per query head, a logit in the softmax's denominator
    std::vector<float> q_norm, k_norm;  // qwen3 per-head RMSNorm weights (empty if absent)
    std::vector<float> ffn_norm;
    // gemma: RMSNorm of the attention and FFN outputs before their residual adds.
    std::vector<float> post_attn_norm, post_ffn_norm;
    // deepseek2 multi-head latent attention: Q through a low-rank bottleneck (wq_a, its norm,
    // wq_b; or a plain wq), the KV latent and the shared rope key from wkv_a, and per head the
    // latent-to-key (k_b: qk_nope -> kv_lora, applied to the query) and latent-to-value (v_b)
    // matrices.
    WeightMatrix wq_a, wq_b, wkv_a;
    std::vector<float> q_a_norm, kv_a_norm;
    ExpertWeights wk_b, wv_b;  // one matrix per query head
    // Dense FFN. phi3 fuses the gate into ffn_up (2 x n_ff rows: gate, then up; ffn_gate absent).
    WeightMatrix ffn_gate, ffn_up, ffn_down;
    // Mixture of experts.
    WeightMatrix router;             // n_embd -> n_expert logits
    std::vector<float> expert_bias;  // deepseek2: added to the scores to choose, not to weigh
    std::vector<float> router_bias;  // gpt-oss: added to the router's logits
    ExpertWeights exp_gate, exp_up, exp_down;
    // gpt-oss: each expert's biases, expert-major (n_expert x rows of its matrix).
    std::vector<float> exp_gate_bias, exp_up_bias, exp_down_bias;
    WeightMatrix shared_gate, shared_up, shared_down;  // qwen2moe / deepseek2 shared expert
    WeightMatrix shared_router;  // qwen2moe: its sigmoid gate (1 output); deepseek2: none
    bool moe = false;            // this layer's FFN is the mixture of experts
    // Gated DeltaNet (qwen35; LayerKind::delta_net): wqkv gives the conv's q, k, v channels, wo
    // is ssm_out; the output gate z, the per-v-head write strength beta and decay input alpha.
    WeightMatrix ssm_z, ssm_beta, ssm_alpha;
    std::vector<float> ssm_conv;     // conv_kernel taps per channel, the current token last
    std::vector<float> ssm_dt_bias;  // per v head
    std::vector<float> ssm_a;        // per v head: -exp(A_log)
    std::vector<float> ssm_norm;     // head_dim: the gated RMSNorm of each head's output
    // gemma4: the per-layer input's gate (n_embd -> n_embd_per_layer) and projection back, with
    // its post-norm; the layer's output scalar.
    WeightMatrix ple_gate, ple_proj;
    std::vector<float> ple_post_norm, out_scale;
    // gemma4 MoE layers: a dense MLP beside the experts, each with its own norms; the router
    // reads RMSNorm(x) / sqrt(n_embd) x router_scale; each expert's output times its down scale.
    std::vector<float> post_ffn_norm_1, pre_ffn_norm_2, post_ffn_norm_2, router_scale,
        exp_down_scale;
};

// Every weight matrix a layer may have, in one list that binding's checks, repacking, the layer
// stream, GPU placement, the budget plan and scratch sizing read: a new matrix is one line here.
// `gguf` is its tensor name after "blk.N." (the DeltaNet's wqkv and wo reuse attention's
// members under other names; gpu placement and reports use the name of the member's first
// role).
struct LayerMatrixRole {
    const char* gguf;
    WeightMatrix Layer::*member;
};
inline constexpr LayerMatrixRole kLayerMatrices[] = {
    {"attn_q", &Layer::wq},
    {"attn_k", &Layer::wk},
    {"attn_v", &Layer::wv},
    {"attn_output", &Layer::wo},
    {"attn_qkv", &Layer::wqkv},
    {"attn_q_a", &Layer::wq_a},
    {"attn_q_b", &Layer::wq_b},
    {"attn_kv_a_mqa", &Layer::wkv_a},
    {"attn_gate", &Layer::ssm_z},
    {"ssm_beta", &Layer::ssm_beta},
    {"ssm_alpha", &Layer::ssm_alpha},
    {"ffn_gate", &Layer::ffn_gate},
    {"ffn_up", &Layer::ffn_up},
    {"ffn_down", &Layer::ffn_down},
    {"ffn_gate_inp", &Layer::router},
    {"ffn_gate_shexp", &Layer::shared_gate},
    {"ffn_up_shexp", &Layer::shared_up},
    {"ffn_down_shexp", &Layer::shared_down},
    {"ffn_gate_inp_shexp", &Layer::shared_router},
    {"inp_gate", &Layer::ple_gate},
    {"proj", &Layer::ple_proj},
};
// Stacks of equally-shaped matrices in one 3-D tensor: the routed experts (one per expert), and
// MLA's per-head k_b / v_b (one per query head).
struct LayerStackRole {
    const char* gguf;
    ExpertWeights Layer::*member;
    bool experts;  // true: n_expert routed experts; false: one per query head
};
inline constexpr LayerStackRole kLayerStacks[] = {
    {"ffn_gate_exps", &Layer::exp_gate, true}, {"ffn_up_exps", &Layer::exp_up, true},
    {"ffn_down_exps", &Layer::exp_down, true}, {"attn_k_b", &Layer::wk_b, false},
    {"attn_v_b", &Layer::wv_b, false},
};
// The small float vectors of a layer (norms, biases, DeltaNet's per-head constants).
inline constexpr std::vector<float> Layer::*kLayerVectors[] = {
    &Layer::attn_norm,
    &Layer::bq,
    &Layer::bk,
    &Layer::bv,
    &Layer::q_norm,
    &Layer::k_norm,
    &Layer::ffn_norm,
    &Layer::post_attn_norm,
    &Layer::post_ffn_norm,
    &Layer::q_a_norm,
    &Layer::kv_a_norm,
    &Layer::expert_bias,
    &Layer::ssm_conv,
    &Layer::ssm_dt_bias,
    &Layer::ssm_a,
    &Layer::ssm_norm,
    &Layer::bo,
    &Layer::attn_sinks,
    &Layer::router_bias,
    &Layer::exp_gate_bias,
    &Layer::exp_up_bias,
    &Layer::exp_down_bias,
    &Layer::ple_post_norm,
    &Layer::out_scale,
    &Layer::post_ffn_norm_1,
    &Layer::pre_ffn_norm_2,
    &Layer::post_ffn_norm_2,
    &Layer::router_scale,
    &Layer::exp_down_scale,
};

// A multi-token-prediction (next-n) head (qwen35's MTP block): predicts the token after next from
// the embedding of the next token and the model's final hidden state at the current one:
// x = eh_proj [enorm(embed(next)); hnorm(h)], then one full-attention decoder block (with a KV
// cache of its own), head_norm and the LM head. runtime/mtp.h runs it as a drafter.
struct NextnHead {
    Layer block;
    std::vector<float> enorm, hnorm;
    WeightMatrix eh_proj;  // 2 n_embd -> n_embd
    // Its own nextn.embed_tokens, shared_head_head and shared_head_norm; absent (no traits,
    // empty): the model's token_embd, output and output_norm (as they are when run: repacked).
    WeightMatrix embed, head;
    std::vector<float> head_norm;
};

struct Model {
    HParams hp;
    WeightMatrix tok_embd;
    std::vector<float> output_norm;
    WeightMatrix output;  // token_embd when the output is tied
    std::vector<Layer> layers;
    RopeParams rope{};
    RopeParams rope_swa{};                 // sliding-window layers (gemma3: their own base)
    std::vector<float> rope_freq_factors;  // rope_freqs.weight (Llama 3.1+), empty if absent
    // phi3 LongRoPE: per-pair divisors for contexts past the original one (long) or within it.
    std::vector<float> rope_factors_long, rope_factors_short;
    // gemma4 per-layer embeddings: per token, one row of n_layer x n_embd_per_layer (read by
    // token, never multiplied), the projection of the scaled input embedding to the same width,
    // and the norm of each layer's slice of it.
    WeightMatrix ple_embd, ple_model_proj;
    std::vector<float> ple_proj_norm;
    // Where ple_embd's rows come from when the table stays on storage (its bytes in the mapping
    // are then never read). Null: read in place.
    PleSource* ple_source = nullptr;
    // The MTP heads the file has after its layers (hp.n_nextn_layers; bound, never run by the
    // model's own forward pass).
    std::vector<NextnHead> nextn;
    std::string nextn_error;  // why the file's MTP heads could not be bound ("" if they were)
    // Set in the one-layer model that runs an MTP head (nextn_model): the batch's input rows are
    // the head's eh_proj of the token embedding and ForwardBatch::embd_h, not the embedding alone.
    const NextnHead* nextn_input = nullptr;

    // The RoPE of layer il (sliding-window layers may differ).
    const RopeParams& rope_of(uint32_t il) const { return hp.swa_layer(il) ? rope_swa : rope; }

    uint64_t weight_bytes = 0;  // all tensor data in the file
    uint64_t n_params = 0;
    // Weight bytes read to produce one token: every matrix once, but only n_expert_used of the
    // experts (the token embedding contributes one row).
    uint64_t bytes_per_token = 0;
    std::string type_summary;  // e.g. "Q4_K x13, Q6_K x3, F32 x5"
    // Under a memory budget: where the experts' weights come from (the exps tensors' bytes in
    // the file are then never read through the mapping). Null: they are read in place.
    ExpertSource* expert_source = nullptr;
    // Under a memory budget smaller than a dense model: where its layers' matrices come from
    // (their bytes in the file are then never read through the mapping). Null: read in place.
    LayerSource* layer_source = nullptr;
    // -ngl: the matrices placed on a GPU (their products run there). Null: all on the CPU.
    gpu::Offload* offload = nullptr;

    // Binds every tensor the architecture needs, checking shapes and types. Missing tensors are
    // reported together in one error.
    static Model bind(const gguf::GgufFile& file);
};

// The one-layer model that runs `target`'s MTP head `index`: its block as layer 0 (full
// attention), its embedding, norm and head. Shares the target's weights (and must not outlive
// it); reads them in place (no GPU, stream or expert cache).
Model nextn_model(const Model& target, uint32_t index = 0);

// Rewrites in place every weight matrix the installed kernels have a faster layout for
// (tensor/repack.h) and points its traits at that layout. `bound` is the bytes the model was bound
// to, `writable` the same bytes writable (a copy-on-write mapping or a read buffer); the threads of
// `par` share the work. Returns the bytes rewritten. A matrix shared by two roles (a tied output)
// is rewritten once; matrices on the GPU (m.offload) keep the file's layout. `experts` false leaves
// the expert tensors as they are (an expert cache repacks each expert as it reads it). Matrices
// that `streamed` accepts (by their data) get the faster layout's traits but keep their bytes as
// they are: they are not in memory, and a layer stream repacks each copy it reads.
uint64_t repack_weights(Model& m, std::span<const uint8_t> bound, std::span<uint8_t> writable,
                        Parallel& par, bool experts = true,
                        const std::function<bool(const uint8_t*)>& streamed = {});
// Whether repack_weights would rewrite anything on this CPU (if not, the bytes can stay read-only).
bool has_faster_layouts(const Model& m);

}  // namespace mw
