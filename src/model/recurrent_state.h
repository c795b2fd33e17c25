// The recurrent layers' memory of every sequence of a context: per layer and sequence, a causal
// conv's last inputs (qwen35's DeltaNet: conv_kernel - 1 rows of its q/k/v channels, then one
// head_dim x head_dim state matrix per value head; lfm2's short conv: l_cache - 1 rows). Its size
// does not grow with the context.
//
// Unlike a KV cache it holds one point of a sequence: the state after its last token. Going back
// (prefix reuse, a chat's next turn, a rejected draft) needs a copy of an earlier state, so it
// keeps checkpoints: copies of a sequence's state at given lengths, at most max_checkpoints per
// sequence (the oldest goes first), counted in the plan.
#pragma once

#include <cstdint>
#include <vector>

#include "model/hparams.h"

namespace mw {

class RecurrentState {
  public:
    static constexpr uint32_t kDefaultCheckpoints = 2;

    RecurrentState(const HParams& hp, uint32_t n_seq_max,
                   uint32_t max_checkpoints = kDefaultCheckpoints);
    // Bytes of the live states and of every checkpoint, for planning before allocating.
    static uint64_t bytes_needed(const HParams& hp, uint32_t n_seq_max,
                                 uint32_t max_checkpoints = kDefaultCheckpoints);
    // Bytes of one sequence's state in every recurrent layer.
    static uint64_t bytes_per_sequence(const HParams& hp);

    bool empty() const { return n_recurrent_ == 0; }
    uint64_t bytes() const {
        return (live_.size() + saved_.size()) * sizeof(float) + checkpoint_bytes_;
    }

    // Layer il's conv inputs ((conv_kernel - 1) x channels, oldest first) and state matrices
    // (n_v_heads x [key dim][value dim]) of a sequence. il must be a recurrent layer.
    float* conv(uint32_t il, uint32_t seq) { return live_.data() + offset(il, seq); }
    float* state(uint32_t il, uint32_t seq) { return conv(il, seq) + conv_floats_; }

    // The sequence starts again from nothing (length 0).
    void reset(uint32_t seq);
    // Keeps a copy of the sequence's state as the state at length `len`.
    void checkpoint(uint32_t seq, uint32_t len);
    // The largest length <= n that the sequence can go back to, when it now holds `len`: len
    // itself if len <= n, else its largest checkpoint <= n, else 0.
    uint32_t keepable(uint32_t seq, uint32_t len, uint32_t n) const;
    // Goes back to length n (a length keepable() gave): 0 resets, a checkpoint is restored.
    // Checkpoints past n are dropped. Throws invalid_argument for a length it cannot restore.
    void truncate(uint32_t seq, uint32_t len, uint32_t n);
    // dst takes src's state at length n (src holds src_len), with src's checkpoints up to n.
    void copy(uint32_t src, uint32_t src_len, uint32_t dst, uint32_t n);

    // Speculation: one saved state per sequence, apart from the checkpoints (a verification
    // pass must not evict a prompt's checkpoint). Allocated on first use, counted in bytes().
    void save(uint32_t seq);
    // Makes the saved state live again (save() must have been called), the state at length
    // len: checkpoints past len, of tokens no longer held, are dropped.
    void restore(uint32_t seq, uint32_t len);

  private:
    struct Checkpoint {
        uint32_t len;
        uint64_t age;
        std::vector<float> floats;  // every recurrent layer's state, as in live_
    };
    size_t offset(uint32_t il, uint32_t seq) const {
        return (size_t(seq) * n_recurrent_ + slot_[il]) * layer_floats_;
    }
    float* seq_begin(uint32_t seq) { return live_.data() + size_t(seq) * seq_floats_; }
    const Checkpoint* find(uint32_t seq, uint32_t len) const;
    void drop_checkpoints_above(uint32_t seq, uint32_t n);

    uint32_t n_recurrent_ = 0;
    std::vector<uint32_t> slot_;  // per layer: its index among the recurrent layers
    size_t conv_floats_ = 0;
    size_t layer_floats_ = 0;
    size_t seq_floats_ = 0;
    uint32_t max_checkpoints_;
    uint64_t age_ = 0;
    uint64_t checkpoint_bytes_ = 0;
    std::vector<float> live_;
    std::vector<std::vector<Checkpoint>> checkpoints_;  // per sequence
    std::vector<float> saved_;                          // save(): one state per sequence
};

}  // namespace mw
