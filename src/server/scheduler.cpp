#include "server/scheduler.h"

#include <algorithm>
#include <exception>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/error.h"

namespace mw::server {

const char* finish_name(Finish f) {
    switch (f) {
        case Finish::none:
            return "none";
        case Finish::stop:
            return "stop";
        case Finish::length:
            return "length";
        case Finish::cancelled:
            return "cancelled";
        case Finish::timeout:
            return "timeout";
        case Finish::error:
            return "error";
    }
    return "error";
}

// ---- Channel -------------------------------------------------------------------------------

void Channel::emit(const std::string& text) {
    if (text.empty()) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pending_ += text;
    }
    cv_.notify_all();
}

void Channel::finish(Finish f, const Usage& usage, const std::string& error) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (done_) return;
        done_ = true;
        finish_ = f;
        usage_ = usage;
        error_ = error;
    }
    cv_.notify_all();
}

Channel::Update Channel::take(std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, wait, [&] { return !pending_.empty() || (done_ && !taken_done_); });
    Update u;
    u.text.swap(pending_);
    if (done_) {
        u.done = true;
        u.finish = finish_;
        u.usage = usage_;
        u.error = error_;
        taken_done_ = true;
    }
    return u;
}

// ---- Scheduler -----------------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

Scheduler::Scheduler(Context& ctx, const Vocab& vocab, const SchedulerParams& params)
    : ctx_(ctx), vocab_(vocab), params_(params), slots_(ctx.n_seq_max()) {
    if (params_.n_ctx_slot == 0) params_.n_ctx_slot = ctx.n_ctx() / ctx.n_seq_max();
    params_.n_ctx_slot = std::min(params_.n_ctx_slot, ctx.n_ctx());
    params_.n_batch = std::max<uint32_t>(params_.n_batch, 1);
    stats_.slots = uint32_t(slots_.size());
    n_free_ = uint32_t(slots_.size());
    stats_.kv_size = ctx.kv_positions_total();
    if (params_.make_drafter) {
        for (uint32_t i = 0; i < slots_.size(); ++i) {
            slots_[i].spec =
                std::make_unique<Speculator>(ctx, i, params_.make_drafter(i), params_.spec);
        }
        stats_.speculative = true;
    }
    thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
    shutdown(std::chrono::milliseconds(0));
}

Scheduler::Admit Scheduler::submit(Job job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return Admit::stopping;
        if (queue_.size() >= size_t(n_free_) + params_.queue_max) return Admit::queue_full;
        queue_.emplace_back(std::move(job), Clock::now());
        stats_.queued = uint32_t(queue_.size());
    }
    cv_.notify_all();
    return Admit::queued;
}

void Scheduler::shutdown(std::chrono::milliseconds grace) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!stopping_) {
            stopping_ = true;
            stop_deadline_ = Clock::now() + grace;
        } else {
            stop_deadline_ = std::min(stop_deadline_, Clock::now() + grace);
        }
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

SchedulerStats Scheduler::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

void Scheduler::loop() {
    for (;;) {
        bool busy = false;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            auto any_busy = [&] {
                return std::any_of(slots_.begin(), slots_.end(),
                                   [](const Slot& s) { return s.state != State::idle; });
            };
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || any_busy(); });
            if (stopping_) {
                // Queued requests never start; running ones get until the deadline.
                while (!queue_.empty()) {
                    queue_.front().first.channel->finish(Finish::cancelled, {},
                                                         "the server is shutting down");
                    queue_.pop_front();
                }
                if (Clock::now() >= stop_deadline_) {
                    for (Slot& s : slots_) {
                        if (s.state != State::idle) s.job.channel->cancel();
                    }
                }
            }
            // Fill free slots from the queue, oldest first.
            while (!queue_.empty()) {
                const bool free_slot = std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) {
                    return s.state == State::idle;
                });
                if (!free_slot) break;
                auto [job, submitted] = std::move(queue_.front());
                queue_.pop_front();
                admit(std::move(job), submitted);
            }
            stats_.queued = uint32_t(queue_.size());
            busy = any_busy();
            if (stopping_ && !busy) break;
        }
        // Cancelled and timed-out requests leave before the step.
        const auto now = Clock::now();
        for (Slot& s : slots_) {
            if (s.state == State::idle) continue;
            if (s.job.channel->cancelled()) {
                end(s, Finish::cancelled);
            } else if (now >= s.job.deadline) {
                end(s, Finish::timeout, "the request took longer than the server's time limit");
            }
        }
        step();
        release_memory_when_idle();
    }
}

