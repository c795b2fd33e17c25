// A persistent pool of worker threads. run() wakes them with one atomic generation bump and waits
// for them on an atomic counter: no allocation, no locks on the hot path. Workers spin briefly
// before sleeping so that back-to-back kernels (one per matrix in a forward pass) hand over in
// microseconds, and sleep when the model is idle so an idle process costs no CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "tensor/parallel.h"

namespace mw {

class ThreadPool final : public Parallel {
  public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool() override;
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Threads that take part in run(): all of them unless set_active() chose fewer.
    int n_threads() const override { return n_active_; }
    int max_threads() const { return n_threads_; }
    // Uses only the first n threads (1 <= n <= max_threads()); the others stay idle.
    void set_active(int n);
    void run(void (*fn)(void* ctx, int ith, int nth), void* ctx) override;

  private:
    void worker(int ith);

    int n_threads_;
    int n_active_;
    std::vector<std::thread> threads_;

    // The current job.
    void (*fn_)(void*, int, int) = nullptr;
    void* ctx_ = nullptr;
    alignas(64) std::atomic<uint64_t> generation_{0};
    alignas(64) std::atomic<int> pending_{0};
    std::atomic<bool> stop_{false};
    std::atomic<int> sleepers_{0};

    std::mutex mutex_;
    std::condition_variable wake_;
};

// Physical performance cores of this machine (not logical CPUs: SMT siblings and efficiency cores
// slow memory-bound decoding down). Falls back to the number of online CPUs.
int default_thread_count();

}  // namespace mw
