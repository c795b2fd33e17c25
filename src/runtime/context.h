// A decoding session on a loaded model: its KV cache of up to n_seq_max sequences, scratch
// buffers, thread pool and the logits of the last batch. A batch may hold tokens of several
// sequences; they run as one forward pass, so the weights are read once for all of them.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "model/forward.h"
#include "model/seq_memory.h"
#include "runtime/loaded_model.h"
#include "sys/thread_pool.h"

namespace mw {

struct ContextParams {
    uint32_t n_ctx = 0;  // 0: min(training context, 4096)
    uint32_t n_batch = 512;
    int n_threads = 0;  // 0: default_thread_count(); < 0: measure a few counts, keep the fastest
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    uint32_t n_seq_max = 1;  // sequences the KV cache holds at once
};

// One token of a batch: its id, its sequence, its position in that sequence (-1: the next one)
// and whether its logits are wanted.
struct BatchToken {
    int32_t token;
    uint32_t seq;
    int32_t pos;
    bool logits;
};

struct Perf {
    double prompt_ms = 0.0;
    double decode_ms = 0.0;
    int64_t n_prompt_tokens = 0;
    int64_t n_decode_tokens = 0;
    int64_t n_decode_steps = 0;  // batches where every sequence decoded one token
    // Weight bytes the single-token decode steps read: every dense matrix, and of the experts
    // only those the router selected (counted per step and layer).
    uint64_t decode_weight_bytes = 0;
};

// Sees every forward chunk a context runs, except a rollback's replay of tokens it saw already,
// with each token's final hidden state (after the output norm; n_tokens x n_embd), and the
// context shifts. An MTP drafter (runtime/mtp.h) follows its target through it.
class DecodeObserver {
  public:
    virtual ~DecodeObserver() = default;
    // After the chunk's rows are written (the sequences' lengths include it).
    virtual void on_chunk(const ForwardBatch& batch, const float* hidden) = 0;
    virtual void on_shift(uint32_t seq, uint32_t n_keep, uint32_t n_discard) = 0;
};

class Context {
  public:
    Context(const LoadedModel& model, const ContextParams& params);

    // Runs a batch (split into n_batch chunks): each sequence's tokens must continue it at its
    // next positions. Throws ErrorKind::invalid_argument for bad token ids, sequences or
    // positions, and a context-full error when the cache has no room (nothing is changed then).
    void decode(std::span<const BatchToken> batch);
    // Speculative verification: decodes a batch like decode(), but a sequence taking several
    // tokens (the last accepted one and the drafts) keeps no recurrent checkpoint at their end
    // (they may be rejected; it would evict a prompt's). Mark the sequences first (seq_mark)
    // and cut the rejected tail off with seq_rollback.
    void decode_drafts(std::span<const BatchToken> batch);
    // The server's step: the sequences listed in `verify` are verification passes (as in
    // decode_drafts: no recurrent checkpoint at their end), every other one decodes as in
    // decode() (a prompt's chunk keeps its checkpoint), all in one forward pass.
    void decode_mixed(std::span<const BatchToken> batch, std::span<const uint32_t> verify);
    // The tokens appended to sequence 0, logits for all of them or the last one.
    void decode(const int32_t* tokens, uint32_t n_tokens, bool all_logits);
    // Logits of token i of the last batch (-1: the last token whose logits were kept), or null
    // if not kept.
    const float* logits(int32_t i) const;

    // Sequences: their length, the tokens they hold, and editing them.
    uint32_t n_seq_max() const { return mem_.kv().n_seq_max(); }
    uint32_t seq_len(uint32_t seq) const { return mem_.kv().seq_len(seq); }
    std::span<const int32_t> seq_tokens(uint32_t seq) const;
    // How many leading tokens of `tokens` sequence `seq` already holds (what need not be
    // decoded again).
    uint32_t seq_common_prefix(uint32_t seq, std::span<const int32_t> tokens) const;
    // The most of a sequence's first n tokens it can be truncated or copied to: n, or 0 when a
    // sliding-window layer no longer holds the window there (KvCache::keepable), or what a
    // A hybrid model's recurrent layers can go back only to checkpoints (SeqMemory::keepable):
    // each prompt's end is one.
    uint32_t seq_keepable(uint32_t seq, uint32_t n) const { return mem_.keepable(seq, n); }
    void seq_truncate(uint32_t seq, uint32_t n_keep);
    // Speculation: seq_mark keeps the point a sequence is at; seq_rollback(seq, n) then goes
    // back to any length n between it and the length now, whatever the layers: KV rows are
    // dropped, a recurrent state is restored to the mark and the kept tokens after it decoded
    // again (one pass over them, no logits; the last batch's logits stay readable).
    void seq_mark(uint32_t seq) { mem_.mark(seq); }
    void seq_rollback(uint32_t seq, uint32_t n_keep);
    // Several sequences at once, (seq, n_keep) each: the recurrent states restored to their
    // marks decode their kept tokens again in one pass for all of them.
    void seq_rollback(std::span<const std::pair<uint32_t, uint32_t>> keep);
    // dst becomes the first n tokens of src, sharing their cache pages (nothing recomputed).
    void seq_copy(uint32_t src, uint32_t dst, uint32_t n);
    // Context shift: drops the cached tokens [n_keep, n_keep + n_discard) of a sequence and
    // moves the later ones back, re-rotating their keys, so decoding continues at
    // seq_len() - n_discard.
    void seq_shift(uint32_t seq, uint32_t n_keep, uint32_t n_discard);
    // KV use: positions held in pages (shared pages once) and the pool's positions.
    uint32_t kv_positions_used() const { return mem_.kv().pages_used() * kKvPageSize; }
    uint32_t kv_positions_total() const { return mem_.kv().n_pages() * kKvPageSize; }

