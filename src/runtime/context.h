// A decoding session on a loaded model: its KV cache, scratch buffers, thread pool and the logits
// of the last batch.
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward.h"
#include "model/kv_cache.h"
#include "runtime/loaded_model.h"
#include "runtime/thread_pool.h"

namespace mw {

struct ContextParams {
    uint32_t n_ctx = 0;  // 0: min(training context, 4096)
    uint32_t n_batch = 512;
    int n_threads = 0;  // 0: default_thread_count(); < 0: measure a few counts, keep the fastest
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
};

struct Perf {
    double prompt_ms = 0.0;
    double decode_ms = 0.0;
    int64_t n_prompt_tokens = 0;
    int64_t n_decode_tokens = 0;
    // Weight bytes the single-token decode steps read: every dense matrix, and of the experts
    // only those the router selected (counted per step and layer).
    uint64_t decode_weight_bytes = 0;
};

class Context {
  public:
    Context(const LoadedModel& model, const ContextParams& params);

    // Appends tokens (split into n_batch chunks); throws ErrorKind::invalid_argument for bad token
    // ids and a context-full error when they do not fit.
    void decode(const int32_t* tokens, uint32_t n_tokens, bool all_logits);
    // Logits of token i of the last batch (-1: last), or null if not kept.
    const float* logits(int32_t i) const;
    void truncate(uint32_t n_keep);
    // Context shift: drops the cached tokens [n_keep, n_keep + n_discard) and moves the later
    // ones back, re-rotating their keys, so decoding continues at n_past() - n_discard.
    void shift(uint32_t n_keep, uint32_t n_discard);

    const LoadedModel& model() const { return model_; }
    uint32_t n_ctx() const { return kv_.n_ctx(); }
    uint32_t n_past() const { return kv_.n_past(); }
    int n_threads() const { return pool_.n_threads(); }
    // Threads the pool was created with; set_threads() uses 1 to that many (pacing backs off).
    int max_threads() const { return pool_.max_threads(); }
    void set_threads(int n) { pool_.set_active(n); }
    GgmlType type_k() const { return kv_.k_traits().type; }
    GgmlType type_v() const { return kv_.v_traits().type; }
    uint64_t kv_bytes() const { return kv_.bytes(); }
    uint64_t scratch_bytes() const { return scratch_.bytes() + logits_.capacity() * sizeof(float); }
    Perf& perf() { return perf_; }
    const Perf& perf() const { return perf_; }
    Parallel& parallel() { return pool_; }
    // Shows the input of every matrix product to `observer` (null to stop), e.g. for imatrix.
    void set_matmul_observer(MatmulObserver* observer) { scratch_.observer = observer; }
    // For -t auto: decode tok/s measured for each thread count tried (empty otherwise).
    const std::vector<std::pair<int, double>>& thread_trials() const { return thread_trials_; }

  private:
    void tune_threads();

    const LoadedModel& model_;
    ThreadPool pool_;
    KvCache kv_;
    ForwardScratch scratch_;
    std::vector<float> logits_;
    uint32_t n_logit_rows_ = 0;
    bool all_logits_ = false;
    Perf perf_;
    std::vector<std::pair<int, double>> thread_trials_;
    uint64_t dense_bytes_per_token_ = 0;  // weights every token reads (all but the experts)
    uint64_t expert_bytes_ = 0;           // one expert's FFN matrices in one layer
};

// The context size used when none is asked for.
uint32_t default_context_size(const HParams& hp);

}  // namespace mw
