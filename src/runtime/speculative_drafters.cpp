// The drafters of speculative decoding: a draft model, n-gram lookup and the oracle.
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "runtime/speculative.h"

namespace mw {

namespace {

class ModelBatchDrafter final : public BatchDrafter {
  public:
    ModelBatchDrafter(Context& ctx, float p_min)
        : ctx_(ctx), p_min_(p_min), marks_(ctx.n_seq_max(), UINT32_MAX) {}

    void propose(std::span<const Request> requests) override {
        live_.clear();
        for (const Request& r : requests) {
            r.out->clear();
            ctx_.seq_len(r.seq);  // checks the id
            const uint32_t n = uint32_t(r.context.size());
            if (n == 0 || r.n_max == 0 || n >= ctx_.n_ctx()) continue;
            live_.push_back({&r, std::min(r.n_max, ctx_.n_ctx() - n), -1});
        }
        if (live_.empty()) return;
        sync();
        const int32_t n_vocab = int32_t(ctx_.model().model.hp.n_vocab);
        for (uint32_t i = 0; !live_.empty(); ++i) {
            // Each sequence's next token from its logits; those that go on decode it together.
            batch_.clear();
            size_t kept = 0;
            for (Live& l : live_) {
                const float* logits = ctx_.logits(l.row);
                const int32_t t = argmax(logits, n_vocab);
                const float p_min = l.request->p_min >= 0.0f ? l.request->p_min : p_min_;
                if (p_min > 0.0f && top_prob(logits, n_vocab, t) < p_min) continue;
                l.request->out->tokens.push_back(t);
                l.request->out->q.emplace_back();
                if (i + 1 == l.n_max) continue;
                l.row = int32_t(batch_.size());
                batch_.push_back({t, l.request->seq, -1, true});
                live_[kept++] = l;
            }
            live_.resize(kept);
            if (!batch_.empty()) ctx_.decode(batch_);
        }
    }

  private:
    struct Live {
        const Request* request;
        uint32_t n_max;
        int32_t row;  // batch index of its logits in the last pass
    };

    // Each draft sequence becomes its request's context: its common prefix with what it holds
    // is kept (going back to the mark of the last drafting when it can: no recomputation, even
    // for a recurrent draft; the sequences going back replay together), the rest decoded in one
    // pass for all; the last token always, for its logits.
    void sync() {
        rollbacks_.clear();
        for (const Live& l : live_) {
            const uint32_t seq = l.request->seq;
            const uint32_t len = ctx_.seq_len(seq);
            const std::span<const int32_t> context = l.request->context;
            uint32_t keep =
                std::min(ctx_.seq_common_prefix(seq, context), uint32_t(context.size()) - 1);
            if (keep >= len) continue;
            if (marks_[seq] <= keep && marks_[seq] <= len) {
                rollbacks_.push_back({seq, keep});
            } else {
                ctx_.seq_truncate(seq, ctx_.seq_keepable(seq, keep));
            }
        }
        if (!rollbacks_.empty()) ctx_.seq_rollback(rollbacks_);
        batch_.clear();
        for (Live& l : live_) {
            const uint32_t seq = l.request->seq;
            const std::span<const int32_t> context = l.request->context;
            for (size_t p = ctx_.seq_len(seq); p < context.size(); ++p) {
                if (p + 1 == context.size()) l.row = int32_t(batch_.size());
                batch_.push_back({context[p], seq, -1, p + 1 == context.size()});
            }
        }
        ctx_.decode(batch_);
        for (const Live& l : live_) {
            ctx_.seq_mark(l.request->seq);
            marks_[l.request->seq] = ctx_.seq_len(l.request->seq);
        }
    }

    static float top_prob(const float* l, int32_t n, int32_t top) {
        double sum = 0.0;
        for (int32_t i = 0; i < n; ++i) sum += std::exp(double(l[i]) - double(l[top]));
        return float(1.0 / sum);
    }

    Context& ctx_;
    float p_min_;
    std::vector<uint32_t> marks_;  // per sequence: its length at the last drafting
    std::vector<Live> live_;
    std::vector<std::pair<uint32_t, uint32_t>> rollbacks_;
    std::vector<BatchToken> batch_;
};

class BatchMemberDrafter final : public Drafter {
  public:
    BatchMemberDrafter(std::shared_ptr<BatchDrafter> batch, uint32_t seq)
        : batch_(std::move(batch)), seq_(seq) {}
    const char* name() const override { return "draft-model"; }
    void propose(std::span<const int32_t> context, uint32_t n_max, Draft& out) override {
        const BatchDrafter::Request r{seq_, context, n_max, &out};
        batch_->propose({&r, 1});
    }

  private:
    std::shared_ptr<BatchDrafter> batch_;
    uint32_t seq_;
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

std::shared_ptr<BatchDrafter> make_model_batch_drafter(Context& draft_ctx, float p_min) {
    return std::make_shared<ModelBatchDrafter>(draft_ctx, p_min);
}

std::unique_ptr<Drafter> make_batch_member_drafter(std::shared_ptr<BatchDrafter> batch,
                                                   uint32_t seq) {
    return std::make_unique<BatchMemberDrafter>(std::move(batch), seq);
}

std::unique_ptr<Drafter> make_model_drafter(Context& draft_ctx, float p_min, uint32_t seq) {
    return make_batch_member_drafter(make_model_batch_drafter(draft_ctx, p_min), seq);
}

std::unique_ptr<Drafter> make_ngram_drafter(uint32_t size_n, uint32_t size_m) {
    return std::make_unique<NgramDrafter>(size_n, size_m);
}

std::unique_ptr<Drafter> make_oracle_drafter(std::vector<int32_t> reference, float p, uint64_t seed,
                                             int32_t n_vocab) {
    return std::make_unique<OracleDrafter>(std::move(reference), p, seed, n_vocab);
}

}  // namespace mw
