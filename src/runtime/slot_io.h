// The I/O thread's loop shared by the caches that fill slots from storage (the expert cache, the
// layer stream).
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>

namespace mw {

// Under the owner's mutex `mu`, waits on `has_work` until `stop` or until `next()` returns a job
// (a std::optional of what names a slot and its contents); reads it with the mutex released;
// locks again, calls `done(job, ok)` and wakes the threads waiting on `changed`. A read that
// throws gives ok == false: the owner empties the slot, and the forward pass, reading it again on
// demand, reports the error itself.
template <class Next, class Read, class Done>
void run_slot_io(std::mutex& mu, std::condition_variable& has_work,
                 std::condition_variable& changed, const bool& stop, Next next, Read read,
                 Done done) {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
        decltype(next()) job;
        has_work.wait(lock, [&] { return stop || (job = next()).has_value(); });
        if (stop) return;
        lock.unlock();
        bool ok = true;
        try {
            read(*job);
        } catch (const std::exception&) {
            ok = false;
        }
        lock.lock();
        done(*job, ok);
        changed.notify_all();
    }
}

}  // namespace mw
