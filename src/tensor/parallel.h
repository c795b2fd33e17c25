// How kernels and the forward pass run work on several threads without knowing who owns them:
// the runtime's thread pool implements this interface (dependency inversion keeps tensor/ and
// model/ below runtime/).
#pragma once

#include <cstdint>
#include <type_traits>

namespace mw {

class Parallel {
  public:
    virtual ~Parallel() = default;
    virtual int n_threads() const = 0;
    // Calls fn(ctx, ith, nth) once on each of nth threads (ith = 0..nth-1) and returns when all
    // calls have returned. The calling thread takes part as ith = 0.
    virtual void run(void (*fn)(void* ctx, int ith, int nth), void* ctx) = 0;

    // Convenience: runs a callable f(ith, nth) on every thread; no allocation.
    template <typename F>
    void for_each_thread(F&& f) {
        using Fn = std::remove_reference_t<F>;
        run([](void* c, int ith, int nth) { (*static_cast<Fn*>(c))(ith, nth); },
            const_cast<void*>(static_cast<const void*>(&f)));
    }
};

// Below this many multiply-adds (or similar element operations) a job runs on the calling thread:
// waking the pool costs more than it saves.
inline constexpr int64_t kMinParallelWork = 1 << 15;

// Runs f(ith, nth) on every thread of `par`, or once as f(0, 1) when the job is too small.
template <typename F>
void parallel_for_work(Parallel& par, int64_t work, F&& f) {
    if (work < kMinParallelWork || par.n_threads() == 1) {
        f(0, 1);
    } else {
        par.for_each_thread(f);
    }
}

// Runs everything on the calling thread.
class SerialParallel final : public Parallel {
  public:
    int n_threads() const override { return 1; }
    void run(void (*fn)(void*, int, int), void* ctx) override { fn(ctx, 0, 1); }
};

// The half-open share [begin, end) of n items that thread ith of nth works on.
struct Range {
    int64_t begin;
    int64_t end;
};
inline Range split_range(int64_t n, int ith, int nth) {
    const int64_t per = (n + nth - 1) / nth;
    const int64_t begin = per * ith < n ? per * ith : n;
    const int64_t end = begin + per < n ? begin + per : n;
    return {begin, end};
}

}  // namespace mw
