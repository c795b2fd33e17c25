// Speculative decoding: a cheap drafter proposes the next k tokens of a sequence, the target
// model checks all of them in one forward pass (the weights are read once for k + 1 tokens),
// and the sequence keeps the accepted prefix plus one token of the target's own. Decode is
// bound by memory bandwidth, so a pass over k + 1 tokens costs little more than a pass over one.
//
// Acceptance keeps the target's distribution exactly: greedy, a draft is accepted while it
// equals the target's choice; sampling, draft token d drawn from the draft's q is accepted
// with probability min(1, p(d) / q(d)), and on rejection the token is drawn from the
// normalised max(0, p - q). Either way the text has the distribution of plain sampling (and
// greedy text equals plain greedy text), whatever the draft.
//
// Drafters: another model with the same vocabulary (greedy on its own context), n-gram lookup
// in the sequence's own tokens, and an oracle (a measurement device: it knows the target's
// greedy continuation from an earlier run and proposes it with probability P).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "model/sampler.h"
#include "runtime/context.h"

namespace mw {

// A proposal: tokens, and per token the draft's distribution it was drawn from (empty: chosen
// deterministically, q = 1 for it).
struct Draft {
    std::vector<int32_t> tokens;
    std::vector<std::vector<TokenProb>> q;
    void clear() {
        tokens.clear();
        q.clear();
    }
};

class Drafter {
  public:
    virtual ~Drafter() = default;
    // Up to n_max tokens that may follow `context` (the sequence's tokens, the last one not yet
    // decoded by the target).
    virtual void propose(std::span<const int32_t> context, uint32_t n_max, Draft& out) = 0;
    virtual const char* name() const = 0;
};

// A smaller model with the same vocabulary, greedy, on its own context (sequence `seq` of
// draft_ctx: the server's slots share one draft context), which follows the target's tokens: only
// what changed is decoded again. Stops early when its top token's probability falls below p_min.
std::unique_ptr<Drafter> make_model_drafter(Context& draft_ctx, float p_min, uint32_t seq = 0);
// The tokens that followed the last earlier occurrence of the context's last size_n tokens.
std::unique_ptr<Drafter> make_ngram_drafter(uint32_t size_n, uint32_t size_m);
// A draft model drafting for several sequences of its context at once (the server's slots):
// each sequence follows its own target sequence as make_model_drafter's does, and every
// drafted position is one forward pass of the draft model for all of them.
class BatchDrafter {
  public:
    struct Request {
        uint32_t seq;                      // of the draft context
        std::span<const int32_t> context;  // as Drafter::propose
        uint32_t n_max;
        Draft* out;
        float p_min = -1.0f;  // this request's p_min (a server request's); below 0: the drafter's
    };
    virtual ~BatchDrafter() = default;
    virtual void propose(std::span<const Request> requests) = 0;
};
std::shared_ptr<BatchDrafter> make_model_batch_drafter(Context& draft_ctx, float p_min);
// A Drafter for sequence `seq` of a shared BatchDrafter (one request at a time).
std::unique_ptr<Drafter> make_batch_member_drafter(std::shared_ptr<BatchDrafter> batch,
                                                   uint32_t seq);
// Measurement device: `reference` is the target's greedy text (prompt included) from a run
// without speculation; at each drafted position it proposes the reference token with
// probability p, another token otherwise. Once the sequence leaves the reference it proposes
// nothing.
std::unique_ptr<Drafter> make_oracle_drafter(std::vector<int32_t> reference, float p, uint64_t seed,
                                             int32_t n_vocab);

// Throws invalid_argument unless the draft model can propose tokens for the target: the same
// vocabulary (size and every token's text).
void check_draft_pairs(const LoadedModel& target, const LoadedModel& draft);

struct SpecParams {
    uint32_t draft_max = 8;  // tokens drafted per pass at most
    uint32_t draft_min = 0;  // fewer proposed: decode without them
};

struct SpecStats {
    int64_t passes = 0;       // verification passes (with drafts)
    int64_t plain_steps = 0;  // steps without drafts (none proposed, or no room)
    int64_t drafted = 0;      // tokens proposed and checked
    int64_t accepted = 0;     // of them accepted
    int64_t generated = 0;    // tokens the steps produced
    double draft_ms = 0.0;    // time in the drafter
    double verify_ms = 0.0;   // time in verification passes (rollback included)
};

class Speculator {
  public:
    // Throws invalid_argument for draft_max 0 or draft_min > draft_max.
    Speculator(Context& target, uint32_t seq, std::unique_ptr<Drafter> drafter,
               const SpecParams& params);

