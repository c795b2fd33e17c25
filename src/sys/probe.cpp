#include "sys/probe.h"

#include <sys/utsname.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sys/thread_pool.h"
#include "tensor/cpu_features.h"

namespace mw {
namespace {

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

std::vector<CacheLevel> sysfs_caches() {
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

#if defined(__x86_64__) || defined(__i386__)
// The caches as CPUID describes them, where sysfs has nothing (some VMs and containers):
// Intel's deterministic cache leaf 4, AMD's 0x8000001D, else AMD's legacy 0x80000005/6 (whose L3
// is the whole processor's: one instance shared by every CPU).
std::vector<CacheLevel> cpuid_caches(int logical_cpus) {
    std::vector<CacheLevel> caches;
    unsigned a = 0, b = 0, c = 0, d = 0;
    auto deterministic = [&](unsigned leaf) {
        for (unsigned i = 0; i < 16; ++i) {
            if (!__get_cpuid_count(leaf, i, &a, &b, &c, &d)) break;
            const unsigned type = a & 31;
            if (type == 0) break;
            CacheLevel l;
            l.level = int((a >> 5) & 7);
            l.type = type == 1 ? "Data" : type == 2 ? "Instruction" : "Unified";
            l.bytes = uint64_t((b >> 22) + 1) * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) *
                      (uint64_t(c) + 1);
            l.shared_by = int(((a >> 14) & 0xfff) + 1);
            caches.push_back(l);
        }
    };
    if (!__get_cpuid(0, &a, &b, &c, &d)) return caches;
    const bool intel = b == 0x756e6547;  // "Genu"ineIntel
    if (intel && a >= 4) deterministic(4);
    const unsigned ext = __get_cpuid_max(0x80000000, nullptr);
    if (caches.empty() && ext >= 0x8000001D && __get_cpuid(0x80000001, &a, &b, &c, &d) &&
        (c & (1u << 22))) {  // topology extensions
        deterministic(0x8000001D);
    }
    if (caches.empty() && ext >= 0x80000006) {
        if (__get_cpuid(0x80000005, &a, &b, &c, &d)) {
            if (c >> 24) caches.push_back({1, "Data", uint64_t(c >> 24) << 10, 1});
            if (d >> 24) caches.push_back({1, "Instruction", uint64_t(d >> 24) << 10, 1});
        }
        if (__get_cpuid(0x80000006, &a, &b, &c, &d)) {
            if (c >> 16) caches.push_back({2, "Unified", uint64_t(c >> 16) << 10, 1});
            if (d >> 18) {
                caches.push_back(
                    {3, "Unified", uint64_t(d >> 18) << 19, std::max(logical_cpus, 1)});
            }
        }
    }
    return caches;
}
#else
std::vector<CacheLevel> cpuid_caches(int) {
    return {};
}
#endif

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
    s.caches = sysfs_caches();
    s.caches_source = "sysfs";
    if (s.caches.empty()) {
        s.caches = cpuid_caches(s.logical_cpus);
        s.caches_source = s.caches.empty() ? "" : "CPUID";
    }
    s.memory = memory_now();
    return s;
}

}  // namespace mw
