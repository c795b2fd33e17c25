#include "runtime/context.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/error.h"

namespace mw {

uint32_t default_context_size(const HParams& hp) {
    return std::min<uint32_t>(hp.n_ctx_train, 4096);
}

namespace {

uint32_t resolve_n_ctx(const LoadedModel& m, const ContextParams& p) {
    return p.n_ctx ? p.n_ctx : default_context_size(m.model.hp);
}

// The thread counts -t auto tries: 1, half and all of the physical performance cores, and all
// logical CPUs when SMT adds some.
std::vector<int> auto_thread_candidates() {
    const int physical = default_thread_count();
    const int logical = std::max(1, int(std::thread::hardware_concurrency()));
    std::vector<int> c = {1, std::max(1, physical / 2), physical, logical};
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    return c;
}

uint64_t matrix_bytes(const WeightMatrix& w) {
    return uint64_t(w.row_bytes) * uint64_t(w.n_rows);
}

// Bytes of one expert's gate, up and down matrices (every MoE layer has the same shapes).
uint64_t one_expert_bytes(const Model& m) {
    if (m.hp.n_expert == 0 || m.layers.empty()) return 0;
    const Layer& l = m.layers[0];
    return matrix_bytes(l.exp_gate.first) + matrix_bytes(l.exp_up.first) +
           matrix_bytes(l.exp_down.first);
}

int pool_size(const ContextParams& p) {
    if (p.n_threads > 0) return p.n_threads;
    if (p.n_threads == 0) return default_thread_count();
    return auto_thread_candidates().back();
}

}  // namespace

Context::Context(const LoadedModel& model, const ContextParams& params)
    : model_(model),
      pool_(pool_size(params)),
      kv_(model.model.hp, resolve_n_ctx(model, params), params.type_k, params.type_v),
      scratch_(model.model,
               std::clamp<uint32_t>(params.n_batch ? params.n_batch : 512, 1,
                                    resolve_n_ctx(model, params)),
               resolve_n_ctx(model, params), pool_.n_threads()) {
    logits_.reserve(model.model.hp.n_vocab);
    const Model& m = model.model;
    expert_bytes_ = one_expert_bytes(m);
    dense_bytes_per_token_ =
        m.bytes_per_token - uint64_t(m.hp.n_layer) * m.hp.n_expert_used * expert_bytes_;
    if (params.n_threads < 0) tune_threads();
}

void Context::tune_threads() {
    // A few single-token decode steps from an empty cache for each candidate: decoding is what
    // the thread count matters most for (it is memory-bound, and more threads can be slower).
    constexpr uint32_t kWarmup = 1, kSteps = 4;
    if (kv_.n_ctx() < kWarmup + kSteps) return;
    const int32_t token = model_.vocab->bos() >= 0 ? model_.vocab->bos() : 0;
    int best = pool_.max_threads();
    double best_rate = 0.0;
    for (int n : auto_thread_candidates()) {
        pool_.set_active(n);
        kv_.set_n_past(0);
        for (uint32_t i = 0; i < kWarmup; ++i) decode(&token, 1, false);
        const auto start = std::chrono::steady_clock::now();
        for (uint32_t i = 0; i < kSteps; ++i) decode(&token, 1, false);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double rate = kSteps / s;
        thread_trials_.push_back({n, rate});
        // Prefer fewer threads unless more are clearly (3 %) faster.
        if (rate > best_rate * 1.03) {
            best = n;
            best_rate = rate;
        }
    }
    pool_.set_active(best);
    kv_.set_n_past(0);
    perf_ = {};
}

void Context::decode(const int32_t* tokens, uint32_t n_tokens, bool all_logits) {
    const HParams& hp = model_.model.hp;
    if (n_tokens == 0) fail(ErrorKind::invalid_argument, "decode: empty batch");
    for (uint32_t i = 0; i < n_tokens; ++i) {
        if (tokens[i] < 0 || uint32_t(tokens[i]) >= hp.n_vocab) {
            fail(ErrorKind::invalid_argument,
                 "decode: token {} at batch index {} is out of range [0, {})", tokens[i], i,
                 hp.n_vocab);
        }
    }
    if (uint64_t(kv_.n_past()) + n_tokens > kv_.n_ctx()) {
        fail(ErrorKind::context_full,
             "context full: {} tokens cached + {} new exceed the context size of {} tokens",
             kv_.n_past(), n_tokens, kv_.n_ctx());
    }
    const auto start = std::chrono::steady_clock::now();
    const size_t n_vocab = hp.n_vocab;
    n_logit_rows_ = all_logits ? n_tokens : 1;
    all_logits_ = all_logits;
    logits_.resize(n_logit_rows_ * n_vocab);
    for (uint32_t done = 0; done < n_tokens;) {
        const uint32_t chunk = std::min(n_tokens - done, scratch_.max_batch());
        const bool last_chunk = done + chunk == n_tokens;
        // Earlier chunks of a last-logits-only batch only fill the cache.
        float* out = all_logits ? logits_.data() + size_t(done) * n_vocab
                                : (last_chunk ? logits_.data() : nullptr);
        forward(model_.model, kv_, scratch_, pool_, tokens + done, chunk, out, all_logits);
        done += chunk;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (n_tokens > 1) {
        perf_.prompt_ms += ms;
        perf_.n_prompt_tokens += n_tokens;
    } else {
        perf_.decode_ms += ms;
        perf_.n_decode_tokens += 1;
        perf_.decode_weight_bytes +=
            dense_bytes_per_token_ + scratch_.experts_read() * expert_bytes_;
    }
}

const float* Context::logits(int32_t i) const {
    if (n_logit_rows_ == 0) return nullptr;
    const size_t n_vocab = model_.model.hp.n_vocab;
    if (i < 0) return logits_.data() + size_t(n_logit_rows_ - 1) * n_vocab;
    if (!all_logits_ || uint32_t(i) >= n_logit_rows_) return nullptr;
    return logits_.data() + size_t(i) * n_vocab;
}

void Context::truncate(uint32_t n_keep) {
    if (n_keep > kv_.n_past()) {
        fail(ErrorKind::invalid_argument, "truncate: cannot keep {} tokens, only {} are cached",
             n_keep, kv_.n_past());
    }
    kv_.set_n_past(n_keep);
}

void Context::shift(uint32_t n_keep, uint32_t n_discard) {
    kv_.discard(n_keep, n_discard, model_.model.rope, pool_);
}

}  // namespace mw
