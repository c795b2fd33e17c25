// The forward pass of the llama family (llama, mistral, qwen2, qwen3 and their MoE variants).
#pragma once

#include <cstdint>
#include <vector>

#include "model/kv_cache.h"
#include "model/model.h"
#include "tensor/attention.h"
#include "tensor/parallel.h"

namespace mw {

// Sees the input of every matrix product of a forward step before it runs (imatrix collection):
// x holds n_tokens rows of w.n_cols floats; for MoE, w is the expert's slice of the stacked
// tensor. Called on the thread that runs forward().
class MatmulObserver {
  public:
    virtual ~MatmulObserver() = default;
    virtual void on_matmul(const WeightMatrix& w, const float* x, int64_t n_tokens) = 0;
};

// Every buffer one forward step needs, planned once for the largest batch so that decoding does
// not allocate.
class ForwardScratch {
  public:
    ForwardScratch(const Model& model, uint32_t max_batch, uint32_t n_ctx, int n_threads);
    uint32_t max_batch() const { return max_batch_; }
    uint64_t bytes() const;
    // MoE: the expert FFNs (gate, up and down of one expert of one layer) the last forward step
    // read, summed over the layers: each distinct expert its tokens were routed to, once.
    uint64_t experts_read() const { return experts_read_; }
    // What the constructor will allocate, without allocating (for memory planning). Works on a
    // model bound from a header-only GGUF (no weight data).
    static uint64_t planned_bytes(const Model& model, uint32_t max_batch, uint32_t n_ctx,
                                  int n_threads);
    MatmulObserver* observer = nullptr;  // null (the default): no observation, no cost

  private:
    friend void forward(const Model&, KvCache&, ForwardScratch&, Parallel&, const int32_t*,
                        uint32_t, float*, bool);
    uint32_t max_batch_;
    std::vector<float> x, xb, xb2, q, k, v, attn, gate, up, rope_cs;
    std::vector<float> router_logits, moe_in, moe_out;
    std::vector<int32_t> moe_expert;  // per token, the selected experts
    std::vector<float> moe_weight;    // and their weights
    std::vector<int32_t> moe_tokens;  // tokens routed to the current expert
    std::vector<float> router_probs;  // softmax over the experts of one token
    std::vector<uint8_t> act;         // activations encoded for the matmul kernels
    AttentionScratch attention;       // O(block) per thread, whatever the context
    int n_threads = 1;
    uint64_t experts_read_ = 0;
};

// Runs n_tokens tokens at positions kv.n_past() ... and appends their keys and values to the
// cache. Writes logits for every token (all_logits, n_tokens x n_vocab) or for the last one only
// (n_vocab), or none when logits is null. The caller checks that n_tokens <= scratch.max_batch()
// and that the cache has room.
void forward(const Model& model, KvCache& kv, ForwardScratch& scratch, Parallel& par,
             const int32_t* tokens, uint32_t n_tokens, float* logits, bool all_logits);

}  // namespace mw