    // Sequence 0 (the single-sequence calls).
    void truncate(uint32_t n_keep) { seq_truncate(0, n_keep); }
    void shift(uint32_t n_keep, uint32_t n_discard) { seq_shift(0, n_keep, n_discard); }

    const LoadedModel& model() const { return model_; }
    uint32_t n_ctx() const { return mem_.kv().n_ctx(); }
    uint32_t n_past() const { return mem_.kv().seq_len(0); }
    int n_threads() const { return pool_.n_threads(); }
    // Tokens one forward pass takes at most (n_batch, clamped to the context).
    uint32_t max_batch() const { return scratch_.max_batch(); }
    // Threads the pool was created with; set_threads() uses 1 to that many (pacing backs off).
    int max_threads() const { return pool_.max_threads(); }
    void set_threads(int n) { pool_.set_active(n); }
    GgmlType type_k() const { return mem_.kv().k_traits().type; }
    GgmlType type_v() const { return mem_.kv().v_traits().type; }
    // Whether seq_shift works (not over a recurrent state).
    bool can_shift() const { return mem_.can_shift(); }
    uint64_t kv_bytes() const { return mem_.bytes(); }
    uint64_t scratch_bytes() const { return scratch_.bytes() + logits_.capacity() * sizeof(float); }
    Perf& perf() { return perf_; }
    const Perf& perf() const { return perf_; }
    Parallel& parallel() { return pool_; }
    // Shows the input of every matrix product to `observer` (null to stop), e.g. for imatrix.
    void set_matmul_observer(MatmulObserver* observer) { scratch_.observer = observer; }
    // One observer at a time (null: none); the hidden states cost n_batch x n_embd floats.
    void set_decode_observer(DecodeObserver* observer);
    DecodeObserver* decode_observer() const { return observer_; }
    // For -t auto: decode tok/s measured for each thread count tried (empty otherwise).
    const std::vector<std::pair<int, double>>& thread_trials() const { return thread_trials_; }

  private:
    enum class Mode { normal, drafts, replay };
    void decode(std::span<const BatchToken> batch, Mode mode,
                std::span<const uint32_t> verify = {});
    void tune_threads();
    void run_chunk(std::span<const BatchToken> batch, uint32_t begin, uint32_t end);

    const LoadedModel& model_;
    ThreadPool pool_;
    SeqMemory mem_;  // the KV cache and the recurrent state
    ForwardScratch scratch_;
    BudgetLease lease_;  // under a memory budget: this context's KV cache and scratch in it
    std::vector<float> logits_;
    DecodeObserver* observer_ = nullptr;
    std::vector<float> hidden_;       // the chunk's final hidden states, for the observer
    Mode mode_ = Mode::normal;        // of the batch being decoded
    std::vector<int32_t> logit_row_;  // per token of the last batch, its logits row or -1
    int32_t last_logit_row_ = -1;
    std::vector<std::vector<int32_t>> seq_tokens_;
    // A batch in sequence order, reused between calls (decoding allocates nothing once grown).
    std::vector<uint32_t> order_;  // batch indices grouped by sequence
    std::vector<int32_t> sorted_tokens_;
    std::vector<ForwardSeq> runs_;
    std::vector<uint32_t> outputs_;
    std::vector<BatchToken> single_;     // decode(tokens, n, all_logits) as a batch
    std::vector<uint32_t> seq_count_;    // tokens of each sequence in the batch
    std::vector<uint32_t> prompt_seqs_;  // sequences with several tokens in the batch
    Perf perf_;
    std::vector<std::pair<int, double>> thread_trials_;
    uint64_t dense_bytes_per_token_ = 0;  // weights every token reads (all but the experts)
    uint64_t expert_bytes_ = 0;           // one expert's FFN matrices in one layer
};

// The context size used when none is asked for.
uint32_t default_context_size(const HParams& hp);

}  // namespace mw
