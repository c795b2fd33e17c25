#include "plan/device_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "runtime/thread_pool.h"
#include "tensor/types.h"

namespace mw {
namespace {

using nlohmann::json;

constexpr int kFormat = 1;

json system_to_json(const SystemInfo& s) {
    json caches = json::array();
    for (const CacheLevel& c : s.caches) {
        caches.push_back(
            {{"level", c.level}, {"type", c.type}, {"bytes", c.bytes}, {"shared_by", c.shared_by}});
    }
    return {{"cpu", s.cpu_name},
            {"arch", s.arch},
            {"logical_cpus", s.logical_cpus},
            {"engine_threads", s.engine_threads},
            {"simd", s.simd},
            {"caches", caches},
            {"ram_total_bytes", s.memory.total_bytes},
            {"ram_available_bytes", s.memory.available_bytes},
            {"ram_available_source", s.memory.source}};
}

SystemInfo system_from_json(const json& j) {
    SystemInfo s;
    s.cpu_name = j.value("cpu", "");
    s.arch = j.value("arch", "");
    s.logical_cpus = j.value("logical_cpus", 0);
    s.engine_threads = j.value("engine_threads", 0);
    s.simd = j.value("simd", "");
    for (const json& c : j.value("caches", json::array())) {
        s.caches.push_back({c.value("level", 0), c.value("type", ""), c.value("bytes", uint64_t(0)),
                            c.value("shared_by", 1)});
    }
    s.memory.total_bytes = j.value("ram_total_bytes", uint64_t(0));
    s.memory.available_bytes = j.value("ram_available_bytes", uint64_t(0));
    s.memory.source = j.value("ram_available_source", "");
    return s;
}

// A cache written on another machine (or before its RAM changed) does not describe this one.
bool same_machine(const SystemInfo& a, const SystemInfo& b) {
    const double ra = double(a.memory.total_bytes), rb = double(b.memory.total_bytes);
    return a.cpu_name == b.cpu_name && a.logical_cpus == b.logical_cpus && a.arch == b.arch &&
           std::abs(ra - rb) <= 0.02 * std::max(ra, rb);
}

uint64_t largest_cache(const SystemInfo& s) {
    uint64_t largest = 0;
    for (const CacheLevel& c : s.caches) largest = std::max(largest, c.bytes);
    return largest;
}

void make_dirs(const std::string& path) {
    for (size_t i = 1; i <= path.size(); ++i) {
        if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
    }
}

void write_cache(const MeasuredDevice& m) {
    const std::string path = device_cache_path();
    if (path.empty()) return;
    make_dirs(path.substr(0, path.rfind('/')));
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << measured_device_to_json(m) << "\n";
        if (!out) {
            std::remove(tmp.c_str());
            fail(ErrorKind::io, "cannot write the device cache {}", tmp);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        fail(ErrorKind::io, "cannot write the device cache {}", path);
    }
}

}  // namespace

std::string device_cache_path() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) return std::string(xdg) + "/memwall/device.json";
    const char* home = std::getenv("HOME");
    if (home && *home) return std::string(home) + "/.cache/memwall/device.json";
    return "";
}

std::string measured_device_to_json(const MeasuredDevice& m) {
    json j = {{"format", kFormat},
              {"system", system_to_json(m.system)},
              {"read_bandwidth_bytes_per_s", m.bandwidth.read_bytes_per_s},
              {"triad_bandwidth_bytes_per_s", m.bandwidth.triad_bytes_per_s},
              {"bandwidth_buffer_bytes", m.bandwidth.buffer_bytes},
              {"bandwidth_threads", m.bandwidth.n_threads},
              {"bandwidth_seconds", m.bandwidth.seconds},
              {"matmul_gflops", m.matmul_gflops},
              {"int8_peak_gmacs", m.int8_peak_gmacs},
              {"kernel_set", m.kernel_set},
              {"measured_at", m.measured_at}};
    if (m.decode_efficiency) j["decode_efficiency"] = *m.decode_efficiency;
    if (m.prefill_gflops) j["prefill_gflops"] = *m.prefill_gflops;
    return j.dump(1);
}