void Scheduler::release_memory_when_idle() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const bool idle =
            queue_.empty() && std::all_of(slots_.begin(), slots_.end(),
                                          [](const Slot& s) { return s.state == State::idle; });
        if (!idle) return;
    }
#ifdef __GLIBC__
    // A burst of requests leaves freed memory in the allocator's per-thread arenas (one per
    // HTTP thread that ran at once): give it back when the server goes idle, so idle RSS is
    // what the planner predicted rather than the high-water mark of the last burst.
    malloc_trim(0);
#endif
}

void Scheduler::admit(Job job, Clock::time_point submitted) {
    // The free slot holding the longest prefix of the prompt (the least recently used among
    // equals), and the longest prefix any slot holds.
    const std::span<const int32_t> prompt(job.prompt);
    uint32_t best_free = UINT32_MAX, best_free_len = 0, best_any = UINT32_MAX, best_any_len = 0;
    for (uint32_t i = 0; i < slots_.size(); ++i) {
        const uint32_t len = ctx_.seq_common_prefix(i, prompt);
        if (slots_[i].state == State::idle &&
            (best_free == UINT32_MAX || len > best_free_len ||
             (len == best_free_len && slots_[i].last_used < slots_[best_free].last_used))) {
            best_free = i;
            best_free_len = len;
        }
        if (len > best_any_len) {
            best_any = i;
            best_any_len = len;
        }
    }
    Slot& slot = slots_[best_free];
    // Keep at least the last prompt token to decode: its logits give the first token.
    const uint32_t max_reuse = uint32_t(job.prompt.size()) - 1;
    // (A sliding-window model's cache may not go back that far: then less, or nothing.)
    uint32_t reuse = ctx_.seq_keepable(best_free, std::min(best_free_len, max_reuse));
    const uint32_t reuse_any =
        best_any == UINT32_MAX ? 0 : ctx_.seq_keepable(best_any, std::min(best_any_len, max_reuse));
    if (best_any != best_free && reuse_any > reuse) {
        reuse = reuse_any;
        ctx_.seq_copy(best_any, best_free, reuse);  // shares the cache pages
    } else {
        ctx_.seq_truncate(best_free, reuse);
    }
    slot.state = State::prompt;
    --n_free_;  // admit() runs under mutex_
    stats_.slots_busy = uint32_t(slots_.size()) - n_free_;
    slot.sampler = std::make_unique<Sampler>(job.sampling);
    slot.detok = std::make_unique<TokenTextStream>(vocab_, job.special_text);
    slot.stop = StopMatcher(job.stop);
    slot.prompt_done = reuse;
    slot.last_token = -1;
    slot.n_generated = 0;
    slot.usage = {};
    slot.usage.prompt_tokens = int32_t(job.prompt.size());
    slot.usage.cached_tokens = int32_t(reuse);
    slot.submitted = submitted;
    slot.started = Clock::now();
    slot.usage.queued_ms = ms_between(submitted, slot.started);
    if (slot.spec) {
        slot.spec_start = slot.spec->stats();
        slot.usage.draft_n = 0;
        // The request's limits (checked against the server's when it was parsed).
        SpecParams sp = params_.spec;
        if (job.draft_max >= 0) sp.draft_max = uint32_t(job.draft_max);
        if (job.draft_min >= 0) sp.draft_min = uint32_t(job.draft_min);
        sp.draft_min = std::min(sp.draft_min, sp.draft_max);
        slot.spec_off = sp.draft_max == 0;
        if (!slot.spec_off) slot.spec->set_params(sp);
    }
    for (int32_t t : job.prompt) slot.sampler->accept(t);
    slot.job = std::move(job);
    stats_.cached_tokens += reuse;
}

