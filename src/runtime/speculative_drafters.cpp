// The drafters of speculative decoding: a draft model, n-gram lookup and the oracle.
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "runtime/speculative.h"

namespace mw {

namespace {

class ModelDrafter final : public Drafter {
  public:
    ModelDrafter(Context& ctx, float p_min, uint32_t seq) : ctx_(ctx), p_min_(p_min), seq_(seq) {
        ctx.seq_len(seq);  // checks the id
    }
    const char* name() const override { return "draft-model"; }

    void propose(std::span<const int32_t> context, uint32_t n_max, Draft& out) override {
        out.clear();
        const uint32_t n = uint32_t(context.size());
        if (n == 0 || n_max == 0 || n >= ctx_.n_ctx()) return;
        n_max = std::min(n_max, ctx_.n_ctx() - n);
        sync(context);
        const int32_t n_vocab = int32_t(ctx_.model().model.hp.n_vocab);
        for (uint32_t i = 0; i < n_max; ++i) {
            const float* l = ctx_.logits(-1);
            const int32_t t = argmax(l, n_vocab);
            if (p_min_ > 0.0f && top_prob(l, n_vocab, t) < p_min_) break;
            out.tokens.push_back(t);
            out.q.emplace_back();
            if (i + 1 == n_max) break;
            decode({&t, 1});
        }
    }

  private:
    // The draft's sequence becomes `context`: its common prefix with what it holds is kept
    // (going back to the mark of the last drafting when it can: no recomputation, even for a
    // recurrent draft), the rest decoded; the last token always, for its logits.
    void sync(std::span<const int32_t> context) {
        const uint32_t len = ctx_.seq_len(seq_);
        uint32_t keep =
            std::min(ctx_.seq_common_prefix(seq_, context), uint32_t(context.size()) - 1);
        if (keep < len) {
            if (mark_ <= keep && mark_ <= len) {
                ctx_.seq_rollback(seq_, keep);
            } else {
                keep = ctx_.seq_keepable(seq_, keep);
                ctx_.seq_truncate(seq_, keep);
            }
        }
        decode(context.subspan(keep));
        ctx_.seq_mark(seq_);
        mark_ = ctx_.seq_len(seq_);
    }

    // Appends tokens to the draft's sequence, the last one's logits kept.
    void decode(std::span<const int32_t> tokens) {
        batch_.clear();
        for (size_t i = 0; i < tokens.size(); ++i) {
            batch_.push_back({tokens[i], seq_, -1, i + 1 == tokens.size()});
        }
        ctx_.decode(batch_);
    }

    static float top_prob(const float* l, int32_t n, int32_t top) {
        double sum = 0.0;
        for (int32_t i = 0; i < n; ++i) sum += std::exp(double(l[i]) - double(l[top]));
        return float(1.0 / sum);
    }

    Context& ctx_;
    float p_min_;
    uint32_t seq_;
    uint32_t mark_ = UINT32_MAX;
    std::vector<BatchToken> batch_;
};

class NgramDrafter final : public Drafter {
  public:
    NgramDrafter(uint32_t size_n, uint32_t size_m) : n_(size_n), m_(size_m) {
        if (size_n == 0 || size_m == 0) {
            fail(ErrorKind::invalid_argument,
                 "n-gram drafts: --spec-ngram-size-n and --spec-ngram-size-m must be 1 or more");
        }
    }
    const char* name() const override { return "ngram"; }

    void propose(std::span<const int32_t> context, uint32_t n_max, Draft& out) override {
        out.clear();
        const size_t len = context.size();
        if (len <= n_) return;
        const auto key = context.subspan(len - n_);
        // The latest earlier occurrence: recent text is the likeliest to repeat.
        for (size_t j = len - n_; j-- > 0;) {
            if (!std::equal(key.begin(), key.end(), context.begin() + long(j))) continue;
            const size_t from = j + n_;
            const size_t take = std::min<size_t>({n_max, m_, len - from});
            out.tokens.assign(context.begin() + long(from), context.begin() + long(from + take));
            out.q.resize(take);
            return;
        }
    }

  private:
    uint32_t n_, m_;
};

class OracleDrafter final : public Drafter {
  public:
    OracleDrafter(std::vector<int32_t> reference, float p, uint64_t seed, int32_t n_vocab)
        : ref_(std::move(reference)), p_(p), rng_(seed), n_vocab_(n_vocab) {
        if (!(p >= 0.0f && p <= 1.0f)) {
            fail(ErrorKind::invalid_argument, "--draft-oracle {}: expected a probability 0..1", p);
        }
        if (n_vocab < 2) fail(ErrorKind::invalid_argument, "oracle drafts need 2 tokens or more");
    }
    const char* name() const override { return "oracle"; }

    void propose(std::span<const int32_t> context, uint32_t n_max, Draft& out) override {
        out.clear();
        const size_t c = context.size();
        if (c > ref_.size() || !std::equal(context.begin(), context.end(), ref_.begin())) return;
        for (size_t pos = c; pos < ref_.size() && out.tokens.size() < n_max; ++pos) {
            int32_t t = ref_[pos];
            if (double(rng_() >> 11) * (1.0 / 9007199254740992.0) >= double(p_)) {
                t = int32_t((uint64_t(t) + 1 + rng_() % uint64_t(n_vocab_ - 1)) %
                            uint64_t(n_vocab_));
            }
            out.tokens.push_back(t);
        }
        out.q.resize(out.tokens.size());
    }

  private:
    std::vector<int32_t> ref_;
    float p_;
    std::mt19937_64 rng_;
    int32_t n_vocab_;
};

}  // namespace

std::unique_ptr<Drafter> make_model_drafter(Context& draft_ctx, float p_min, uint32_t seq) {
    return std::make_unique<ModelDrafter>(draft_ctx, p_min, seq);
}

std::unique_ptr<Drafter> make_ngram_drafter(uint32_t size_n, uint32_t size_m) {
    return std::make_unique<NgramDrafter>(size_n, size_m);
}

std::unique_ptr<Drafter> make_oracle_drafter(std::vector<int32_t> reference, float p, uint64_t seed,
                                             int32_t n_vocab) {
    return std::make_unique<OracleDrafter>(std::move(reference), p, seed, n_vocab);
}

}  // namespace mw
