#include "runtime/mtp.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace mw {

namespace {

uint32_t batch_of(const Context& t) {
    return t.max_batch();
}

const Model& checked(const Context& target) {
    check_mtp_head(target.model());
    return target.model().model;
}

int32_t argmax_of(const float* l, uint32_t n) {
    return int32_t(std::max_element(l, l + n) - l);
}

float top_prob(const float* l, uint32_t n, int32_t top) {
    double sum = 0.0;
    for (uint32_t i = 0; i < n; ++i) sum += std::exp(double(l[i]) - double(l[top]));
    return float(1.0 / sum);
}

}  // namespace

void check_mtp_head(const LoadedModel& target) {
    const Model& m = target.model;
    const std::string& name = target.gguf.name();
    if (m.hp.n_nextn_layers == 0) {
        fail(ErrorKind::invalid_argument,
             "--spec-type mtp: {} has no MTP layers ({}.nextn_predict_layers is absent or 0, "
             "no nextn tensors): MTP drafting needs a model converted with them (Qwen3.5's "
             "mtp.* weights); use -md DRAFT.gguf or --spec-type ngram",
             name, m.hp.arch);
    }
    if (m.nextn.empty()) {
        fail(ErrorKind::invalid_argument,
             "--spec-type mtp: {} has {} MTP layer(s) ({}.nextn_predict_layers) but they cannot "
             "be run: {}",
             name, m.hp.n_nextn_layers, m.hp.arch,
             m.nextn_error.empty() ? "not bound" : m.nextn_error);
    }
}

MtpDrafter::MtpDrafter(Context& target, float p_min)
    : target_(target),
      p_min_(p_min),
      model_(nextn_model(checked(target))),
      mem_(model_.hp, target.n_ctx(), target.n_seq_max(), target.type_k(), target.type_v(),
           batch_of(target)),
      scratch_(model_, batch_of(target), target.n_ctx(), target.max_threads(), target.n_seq_max()),
      n_embd_(model_.hp.n_embd),
      n_vocab_(model_.hp.n_vocab),
      tokens_(target.n_seq_max()),
      h_rows_(target.n_seq_max()),
      h_pos0_(target.n_seq_max(), 0),
      seq_count_(target.n_seq_max(), 0) {
    if (!(p_min >= 0.0f && p_min <= 1.0f)) {
        fail(ErrorKind::invalid_argument, "--draft-p-min {}: expected 0..1", p_min);
    }
    if (target.decode_observer()) {
        fail(ErrorKind::invalid_argument,
             "--spec-type mtp: the target context already has a decode observer (one MTP "
             "drafter per context)");
    }
    hidden_.resize(size_t(scratch_.max_batch()) * n_embd_);
    target.set_decode_observer(this);
}

MtpDrafter::~MtpDrafter() {
    if (target_.decode_observer() == this) target_.set_decode_observer(nullptr);
}

uint64_t MtpDrafter::bytes() const {
    uint64_t floats = hidden_.capacity() + logits_.capacity() + q_h_.capacity();
    for (const auto& r : h_rows_) floats += r.capacity();
    // The target's hidden states for this observer (Context::set_decode_observer).
    floats += uint64_t(target_.max_batch()) * n_embd_;
    return mem_.bytes() + scratch_.bytes() + floats * sizeof(float);
}

uint64_t MtpDrafter::planned_bytes(const Model& target, uint32_t n_ctx, uint32_t n_batch,
                                   uint32_t n_seq, GgmlType type_k, GgmlType type_v,
                                   int n_threads) {
    if (target.nextn.empty()) return 0;
    const Model head = nextn_model(target);
    n_seq = std::max(1u, n_seq);
    n_batch = std::clamp<uint32_t>(n_batch, 1, n_ctx);
    const uint64_t n_embd = target.hp.n_embd;
    // The target's hidden states and the head's own (a batch each), the last chunk's rows per
    // sequence, the queued inputs, and a logits row per drafting sequence.
    const uint64_t floats = 3 * uint64_t(n_batch) * n_embd + uint64_t(n_seq) * n_batch * n_embd +
                            uint64_t(n_seq) * (target.hp.n_vocab + n_embd);
    return SeqMemory::bytes_needed(head.hp, n_ctx, type_k, type_v, n_seq, n_batch) +
           ForwardScratch::planned_bytes(head, n_batch, n_ctx, n_threads, n_seq) +
           floats * sizeof(float);
}

