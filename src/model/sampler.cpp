#include "model/sampler.h"

#include <algorithm>
#include <cmath>

namespace mw {

int32_t argmax(const float* logits, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {}

void Sampler::reset() {
    rng_.seed(params_.seed);
    recent_.clear();
}

void Sampler::accept(int32_t token) {
    if (params_.repeat_last_n == 0) return;
    recent_.push_back(token);
    if (params_.repeat_last_n > 0) {
        while (recent_.size() > size_t(params_.repeat_last_n)) recent_.pop_front();
    }
}

void Sampler::apply_penalty() {
    const bool repeat = params_.repeat_penalty != 1.0f;
    const bool additive = params_.frequency_penalty != 0.0f || params_.presence_penalty != 0.0f;
    if ((!repeat && !additive) || recent_.empty()) return;
    // Each distinct recent token once, with its count: the repetition penalty divides positive
    // logits and multiplies negative ones; the frequency penalty subtracts per occurrence and
    // the presence penalty once.
    counted_.assign(recent_.begin(), recent_.end());
    std::sort(counted_.begin(), counted_.end());
    for (size_t i = 0; i < counted_.size();) {
        size_t j = i;
        while (j < counted_.size() && counted_[j] == counted_[i]) ++j;
        const int32_t id = counted_[i];
        const float count = float(j - i);
        i = j;
        if (id < 0 || size_t(id) >= cand_.size()) continue;
        float& l = cand_[size_t(id)].logit;  // candidates are still indexed by id here
        if (repeat) l = l > 0.0f ? l / params_.repeat_penalty : l * params_.repeat_penalty;
        l -= count * params_.frequency_penalty + params_.presence_penalty;
    }
}

void Sampler::keep_top_k(size_t k) {
    k = std::min(k, cand_.size());
    auto by_logit = [](const Candidate& a, const Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.end(), by_logit);
    cand_.resize(k);
    sorted_ = true;
}

void Sampler::softmax_sorted() {
    if (!sorted_) keep_top_k(cand_.size());
    const float max = cand_.front().logit;
    double sum = 0.0;
    for (Candidate& c : cand_) {
        c.p = std::exp(c.logit - max);
        sum += c.p;
    }
    for (Candidate& c : cand_) c.p = float(c.p / sum);
}

void Sampler::keep_top_p(float p) {
    softmax_sorted();
    double cum = 0.0;
    size_t keep = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
        cum += cand_[i].p;
        if (cum >= p) {
            keep = i + 1;
            break;
        }
    }
    cand_.resize(keep);
}

void Sampler::keep_min_p(float p) {
    softmax_sorted();
    const float threshold = cand_.front().p * p;
    size_t keep = 1;
    while (keep < cand_.size() && cand_[keep].p >= threshold) ++keep;
    cand_.resize(keep);
}

long Sampler::prepare(const float* logits, int32_t n_vocab) {
    cand_.resize(size_t(n_vocab));
    for (int32_t i = 0; i < n_vocab; ++i) cand_[size_t(i)] = {i, logits[i], 0.0f};
    sorted_ = false;
    apply_penalty();

    if (params_.temperature <= 0.0f) {
        size_t best = 0;
        for (size_t i = 1; i < cand_.size(); ++i) {
            if (cand_[i].logit > cand_[best].logit) best = i;
        }
        return long(best);
    }
    if (params_.top_k > 0) keep_top_k(size_t(params_.top_k));
    if (params_.top_p < 1.0f) keep_top_p(params_.top_p);
    if (params_.min_p > 0.0f) keep_min_p(params_.min_p);
    // Temperature, then the remaining distribution.
    for (Candidate& c : cand_) c.logit /= params_.temperature;
    sorted_ = false;
    softmax_sorted();
    return -1;
}

double Sampler::uniform() {
    // 53 random bits -> uniform double in [0, 1): the same on every platform (std::
    // uniform_real_distribution is not).
    return double(rng_() >> 11) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::sample(const float* logits, int32_t n_vocab) {
    const long greedy = prepare(logits, n_vocab);
    if (greedy >= 0) return cand_[size_t(greedy)].id;
    const double u = uniform();
    double cum = 0.0;
    for (const Candidate& c : cand_) {
        cum += c.p;
        if (u < cum) return c.id;
    }
    return cand_.back().id;
}

void Sampler::distribution(const float* logits, int32_t n_vocab, std::vector<TokenProb>& out) {
    out.clear();
    const long greedy = prepare(logits, n_vocab);
    if (greedy >= 0) {
        out.push_back({cand_[size_t(greedy)].id, 1.0f});
        return;
    }
    for (const Candidate& c : cand_) out.push_back({c.id, c.p});
}

}  // namespace mw