void Scheduler::step() {
    batch_.clear();
    logit_rows_.clear();
    spec_rows_.clear();
    verify_seqs_.clear();
    // The next token of every generating slot (with its drafts when it speculates: its
    // verification pass rides in this batch, so the other slots' tokens wait for nothing but
    // this one pass), then prompt chunks within the step's budget.
    const auto drafting = Clock::now();
    for (uint32_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        if (s.state != State::generate) continue;
        if (!s.spec || s.spec_off) {
            logit_rows_.push_back({i, int32_t(batch_.size())});
            batch_.push_back({s.last_token, i, -1, true});
            continue;
        }
        if (params_.batch_drafter) continue;  // below, all slots at once
        const int32_t first = int32_t(batch_.size());
        try {
            if (s.spec->draft(s.last_token, draft_n_max(s), draft_room(i), batch_) > 0) {
                verify_seqs_.push_back(i);
            }
        } catch (const std::exception& e) {
            batch_.resize(size_t(first));
            end(s, Finish::error, e.what());
            continue;
        }
        spec_rows_.push_back({i, first});
    }
    if (params_.batch_drafter) draft_together();
    const double draft_ms = spec_rows_.empty() ? 0.0 : ms_between(drafting, Clock::now());
    const bool decode_only = !batch_.empty();
    uint32_t budget =
        params_.n_batch > batch_.size() ? params_.n_batch - uint32_t(batch_.size()) : 1;
    bool any_prompt = false;
    for (uint32_t i = 0; i < slots_.size() && budget > 0; ++i) {
        Slot& s = slots_[i];
        if (s.state != State::prompt) continue;
        const uint32_t left = uint32_t(s.job.prompt.size()) - s.prompt_done;
        const uint32_t take = std::min(left, budget);
        for (uint32_t k = 0; k < take; ++k) {
            const bool last = s.prompt_done + k + 1 == s.job.prompt.size();
            if (last) logit_rows_.push_back({i, int32_t(batch_.size())});
            batch_.push_back({s.job.prompt[s.prompt_done + k], i, -1, last});
        }
        s.prompt_done += take;
        budget -= take;
        any_prompt = true;
    }
    if (batch_.empty()) return;

    const auto start = Clock::now();
    SpecStats spec;  // this step's part of the slots' counters
    try {
        ctx_.decode_mixed(batch_, verify_seqs_);
        // Speculating slots judge their drafts, then go back to what they keep, together (a
        // recurrent state restored to its mark decodes its kept tokens again in one pass for
        // every such slot).
        spec_out_.resize(spec_rows_.size());
        keep_.clear();
        for (size_t r = 0; r < spec_rows_.size(); ++r) {
            const auto [i, first] = spec_rows_[r];
            Slot& s = slots_[i];
            const SpecStats before = s.spec->stats();
            spec_out_[r].clear();
            const uint32_t keep = s.spec->accept(first, *s.sampler, spec_out_[r]);
            if (keep < ctx_.seq_len(i)) keep_.push_back({i, keep});
            const SpecStats& after = s.spec->stats();
            spec.passes += after.passes - before.passes;
            spec.plain_steps += after.plain_steps - before.plain_steps;
            spec.drafted += after.drafted - before.drafted;
            spec.accepted += after.accepted - before.accepted;
            spec.generated += after.generated - before.generated;
        }
        if (!keep_.empty()) ctx_.seq_rollback(keep_);
    } catch (const std::exception& e) {
        // The server's fault (the slots' limits keep every batch inside the cache): every
        // request of the step ends with the error.
        for (Slot& s : slots_) {
            if (s.state != State::idle) end(s, Finish::error, e.what());
        }
        return;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ++step_;
    uint32_t n_prompt_tokens = 0;
    for (const BatchToken& b : batch_) {
        if (slots_[b.seq].state == State::prompt) ++n_prompt_tokens;
    }
    if (!spec_rows_.empty()) {
        // Counted before the tokens go out: a client that has its reply sees them in /metrics.
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.spec.passes += spec.passes;
        stats_.spec.plain_steps += spec.plain_steps;
        stats_.spec.drafted += spec.drafted;
        stats_.spec.accepted += spec.accepted;
        stats_.spec.generated += spec.generated;
        stats_.spec.draft_ms += draft_ms;
        if (!verify_seqs_.empty()) stats_.spec.verify_ms += 1000.0 * seconds;
    }
    for (const auto& [slot, index] : logit_rows_) on_logits(slots_[slot], slot, ctx_.logits(index));
    for (size_t r = 0; r < spec_rows_.size(); ++r) {
        const uint32_t i = spec_rows_[r].first;
        Slot& s = slots_[i];
        if (s.state != State::generate) continue;
        s.last_used = step_;
        const std::vector<int32_t>& out = spec_out_[r];
        for (size_t k = 0; k < out.size(); ++k) {
            if (!on_token(s, i, out[k], k + 1 == out.size())) break;
        }
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.steps;
        stats_.prompt_tokens += n_prompt_tokens;
        if (any_prompt || !decode_only) {
            stats_.prompt_seconds += seconds;
        } else {
            stats_.decode_seconds += seconds;
        }
        stats_.kv_used = ctx_.kv_positions_used();
    }
    if (params_.after_step) params_.after_step(ctx_);
}

uint32_t Scheduler::draft_room(uint32_t seq) const {
    // Pending and the drafts fit the slot's context (the last token kept needs no position
    // until the next step).
    const uint32_t len = ctx_.seq_len(seq);
    return params_.n_ctx_slot > len + 1 ? params_.n_ctx_slot - len - 1 : 0;
}

uint32_t Scheduler::draft_n_max(const Slot& s) const {
    // What the request may still generate.
    return s.job.max_tokens >= 0 ? uint32_t(std::max(s.job.max_tokens - s.n_generated, 1))
                                 : UINT32_MAX;
}

void Scheduler::draft_together() {
    // The draft model drafts for every speculating slot in the same passes (one per drafted
    // position), so that the slots' drafting costs about one slot's.
    requests_.clear();
    for (uint32_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        if (s.state != State::generate || !s.spec || s.spec_off) continue;
        if (const uint32_t k = s.spec->prepare(s.last_token, draft_n_max(s), draft_room(i));
            k > 0) {
            requests_.push_back({i, s.spec->context(), k, &s.spec->drafts(), s.job.draft_p_min});
        }
    }
    try {
        if (!requests_.empty()) params_.batch_drafter->propose(requests_);
    } catch (const std::exception& e) {
        for (const BatchDrafter::Request& r : requests_)
            end(slots_[r.seq], Finish::error, e.what());
    }
    for (uint32_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        if (s.state != State::generate || !s.spec || s.spec_off) continue;
        const int32_t first = int32_t(batch_.size());
        try {
            if (s.spec->submit(batch_) > 0) verify_seqs_.push_back(i);
        } catch (const std::exception& e) {
            batch_.resize(size_t(first));
            end(s, Finish::error, e.what());
            continue;
        }
        spec_rows_.push_back({i, first});
    }
}

void Scheduler::on_logits(Slot& slot, uint32_t seq, const float* logits) {
    if (slot.state == State::idle || !logits) return;
    if (slot.state == State::prompt) {
        slot.state = State::generate;
        slot.first_token = Clock::now();
        slot.usage.prompt_ms = ms_between(slot.started, slot.first_token);
    }
    slot.last_used = step_;
    const int32_t token = slot.sampler->sample(logits, int32_t(vocab_.n_tokens()));
    slot.sampler->accept(token);
    on_token(slot, seq, token, true);
}

bool Scheduler::on_token(Slot& slot, uint32_t seq, int32_t token, bool last) {
    if (vocab_.is_eog(token) && !slot.job.ignore_eos) {
        end(slot, Finish::stop);
        return false;
    }
    ++slot.n_generated;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.generated_tokens;
    }
    slot.job.channel->emit(slot.stop.push(slot.detok->push(token)));
    if (slot.stop.stopped()) {
        end(slot, Finish::stop);
    } else if (slot.job.max_tokens >= 0 && slot.n_generated >= slot.job.max_tokens) {
        end(slot, Finish::length);
    } else if (last && ctx_.seq_len(seq) + 1 > params_.n_ctx_slot) {
        end(slot, Finish::length);  // no room to decode the token in this slot's context
    } else {
        if (last) slot.last_token = token;
        return true;
    }
    return false;
}