const float* MtpDrafter::h_at(uint32_t seq, int64_t pos) const {
    const std::vector<float>& rows = h_rows_[seq];
    const int64_t n = int64_t(rows.size() / n_embd_);
    if (pos < int64_t(h_pos0_[seq]) || pos >= int64_t(h_pos0_[seq]) + n) return nullptr;
    return rows.data() + size_t(pos - h_pos0_[seq]) * n_embd_;
}

void MtpDrafter::queue(uint32_t seq, int32_t token, const float* h, bool logits) {
    const bool any_logits =
        std::any_of(q_.begin(), q_.end(), [](const Queued& x) { return x.logits; });
    // A long catch-up goes in passes of one batch (the queue's rows stay bounded); once a
    // logits row is queued the pass waits for the caller's flush().
    if (!any_logits && q_.size() >= scratch_.max_batch()) flush();
    q_.push_back({seq, token, logits});
    const size_t at = q_h_.size();
    q_h_.resize(at + n_embd_);
    if (h) {
        std::copy(h, h + n_embd_, q_h_.begin() + long(at));
    } else {
        std::fill(q_h_.begin() + long(at), q_h_.end(), 0.0f);
    }
}

void MtpDrafter::flush() {
    const uint32_t n = uint32_t(q_.size());
    out_row_.assign(n, -1);
    int32_t rows = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (q_[i].logits) out_row_[i] = rows++;
    }
    logits_.resize(size_t(rows) * n_vocab_);
    out_hidden_.resize(size_t(rows) * n_embd_);
    tokens_buf_.resize(n);
    for (uint32_t i = 0; i < n; ++i) tokens_buf_[i] = q_[i].token;
    try {
        for (uint32_t begin = 0; begin < n;) {
            const uint32_t end = std::min(n, begin + scratch_.max_batch());
            // Each sequence's tokens are consecutive in the queue: one run each.
            runs_.clear();
            outputs_.clear();
            int32_t first_row = -1;
            std::fill(seq_count_.begin(), seq_count_.end(), 0u);
            for (uint32_t k = begin; k < end; ++k) {
                const uint32_t seq = q_[k].seq;
                if (runs_.empty() || runs_.back().seq != seq) {
                    if (seq_count_[seq] > 0) {
                        fail(ErrorKind::invalid_argument, "MTP drafter: sequence {} queued apart",
                             seq);
                    }
                    runs_.push_back({seq, k - begin, 0, mem_.seq_len(seq)});
                }
                ++runs_.back().n_tokens;
                ++seq_count_[seq];
                if (out_row_[k] >= 0) {
                    if (first_row < 0) first_row = out_row_[k];
                    outputs_.push_back(k - begin);
                }
            }
            for (const ForwardSeq& r : runs_) mem_.kv().reserve(r.seq, r.n_tokens);
            ForwardBatch fb{};
            fb.tokens = tokens_buf_.data() + begin;
            fb.n_tokens = end - begin;
            fb.seqs = runs_.data();
            fb.n_seqs = uint32_t(runs_.size());
            fb.outputs = outputs_.data();
            fb.n_outputs = uint32_t(outputs_.size());
            fb.embd_h = q_h_.data() + size_t(begin) * n_embd_;
            float* out = first_row < 0 ? nullptr : logits_.data() + size_t(first_row) * n_vocab_;
            forward(model_, mem_, scratch_, target_.parallel(), fb, out, hidden_.data());
            for (const ForwardSeq& r : runs_) {
                mem_.kv().set_len(r.seq, r.pos0 + r.n_tokens);
                tokens_[r.seq].insert(tokens_[r.seq].end(), fb.tokens + r.first_token,
                                      fb.tokens + r.first_token + r.n_tokens);
            }
            for (uint32_t k = begin; k < end; ++k) {
                if (out_row_[k] < 0) continue;
                const float* h = hidden_.data() + size_t(k - begin) * n_embd_;
                std::copy(h, h + n_embd_, out_hidden_.begin() + long(out_row_[k]) * n_embd_);
            }
            begin = end;
        }
    } catch (...) {
        q_.clear();
        q_h_.clear();
        throw;
    }
    q_.clear();
    q_h_.clear();
}

