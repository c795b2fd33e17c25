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
#include "sys/thread_pool.h"
#include "tensor/types.h"

namespace mw {
namespace {

using nlohmann::json;

// 2: bandwidth as robust statistics, bench's figures tied to the measurement they divide by.
constexpr int kFormat = 2;

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

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
            {"caches_source", s.caches_source},
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
    s.caches_source = j.value("caches_source", "");
    s.memory.total_bytes = j.value("ram_total_bytes", uint64_t(0));
    s.memory.available_bytes = j.value("ram_available_bytes", uint64_t(0));
    s.memory.source = j.value("ram_available_source", "");
    return s;
}

json stats_to_json(const RateStats& s) {
    return {{"median", s.median}, {"spread", s.spread}, {"min", s.min},
            {"max", s.max},       {"passes", s.n},      {"outliers", s.n_outliers}};
}

RateStats stats_from_json(const json& j) {
    RateStats s;
    s.median = j.value("median", 0.0);
    s.spread = j.value("spread", 0.0);
    s.min = j.value("min", 0.0);
    s.max = j.value("max", 0.0);
    s.n = j.value("passes", 0);
    s.n_outliers = j.value("outliers", 0);
    return s;
}

json bench_to_json(const BenchRecord& b) {
    return {{"decode_efficiency", b.decode_efficiency},
            {"decode_tok_s", b.decode_tok_s},
            {"decode_spread", b.decode_spread},
            {"decode_bytes_per_token", b.decode_bytes_per_token},
            {"prefill_gflops", b.prefill_gflops},
            {"threads", b.n_threads},
            {"recorded_at", b.recorded_at},
            {"model", b.model},
            {"probe_measured_at", b.probe_measured_at},
            {"probe_read_bandwidth_bytes_per_s", b.probe_read_bytes_per_s}};
}

BenchRecord bench_from_json(const json& j) {
    BenchRecord b;
    b.decode_efficiency = j.value("decode_efficiency", 0.0);
    b.decode_tok_s = j.value("decode_tok_s", 0.0);
    b.decode_spread = j.value("decode_spread", 0.0);
    b.decode_bytes_per_token = j.value("decode_bytes_per_token", uint64_t(0));
    b.prefill_gflops = j.value("prefill_gflops", 0.0);
    b.n_threads = j.value("threads", 0);
    b.recorded_at = j.value("recorded_at", int64_t(0));
    b.model = j.value("model", "");
    b.probe_measured_at = j.value("probe_measured_at", int64_t(0));
    b.probe_read_bytes_per_s = j.value("probe_read_bandwidth_bytes_per_s", 0.0);
    return b;
}

json storage_to_json(const StorageResult& s) {
    json random = json::array();
    for (const StorageRandom& r : s.random) {
        random.push_back({{"block_bytes", r.block_bytes},
                          {"bytes_per_s", r.rate.median},
                          {"rate", stats_to_json(r.rate)}});
    }
    return {{"dir", s.dir},
            {"file_bytes", s.file_bytes},
            {"direct_io", s.direct_io},
            {"note", s.note},
            {"sequential_bytes_per_s", s.sequential.median},
            {"sequential", stats_to_json(s.sequential)},
            {"random", random},
            {"write_seconds", s.write_seconds},
            {"seconds", s.seconds},
            {"measured_at", s.measured_at}};
}

StorageResult storage_from_json(const json& j) {
    StorageResult s;
    s.dir = j.value("dir", "");
    s.file_bytes = j.value("file_bytes", uint64_t(0));
    s.direct_io = j.value("direct_io", false);
    s.note = j.value("note", "");
    s.sequential = stats_from_json(j.value("sequential", json::object()));
    for (const json& r : j.value("random", json::array())) {
        s.random.push_back({r.value("block_bytes", uint64_t(0)),
                            stats_from_json(r.value("rate", json::object()))});
    }
    s.write_seconds = j.value("write_seconds", 0.0);
    s.seconds = j.value("seconds", 0.0);
    s.measured_at = j.value("measured_at", int64_t(0));
    return s;
}

// A cache written on another machine (or before its RAM changed) does not describe this one.
bool same_machine(const SystemInfo& a, const SystemInfo& b) {
    const double ra = double(a.memory.total_bytes), rb = double(b.memory.total_bytes);
    return a.cpu_name == b.cpu_name && a.logical_cpus == b.logical_cpus && a.arch == b.arch &&
           std::abs(ra - rb) <= 0.02 * std::max(ra, rb);
}

void make_dirs(const std::string& path) {
    for (size_t i = 1; i <= path.size(); ++i) {
        if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
    }
}

void write_cache(const MeasuredDevice& m) {
    const std::string path = device_cache_path();
    if (path.empty())
        fail(ErrorKind::io, "cannot save the device: neither XDG_CACHE_HOME nor HOME");
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

// Why `now` disagrees with `saved`: a read bandwidth further below it than `limit` (relative).
// Contention only slows a measurement, so a higher one never disagrees.
std::string below_saved(const BandwidthResult& now, const BandwidthResult& saved, double limit,
                        const char* limit_is) {
    if (!(saved.read.median > 0) || !(now.read.median > 0)) return "";
    const double drop = 1 - now.read.median / saved.read.median;
    if (drop <= limit) return "";
    return fmt::format(
        "the read bandwidth now, {:.1f} GB/s, is {:.1f} % below the saved {:.1f} GB/s +- {:.1f} %, "
        "more than {} ({:.1f} %)",
        now.read.median / 1e9, 100 * drop, saved.read.median / 1e9, 100 * saved.read.spread,
        limit_is, 100 * limit);
}

}  // namespace

bool MeasuredDevice::bench_matches() const {
    return bench && bench->probe_measured_at == measured_at &&
           bench->probe_read_bytes_per_s == bandwidth.read.median && bandwidth.read.median > 0;
}

std::string device_cache_path() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) return std::string(xdg) + "/memwall/device.json";
    const char* home = std::getenv("HOME");
    if (home && *home) return std::string(home) + "/.cache/memwall/device.json";
    return "";
}

