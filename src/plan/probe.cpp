#include "plan/probe.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "base/error.h"
#include "runtime/thread_pool.h"
#include "tensor/cpu_features.h"
#include "tensor/kernels.h"
#include "tensor/ops.h"

namespace mw {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// A /proc/meminfo field in bytes (0 when absent).
uint64_t meminfo(const char* field) {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib) {
        std::getline(in, unit);
        if (key == std::string(field) + ":") return kib * 1024;
    }
    return 0;
}

// A cgroup limit file's value, or 0 when unlimited or absent.
uint64_t read_limit(const std::string& path) {
    const std::string text = read_line(path);
    if (text.empty() || text == "max") return 0;
    const uint64_t v = std::strtoull(text.c_str(), nullptr, 10);
    return v >= (uint64_t(1) << 60) ? 0 : v;
}

// (limit, usage) of this process's memory cgroup, v2 or v1; limit 0 when there is none.
std::pair<uint64_t, uint64_t> cgroup_memory() {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        const size_t a = line.find(':'), b = line.find(':', a + 1);
        if (a == line.npos || b == line.npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1);
        const std::string path = line.substr(b + 1);
        std::vector<std::pair<std::string, std::string>> candidates;
        if (controllers.empty()) {  // v2
            for (const std::string& base :
                 {"/sys/fs/cgroup" + path, std::string("/sys/fs/cgroup")}) {
                candidates.push_back({base + "/memory.max", base + "/memory.current"});
            }
        } else if (controllers.find("memory") != controllers.npos) {  // v1
            for (const std::string& base :
                 {"/sys/fs/cgroup/memory" + path, std::string("/sys/fs/cgroup/memory")}) {
                candidates.push_back(
                    {base + "/memory.limit_in_bytes", base + "/memory.usage_in_bytes"});
            }
        }
        for (const auto& [limit_file, usage_file] : candidates) {
            if (const uint64_t limit = read_limit(limit_file)) {
                return {limit, std::strtoull(read_line(usage_file).c_str(), nullptr, 10)};
            }
        }
    }
    return {0, 0};
}

std::string cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    std::string hardware;
    while (std::getline(in, line)) {
        const size_t colon = line.find(':');
        if (colon == line.npos) continue;
        std::string key = line.substr(0, colon);
        key.erase(key.find_last_not_of(" \t") + 1);
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        if (key == "model name" && !value.empty()) return value;
        if (key == "Hardware" && !value.empty()) hardware = value;
    }
    if (!hardware.empty()) return hardware;
    std::string model = read_line("/proc/device-tree/model");
    model.erase(std::find(model.begin(), model.end(), '\0'), model.end());
    return model.empty() ? "unknown CPU" : model;
}

// "0-3,8" -> 5.
int count_cpu_list(const std::string& list) {
    int n = 0;
    std::stringstream ss(list);
    std::string part;
    while (std::getline(ss, part, ',')) {
        const size_t dash = part.find('-');
        if (dash == part.npos) {
            n += part.empty() ? 0 : 1;
        } else {
            n += std::atoi(part.c_str() + dash + 1) - std::atoi(part.c_str()) + 1;
        }
    }
    return std::max(n, 1);
}

std::vector<CacheLevel> read_caches() {
    std::vector<CacheLevel> caches;
    for (int i = 0; i < 16; ++i) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i);
        const std::string level = read_line(dir + "/level");
        if (level.empty()) break;
        CacheLevel c;
        c.level = std::atoi(level.c_str());
        c.type = read_line(dir + "/type");
        const std::string size = read_line(dir + "/size");
        uint64_t bytes = std::strtoull(size.c_str(), nullptr, 10);
        if (size.find('K') != size.npos) bytes <<= 10;
        if (size.find('M') != size.npos) bytes <<= 20;
        c.bytes = bytes;
        c.shared_by = count_cpu_list(read_line(dir + "/shared_cpu_list"));
        caches.push_back(c);
    }
    return caches;
}

// Memory that is never optimised away and never aliases: a heap array of T.
template <typename T>
std::unique_ptr<T[]> uninitialised(size_t n) {
    return std::unique_ptr<T[]>(new T[n]);
}

}  // namespace

MemoryNow memory_now() {
    MemoryNow m;
    m.total_bytes = meminfo("MemTotal");
    m.available_bytes = meminfo("MemAvailable");
    m.source = "MemAvailable";
    if (m.total_bytes == 0) {  // not Linux-like: the portable page counts
        m.total_bytes = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
        m.available_bytes = uint64_t(sysconf(_SC_AVPHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
        m.source = "free pages";
    }
    const auto [limit, usage] = cgroup_memory();
    if (limit > 0 && limit < m.total_bytes) {
        m.total_bytes = limit;
        const uint64_t left = limit > usage ? limit - usage : 0;
        if (left < m.available_bytes) {
            m.available_bytes = left;
            m.source = "cgroup limit";
        }
    }
    return m;
}

SystemInfo read_system_info() {
    SystemInfo s;
    s.cpu_name = cpu_name();
    struct utsname u {};
    s.arch = uname(&u) == 0 ? u.machine : "unknown";
    s.logical_cpus = int(std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN)));
    s.engine_threads = default_thread_count();
    s.simd = cpu_features_summary();
    s.caches = read_caches();
    s.memory = memory_now();
    return s;
}