void MtpDrafter::sync_prefix(uint32_t seq, std::span<const int32_t> tokens, uint32_t limit) {
    std::vector<int32_t>& held = tokens_[seq];
    const size_t n = std::min({held.size(), tokens.size(), size_t(limit)});
    uint32_t keep = uint32_t(
        std::mismatch(held.begin(), held.begin() + long(n), tokens.begin()).first - held.begin());
    if (keep < held.size()) {
        mem_.truncate(seq, keep);
        held.resize(keep);
        // The target's hidden states past the common prefix belong to other tokens (rejected
        // drafts, a replaced tail): h at keep - 1 and before stays.
        std::vector<float>& rows = h_rows_[seq];
        if (h_pos0_[seq] >= keep) {
            rows.clear();
        } else {
            rows.resize(std::min(rows.size(), size_t(keep - h_pos0_[seq]) * n_embd_));
        }
    }
}

void MtpDrafter::on_chunk(const ForwardBatch& b, const float* hidden) {
    try {
        for (uint32_t r = 0; r < b.n_seqs; ++r) {
            const ForwardSeq& run = b.seqs[r];
            const uint32_t seq = run.seq;
            // What the target held before this batch (its later chunks are not in it yet).
            const std::span<const int32_t> before = target_.seq_tokens(seq);
            const std::vector<int32_t>& held = tokens_[seq];
            if (before.size() >= run.pos0) {
                sync_prefix(seq, before, run.pos0);
            } else if (held.size() > run.pos0) {
                // An earlier chunk of this batch: the head holds it already.
                mem_.truncate(seq, run.pos0);
                tokens_[seq].resize(run.pos0);
            }
            uint32_t len = uint32_t(tokens_[seq].size());
            if (len < run.pos0 && before.size() >= run.pos0) {
                // Positions the head never saw: their tokens with h = 0 where it is unknown.
                for (uint32_t p = len; p < run.pos0; ++p) {
                    queue(seq, before[p], h_at(seq, int64_t(p) - 1), false);
                }
                len = run.pos0;
            }
            if (len == run.pos0) {
                for (uint32_t i = 0; i < run.n_tokens; ++i) {
                    const float* h = i == 0 ? h_at(seq, int64_t(run.pos0) - 1)
                                            : hidden + size_t(run.first_token + i - 1) * n_embd_;
                    queue(seq, b.tokens[run.first_token + i], h, false);
                }
            }
            // The target's rows of this run: h at the last accepted position after a
            // verification pass, and the pair of the next chunk's first token. (After the
            // queued tokens copied what they need.)
            h_pos0_[seq] = run.pos0;
            h_rows_[seq].assign(hidden + size_t(run.first_token) * n_embd_,
                                hidden + size_t(run.first_token + run.n_tokens) * n_embd_);
        }
        flush();
    } catch (const Error&) {
        // The head could not follow (its cache full): it drafts from what it holds, and the
        // next draft catches up from the tokens (with h = 0 where they were missed).
        q_.clear();
        q_h_.clear();
        for (uint32_t s = 0; s < tokens_.size(); ++s) tokens_[s].resize(mem_.seq_len(s));
    }
}

