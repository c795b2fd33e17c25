// The thread pool: every thread runs its share once per job, and computes with subnormals flushed
// (an x86 core takes a ~100-cycle assist for each one; the caller's own mode is restored after).
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "sys/thread_pool.h"
#include "tensor/cpu_features.h"

namespace mw {
namespace {

// 1e-30 * 1e-10 is subnormal (below FLT_MIN, about 1.2e-38): zero only when results are flushed.
bool flushes_subnormals() {
    volatile float a = 1e-30f, b = 1e-10f;
    return a * b == 0.0f;
}

constexpr bool kFlushable =
#if defined(__x86_64__)
    true;
#else
    false;
#endif

TEST(ThreadPool, EveryThreadRunsItsShareOnce) {
    ThreadPool pool(3);
    for (int active : {3, 2, 1}) {
        pool.set_active(active);
        std::vector<std::atomic<int>> calls(3);
        std::atomic<int> seen_nth{0};
        for (int job = 0; job < 50; ++job) {
            pool.for_each_thread([&](int ith, int nth) {
                calls[size_t(ith)].fetch_add(1);
                seen_nth.store(nth);
            });
        }
        EXPECT_EQ(seen_nth.load(), active);
        for (int i = 0; i < 3; ++i)
            EXPECT_EQ(calls[size_t(i)].load(), i < active ? 50 : 0) << "thread " << i;
    }
}

TEST(FlushSubnormals, FlushesWhileAliveAndRestoresTheCallersMode) {
    if (!kFlushable)
        GTEST_SKIP() << "only x86 flushes (ARM64 cores handle subnormals at full speed)";
    ASSERT_FALSE(flushes_subnormals()) << "the test process starts with IEEE subnormals";
    {
        const FlushSubnormals flush;
        EXPECT_TRUE(flushes_subnormals());
        {
            const FlushSubnormals nested;
            EXPECT_TRUE(flushes_subnormals());
        }
        EXPECT_TRUE(flushes_subnormals()) << "a nested guard must restore the outer one's mode";
    }
    EXPECT_FALSE(flushes_subnormals());
}

TEST(FlushSubnormals, PoolWorkersFlush) {
    if (!kFlushable)
        GTEST_SKIP() << "only x86 flushes (ARM64 cores handle subnormals at full speed)";
    ThreadPool pool(2);
    std::atomic<int> worker_flushes{-1};
    pool.for_each_thread([&](int ith, int) {
        if (ith == 1) worker_flushes.store(flushes_subnormals() ? 1 : 0);
    });
    EXPECT_EQ(worker_flushes.load(), 1);
    EXPECT_FALSE(flushes_subnormals()) << "the calling thread's mode is its own";
}

}  // namespace
}  // namespace mw