MeasuredDevice measured_device_from_json(const std::string& text) {
    const json j = json::parse(text);
    if (j.value("format", 0) != kFormat) {
        fail(ErrorKind::bad_file, "device cache: unknown format {}", j.value("format", 0));
    }
    MeasuredDevice m;
    m.system = system_from_json(j.at("system"));
    m.bandwidth.read_bytes_per_s = j.value("read_bandwidth_bytes_per_s", 0.0);
    m.bandwidth.triad_bytes_per_s = j.value("triad_bandwidth_bytes_per_s", 0.0);
    m.bandwidth.buffer_bytes = j.value("bandwidth_buffer_bytes", uint64_t(0));
    m.bandwidth.n_threads = j.value("bandwidth_threads", 0);
    m.bandwidth.seconds = j.value("bandwidth_seconds", 0.0);
    m.matmul_gflops = j.value("matmul_gflops", 0.0);
    m.int8_peak_gmacs = j.value("int8_peak_gmacs", 0.0);
    m.kernel_set = j.value("kernel_set", std::string());
    m.measured_at = j.value("measured_at", int64_t(0));
    if (j.contains("decode_efficiency")) m.decode_efficiency = j["decode_efficiency"].get<double>();
    if (j.contains("prefill_gflops")) m.prefill_gflops = j["prefill_gflops"].get<double>();
    return m;
}

std::optional<MeasuredDevice> cached_device() {
    const std::string path = device_cache_path();
    if (path.empty()) return std::nullopt;
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        MeasuredDevice m = measured_device_from_json(ss.str());
        if (!same_machine(m.system, read_system_info())) return std::nullopt;
        if (!(m.bandwidth.read_bytes_per_s > 0)) return std::nullopt;
        return m;
    } catch (const std::exception&) {
        return std::nullopt;  // a damaged cache is measured again
    }
}

MeasuredDevice probe_device(const ProbeOptions& options) {
    MeasuredDevice m;
    m.system = read_system_info();
    m.measured_at = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    if (!options.measure) return m;
    ThreadPool pool(options.n_threads > 0 ? options.n_threads : m.system.engine_threads);
    // Most of the time goes to bandwidth (what decoding depends on), the rest to the matmul.
    m.bandwidth = measure_bandwidth(pool, options.seconds * 0.75, largest_cache(m.system),
                                    m.system.memory.available_bytes);
    m.matmul_gflops = measure_matmul_gflops(pool, options.seconds * 0.15);
    m.int8_peak_gmacs = measure_int8_peak_gmacs(pool, options.seconds * 0.05);
    m.kernel_set = kernel_isa();
    // Keep what bench measured on this machine.
    if (const auto old = cached_device()) {
        m.decode_efficiency = old->decode_efficiency;
        m.prefill_gflops = old->prefill_gflops;
    }
    if (options.write_cache) write_cache(m);
    return m;
}

DeviceProfile device_from_measurement(const MeasuredDevice& m, const MemoryNow& memory) {
    DeviceProfile d;
    d.id = "this";
    d.name = fmt::format("this machine ({}, {} threads)", m.system.cpu_name,
                         m.bandwidth.n_threads ? m.bandwidth.n_threads : m.system.engine_threads);
    d.ram_bytes = memory.total_bytes;
    d.os_reserve_bytes = memory.total_bytes - std::min(memory.total_bytes, memory.available_bytes);
    d.bandwidth_bytes_per_s = m.bandwidth.read_bytes_per_s;
    d.decode_efficiency = m.decode_efficiency.value_or(kDefaultDecodeEfficiency);
    d.efficiency_source = m.decode_efficiency ? "measured by bench" : "default";
    // Prompt processing is mostly matmuls; the rest of a layer costs roughly another 15 %.
    d.prefill_gflops = m.prefill_gflops.value_or(m.matmul_gflops * 0.85);
    d.source = "measured";
    d.n_threads = m.bandwidth.n_threads ? m.bandwidth.n_threads : m.system.engine_threads;
    return d;
}

DeviceProfile this_device() {
    std::optional<MeasuredDevice> m = cached_device();
    if (!m) m = probe_device({});
    return device_from_measurement(*m, memory_now());
}

std::string record_bench_result(double decode_tok_s, uint64_t decode_bytes_per_token,
                                double prompt_tok_s, double prompt_flops_per_token) {
    std::optional<MeasuredDevice> m = cached_device();
    if (!m) m = probe_device({.write_cache = false});
    if (decode_tok_s > 0 && decode_bytes_per_token > 0 && m->bandwidth.read_bytes_per_s > 0) {
        const double ceiling = m->bandwidth.read_bytes_per_s / double(decode_bytes_per_token);
        m->decode_efficiency = decode_tok_s / ceiling;
    }
    if (prompt_tok_s > 0 && prompt_flops_per_token > 0) {
        m->prefill_gflops = prompt_tok_s * prompt_flops_per_token / 1e9;
    }
    write_cache(*m);
    return device_cache_path();
}

}  // namespace mw
