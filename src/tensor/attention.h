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

// Cached keys or values of one layer: the row of KV head h at position j (head_dim elements of
// `traits`' type) starts at data + h * head_stride + j * stride.
struct KvRows {
    const uint8_t* data;
    size_t stride;
    size_t head_stride;
    const TypeTraits* traits;
};

// One layer's attention for a batch of consecutive tokens. Queries are token-major (n_head x
// head_dim_k floats per token, already rotated); token t sees positions [0, pos0 + t + 1).
// Query head h reads KV head h / (n_head / n_head_kv).
struct AttentionBatch {
    const float* q;
    float* out;  // n_tokens x n_head x head_dim_v
    uint32_t n_tokens;
    uint32_t pos0;
    int n_head;
    int n_head_kv;
    int head_dim_k;
    int head_dim_v;
    float scale;  // applied to q . k (1 / sqrt(head_dim_k))
    KvRows k;
    KvRows v;
};

// The shape an AttentionScratch is planned for.
struct AttentionShape {
    uint32_t max_batch;
    int n_head;
    int n_head_kv;
    int head_dim_k;
    int head_dim_v;
    int n_threads;
};

// Per-thread working memory plus the partial states of split decoding; allocated once.
class AttentionScratch {
  public:
    AttentionScratch() = default;
    explicit AttentionScratch(const AttentionShape& shape);
    // What the constructor allocates (for memory planning).
    static uint64_t planned_bytes(const AttentionShape& shape);
    uint64_t bytes() const { return buffer_.size() * sizeof(float); }

  private:
    friend void attention(Parallel&, const AttentionBatch&, AttentionScratch&);
    AttentionShape shape_{};
    size_t per_thread_ = 0;  // floats of one thread's workspace
    size_t partials_ = 0;    // floats of the split-decoding partial states
    std::vector<float> buffer_;
};

// Runs the batch on the threads of `par`. The batch must fit the scratch's shape (n_tokens <=
// max_batch, same heads and head sizes, par.n_threads() <= n_threads).
void attention(Parallel& par, const AttentionBatch& batch, AttentionScratch& scratch);

}  // namespace mw