BandwidthResult measure_bandwidth(Parallel& par, double seconds, uint64_t largest_cache_bytes,
                                  uint64_t available_bytes) {
    const auto start = Clock::now();
    BandwidthResult r;
    r.n_threads = par.n_threads();
    // Twice the largest cache (so that a pass cannot be served from it), 32-256 MiB per array,
    // three arrays, never more than a sixth of the available memory.
    uint64_t bytes = std::clamp<uint64_t>(2 * largest_cache_bytes, 32u << 20, 256u << 20);
    if (available_bytes > 0)
        bytes = std::min(bytes, std::max<uint64_t>(available_bytes / 18, 4u << 20));
    const size_t n = size_t(bytes / sizeof(double));
    r.buffer_bytes = n * sizeof(double);
    auto a = uninitialised<double>(n), b = uninitialised<double>(n), c = uninitialised<double>(n);
    double* pa = a.get();
    double* pb = b.get();
    double* pc = c.get();

    // First touch by the threads that will read each range (NUMA placement, page faults now).
    par.for_each_thread([&](int ith, int nth) {
        const Range range = split_range(int64_t(n), ith, nth);
        for (int64_t i = range.begin; i < range.end; ++i) {
            pa[i] = 0.0;
            pb[i] = 1.0;
            pc[i] = 2.0;
        }
    });

    std::vector<double> sums(size_t(par.n_threads()) * 8, 0.0);  // one cache line each
    const double budget = std::max(0.1, seconds - seconds_since(start));
    // Read: sum every element of b and c.
    const auto read_start = Clock::now();
    for (int pass = 0; pass < 64 && (pass < 2 || seconds_since(read_start) < budget / 2); ++pass) {
        const auto t0 = Clock::now();
        par.for_each_thread([&](int ith, int nth) {
            const Range range = split_range(int64_t(n), ith, nth);
            // Vector accumulators (GCC/Clang vector extensions: SSE2, AVX or NEON as compiled),
            // four of them in flight, so that the sum runs far ahead of memory.
            typedef double v4d __attribute__((vector_size(32)));
            v4d acc[4] = {};
            for (const double* p : {pb, pc}) {
                int64_t i = range.begin;
                for (; i + 16 <= range.end; i += 16) {
                    for (int j = 0; j < 4; ++j) {
                        v4d v;
                        std::memcpy(&v, p + i + 4 * j, sizeof v);
                        acc[j] += v;
                    }
                }
                for (; i < range.end; ++i) acc[0][0] += p[i];
            }
            double sum = 0;
            for (const v4d& v : acc) sum += v[0] + v[1] + v[2] + v[3];
            sums[size_t(ith) * 8] += sum;
        });
        const double dt = seconds_since(t0);
        r.read_bytes_per_s = std::max(r.read_bytes_per_s, 2.0 * double(r.buffer_bytes) / dt);
    }
    // Triad: a = b + s * c.
    const auto triad_start = Clock::now();
    const double scalar = 3.0;
    for (int pass = 0; pass < 64 && (pass < 2 || seconds_since(triad_start) < budget / 2); ++pass) {
        const auto t0 = Clock::now();
        par.for_each_thread([&](int ith, int nth) {
            const Range range = split_range(int64_t(n), ith, nth);
            for (int64_t i = range.begin; i < range.end; ++i) pa[i] = pb[i] + scalar * pc[i];
        });
        const double dt = seconds_since(t0);
        r.triad_bytes_per_s = std::max(r.triad_bytes_per_s, 3.0 * double(r.buffer_bytes) / dt);
    }
    double total = 0;
    for (double s : sums) total += s;
    // The sums are consumed so the reads cannot be optimised away; they are never this large.
    if (total < 0 || pa[n / 2] != 1.0 + scalar * 2.0) {
        fail(ErrorKind::unsupported, "memory bandwidth probe: unexpected result {}", total);
    }
    r.seconds = seconds_since(start);
    return r;
}

double measure_matmul_gflops(Parallel& par, double seconds) {
    const TypeTraits* q4k = type_traits(GgmlType::Q4_K);
    if (!q4k || !q4k->vec_dot) return 0.0;
    constexpr int64_t kCols = 4096, kRows = 512, kTokens = 32;
    WeightMatrix w;
    w.traits = q4k;
    w.n_cols = kCols;
    w.n_rows = kRows;
    w.row_bytes = row_bytes(*q4k, kCols);
    // Any bit pattern is a valid Q4_K block; 0x11 gives small finite scales (fp16 0x1111).
    std::vector<uint8_t> weights(w.row_bytes * kRows, 0x11);
    w.data = weights.data();
    std::vector<float> x(size_t(kCols * kTokens));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 17) - 8) * 0.125f;
    std::vector<float> y(size_t(kRows * kTokens));
    std::vector<uint8_t> scratch(matmul_scratch_bytes(w, kTokens));

    matmul(par, w, x.data(), kTokens, y.data(), scratch.data());  // warm up
    const double flops_per_call = 2.0 * double(kCols) * double(kRows) * double(kTokens);
    double best = 0;
    const auto start = Clock::now();
    for (int i = 0; i < 1000 && (i < 2 || seconds_since(start) < seconds); ++i) {
        const auto t0 = Clock::now();
        matmul(par, w, x.data(), kTokens, y.data(), scratch.data());
        best = std::max(best, flops_per_call / seconds_since(t0));
    }
    return best / 1e9;
}

double measure_int8_peak_gmacs(Parallel& par, double seconds) {
    std::vector<double> per_thread(size_t(par.n_threads()), 0.0);
    par.for_each_thread([&](int ith, int) { per_thread[size_t(ith)] = int8_peak_macs(seconds); });
    double total = 0;
    for (double v : per_thread) total += v;
    return total / 1e9;
}

}  // namespace mw
