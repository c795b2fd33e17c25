#include "sys/mapping_guard.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

namespace mw {
namespace {

// Read by the signal handler: only atomics and fixed-size arrays, no allocation, no locks.
struct Guarded {
    std::atomic<uintptr_t> begin{0};  // 0: a free entry
    std::atomic<uintptr_t> end{0};
    char path[480] = {};
};
std::array<Guarded, 64> g_guarded;
std::mutex g_register_mutex;  // registering and forgetting (never taken by the handler)
struct sigaction g_previous {};
std::once_flag g_installed;

void put(char*& at, const char* end, const char* s) {
    while (*s && at < end) *at++ = *s++;
}

void put_number(char*& at, const char* end, uint64_t v) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = char('0' + v % 10);
        v /= 10;
    } while (v);
    while (n > 0 && at < end) *at++ = digits[--n];
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
    const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (const Guarded& g : g_guarded) {
        const uintptr_t begin = g.begin.load(std::memory_order_acquire);
        if (begin == 0 || addr < begin || addr >= g.end.load(std::memory_order_acquire)) continue;
        char msg[1024];
        char* at = msg;
        const char* end = msg + sizeof msg - 1;
        put(at, end, "error: ");
        put(at, end, g.path);
        put(at, end, ": the model file was truncated or replaced while in use: reading byte ");
        put_number(at, end, addr - begin);
        put(at, end, " of the ");
        put_number(at, end, g.end.load() - begin);
        put(at, end,
            " mapped failed (SIGBUS: the file is now shorter). Do not change a model file while "
            "memwall runs on it; without --no-repack the weights are copied at load");
        *at++ = '\n';
        (void)!write(STDERR_FILENO, msg, size_t(at - msg));
        _exit(kMappingLostExitCode);
    }
    // Not ours: the handler before, or the default action (raised again, it is taken once this
    // handler returns and unblocks it).
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, context);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        return g_previous.sa_handler(sig);
    }
    signal(SIGBUS, SIG_DFL);
    raise(SIGBUS);
}

void install() {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace

void guard_mapping(const uint8_t* begin, size_t size, const std::string& path) {
    if (!begin || size == 0) return;
    std::call_once(g_installed, install);
    std::lock_guard<std::mutex> lock(g_register_mutex);
    for (Guarded& g : g_guarded) {
        if (g.begin.load() != 0) continue;
        const size_t n = std::min(path.size(), sizeof g.path - 1);
        std::memcpy(g.path, path.data(), n);
        g.path[n] = '\0';
        g.end.store(reinterpret_cast<uintptr_t>(begin) + size, std::memory_order_release);
        g.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
        return;
    }
}

void unguard_mapping(const uint8_t* begin) {
    std::lock_guard<std::mutex> lock(g_register_mutex);
    for (Guarded& g : g_guarded) {
        if (g.begin.load() == reinterpret_cast<uintptr_t>(begin)) g.begin.store(0);
    }
}

}  // namespace mw