    // One step. `pending` is the token sampled last (accepted by the sampler, not decoded
    // yet); it is decoded with the drafted tokens in one pass, and `out` receives the tokens
    // that follow it: the accepted drafts, then one the target sampled, which is the next
    // pending token. Every token appended is accepted by `sampler`. At most n_max tokens (>= 1)
    // are appended; an end-of-generation token ends them and is never decoded. The drafts fit
    // the context's room (none when there is none, then pending is decoded alone; the caller
    // shifts or stops at a full context as without speculation).
    void step(int32_t pending, Sampler& sampler, uint32_t n_max, std::vector<int32_t>& out);

    // step() in two halves, for a forward pass shared with other sequences (the server's
    // slots). draft() appends `pending` and the drafts after it to `batch`, all with logits,
    // marking the sequence when there are drafts; `room` caps the drafts besides n_max (the
    // positions the caller lets this sequence take after pending). Returns the drafts
    // appended (0: pending alone, a plain step). Once the batch is decoded, accept() reads the
    // logits from batch index `first` (where pending went), appends the tokens as step() does
    // and returns the length the sequence keeps: the caller rolls it back to that (after a
    // plain step it is the length already).
    uint32_t draft(int32_t pending, uint32_t n_max, uint32_t room, std::vector<BatchToken>& batch);
    uint32_t accept(int32_t first, Sampler& sampler, std::vector<int32_t>& out);

    // draft() in parts, for a drafter serving several sequences at once (BatchDrafter):
    // prepare() returns how many tokens may be drafted (0: none) after context() (the
    // sequence's tokens and pending); the caller fills drafts() and calls submit(), which does
    // the rest of draft().
    uint32_t prepare(int32_t pending, uint32_t n_max, uint32_t room);
    std::span<const int32_t> context() const { return context_; }
    Draft& drafts() { return draft_; }
    uint32_t submit(std::vector<BatchToken>& batch);

    // New limits from the next step on (a server request's own); throws as the constructor.
    void set_params(const SpecParams& params);
    const SpecParams& params() const { return params_; }
    const SpecStats& stats() const { return stats_; }
    const Drafter& drafter() const { return *drafter_; }
    const Context& target() const { return target_; }

  private:
    // Accepts draft token d (drawn from q, empty: deterministic) against the target's p, or
    // returns the token to take instead.
    int32_t judge(int32_t d, const std::vector<TokenProb>& q, Sampler& sampler, bool& accepted);

    Context& target_;
    uint32_t seq_;
    uint32_t len_ = 0;  // the sequence's length before the pass draft() prepared
    uint32_t k_ = 0;    // drafts allowed in it
    int32_t pending_ = -1;
    std::unique_ptr<Drafter> drafter_;
    SpecParams params_;
    SpecStats stats_;
    Draft draft_;
    std::vector<int32_t> context_;
    std::vector<BatchToken> batch_;
    std::vector<TokenProb> p_;
    std::vector<float> residual_;
};

// Expected tokens per verification pass when each drafted token is accepted with probability
// p, independently, and k are drafted: 1 + p + ... + p^k = (1 - p^(k+1)) / (1 - p).
double expected_tokens_per_pass(double p, uint32_t k);

}  // namespace mw
