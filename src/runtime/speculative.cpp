#include "runtime/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/error.h"

namespace mw {

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

float prob_of(const std::vector<TokenProb>& dist, int32_t id) {
    for (const TokenProb& t : dist) {
        if (t.id == id) return t.p;
    }
    return 0.0f;
}

}  // namespace

double expected_tokens_per_pass(double p, uint32_t k) {
    if (p >= 1.0) return double(k) + 1.0;
    return (1.0 - std::pow(p, double(k) + 1.0)) / (1.0 - p);
}

Speculator::Speculator(Context& target, uint32_t seq, std::unique_ptr<Drafter> drafter,
                       const SpecParams& params)
    : target_(target), seq_(seq), drafter_(std::move(drafter)) {
    set_params(params);
    if (!drafter_) fail(ErrorKind::invalid_argument, "speculative decoding: no drafter");
    target.seq_len(seq);  // checks the id
}

void Speculator::set_params(const SpecParams& params) {
    if (params.draft_max == 0) {
        fail(ErrorKind::invalid_argument,
             "speculative decoding: --draft-max 0 drafts nothing; give 1 or more (or leave "
             "speculation off)");
    }
    if (params.draft_min > params.draft_max) {
        fail(ErrorKind::invalid_argument,
             "speculative decoding: --draft-min {} is above --draft-max {}", params.draft_min,
             params.draft_max);
    }
    params_ = params;
}

int32_t Speculator::judge(int32_t d, const std::vector<TokenProb>& q, Sampler& sampler,
                          bool& accepted) {
    // p_ holds the target's distribution at this position.
    if (sampler.params().temperature <= 0.0f) {
        accepted = d == p_.front().id;
        return p_.front().id;
    }
    const float pd = prob_of(p_, d);
    const float qd = q.empty() ? 1.0f : prob_of(q, d);
    if (qd > 0.0f && sampler.uniform() < std::min(1.0, double(pd) / double(qd))) {
        accepted = true;
        return d;
    }
    accepted = false;
    // Rejected: draw from max(0, p - q), normalised (a deterministic draft's q is 1 at d).
    const size_t n_vocab = target_.model().model.hp.n_vocab;
    residual_.assign(n_vocab, 0.0f);
    for (const TokenProb& t : p_) residual_[size_t(t.id)] = t.p;
    if (q.empty()) {
        residual_[size_t(d)] = 0.0f;
    } else {
        for (const TokenProb& t : q) {
            residual_[size_t(t.id)] = std::max(0.0f, residual_[size_t(t.id)] - t.p);
        }
    }
    double sum = 0.0;
    for (const TokenProb& t : p_) sum += residual_[size_t(t.id)];
    if (sum <= 0.0) return p_.front().id;  // p == q up to rounding: p's mode
    const double u = sampler.uniform() * sum;
    double cum = 0.0;
    for (const TokenProb& t : p_) {
        cum += residual_[size_t(t.id)];
        if (u < cum) return t.id;
    }
    for (size_t i = p_.size(); i-- > 0;) {
        if (residual_[size_t(p_[i].id)] > 0.0f) return p_[i].id;
    }
    return p_.front().id;
}

uint32_t Speculator::prepare(int32_t pending, uint32_t n_max, uint32_t room) {
    len_ = target_.seq_len(seq_);
    pending_ = pending;
    draft_.clear();
    const uint32_t ctx_room = target_.n_ctx() > len_ ? target_.n_ctx() - len_ : 0;
    // Pending takes a position, each draft one more; the pass fits one batch, so that a
    // sliding-window ring (window + batch positions) still holds what the kept ones attend to.
    k_ = std::min({params_.draft_max, n_max > 0 ? n_max - 1 : 0u, ctx_room > 0 ? ctx_room - 1 : 0u,
                   target_.max_batch() - 1, room});
    if (k_ == 0 || k_ < params_.draft_min) {
        k_ = 0;
        return 0;
    }
    const auto held = target_.seq_tokens(seq_);
    context_.assign(held.begin(), held.end());
    context_.push_back(pending);
    return k_;
}