std::string measured_device_to_json(const MeasuredDevice& m) {
    const BandwidthResult& b = m.bandwidth;
    json j = {{"format", kFormat},
              {"system", system_to_json(m.system)},
              {"measured_at", m.measured_at},
              {"read_bandwidth_bytes_per_s", b.read.median},
              {"read_bandwidth", stats_to_json(b.read)},
              {"triad_bandwidth_bytes_per_s", b.triad.median},
              {"triad_bandwidth", stats_to_json(b.triad)},
              {"bandwidth_buffer_bytes", b.buffer_bytes},
              {"bandwidth_threads", b.n_threads},
              {"bandwidth_seconds", b.seconds},
              {"last_level_cache_bytes", b.last_level_cache_bytes},
              {"others_cpu_share", b.others_cpu_share},
              {"contention", b.contention},
              {"matmul_gflops", m.matmul_gflops.median},
              {"matmul", stats_to_json(m.matmul_gflops)},
              {"int8_peak_gmacs", m.int8_peak.macs_per_s / 1e9},
              {"int8_peak_threads", m.int8_peak.n_threads},
              {"kernel_set", m.int8_peak.kernel_set}};
    if (m.bench) j["bench"] = bench_to_json(*m.bench);
    if (m.storage) j["storage"] = storage_to_json(*m.storage);
    return j.dump(1);
}

MeasuredDevice measured_device_from_json(const std::string& text) {
    const json j = json::parse(text);
    if (j.value("format", 0) != kFormat) {
        fail(ErrorKind::bad_file, "device cache: format {} is not {}", j.value("format", 0),
             kFormat);
    }
    MeasuredDevice m;
    m.system = system_from_json(j.at("system"));
    m.measured_at = j.value("measured_at", int64_t(0));
    BandwidthResult& b = m.bandwidth;
    b.read = stats_from_json(j.value("read_bandwidth", json::object()));
    b.triad = stats_from_json(j.value("triad_bandwidth", json::object()));
    b.buffer_bytes = j.value("bandwidth_buffer_bytes", uint64_t(0));
    b.n_threads = j.value("bandwidth_threads", 0);
    b.seconds = j.value("bandwidth_seconds", 0.0);
    b.last_level_cache_bytes = j.value("last_level_cache_bytes", uint64_t(0));
    b.others_cpu_share = j.value("others_cpu_share", 0.0);
    b.contention = j.value("contention", "");
    m.matmul_gflops = stats_from_json(j.value("matmul", json::object()));
    m.int8_peak.macs_per_s = j.value("int8_peak_gmacs", 0.0) * 1e9;
    m.int8_peak.n_threads = j.value("int8_peak_threads", 0);
    m.int8_peak.kernel_set = j.value("kernel_set", "");
    if (j.contains("bench")) m.bench = bench_from_json(j["bench"]);
    if (j.contains("storage")) m.storage = storage_from_json(j["storage"]);
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
        if (!(m.bandwidth.read.median > 0)) return std::nullopt;
        return m;
    } catch (const std::exception&) {
        return std::nullopt;  // a damaged or older cache is measured again
    }
}

