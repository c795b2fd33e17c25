// Causal grouped-query attention over a typed KV cache, computed block by block with an online
// softmax (flash-attention style): for each query a running maximum, a running sum of
// exponentials and an unnormalised output that is rescaled whenever the maximum grows. No score
// vector of the context's length is ever materialised; the scratch is O(block) per query, sized
// once, whatever the context.
//
// The cache is read where it lies, in its own type (F32, F16, BF16, Q8_0, Q4_0, any type with a
// to_float): a block of keys is decoded to floats once and multiplied by every query that shares
// its KV head (all query heads of a GQA group, for a tile of tokens), and each value row likewise
// once per tile. Dot products and accumulation are in float: with an F32 cache this is as
// precise as a plain softmax.
//
// Decoding one token at long context has too few (KV head) items to keep every thread busy, so
// the positions are also split between threads and the partial states merged (flash decoding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/parallel.h"
#include "tensor/types.h"

namespace mw {

// Positions of a paged cache come in pages of this many consecutive positions (a multiple of
// attention's block of positions, so that no block straddles two pages).
constexpr uint32_t kKvPageSize = 32;

// Cached keys or values of one layer for one sequence. Contiguous (pages == nullptr): the row of
// KV head h at position j (head_dim elements of `traits`' type) starts at
// data + h * head_stride + j * stride. Paged: position j lives in page pages[j / kKvPageSize], at
// data + h * head_stride + pages[j / kKvPageSize] * page_stride + (j % kKvPageSize) * stride.
struct KvRows {
    const uint8_t* data;
    size_t stride;
    size_t head_stride;
    const TypeTraits* traits;
    const uint32_t* pages = nullptr;
    size_t page_stride = 0;

    const uint8_t* row(int head, uint32_t j) const {
        const uint8_t* h = data + size_t(head) * head_stride;
        if (!pages) return h + size_t(j) * stride;
        return h + size_t(pages[j / kKvPageSize]) * page_stride + size_t(j % kKvPageSize) * stride;
    }
};

// The tokens of one sequence in a batch: rows [first_token, first_token + n_tokens) of the
// batch's queries and outputs, at consecutive positions from pos0. Token t of the sequence sees
// its own cache's positions [0, pos0 + t + 1).
struct AttentionSeq {
    uint32_t first_token;
    uint32_t n_tokens;
    uint32_t pos0;
    KvRows k;
    KvRows v;
};

// One layer's attention for a batch of tokens of one or more sequences, optionally over a sliding
// window of positions and with soft-capped scores. Queries are token-major
// (n_head x head_dim_k floats per token, already rotated). Query head h reads KV head
// h / (n_head / n_head_kv). Sequences never see each other's positions.
struct AttentionBatch {
    const float* q;
    float* out;  // n_tokens x n_head x head_dim_v
    const AttentionSeq* seqs;
    uint32_t n_seqs;
    int n_head;
    int n_head_kv;
    int head_dim_k;
    int head_dim_v;
    float scale;  // applied to q . k (1 / sqrt(head_dim_k))
    // Sliding window: a token at position p sees only positions p - window + 1 .. p (0: all).
    uint32_t window = 0;
    // Soft-capping of the scaled scores, s = softcap tanh(s / softcap) (0: none).
    float softcap = 0.0f;
    // Attention sinks (gpt-oss), one logit per query head (null: none): each adds exp(sink) to
    // its head's softmax denominator, taking probability mass without adding a value.
    const float* sinks = nullptr;
};

// The shape an AttentionScratch is planned for.
struct AttentionShape {
    uint32_t max_batch;  // tokens
    uint32_t max_seqs;   // sequences in one batch
    int n_head;
    int n_head_kv;
    int head_dim_k;
    int head_dim_v;
    int n_threads;
    // The fewest KV heads of a layer (gemma4's layers differ; 0: n_head_kv). Batches may have
    // any count from here to n_head_kv that divides n_head, and head sizes up to the above.
    int min_head_kv = 0;
};

// Per-thread working memory plus the partial states of split decoding; allocated once.
class AttentionScratch {
  public:
    AttentionScratch() = default;
    explicit AttentionScratch(const AttentionShape& shape);
    // What the constructor allocates (for memory planning).
    static uint64_t planned_bytes(const AttentionShape& shape);
    uint64_t bytes() const {
        return buffer_.size() * sizeof(float) + tiles_.size() * sizeof(uint32_t);
    }

  private:
    friend void attention(Parallel&, const AttentionBatch&, AttentionScratch&);
    AttentionShape shape_{};
    size_t per_thread_ = 0;  // floats of one thread's workspace
    size_t partials_ = 0;    // floats of the split-decoding partial states
    std::vector<float> buffer_;
    std::vector<uint32_t> tiles_;  // work items before each sequence (max_seqs + 1)
};

// Runs the batch on the threads of `par`. The batch must fit the scratch's shape (tokens <=
// max_batch, sequences <= max_seqs, same heads and head sizes, par.n_threads() <= n_threads).
void attention(Parallel& par, const AttentionBatch& batch, AttentionScratch& scratch);

}  // namespace mw