uint32_t Speculator::submit(std::vector<BatchToken>& batch) {
    const Vocab& vocab = *target_.model().vocab;
    const int32_t n_vocab = int32_t(target_.model().model.hp.n_vocab);
    if (draft_.tokens.size() > k_) {
        draft_.tokens.resize(k_);
        draft_.q.resize(k_);
    }
    draft_.q.resize(draft_.tokens.size());
    // Nothing is drafted past an end of generation.
    for (size_t i = 0; i < draft_.tokens.size(); ++i) {
        if (draft_.tokens[i] < 0 || draft_.tokens[i] >= n_vocab) {
            fail(ErrorKind::invalid_argument, "{} drafter proposed token {} of {}",
                 drafter_->name(), draft_.tokens[i], n_vocab);
        }
        if (vocab.is_eog(draft_.tokens[i])) {
            draft_.tokens.resize(i + 1);
            draft_.q.resize(i + 1);
            break;
        }
    }
    if (draft_.tokens.size() < params_.draft_min) draft_.clear();
    batch.push_back({pending_, seq_, -1, true});
    for (int32_t d : draft_.tokens) batch.push_back({d, seq_, -1, true});
    if (!draft_.tokens.empty()) target_.seq_mark(seq_);
    return uint32_t(draft_.tokens.size());
}

uint32_t Speculator::draft(int32_t pending, uint32_t n_max, uint32_t room,
                           std::vector<BatchToken>& batch) {
    if (const uint32_t k = prepare(pending, n_max, room); k > 0) {
        const auto t0 = std::chrono::steady_clock::now();
        drafter_->propose(context_, k, draft_);
        stats_.draft_ms += ms_since(t0);
    }
    return submit(batch);
}

uint32_t Speculator::accept(int32_t first, Sampler& sampler, std::vector<int32_t>& out) {
    const Vocab& vocab = *target_.model().vocab;
    const int32_t n_vocab = int32_t(target_.model().model.hp.n_vocab);
    const size_t out0 = out.size();
    const uint32_t n_draft = uint32_t(draft_.tokens.size());
    uint32_t n_accepted = 0;
    bool ended = false;  // an accepted draft ended the generation
    for (uint32_t i = 0; i <= n_draft; ++i) {
        const float* logits = target_.logits(first + int32_t(i));
        if (!logits) fail(ErrorKind::invalid_argument, "speculative decoding: no logits at {}", i);
        if (i == n_draft) {  // every draft accepted (or none): the target's token after them
            const int32_t t = sampler.sample(logits, n_vocab);
            sampler.accept(t);
            out.push_back(t);
            break;
        }
        sampler.distribution(logits, n_vocab, p_);
        bool accepted = false;
        const int32_t t = judge(draft_.tokens[i], draft_.q[i], sampler, accepted);
        sampler.accept(t);
        out.push_back(t);
        if (!accepted) break;
        if (vocab.is_eog(t)) {
            ended = true;
            break;
        }
        ++n_accepted;
    }
    if (n_draft == 0) {
        ++stats_.plain_steps;
    } else {
        ++stats_.passes;
        stats_.drafted += n_draft;
        stats_.accepted += n_accepted + (ended ? 1 : 0);
    }
    stats_.generated += int64_t(out.size() - out0);
    // Pending and the accepted drafts (an accepted end token is returned, not decoded).
    return len_ + 1 + n_accepted;
}

void Speculator::step(int32_t pending, Sampler& sampler, uint32_t n_max,
                      std::vector<int32_t>& out) {
    batch_.clear();
    const uint32_t n_draft = draft(pending, n_max, UINT32_MAX, batch_);
    if (n_draft == 0) {
        // Plain decoding, exactly as without speculation.
        target_.decode(batch_);
        accept(0, sampler, out);
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    target_.decode_drafts(batch_);
    const uint32_t keep = accept(0, sampler, out);
    target_.seq_rollback(seq_, keep);
    stats_.verify_ms += ms_since(t0);
}

void check_draft_pairs(const LoadedModel& target, const LoadedModel& draft) {
    const Vocab& a = *target.vocab;
    const Vocab& b = *draft.vocab;
    if (target.model.hp.n_vocab != draft.model.hp.n_vocab || a.n_tokens() != b.n_tokens()) {
        fail(ErrorKind::invalid_argument,
             "draft model: its vocabulary has {} tokens, the target's {}: a draft must use the "
             "target's vocabulary (the same tokenizer), its tokens are proposed as the target's",
             draft.model.hp.n_vocab, target.model.hp.n_vocab);
    }
    if (a.type() != b.type()) {
        fail(ErrorKind::invalid_argument,
             "draft model: its tokenizer is of another kind ({} vs the target's {})", b.model(),
             a.model());
    }
    for (int32_t id = 0; id < a.n_tokens(); ++id) {
        if (a.token_text(id) != b.token_text(id)) {
            fail(ErrorKind::invalid_argument,
                 "draft model: token {} is \"{}\" in the draft and \"{}\" in the target: the "
                 "vocabularies differ, a draft must use the target's",
                 id, b.token_text(id), a.token_text(id));
        }
    }
}

}  // namespace mw