MeasuredDevice probe_device(const ProbeOptions& options) {
    MeasuredDevice m;
    m.system = read_system_info();
    m.measured_at = unix_now();
    if (!options.measure) return m;
    const auto start = std::chrono::steady_clock::now();
    ThreadPool pool(options.n_threads > 0 ? options.n_threads : m.system.engine_threads);
    const ArraySize size = choose_array_bytes(m.system);
    {
        const auto passes =
            memory_passes(pool, options.array_bytes ? options.array_bytes : size.bytes);
        // Most of the time goes to bandwidth (what decoding depends on), the rest to the matmul.
        m.bandwidth = measure_bandwidth(*passes, options.seconds * 0.75);
    }
    m.bandwidth.last_level_cache_bytes = size.last_level_cache_bytes;
    m.matmul_gflops = measure_matmul_gflops(pool, options.seconds * 0.15);
    m.int8_peak = measure_int8_peak(pool, options.seconds * 0.05);
    m.bandwidth.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!options.storage_dir.empty()) {
        StorageOptions so;
        so.dir = options.storage_dir;
        if (options.storage_bytes) so.file_bytes = options.storage_bytes;
        m.storage = measure_storage(so);
    }
    return m;
}

SaveResult save_measurement(const MeasuredDevice& m, bool force) {
    SaveResult r;
    r.path = device_cache_path();
    const std::optional<MeasuredDevice> old = cached_device();
    if (!force) {
        r.reason = m.bandwidth.contention;
        // Lower than the saved figure by more than its own spread: the two disagree, and the
        // plans would move by more than the spread they report. Higher replaces it (the saved
        // one was the slowed one).
        if (r.reason.empty() && old) {
            r.reason = below_saved(m.bandwidth, old->bandwidth, m.bandwidth.read.spread,
                                   "this measurement's spread");
        }
        if (!r.reason.empty()) return r;
    }
    MeasuredDevice saved = m;
    if (!saved.storage && old) saved.storage = old->storage;  // not measured this time
    // A bench record divides by the bandwidth it was measured against: never by another one.
    if (!saved.bench_matches()) saved.bench.reset();
    r.dropped_bench = old && old->bench && !saved.bench;
    write_cache(saved);
    r.saved = true;
    return r;
}

bool reset_device_cache() {
    const std::string path = device_cache_path();
    return !path.empty() && std::remove(path.c_str()) == 0;
}

DeviceProfile device_from_measurement(const MeasuredDevice& m, const MemoryNow& memory) {
    DeviceProfile d;
    const int threads = m.bandwidth.n_threads ? m.bandwidth.n_threads : m.system.engine_threads;
    d.id = "this";
    d.name = fmt::format("this machine ({}, {} threads)", m.system.cpu_name, threads);
    d.ram_bytes = memory.total_bytes;
    d.os_reserve_bytes = memory.total_bytes - std::min(memory.total_bytes, memory.available_bytes);
    d.bandwidth_bytes_per_s = m.bandwidth.read.median;
    d.bandwidth_spread = m.bandwidth.read.spread;
    d.bandwidth_source = "saved measurement";
    d.measured_at = m.measured_at;
    if (m.bench_matches() && m.bench->decode_efficiency > 0) {
        d.decode_efficiency = m.bench->decode_efficiency;
        d.efficiency_source = "measured by bench";
        d.efficiency_measured_at = m.bench->recorded_at;
        // tok/s = efficiency x bandwidth / bytes = what bench measured: the bandwidth cancels.
        d.decode_spread = m.bench->decode_spread;
    } else {
        d.decode_efficiency = kDefaultDecodeEfficiency;
        d.efficiency_source = "default";
        d.decode_spread = m.bandwidth.read.spread;
    }
    if (m.bench_matches() && m.bench->prefill_gflops > 0) {
        d.prefill_gflops = m.bench->prefill_gflops;
        d.prefill_source = "measured by bench";
    } else {
        d.prefill_gflops = m.matmul_gflops.median * kDefaultPrefillShareOfMatmul;
        d.prefill_source = "0.85 x the measured matmul";
    }
    d.source = "measured";
    d.n_threads = threads;
    if (m.storage && m.storage->measured()) {
        const StorageResult& s = *m.storage;
        d.storage_seq_bytes_per_s = s.sequential.median;
        d.storage_random.clear();
        for (const StorageRandom& r : s.random) {
            d.storage_random.push_back({r.block_bytes, r.rate.median});
            d.storage_spread = std::max(d.storage_spread, r.rate.spread);
        }
        d.storage_assumed = false;
        d.storage_source = fmt::format("measured in {}{}", s.dir,
                                       s.direct_io ? "" : " (page cache dropped, no O_DIRECT)");
        d.storage_measured_at = s.measured_at;
    } else {
        // Nothing measured yet: an SSD's typical figures, said to be assumed.
        d.storage_seq_bytes_per_s = 2.0e9;
        d.storage_random = {{uint64_t(1) << 20, 1.0e9}};
        d.storage_assumed = true;
        d.storage_source =
            "assumed: an SSD (2.0 GB/s in order, 1.0 GB/s random 1 MiB); memwall probe --save "
            "--storage-dir DIR measures it";
    }
    // The point bench measured, drawn on the roofline chart (plan --plot).
    if (m.bench_matches() && m.bench->decode_tok_s > 0 && m.bench->decode_bytes_per_token > 0) {
        d.measured_decode_tok_s = m.bench->decode_tok_s;
        d.measured_decode_bytes_per_token = m.bench->decode_bytes_per_token;
    }
    return d;
}

