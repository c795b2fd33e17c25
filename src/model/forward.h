// The forward pass of every architecture memwall runs, for a batch of tokens of one or more
// sequences: the llama block, and the features other families add to it (forward_attention.cpp,
// forward_ffn.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"
#include "model/seq_memory.h"
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

// The tokens of one sequence in a forward step: batch rows [first_token, first_token + n_tokens)
// at positions pos0, pos0 + 1, ... of sequence `seq`.
struct ForwardSeq {
    uint32_t seq;
    uint32_t first_token;
    uint32_t n_tokens;
    uint32_t pos0;
};

// One forward step: tokens grouped by sequence (each sequence's tokens are one run), and the
// tokens whose logits are wanted, in the order their rows are written.
struct ForwardBatch {
    const int32_t* tokens;
    uint32_t n_tokens;
    const ForwardSeq* seqs;
    uint32_t n_seqs;
    const uint32_t* outputs;
    uint32_t n_outputs;
    // An MTP head's model (Model::nextn_input): per token, the target's final hidden state that
    // goes with it (n_tokens x n_embd; null: zeros).
    const float* embd_h = nullptr;
};

// Every buffer one forward step needs, planned once for the largest batch (tokens and
// sequences) so that decoding does not allocate.
class ForwardScratch {
  public:
    ForwardScratch(const Model& model, uint32_t max_batch, uint32_t n_ctx, int n_threads,
                   uint32_t max_seqs = 1);
    uint32_t max_batch() const { return max_batch_; }
    uint32_t max_seqs() const { return max_seqs_; }
    uint64_t bytes() const;
    // MoE: the expert FFNs (gate, up and down of one expert of one layer) the last forward step
    // read, summed over the layers: each distinct expert its tokens were routed to, once.
    uint64_t experts_read() const { return experts_read_; }
    // What the constructor will allocate, without allocating (for memory planning). Works on a
    // model bound from a header-only GGUF (no weight data).
    static uint64_t planned_bytes(const Model& model, uint32_t max_batch, uint32_t n_ctx,
                                  int n_threads, uint32_t max_seqs = 1);
    MatmulObserver* observer = nullptr;  // null (the default): no observation, no cost

  private:
    friend void forward(const Model&, SeqMemory&, ForwardScratch&, Parallel&, const ForwardBatch&,
                        float*, float*);
    friend struct ForwardStep;
    uint32_t max_batch_;
    uint32_t max_seqs_;
    uint32_t n_ctx_;
    std::vector<float> x, xb, xb2, xb3, q, k, v, qkv, attn, gate, up, rope_cs, rope_cs_swa;
    // Multi-head latent attention: the Q bottleneck, the per-head queries before absorption, the
    // KV latent with its rope key, and one head's rows gathered for its k_b / v_b product.
    std::vector<float> mla_qa, mla_q, mla_kv, head_in, head_out;
    // Gated attention (qwen35): Q with its gate as attn_q gives them, and the gates alone.
    std::vector<float> q_gated, attn_gate;
    // Gated DeltaNet: the conv's inputs and outputs, z, beta, the decay input, the heads' output.
    std::vector<float> dn_qkv, dn_conv, dn_z, dn_beta, dn_alpha, dn_o;
    std::vector<float> dn_tmp;               // head_dim floats per thread for the delta-rule step
    std::vector<uint32_t> tok_seq, tok_pos;  // sequence and position of each token
    std::vector<float> router_logits, moe_in, moe_out;
    // gemma4: the batch's per-layer inputs (n x n_layer x n_embd_per_layer), the branch's gate,
    // one table row per thread, and one more n x n_embd buffer.
    std::vector<float> ple, ple_gate, ple_tmp, g4;
    std::vector<float> nextn_in;          // an MTP head: [enorm(embedding); hnorm(h)] per token
    std::vector<int32_t> moe_expert;      // per token, the selected experts
    std::vector<float> moe_weight;        // and their weights
    std::vector<int32_t> moe_tokens;      // tokens routed to the current expert
    std::vector<float> router_probs;      // softmax over the experts of one token
    std::vector<uint8_t> act;             // activations encoded for the matmul kernels
    std::vector<AttentionSeq> attn_seqs;  // one per sequence of the batch
    AttentionScratch attention;           // O(block) per thread, whatever the context
    int n_threads = 1;
    uint64_t experts_read_ = 0;
};

// Runs the batch's tokens at their positions, writing their keys and values into their
// sequences' caches (and advancing the recurrent layers' states), and the logits of the output
// tokens (n_outputs x n_vocab; none when logits is null). The caller checks that the batch fits the
// scratch (tokens <= max_batch(), sequences
// <= max_seqs()) and has reserved the cache rows (KvCache::reserve); it sets the sequences'
// lengths afterwards. `hidden` (n_tokens x n_embd, optional): every token's final hidden state
// after the output norm, what an MTP head reads.
void forward(const Model& model, SeqMemory& memory, ForwardScratch& scratch, Parallel& par,
             const ForwardBatch& batch, float* logits, float* hidden = nullptr);

}  // namespace mw
