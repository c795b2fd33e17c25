// What this machine is: cores, SIMD features, caches, RAM (and how much is available now), and
// measured memory bandwidth and matrix throughput: the numbers a plan for `--device this` needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/parallel.h"

namespace mw {

struct CacheLevel {
    int level = 0;
    std::string type;  // "Data", "Instruction", "Unified"
    uint64_t bytes = 0;
    int shared_by = 1;  // logical CPUs sharing one instance
};

// Memory available to this process now: MemAvailable, lowered by a cgroup limit when there is
// one (containers, Android app groups).
struct MemoryNow {
    uint64_t total_bytes = 0;
    uint64_t available_bytes = 0;
    std::string source;  // "MemAvailable" or "cgroup limit"
};
MemoryNow memory_now();

struct SystemInfo {
    std::string cpu_name;
    std::string arch;  // "x86_64", "aarch64"
    int logical_cpus = 0;
    int engine_threads = 0;  // physical performance cores: what decoding uses by default
    std::string simd;        // cpu_features_summary()
    std::vector<CacheLevel> caches;
    MemoryNow memory;
};
SystemInfo read_system_info();

struct BandwidthResult {
    double read_bytes_per_s = 0;   // summing every byte of a buffer larger than the caches
    double triad_bytes_per_s = 0;  // a[i] = b[i] + s * c[i], counted as 3 x 8 bytes per element
    uint64_t buffer_bytes = 0;     // per array
    int n_threads = 0;
    double seconds = 0;
};
// Multi-threaded, best pass of each kernel within about `seconds` (allocation included).
BandwidthResult measure_bandwidth(Parallel& par, double seconds, uint64_t largest_cache_bytes,
                                  uint64_t available_bytes);

// GFLOP/s of the engine's own matmul on a Q4_K weight and a batch of 32 tokens: the rate prompt
// processing can reach on this machine.
double measure_matmul_gflops(Parallel& par, double seconds);

// GMAC/s (8-bit multiply-accumulates) of the installed kernels' integer dot product in a
// register-only loop on every thread at once (tensor/kernels.h, int8_peak_macs): the peak that
// prompt processing is measured against. 0 for the scalar kernels.
double measure_int8_peak_gmacs(Parallel& par, double seconds);

}  // namespace mw
