// Continuous batching over the sequences of one context: every request gets a slot (a sequence
// of the KV cache); each step of the scheduler's thread runs one forward pass holding the next
// token of every generating slot and chunks of the prompts being read, so requests join and
// leave the running batch between steps and the weights are read once per step for all of
// them. A new request takes the free slot whose cached tokens share the longest prefix with its
// prompt (or copies a longer shared prefix from another slot) and decodes only the rest.
//
// Requests reach the scheduler through submit() from any thread; results flow back through a
// Channel the caller waits on. Cancelling a channel (client gone, timeout) frees its slot at the
// next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/sampler.h"
#include "runtime/context.h"
#include "runtime/speculative.h"
#include "runtime/stop_strings.h"
#include "vocab/vocab.h"

namespace mw::server {

enum class Finish { none, stop, length, cancelled, timeout, error };
const char* finish_name(Finish f);  // OpenAI's finish_reason ("stop", "length", ...)

struct Usage {
    int32_t prompt_tokens = 0;
    int32_t cached_tokens = 0;  // of the prompt, reused from the cache
    int32_t completion_tokens = 0;
    double queued_ms = 0.0;  // from submit to a slot
    double prompt_ms = 0.0;  // from a slot to the first token
    double decode_ms = 0.0;  // from the first token to the end
    // Speculative decoding: tokens drafted and of them accepted (-1: speculation off).
    int32_t draft_n = -1;
    int32_t draft_accepted = 0;
};

// What one request receives: text as it is generated, then the end. Thread-safe.
class Channel {
  public:
    struct Update {
        std::string text;
        bool done = false;
        Finish finish = Finish::none;
        Usage usage;
        std::string error;  // when finish == error
    };

    // Scheduler side.
    void emit(const std::string& text);
    void finish(Finish f, const Usage& usage, const std::string& error = {});

    // Request side: waits up to `wait` for new text or the end, and takes it.
    Update take(std::chrono::milliseconds wait);
    // Stops the request (client gone, shutdown); the scheduler frees its slot.
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::string pending_;
    bool done_ = false;
    bool taken_done_ = false;
    Finish finish_ = Finish::none;
    Usage usage_;
    std::string error_;
    std::atomic<bool> cancelled_{false};
};

struct Job {
    std::vector<int32_t> prompt;
    int32_t max_tokens = -1;  // -1: until an end token or the slot's context is full
    SamplerParams sampling;
    std::vector<std::string> stop;
    bool ignore_eos = false;
    // Special tokens as their text (gpt-oss's harmony markers, parsed by the request's side).
    bool special_text = false;
    // Speculative decoding for this request (llama-server's speculative.n_max, .n_min, .p_min),
    // below 0: the server's; draft_max 0: no drafts for this request.
    int32_t draft_max = -1;
    int32_t draft_min = -1;
    float draft_p_min = -1.0f;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    std::shared_ptr<Channel> channel;
};

struct SchedulerParams {
    uint32_t n_ctx_slot = 0;  // positions one slot may hold (prompt + generated)
    uint32_t queue_max = 64;  // requests waiting for a slot, beyond those a free slot takes
    uint32_t n_batch = 512;   // tokens per forward step
    // Called after each forward step, outside the scheduler's lock (pacing); may be empty.
    std::function<void(Context&)> after_step;
    // Speculative decoding, off when empty: the drafter of each slot (made once per slot, it
    // keeps what it learnt between requests), drafting up to spec.draft_max tokens a step.
    std::function<std::unique_ptr<Drafter>(uint32_t slot)> make_drafter;
    SpecParams spec;
    // A draft model serving every slot (slot i on its sequence i): when given, the slots draft
    // together, one draft pass per drafted position for all of them.
    std::shared_ptr<BatchDrafter> batch_drafter;
};

struct SchedulerStats {
    uint32_t slots = 0;
    uint32_t slots_busy = 0;
    uint32_t queued = 0;
    uint32_t kv_used = 0;  // positions
    uint32_t kv_size = 0;
    uint64_t requests_done = 0;
    uint64_t prompt_tokens = 0;  // decoded (reused ones not counted)
    uint64_t cached_tokens = 0;  // reused
    uint64_t generated_tokens = 0;
    double prompt_seconds = 0.0;  // in steps that read prompts
    double decode_seconds = 0.0;  // in steps of generated tokens only
    uint64_t steps = 0;
    // Speculative decoding, every slot's counters summed (passes: slot steps with drafts,
    // plain_steps: without; verify_ms: the steps that held drafts).
    bool speculative = false;
    SpecStats spec;
};

class Scheduler {
  public:
    // The context's sequences are the slots; the scheduler's thread is the only one using it.
    Scheduler(Context& ctx, const Vocab& vocab, const SchedulerParams& params);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    enum class Admit { queued, queue_full, stopping };
    // Queues a job. The prompt must be non-empty and shorter than n_ctx_slot (the caller checks
    // it, to answer with a clear message).
    Admit submit(Job job);
    // Stops taking jobs; lets running ones finish until `grace` has passed, then cancels what
    // is left (queued jobs are cancelled at once) and stops the thread.
    void shutdown(std::chrono::milliseconds grace);
    SchedulerStats stats() const;
    uint32_t n_ctx_slot() const { return params_.n_ctx_slot; }