DeviceProfile this_device() {
    if (const std::optional<MeasuredDevice> m = cached_device())
        return device_from_measurement(*m, memory_now());
    const MeasuredDevice m = probe_device({});
    const SaveResult saved = save_measurement(m, false);
    DeviceProfile d = device_from_measurement(m, memory_now());
    d.bandwidth_source = "measured now";
    d.note = saved.saved ? fmt::format("measured now and saved to {}", saved.path)
                         : fmt::format("measured now, not saved: {}", saved.reason);
    return d;
}

DeviceProfile this_device_placeholder() {
    DeviceProfile d;
    d.id = "this";
    d.source = "to measure";
    return d;
}

bool is_this_device_placeholder(const DeviceProfile& d) {
    return d.id == "this" && d.source == "to measure";
}

RecordResult record_bench(const BenchFigures& f, bool force, BandwidthPasses* check) {
    RecordResult r;
    r.path = device_cache_path();
    std::optional<MeasuredDevice> saved = cached_device();
    const bool measured_now = !saved;
    if (!saved) saved = probe_device({.n_threads = f.n_threads});
    r.device = *saved;
    MeasuredDevice& base = *saved;
    if (base.bandwidth.n_threads != f.n_threads) {
        r.reason = fmt::format(
            "the saved bandwidth was measured with {} threads and bench ran with {}: run bench "
            "with -t {}, or save a measurement with -t {} first (memwall probe --save -t {})",
            base.bandwidth.n_threads, f.n_threads, base.bandwidth.n_threads, f.n_threads,
            f.n_threads);
        return r;
    }
    std::vector<std::string> why;
    const double decode_spread = f.decode_tok_s > 0 ? f.decode_tok_s_sd / f.decode_tok_s : 0.0;
    if (f.n_reps >= 2 && decode_spread > kMaxSpread) {
        why.push_back(fmt::format(
            "decode speed varied by +-{:.0f} % (standard deviation) over {} repetitions "
            "(limit +-{:.0f} %)",
            100 * decode_spread, f.n_reps, 100 * kMaxSpread));
    }
    // The bandwidth now, with bench's threads and the saved arrays: contention during bench
    // usually outlasts it.
    BandwidthResult now = base.bandwidth;
    if (check) {
        now = measure_bandwidth(*check, 0.0, 3);
    } else if (!measured_now) {
        ThreadPool pool(f.n_threads);
        const auto passes = memory_passes(pool, base.bandwidth.buffer_bytes);
        now = measure_bandwidth(*passes, 0.5, 3);
    }
    r.read_bytes_per_s_now = now.read.median;
    if (!now.contention.empty()) why.push_back("the bandwidth check: " + now.contention);
    const double limit = std::max(kMaxSpread, 2 * (base.bandwidth.read.spread + now.read.spread));
    if (const std::string below = below_saved(now, base.bandwidth, limit, "both spreads explain");
        !below.empty()) {
        why.push_back(below);
    }
    if (!why.empty() && !force) {
        for (const std::string& w : why) r.reason += (r.reason.empty() ? "" : "; ") + w;
        return r;
    }

    BenchRecord b;
    b.model = f.model;
    b.n_threads = f.n_threads;
    b.recorded_at = unix_now();
    b.probe_measured_at = base.measured_at;
    b.probe_read_bytes_per_s = base.bandwidth.read.median;
    b.decode_tok_s = f.decode_tok_s;
    b.decode_spread = decode_spread;
    b.decode_bytes_per_token = f.decode_bytes_per_token;
    if (f.decode_tok_s > 0 && f.decode_bytes_per_token > 0 && base.bandwidth.read.median > 0) {
        b.decode_efficiency =
            f.decode_tok_s * double(f.decode_bytes_per_token) / base.bandwidth.read.median;
    } else if (base.bench_matches()) {  // a prompt-only bench keeps the decode figures
        b = *base.bench;
        b.recorded_at = unix_now();
    }
    if (f.prompt_tok_s > 0 && f.prompt_flops_per_token > 0) {
        b.prefill_gflops = f.prompt_tok_s * f.prompt_flops_per_token / 1e9;
    } else if (base.bench_matches()) {
        b.prefill_gflops = base.bench->prefill_gflops;
    }
    base.bench = b;
    write_cache(base);
    r.device = base;
    r.recorded = true;
    return r;
}

}  // namespace mw
