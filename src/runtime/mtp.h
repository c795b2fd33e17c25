// Qwen3.5's MTP (multi-token prediction, next-n) head as a built-in drafter. The head predicts
// the token after next from the target's final hidden state h_p at position p and the embedding
// of token p + 1: its entry at position p + 1 is the block's input eh_proj [enorm(embed(x_p+1));
// hnorm(h_p)], and the block (one full-attention Qwen3.5 decoder layer) attends to the entries of
// the positions before, in a KV cache of its own.
//
// Following the target: the head watches every forward chunk of the target context
// (DecodeObserver) and appends the chunk's tokens to its own cache, each paired with the target's
// hidden state of the position before (the prompt too, so the first draft has the context); it
// keeps the last chunk's hidden rows per sequence, so that after a verification pass it knows
// h at the last accepted position. What the target dropped (rollback, truncation) is dropped at
// the next chunk or draft by comparing tokens; a context shift is applied as the target's.
// Positions whose hidden state it never saw (a speculator started after the prompt, a copied
// sequence) are filled with h = 0: the drafts are worse there, never wrong (the target judges).
//
// Drafting k tokens chains the head on its own outputs, as llama.cpp does: the pending token
// with h at the position before gives the first draft's logits (greedy) and the head's own
// normalised output, which goes with the first draft to give the second, and so on. Those
// entries are replaced by the target's at the verification pass.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/forward.h"
#include "model/seq_memory.h"
#include "runtime/context.h"
#include "runtime/speculative.h"

namespace mw {

// Throws invalid_argument, naming the file, unless the model has an MTP head it can run.
void check_mtp_head(const LoadedModel& target);

class MtpDrafter final : public BatchDrafter, public DecodeObserver {
  public:
    // Registers itself as target's decode observer (until destroyed; the target outlives it).
    // p_min: stop a draft when the head's top probability is below it (0: never).
    MtpDrafter(Context& target, float p_min);
    ~MtpDrafter() override;
    MtpDrafter(const MtpDrafter&) = delete;
    MtpDrafter& operator=(const MtpDrafter&) = delete;

    void propose(std::span<const Request> requests) override;
    void on_chunk(const ForwardBatch& batch, const float* hidden) override;
    void on_shift(uint32_t seq, uint32_t n_keep, uint32_t n_discard) override;

    // Tests: keep the logits of every drafted position of the next propose() calls (the first
    // request's), k x n_vocab.
    void keep_draft_logits(bool on) { keep_logits_ = on; }
    const std::vector<float>& draft_logits() const { return draft_logits_; }
    uint32_t seq_len(uint32_t seq) const { return mem_.seq_len(seq); }
    // Its KV cache, scratch and buffers (the target's hidden states included).
    uint64_t bytes() const;
    // The same before anything is allocated, for the memory plan.
    static uint64_t planned_bytes(const Model& target, uint32_t n_ctx, uint32_t n_batch,
                                  uint32_t n_seq, GgmlType type_k, GgmlType type_v, int n_threads);

  private:
    // Tokens queued for one forward pass of the head: each sequence's as one run.
    void queue(uint32_t seq, int32_t token, const float* h, bool logits);
    void flush();
    // Drops what the head holds of `seq` past the first `keep` tokens of `tokens` that match.
    void sync_prefix(uint32_t seq, std::span<const int32_t> tokens, uint32_t limit);
    const float* h_at(uint32_t seq, int64_t pos) const;

    Context& target_;
    float p_min_;
    Model model_;  // the head as a one-layer model (nextn_model)
    SeqMemory mem_;
    ForwardScratch scratch_;
    uint32_t n_embd_, n_vocab_;
    std::vector<std::vector<int32_t>> tokens_;  // per sequence: what its cache holds
    // Per sequence: the target's hidden states of its last chunk, positions h_pos0_ onwards.
    std::vector<std::vector<float>> h_rows_;
    std::vector<uint32_t> h_pos0_;
    // The queued pass.
    struct Queued {
        uint32_t seq;
        int32_t token;
        bool logits;
    };
    std::vector<Queued> q_;
    std::vector<float> q_h_;
    // After flush(): per queued token with logits, its row; the pass's logits and hidden rows.
    std::vector<int32_t> out_row_;
    std::vector<float> logits_, out_hidden_;  // rows of the tokens with logits
    std::vector<float> hidden_;               // the pass's hidden states (one batch)
    std::vector<int32_t> tokens_buf_;
    std::vector<ForwardSeq> runs_;
    std::vector<uint32_t> outputs_;
    std::vector<uint32_t> seq_count_;
    bool keep_logits_ = false;
    std::vector<float> draft_logits_;
};

}  // namespace mw
