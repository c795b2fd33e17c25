// The probe: system facts, the bandwidth and matmul measurements, the device cache that makes
// `plan --device this` instant, and what bench records there.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "plan/device_cache.h"
#include "plan/devices.h"
#include "plan/measure.h"
#include "support/test_support.h"
#include "sys/probe.h"
#include "sys/thread_pool.h"
#include "tensor/kernels.h"
#include "tensor/types.h"

namespace mw {
namespace {

using nlohmann::json;

// Points the device cache at a fresh folder for the duration of a test.
class CacheDir {
  public:
    CacheDir() : dir_(test::temp_dir()) {
        const char* old = std::getenv("XDG_CACHE_HOME");
        if (old) old_ = old;
        had_old_ = old != nullptr;
        ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
    }
    ~CacheDir() {
        if (had_old_) {
            ::setenv("XDG_CACHE_HOME", old_.c_str(), 1);
        } else {
            ::unsetenv("XDG_CACHE_HOME");
        }
    }
    const std::string& dir() const { return dir_; }

  private:
    std::string dir_, old_;
    bool had_old_ = false;
};

TEST(Probe, SystemFacts) {
    const SystemInfo s = read_system_info();
    EXPECT_FALSE(s.cpu_name.empty());
    EXPECT_GE(s.logical_cpus, 1);
    EXPECT_GE(s.engine_threads, 1);
    EXPECT_LE(s.engine_threads, s.logical_cpus);
    EXPECT_GT(s.memory.total_bytes, uint64_t(64) << 20);
    EXPECT_GT(s.memory.available_bytes, 0u);
    EXPECT_LE(s.memory.available_bytes, s.memory.total_bytes);
    for (const CacheLevel& c : s.caches) {
        EXPECT_GE(c.level, 1);
        EXPECT_GT(c.bytes, 0u);
    }
}

TEST(Probe, CacheMakesThisDeviceInstantAndKeepsBenchFigures) {
    const CacheDir cache;
    EXPECT_EQ(device_cache_path(), cache.dir() + "/memwall/device.json");
    EXPECT_FALSE(cached_device());

    const MeasuredDevice m = probe_device({.n_threads = 2, .seconds = 0.2, .array_bytes = 8 << 20});
    EXPECT_FALSE(cached_device()) << "probe_device writes nothing";
    ASSERT_TRUE(save_measurement(m, /*force=*/true).saved);
    ASSERT_TRUE(cached_device());
    EXPECT_DOUBLE_EQ(cached_device()->bandwidth.read.median, m.bandwidth.read.median);
    EXPECT_EQ(cached_device()->bandwidth.read.n, m.bandwidth.read.n);

    DeviceProfile d = this_device();
    EXPECT_EQ(d.id, "this");
    EXPECT_EQ(d.source, "measured");
    EXPECT_EQ(d.bandwidth_source, "saved measurement");
    EXPECT_EQ(d.measured_at, m.measured_at);
    EXPECT_DOUBLE_EQ(d.bandwidth_bytes_per_s, m.bandwidth.read.median);
    EXPECT_DOUBLE_EQ(d.decode_efficiency, kDefaultDecodeEfficiency);
    EXPECT_EQ(d.efficiency_source, "default");
    EXPECT_DOUBLE_EQ(d.decode_spread, m.bandwidth.read.spread);
    EXPECT_LE(d.usable_bytes(), d.ram_bytes);

    // bench: 1 GB per token at half the saved read bandwidth -> efficiency 0.5 (forced: the
    // machine running the tests is rarely quiet).
    const double tok_s = 0.5 * m.bandwidth.read.median / 1e9;
    const RecordResult r = record_bench({.model = "m.gguf",
                                         .n_threads = 2,
                                         .n_reps = 3,
                                         .decode_bytes_per_token = 1000000000,
                                         .decode_tok_s = tok_s,
                                         .prompt_flops_per_token = 2e9,
                                         .prompt_tok_s = 20.0},
                                        /*force=*/true);
    ASSERT_TRUE(r.recorded) << r.reason;
    d = this_device();
    EXPECT_NEAR(d.decode_efficiency, 0.5, 1e-9);
    EXPECT_EQ(d.efficiency_source, "measured by bench");
    EXPECT_NEAR(d.prefill_gflops, 40.0, 1e-9);
    EXPECT_EQ(d.prefill_source, "measured by bench");
    // Measuring again writes nothing and changes nothing.
    probe_device({.n_threads = 2, .seconds = 0.1, .array_bytes = 8 << 20});
    EXPECT_NEAR(this_device().decode_efficiency, 0.5, 1e-9);

    // A cache from another machine is not used.
    MeasuredDevice other = *cached_device();
    other.system.cpu_name = "another CPU";
    std::ofstream(device_cache_path()) << measured_device_to_json(other);
    EXPECT_FALSE(cached_device());
    // Nor a damaged one, nor one of the first format.
    std::ofstream(device_cache_path()) << "{ not json";
    EXPECT_FALSE(cached_device());
    std::ofstream(device_cache_path()) << R"({"format": 1, "system": {}})";
    EXPECT_FALSE(cached_device());
}

TEST(Probe, SizesAndProfiles) {
    EXPECT_DOUBLE_EQ(parse_size("16G", true, "--ram"), 16.0 * (1 << 30));
    EXPECT_DOUBLE_EQ(parse_size("16GiB", true, "--ram"), 16.0 * (1 << 30));
    EXPECT_DOUBLE_EQ(parse_size("512M", true, "--ram"), 512.0 * (1 << 20));
    EXPECT_DOUBLE_EQ(parse_size("68G", false, "--bandwidth"), 68e9);
    EXPECT_DOUBLE_EQ(parse_size("68GB/s", false, "--bandwidth"), 68e9);
    EXPECT_DOUBLE_EQ(parse_size("1.5e9", false, "--bandwidth"), 1.5e9);
    EXPECT_THROW(parse_size("lots", true, "--ram"), Error);
    EXPECT_THROW(parse_size("16X", true, "--ram"), Error);
    EXPECT_THROW(parse_size("-1G", true, "--ram"), Error);

    for (const char* id :
         {"phone-8g", "phone-12g", "phone-16g", "phone-24g", "laptop-16g", "rpi5-8g"}) {
        const DeviceProfile* d = find_device_profile(id);
        ASSERT_NE(d, nullptr) << id;
        EXPECT_GT(d->usable_bytes(), 0u);
        EXPECT_LT(d->os_reserve_bytes, d->ram_bytes / 2);
        EXPECT_GT(d->bandwidth_bytes_per_s, 1e10);
    }
    // LPDDR5X-8533 on a 64-bit bus: 68.3 GB/s.
    EXPECT_NEAR(find_device_profile("phone-12g")->bandwidth_bytes_per_s, 68.3e9, 0.1e9);
    const DeviceProfile e = explicit_device(uint64_t(16) << 30, 68e9);
    EXPECT_EQ(e.os_reserve_bytes, (uint64_t(5) << 29) + (uint64_t(2) << 30));  // 2.5 GiB + 2 GiB
}

TEST(Probe, SystemFactsNameTheirCaches) {
    const SystemInfo s = read_system_info();
    if (s.caches.empty()) {
        EXPECT_EQ(s.caches_source, "");
    } else {
        EXPECT_TRUE(s.caches_source == "sysfs" || s.caches_source == "CPUID") << s.caches_source;
        EXPECT_GT(last_level_cache_bytes(s), 0u);
    }
#if defined(__x86_64__)
    // Every x86-64 CPU describes its caches through CPUID; this VM's sysfs lists none.
    EXPECT_FALSE(s.caches.empty());
#endif
}

std::string probe_cli(const std::string& cache, const std::string& args) {
    return "XDG_CACHE_HOME=" + cache + " " + test::cli_path() + " " + args;
}

// The int8 peak is the installed set's dot product on every thread: above what the engine's own
// int8 matmul reaches (a peak below it would be no peak), zero for the scalar set.
TEST(Probe, Int8PeakIsAboveWhatTheMatmulReaches) {
    ThreadPool pool(2);
    const Int8Peak peak = measure_int8_peak(pool, 0.05);
    EXPECT_EQ(peak.n_threads, 2);
    EXPECT_EQ(peak.kernel_set, installed_kernels().name);
    if (std::string(installed_kernels().name) == "scalar") {
        EXPECT_EQ(peak.macs_per_s, 0.0);
        GTEST_SKIP() << "the scalar set has no dot-product instruction to measure";
    }
    const RateStats matmul = measure_matmul_gflops(pool, 0.05);
    // GFLOP/s counts a multiply and an add: MAC/s is half. Noise margin: 20 %.
    EXPECT_GT(peak.macs_per_s * 1.2, matmul.max * 1e9 / 2)
        << peak.macs_per_s / 1e9 << " GMAC/s peak, matmul " << matmul.max << " GFLOP/s";
}

TEST(ProbeCli, TextAndJsonSaveOnlyWhenAsked) {
    const std::string cache = test::temp_dir();
    const std::string file = cache + "/memwall/device.json";
    const test::CommandResult j = test::run_command(
        probe_cli(cache, "probe --json --seconds 0.2 -t 2 --array-size 8M --no-storage"));
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const json p = json::parse(j.out);
    for (const char* key :
         {"read_bandwidth_bytes_per_s", "triad_bandwidth_bytes_per_s", "read_bandwidth",
          "matmul_gflops", "int8_peak_gmacs", "kernel_set", "bandwidth_threads", "cache_file",
          "contention", "others_cpu_share", "saved"}) {
        EXPECT_TRUE(p.contains(key)) << key;
    }
    for (const char* key : {"median", "spread", "passes", "outliers", "min", "max"})
        EXPECT_TRUE(p["read_bandwidth"].contains(key)) << key;
    EXPECT_GE(p["read_bandwidth"]["passes"].get<int>(), 3);  // 5, or 3 on a loaded machine
    for (const char* key : {"cpu", "logical_cpus", "engine_threads", "simd", "caches",
                            "caches_source", "ram_total_bytes", "ram_available_bytes"}) {
        EXPECT_TRUE(p["system"].contains(key)) << key;
    }
    EXPECT_EQ(p["bandwidth_threads"], 2);
    EXPECT_EQ(p["bandwidth_buffer_bytes"], 8 << 20);
    EXPECT_FALSE(p["saved"].get<bool>());
    EXPECT_FALSE(std::ifstream(file)) << "a plain probe saved the measurement";

    const test::CommandResult t = test::run_command(probe_cli(cache, "probe --no-measure"));
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_NE(t.out.find("SIMD"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("RAM"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("Bandwidth"), std::string::npos) << t.out;

    // --save (forced: the test machine is rarely quiet) writes it, --reset forgets it.
    const test::CommandResult save = test::run_command(
        probe_cli(cache, "probe --save --force --seconds 0.2 -t 2 --array-size 8M --no-storage"));
    ASSERT_EQ(save.exit_code, 0) << save.err;
    EXPECT_NE(save.out.find("Saved      this measurement"), std::string::npos) << save.out;
    EXPECT_NE(save.out.find("+- "), std::string::npos) << save.out;  // the spread
    EXPECT_TRUE(std::ifstream(file));
    const test::CommandResult again = test::run_command(
        probe_cli(cache, "probe --seconds 0.2 -t 2 --array-size 8M --no-storage"));
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.out.find("what plans for this machine use"), std::string::npos) << again.out;
    EXPECT_NE(again.out.find("this run: "), std::string::npos) << again.out;
    const test::CommandResult reset = test::run_command(probe_cli(cache, "probe --reset"));
    ASSERT_EQ(reset.exit_code, 0) << reset.err;
    EXPECT_NE(reset.out.find("Forgot"), std::string::npos) << reset.out;
    EXPECT_FALSE(std::ifstream(file));
    EXPECT_NE(test::run_command(probe_cli(cache, "probe --reset")).out.find("No saved"),
              std::string::npos);
    const test::CommandResult bad = test::run_command(probe_cli(cache, "probe --force"));
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--force goes with --save"), std::string::npos) << bad.err;
}

// The issue's recheck: a bench --record on a deliberately contended CPU is refused and changes
// nothing; the plan still agrees with the quiet bench it was calibrated on (decode within
// +-15 %) and with the run's peak RSS (+-5 %).
TEST(ProbeCli, ContendedBenchRecordIsRefusedAndThePlanStillAgrees) {
    if (test::run_command("command -v taskset").exit_code != 0)
        GTEST_SKIP() << "taskset (util-linux) is needed to share one CPU with a busy loop";
    if (test::run_command("taskset -c 0 true").exit_code != 0)
        GTEST_SKIP() << "this process may not run on CPU 0";
    const std::string cache = test::temp_dir();
    const std::string file = cache + "/memwall/device.json";
    const std::string model = test::shared_path("reference/models/kq-tiny-Q4_K_M.gguf");
    // Everything on CPU 0, with a cache of its own.
    const std::string pinned = "XDG_CACHE_HOME=" + cache + " taskset -c 0 " + test::cli_path();
    const test::CommandResult saved = test::run_command(
        pinned + " probe --save --force -t 1 --seconds 0.2 --array-size 8M --no-storage");
    ASSERT_EQ(saved.exit_code, 0) << saved.err;
    const std::string bench = " bench -m " + model + " -p 0 -n 64 -r 4 -t 1 --json";
    const test::CommandResult quiet = test::run_command(pinned + bench + " --record --force");
    ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
    const json quiet_bench = json::parse(quiet.out)[0];
    ASSERT_TRUE(quiet_bench["recorded"].get<bool>()) << quiet_bench.dump();
    const std::string plan_args = "plan -m " + model + " --device this -c 64 --json";
    auto planned_tok_s = [&] {
        const test::CommandResult r = test::run_command(probe_cli(cache, plan_args));
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return json::parse(r.out)["rows"][0]["decode_tok_s_expected"].get<double>();
    };
    const double before = planned_tok_s();
    const std::string saved_before = test::read_text(file);

    // The same bench sharing CPU 0 with a busy loop (stopped by the shell, or by timeout).
    const test::CommandResult contended =
        test::run_command("XDG_CACHE_HOME=" + cache +
                          " taskset -c 0 sh -c 'timeout 60 sh -c \"while :; do :; "
                          "done\" & h=$!; " +
                          test::cli_path() + bench + " --record; s=$?; kill $h; exit $s'");
    EXPECT_NE(contended.exit_code, 0) << contended.err;
    EXPECT_NE(contended.err.find("not recorded"), std::string::npos) << contended.err;
    EXPECT_NE(contended.err.find("other work took"), std::string::npos) << contended.err;
    EXPECT_EQ(test::read_text(file), saved_before) << "a refused record changed the saved figures";

    // The plan has not moved, and agrees with the quiet bench (the bytes per token it plans and
    // the ones bench counted, the threads) ...
    const double after = planned_tok_s();
    EXPECT_DOUBLE_EQ(after, before);
    const double measured = quiet_bench["tg_tok_s"].get<double>();
    EXPECT_LE(std::abs(after - measured) / measured, 0.15)
        << "plan " << after << " tok/s, bench " << measured << " tok/s";
    std::printf("plan %.1f tok/s vs the recorded bench %.1f tok/s (%+.1f %%)\n", after, measured,
                100 * (after - measured) / measured);
#ifndef MW_TEST_SANITIZED
    // ... and with the run's peak RSS.
    const test::CommandResult run = test::run_command(
        probe_cli(cache, "run -m " + model +
                             " -c 256 -n 250 --ignore-eos --temp 0 -p 'Once upon a time' "
                             "--verbose -t 1"));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const size_t end = run.err.find(" % vs measured)");
    ASSERT_NE(end, std::string::npos) << run.err;
    const double rss_error = std::stod(run.err.substr(run.err.rfind('(', end) + 1));
    EXPECT_LE(std::abs(rss_error), 5.0) << run.err;
#endif
}

}  // namespace
}  // namespace mw
