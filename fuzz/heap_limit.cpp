#include "heap_limit.h"

#include <sanitizer/allocator_interface.h>
#include <sanitizer/common_interface_defs.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace mw::fuzz {
namespace {

std::atomic<bool> g_active{false};
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_limit{0};

void on_malloc(const volatile void*, size_t size) {
    if (!g_active.load(std::memory_order_relaxed)) return;
    const int64_t live = g_live.fetch_add(int64_t(size), std::memory_order_relaxed) + int64_t(size);
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
    }
    if (live > g_limit.load(std::memory_order_relaxed)) {
        g_active = false;
        std::fprintf(stderr,
                     "==heap limit== %lld bytes live after allocating %zu, over the limit of %lld "
                     "for this input\n",
                     static_cast<long long>(live), size, static_cast<long long>(g_limit.load()));
        __sanitizer_print_stack_trace();
        std::abort();
    }
}

void on_free(const volatile void* p) {
    if (!g_active.load(std::memory_order_relaxed) || !p) return;
    // Called before the block is released, so its size is still known. Blocks allocated before
    // the limit began count as well: the live figure may dip below zero, never above the truth.
    g_live.fetch_sub(int64_t(__sanitizer_get_allocated_size(p)), std::memory_order_relaxed);
}

bool install_hooks() {
    return __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
}

}  // namespace

HeapLimit::HeapLimit(uint64_t limit_bytes) {
    static const bool installed = install_hooks();
    if (!installed) {
        std::fprintf(stderr, "HeapLimit: cannot install the sanitizer malloc hooks\n");
        std::abort();
    }
    g_live = 0;
    g_peak = 0;
    g_limit = int64_t(limit_bytes);
    g_active = true;
}

HeapLimit::~HeapLimit() {
    g_active = false;
    // For calibrating the limit: MEMWALL_FUZZ_HEAP_REPORT=1 prints every input's peak.
    static const bool report = std::getenv("MEMWALL_FUZZ_HEAP_REPORT") != nullptr;
    if (report) {
        std::fprintf(stderr, "heap peak %lld of %lld\n", static_cast<long long>(g_peak.load()),
                     static_cast<long long>(g_limit.load()));
    }
}

uint64_t HeapLimit::peak() const {
    return uint64_t(g_peak.load());
}

}  // namespace mw::fuzz
