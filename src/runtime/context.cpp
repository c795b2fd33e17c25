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
      mem_(model.model.hp, resolve_n_ctx(model, params), std::max(1u, params.n_seq_max),
           params.type_k, params.type_v,
           std::clamp<uint32_t>(params.n_batch ? params.n_batch : 512, 1,
                                resolve_n_ctx(model, params))),
      scratch_(model.model,
               std::clamp<uint32_t>(params.n_batch ? params.n_batch : 512, 1,
                                    resolve_n_ctx(model, params)),
               resolve_n_ctx(model, params), pool_.n_threads(), std::max(1u, params.n_seq_max)),
      lease_(model.budget.get(), mem_.bytes(),
             scratch_.bytes() + uint64_t(model.model.hp.n_vocab) * sizeof(float)) {
    logits_.reserve(model.model.hp.n_vocab);
    seq_tokens_.resize(mem_.kv().n_seq_max());
    seq_count_.resize(mem_.kv().n_seq_max());
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
    if (mem_.kv().n_ctx() < kWarmup + kSteps) return;
    const int32_t token = model_.vocab->bos() >= 0 ? model_.vocab->bos() : 0;
    int best = pool_.max_threads();
    double best_rate = 0.0;
    for (int n : auto_thread_candidates()) {
        pool_.set_active(n);
        seq_truncate(0, 0);
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
    seq_truncate(0, 0);
    perf_ = {};
}

void Context::decode(const int32_t* tokens, uint32_t n_tokens, bool all_logits) {
    single_.resize(n_tokens);
    for (uint32_t i = 0; i < n_tokens; ++i) {
        single_[i] = {tokens[i], 0, -1, all_logits || i + 1 == n_tokens};
    }
    decode(std::span<const BatchToken>(single_));
}

void Context::decode(std::span<const BatchToken> batch) {
    decode(batch, Mode::normal);
}

void Context::decode_drafts(std::span<const BatchToken> batch) {
    decode(batch, Mode::drafts);
}

void Context::decode_mixed(std::span<const BatchToken> batch, std::span<const uint32_t> verify) {
    decode(batch, verify.empty() ? Mode::normal : Mode::drafts, verify);
}

void Context::decode(std::span<const BatchToken> batch, Mode mode,
                     std::span<const uint32_t> verify) {
    const HParams& hp = model_.model.hp;
    const uint32_t n_seq = mem_.kv().n_seq_max();
    if (batch.empty()) fail(ErrorKind::invalid_argument, "decode: empty batch");
    if (batch.size() > UINT32_MAX / 2) fail(ErrorKind::invalid_argument, "decode: batch too large");
    const uint32_t n = uint32_t(batch.size());

    // Every token valid, and each sequence's tokens at its next positions.
    std::fill(seq_count_.begin(), seq_count_.end(), 0u);
    for (uint32_t i = 0; i < n; ++i) {
        const BatchToken& b = batch[i];
        if (b.token < 0 || uint32_t(b.token) >= hp.n_vocab) {
            fail(ErrorKind::invalid_argument,
                 "decode: token {} at batch index {} is out of range [0, {})", b.token, i,
                 hp.n_vocab);
        }
        if (b.seq >= n_seq) {
            fail(ErrorKind::invalid_argument,
                 "decode: batch index {} is for sequence {}, this context has {} (0..{})", i, b.seq,
                 n_seq, n_seq - 1);
        }
        const uint32_t expected = mem_.kv().seq_len(b.seq) + seq_count_[b.seq];
        if (b.pos >= 0 && uint32_t(b.pos) != expected) {
            fail(ErrorKind::invalid_argument,
                 "decode: batch index {} puts a token at position {} of sequence {}, whose next "
                 "position is {} (truncate the sequence first to rewrite it)",
                 i, b.pos, b.seq, expected);
        }
        ++seq_count_[b.seq];
    }
    // Room for all of it, checked before anything changes.
    uint64_t pages = 0;
    bool single_steps = true;  // every sequence in the batch decodes one token
    for (uint32_t s = 0; s < n_seq; ++s) {
        if (seq_count_[s] == 0) continue;
        single_steps = single_steps && seq_count_[s] == 1;
        if (uint64_t(mem_.kv().seq_len(s)) + seq_count_[s] > mem_.kv().n_ctx()) {
            fail(ErrorKind::context_full,
                 "context full: {} tokens cached + {} new exceed the context size of {} tokens",
                 mem_.kv().seq_len(s), seq_count_[s], mem_.kv().n_ctx());
        }
        pages += mem_.kv().pages_needed(s, seq_count_[s]);
    }
    if (pages > mem_.kv().pages_free()) {
        fail(ErrorKind::context_full,
             "context full: the batch needs {} more KV cache positions, {} are free ({} "
             "sequences share {} positions)",
             pages * kKvPageSize, uint64_t(mem_.kv().pages_free()) * kKvPageSize, n_seq,
             kv_positions_total());
    }
    for (uint32_t s = 0; s < n_seq; ++s) {
        if (seq_count_[s] > 0) mem_.kv().reserve(s, seq_count_[s]);
    }
    // The sequences that take several tokens (a prompt) keep a checkpoint of their recurrent
    // state at its end (the counts are reused below).
    // In a mixed batch (verify given) only the listed sequences are verification passes.
    prompt_seqs_.clear();
    const bool checkpoints = mode == Mode::normal || !verify.empty();
    for (uint32_t s = 0; s < n_seq && checkpoints; ++s) {
        if (seq_count_[s] > 1 && std::find(verify.begin(), verify.end(), s) == verify.end()) {
            prompt_seqs_.push_back(s);
        }
    }

    // The batch in sequence order (a stable counting sort), and the logits row of each token
    // that wants one, rows in that order.
    order_.resize(n);
    {
        uint32_t at = 0;
        std::vector<uint32_t>& start = seq_count_;  // reused: first slot of each sequence
        for (uint32_t s = 0; s < n_seq; ++s) {
            const uint32_t c = start[s];
            start[s] = at;
            at += c;
        }
        for (uint32_t i = 0; i < n; ++i) order_[start[batch[i].seq]++] = i;
    }
    sorted_tokens_.resize(n);
    logit_row_.assign(n, -1);
    int32_t rows = 0;
    for (uint32_t k = 0; k < n; ++k) {
        sorted_tokens_[k] = batch[order_[k]].token;
        if (batch[order_[k]].logits) logit_row_[order_[k]] = rows++;
    }
    last_logit_row_ = -1;
    for (uint32_t i = n; i-- > 0;) {
        if (logit_row_[i] >= 0) {
            last_logit_row_ = logit_row_[i];
            break;
        }
    }
    logits_.resize(size_t(rows) * hp.n_vocab);

    const auto start = std::chrono::steady_clock::now();
    mode_ = mode;
    uint64_t experts_read = 0;
    for (uint32_t begin = 0; begin < n;) {
        const uint32_t end = std::min(n, begin + scratch_.max_batch());
        run_chunk(batch, begin, end);
        experts_read += scratch_.experts_read();
        begin = end;
    }
    for (uint32_t k = 0; k < n; ++k) {
        seq_tokens_[batch[order_[k]].seq].push_back(sorted_tokens_[k]);
    }
    for (uint32_t s : prompt_seqs_) mem_.checkpoint(s);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (mode != Mode::normal) {
        // A verification pass or its replay is decoding: the tokens count once kept
        // (seq_rollback takes the rejected ones off again).
        perf_.decode_ms += ms;
        if (mode == Mode::drafts) {
            perf_.n_decode_tokens += n;
            perf_.n_decode_steps += 1;
            perf_.decode_weight_bytes += dense_bytes_per_token_ + experts_read * expert_bytes_;
        }
    } else if (!single_steps) {
        perf_.prompt_ms += ms;
        perf_.n_prompt_tokens += n;
    } else {
        perf_.decode_ms += ms;
        perf_.n_decode_tokens += n;
        perf_.n_decode_steps += 1;
        // The weights are read once for every sequence of the step.
        perf_.decode_weight_bytes += dense_bytes_per_token_ + experts_read * expert_bytes_;
    }
}

void Context::run_chunk(std::span<const BatchToken> batch, uint32_t begin, uint32_t end) {
    // Runs of one sequence each, at the sequence's next positions (its length so far: earlier
    // chunks have already been written).
    runs_.clear();
    outputs_.clear();
    int32_t first_row = -1;
    for (uint32_t k = begin; k < end; ++k) {
        const BatchToken& b = batch[order_[k]];
        if (runs_.empty() || runs_.back().seq != b.seq) {
            runs_.push_back({b.seq, k - begin, 0, mem_.kv().seq_len(b.seq)});
        }
        ++runs_.back().n_tokens;
        if (logit_row_[order_[k]] >= 0) {
            if (first_row < 0) first_row = logit_row_[order_[k]];
            outputs_.push_back(k - begin);
        }
    }
    ForwardBatch fb{};
    fb.tokens = sorted_tokens_.data() + begin;
    fb.n_tokens = end - begin;
    fb.seqs = runs_.data();
    fb.n_seqs = uint32_t(runs_.size());
    fb.outputs = outputs_.data();
    fb.n_outputs = uint32_t(outputs_.size());
    float* out =
        first_row < 0 ? nullptr : logits_.data() + size_t(first_row) * model_.model.hp.n_vocab;
    const bool observed = observer_ && mode_ != Mode::replay;
    forward(model_.model, mem_, scratch_, pool_, fb, out, observed ? hidden_.data() : nullptr);
    for (const ForwardSeq& r : runs_) mem_.kv().set_len(r.seq, r.pos0 + r.n_tokens);
    if (observed) observer_->on_chunk(fb, hidden_.data());
}

void Context::set_decode_observer(DecodeObserver* observer) {
    observer_ = observer;
    if (observer) {
        hidden_.resize(size_t(scratch_.max_batch()) * model_.model.hp.n_embd);
    } else {
        hidden_ = {};
    }
}

const float* Context::logits(int32_t i) const {
    const size_t n_vocab = model_.model.hp.n_vocab;
    if (i < 0)
        return last_logit_row_ < 0 ? nullptr : logits_.data() + size_t(last_logit_row_) * n_vocab;
    if (size_t(i) >= logit_row_.size() || logit_row_[size_t(i)] < 0) return nullptr;
    return logits_.data() + size_t(logit_row_[size_t(i)]) * n_vocab;
}

std::span<const int32_t> Context::seq_tokens(uint32_t seq) const {
    mem_.kv().seq_len(seq);  // checks the id
    return seq_tokens_[seq];
}

uint32_t Context::seq_common_prefix(uint32_t seq, std::span<const int32_t> tokens) const {
    const std::span<const int32_t> held = seq_tokens(seq);
    const size_t n = std::min(held.size(), tokens.size());
    return uint32_t(std::mismatch(held.begin(), held.begin() + n, tokens.begin()).first -
                    held.begin());
}

void Context::seq_truncate(uint32_t seq, uint32_t n_keep) {
    mem_.truncate(seq, n_keep);
    seq_tokens_[seq].resize(n_keep);
}

void Context::seq_rollback(uint32_t seq, uint32_t n_keep) {
    const std::pair<uint32_t, uint32_t> one{seq, n_keep};
    seq_rollback(std::span<const std::pair<uint32_t, uint32_t>>(&one, 1));
}

void Context::seq_rollback(std::span<const std::pair<uint32_t, uint32_t>> keep) {
    std::vector<BatchToken> replay;
    for (const auto& [seq, n_keep] : keep) {
        const uint32_t len = seq_len(seq);
        const uint32_t from = mem_.rollback(seq, n_keep);  // throws for a length out of range
        perf_.n_decode_tokens -= int64_t(len) - int64_t(n_keep);
        std::vector<int32_t>& held = seq_tokens_[seq];
        // A recurrent state went back to the mark: the kept tokens after it again.
        for (uint32_t p = from; p < n_keep; ++p) replay.push_back({held[p], seq, -1, false});
        held.resize(from);
    }
    if (replay.empty()) return;
    // One pass for every sequence, keeping the verification pass's logits (the caller samples
    // from them after rolling back).
    std::vector<float> logits = std::move(logits_);
    std::vector<int32_t> rows = std::move(logit_row_);
    const int32_t last = last_logit_row_;
    decode(replay, Mode::replay);
    logits_ = std::move(logits);
    logit_row_ = std::move(rows);
    last_logit_row_ = last;
}

void Context::seq_copy(uint32_t src, uint32_t dst, uint32_t n) {
    mem_.copy(src, dst, n);
    if (src != dst) {
        seq_tokens_[dst].assign(seq_tokens_[src].begin(), seq_tokens_[src].begin() + n);
    } else {
        seq_tokens_[dst].resize(n);
    }
}

void Context::seq_shift(uint32_t seq, uint32_t n_keep, uint32_t n_discard) {
    mem_.discard(seq, n_keep, n_discard, model_.model.rope, model_.model.rope_swa, pool_);
    std::vector<int32_t>& t = seq_tokens_[seq];
    t.erase(t.begin() + n_keep, t.begin() + n_keep + n_discard);
    if (observer_) observer_->on_shift(seq, n_keep, n_discard);
}

}  // namespace mw
