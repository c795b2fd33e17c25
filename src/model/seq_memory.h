// What a context remembers of each sequence, behind one interface: the KV cache of the attention
// layers (paged, or a ring for sliding windows) and the recurrent layers' state (with its
// checkpoints). The context, the scheduler's prefix reuse, chat turns and context shift go
// through it, so a hybrid model (qwen35) and an all-attention one are handled alike.
#pragma once

#include <cstdint>
#include <vector>

#include "model/kv_cache.h"
#include "model/recurrent_state.h"

namespace mw {

class SeqMemory {
  public:
    SeqMemory(const HParams& hp, uint32_t n_ctx, uint32_t n_seq_max, GgmlType k_type,
              GgmlType v_type, uint32_t max_batch = KvCache::kDefaultBatch);
    // Bytes of both, for planning before allocating (the recurrent state with its checkpoints).
    static uint64_t bytes_needed(const HParams& hp, uint32_t n_ctx, GgmlType k_type,
                                 GgmlType v_type, uint32_t n_seq_max = 1,
                                 uint32_t max_batch = KvCache::kDefaultBatch);

    KvCache& kv() { return kv_; }
    const KvCache& kv() const { return kv_; }
    RecurrentState& recurrent() { return state_; }
    uint64_t bytes() const { return kv_.bytes() + state_.bytes(); }

    uint32_t n_ctx() const { return kv_.n_ctx(); }
    uint32_t n_seq_max() const { return kv_.n_seq_max(); }
    uint32_t seq_len(uint32_t seq) const { return kv_.seq_len(seq); }

    // The largest length <= n a sequence can be truncated or copied to: for the KV cache n (or
    // 0 when a ring lost the window), for the recurrent state its length or a checkpoint (or 0).
    uint32_t keepable(uint32_t seq, uint32_t n) const;
    void truncate(uint32_t seq, uint32_t n_keep);
    void copy(uint32_t src, uint32_t dst, uint32_t n);
    // Context shift (KvCache::discard). A recurrent state cannot forget tokens in the middle:
    // refused with a clear error for a hybrid model.
    void discard(uint32_t seq, uint32_t n_keep, uint32_t n_discard, const RopeParams& rope,
                 const RopeParams& rope_swa, Parallel& par);
    bool can_shift() const { return state_.empty(); }
    // Keeps the recurrent state at the sequence's current length (a prompt's or turn's end).
    void checkpoint(uint32_t seq) { state_.checkpoint(seq, kv_.seq_len(seq)); }

    // Speculation: mark() keeps what the sequence needs to go back to its current length
    // (the recurrent state; KV rows need nothing), rollback(seq, n) goes back to n, between the
    // mark and the length now. KV rows past n are dropped; a recurrent state cannot drop tokens,
    // so it is restored to the mark and the return value, the length the memory is at, is
    // below n: the caller decodes the tokens [returned, n) again. Anything that cuts the
    // sequence below its mark (truncate, copy, discard) clears the mark.
    void mark(uint32_t seq);
    uint32_t rollback(uint32_t seq, uint32_t n_keep);

  private:
    static constexpr uint32_t kNoMark = UINT32_MAX;
    void clear_mark_above(uint32_t seq, uint32_t n) {
        if (marks_[seq] != kNoMark && marks_[seq] > n) marks_[seq] = kNoMark;
    }

    KvCache kv_;
    RecurrentState state_;
    std::vector<uint32_t> marks_;  // per sequence: the length mark() saw, or kNoMark
};

}  // namespace mw