  private:
    enum class State { idle, prompt, generate };
    struct Slot {
        State state = State::idle;
        Job job;
        std::unique_ptr<Sampler> sampler;
        std::unique_ptr<TokenTextStream> detok;
        StopMatcher stop;
        uint32_t prompt_done = 0;  // prompt tokens in the cache
        int32_t last_token = -1;   // sampled, not yet decoded
        int32_t n_generated = 0;
        uint64_t last_used = 0;  // step of the last use, for choosing between equal slots
        Usage usage;
        std::unique_ptr<Speculator> spec;  // null: speculation off
        bool spec_off = false;             // this request drafts nothing (draft_max 0)
        SpecStats spec_start;              // the speculator's counters when the request came
        std::chrono::steady_clock::time_point submitted, started, first_token;
    };

    void loop();
    void release_memory_when_idle();
    void admit(Job job, std::chrono::steady_clock::time_point submitted);
    void step();
    void on_logits(Slot& slot, uint32_t seq, const float* logits);
    // A token sampled for the slot (accepted by its sampler already); `last`: the one to decode
    // next. False when it ended the request.
    bool on_token(Slot& slot, uint32_t seq, int32_t token, bool last);
    uint32_t draft_room(uint32_t seq) const;
    uint32_t draft_n_max(const Slot& slot) const;
    void draft_together();
    void end(Slot& slot, Finish f, const std::string& error = {});

    Context& ctx_;
    const Vocab& vocab_;
    SchedulerParams params_;
    std::vector<Slot> slots_;
    std::vector<BatchToken> batch_;
    std::vector<std::pair<uint32_t, int32_t>> logit_rows_;  // (slot, batch index)
    std::vector<std::pair<uint32_t, int32_t>> spec_rows_;   // (slot, batch index of pending)
    std::vector<uint32_t> verify_seqs_;                     // slots with drafts in the batch
    std::vector<std::pair<uint32_t, uint32_t>> keep_;       // (slot, length kept)
    std::vector<std::vector<int32_t>> spec_out_;            // per spec_rows_ entry
    std::vector<BatchDrafter::Request> requests_;           // draft_together()

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::pair<Job, std::chrono::steady_clock::time_point>> queue_;
    bool stopping_ = false;
    uint32_t n_free_ = 0;  // idle slots (under mutex_)
    std::chrono::steady_clock::time_point stop_deadline_;
    SchedulerStats stats_;  // under mutex_
    uint64_t step_ = 0;
    std::thread thread_;
};

}  // namespace mw::server