void MtpDrafter::on_shift(uint32_t seq, uint32_t n_keep, uint32_t n_discard) {
    std::vector<int32_t>& held = tokens_[seq];
    if (held.size() >= size_t(n_keep) + n_discard) {
        mem_.discard(seq, n_keep, n_discard, model_.rope, model_.rope_swa, target_.parallel());
        held.erase(held.begin() + n_keep, held.begin() + n_keep + n_discard);
    } else if (held.size() > n_keep) {
        mem_.truncate(seq, n_keep);
        held.resize(n_keep);
    }
    if (h_pos0_[seq] >= n_keep + n_discard) {
        h_pos0_[seq] -= n_discard;
    } else {
        h_rows_[seq].clear();
    }
}

void MtpDrafter::propose(std::span<const Request> requests) {
    struct Live {
        const Request* r;
        uint32_t n_max;
        int32_t queued;  // index in the queue of its token with logits
    };
    std::vector<Live> live;
    if (keep_logits_) draft_logits_.clear();
    for (const Request& r : requests) {
        r.out->clear();
        if (r.seq >= tokens_.size()) {
            fail(ErrorKind::invalid_argument, "MTP drafter: sequence {} of {}", r.seq,
                 tokens_.size());
        }
        const uint32_t n = uint32_t(r.context.size());
        if (n == 0 || r.n_max == 0 || n >= mem_.n_ctx()) continue;
        live.push_back({&r, std::min(r.n_max, mem_.n_ctx() - n + 1), -1});
    }
    if (live.empty()) return;
    try {
        // Each sequence's cache becomes its context before the pending token (what the target
        // holds); the pending token then goes with h at the position before it.
        for (Live& l : live) {
            const uint32_t seq = l.r->seq;
            const std::span<const int32_t> ctx = l.r->context;
            const uint32_t len = uint32_t(ctx.size()) - 1;
            sync_prefix(seq, ctx, len);
            for (uint32_t p = uint32_t(tokens_[seq].size()); p < len; ++p) {
                queue(seq, ctx[p], h_at(seq, int64_t(p) - 1), false);
            }
        }
        flush();
        for (Live& l : live) {
            const uint32_t len = uint32_t(l.r->context.size()) - 1;
            l.queued = int32_t(q_.size());
            queue(l.r->seq, l.r->context[len], h_at(l.r->seq, int64_t(len) - 1), true);
        }
        for (uint32_t i = 0; !live.empty(); ++i) {
            flush();
            std::vector<Live> next;
            std::vector<std::pair<uint32_t, int32_t>> feed;  // (live index, its row)
            for (Live& l : live) {
                const int32_t row = out_row_[size_t(l.queued)];
                const float* logits = logits_.data() + size_t(row) * n_vocab_;
                if (keep_logits_ && l.r == &requests[0]) {
                    draft_logits_.insert(draft_logits_.end(), logits, logits + n_vocab_);
                }
                const int32_t t = argmax_of(logits, n_vocab_);
                const float p_min = l.r->p_min >= 0.0f ? l.r->p_min : p_min_;
                if (p_min > 0.0f && top_prob(logits, n_vocab_, t) < p_min) continue;
                l.r->out->tokens.push_back(t);
                l.r->out->q.emplace_back();
                if (i + 1 >= l.n_max) continue;
                feed.push_back({uint32_t(next.size()), row});
                next.push_back(l);
            }
            // The next drafted position of each: the draft with the head's own output.
            std::vector<float> h(feed.size() * n_embd_);
            for (size_t j = 0; j < feed.size(); ++j) {
                const float* src = out_hidden_.data() + size_t(feed[j].second) * n_embd_;
                std::copy(src, src + n_embd_, h.begin() + long(j * n_embd_));
            }
            for (size_t j = 0; j < feed.size(); ++j) {
                Live& l = next[feed[j].first];
                l.queued = int32_t(q_.size());
                queue(l.r->seq, l.r->out->tokens.back(), h.data() + j * n_embd_, true);
            }
            live = std::move(next);
        }
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::context_full) throw;
        // No room in the head's cache: what was drafted stands, the rest is not drafted.
        q_.clear();
        q_h_.clear();
        for (uint32_t s = 0; s < tokens_.size(); ++s) tokens_[s].resize(mem_.seq_len(s));
    }
}

}  // namespace mw
