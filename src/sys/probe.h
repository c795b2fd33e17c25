// What this machine is: cores, SIMD features, caches, RAM and how much is available now (the
// measurements a plan for `--device this` also needs are in plan/measure.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
    std::string caches_source;  // "sysfs", "CPUID", or "" when neither says
    MemoryNow memory;
};
SystemInfo read_system_info();

}  // namespace mw
