#include "sys/thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "tensor/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MW_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define MW_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define MW_CPU_RELAX() ((void)0)
#endif

namespace mw {
namespace {

// Spin this many times waiting for work before going to sleep (~tens of microseconds).
constexpr int kSpinIterations = 1 << 12;

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)), n_active_(n_threads_) {
    threads_.reserve(n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_.store(true);
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
}

void ThreadPool::set_active(int n) {
    n_active_ = std::clamp(n, 1, n_threads_);
}

void ThreadPool::run(void (*fn)(void*, int, int), void* ctx) {
    if (n_active_ == 1) {
        fn(ctx, 0, 1);
        return;
    }
    fn_ = fn;
    ctx_ = ctx;
    pending_.store(n_active_ - 1, std::memory_order_relaxed);
    // seq_cst on both sides (here and in worker()) so that a worker about to sleep either sees
    // the new generation or is seen in sleepers_.
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) {
        std::lock_guard<std::mutex> lock(mutex_);
        wake_.notify_all();
    }
    fn(ctx, 0, n_active_);
    // Spin briefly, then yield: when another process holds the other cores, a spinning caller
    // would keep the very workers it waits for from running.
    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
        if (spin < kSpinIterations) {
            MW_CPU_RELAX();
        } else {
            std::this_thread::yield();
        }
    }
}

void ThreadPool::worker(int ith) {
    const FlushSubnormals flush;  // the caller's thread flushes them for the length of forward()
    uint64_t seen = 0;
    for (;;) {
        uint64_t gen = generation_.load(std::memory_order_acquire);
        for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
            MW_CPU_RELAX();
            gen = generation_.load(std::memory_order_acquire);
        }
        if (gen == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            sleepers_.fetch_add(1);
            wake_.wait(lock, [&] { return generation_.load() != seen; });
            sleepers_.fetch_sub(1);
            gen = generation_.load(std::memory_order_acquire);
        }
        seen = gen;
        if (stop_.load()) return;
        const int active = n_active_;
        if (ith < active) {
            fn_(ctx_, ith, active);
            pending_.fetch_sub(1, std::memory_order_acq_rel);
        }
    }
}

int default_thread_count() {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    // Count distinct (package, core) pairs; on hybrid CPUs keep only the cores with the highest
    // maximum frequency (the performance cores).
    std::map<long, std::set<std::pair<long, long>>> cores_by_freq;
    for (long cpu = 0; cpu < online; ++cpu) {
        const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
        long package = 0, core = cpu, freq = 0;
        std::ifstream(base + "/topology/physical_package_id") >> package;
        std::ifstream(base + "/topology/core_id") >> core;
        std::ifstream(base + "/cpufreq/cpuinfo_max_freq") >> freq;
        cores_by_freq[freq].insert({package, core});
    }
    if (cores_by_freq.empty()) return std::max<long>(1, online);
    const long fastest = long(cores_by_freq.rbegin()->second.size());
    return int(std::clamp<long>(fastest, 1, std::max<long>(1, online)));
}

}  // namespace mw