void Scheduler::end(Slot& slot, Finish f, const std::string& error) {
    if (slot.state == State::idle) return;
    const auto now = Clock::now();
    if (f != Finish::cancelled && f != Finish::error && slot.detok) {
        slot.job.channel->emit(slot.stop.push(slot.detok->finish()));
        slot.job.channel->emit(slot.stop.finish());
    }
    slot.usage.completion_tokens = slot.n_generated;
    if (slot.spec) {
        const SpecStats& st = slot.spec->stats();
        slot.usage.draft_n = int32_t(st.drafted - slot.spec_start.drafted);
        slot.usage.draft_accepted = int32_t(st.accepted - slot.spec_start.accepted);
    }
    if (slot.state == State::generate) {
        slot.usage.decode_ms = ms_between(slot.first_token, now);
    } else {
        slot.usage.prompt_ms = ms_between(slot.started, now);
    }
    slot.state = State::idle;
    slot.last_used = step_;
    {
        // Here and not only after a step: a slot cancelled (client gone) or timed out while no
        // other slot runs has no step after it, and /health would report it busy until the next
        // request. Before the channel ends: a client that has its reply sees the slot free.
        std::lock_guard<std::mutex> lock(mutex_);
        ++n_free_;
        ++stats_.requests_done;
        stats_.slots_busy = uint32_t(slots_.size()) - n_free_;
        stats_.kv_used = ctx_.kv_positions_used();
    }
    slot.job.channel->finish(f, slot.usage, error);
    slot.job.channel.reset();
}

}  // namespace mw::server
