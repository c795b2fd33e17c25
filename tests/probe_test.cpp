// The probe: system facts, the bandwidth and matmul measurements, the device cache that makes
// `plan --device this` instant, and what bench records there.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "plan/device_cache.h"
#include "plan/devices.h"
#include "plan/probe.h"
#include "runtime/thread_pool.h"
#include "support/test_support.h"
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

TEST(Probe, MeasuresBandwidthAndMatmul) {
    ThreadPool pool(2);
    const BandwidthResult bw = measure_bandwidth(pool, 0.3, 1 << 20, 0);
    EXPECT_EQ(bw.n_threads, 2);
    EXPECT_EQ(bw.buffer_bytes, uint64_t(32) << 20);  // at least 32 MiB per array
    // Any machine that runs memwall moves more than 100 MB/s and less than 10 TB/s.
    EXPECT_GT(bw.read_bytes_per_s, 1e8);
    EXPECT_LT(bw.read_bytes_per_s, 1e13);
    EXPECT_GT(bw.triad_bytes_per_s, 1e8);
    EXPECT_LT(bw.triad_bytes_per_s, 1e13);
    const double gflops = measure_matmul_gflops(pool, 0.1);
    EXPECT_GT(gflops, 0.01);
    EXPECT_LT(gflops, 1e5);
}

// The int8 peak is the ceiling of the engine's integer matmul: a register-only loop of the same
// dot-product instruction cannot be slower than a matmul that also moves data (20 % slack for
// a noisy machine between the two measurements).
TEST(Probe, Int8PeakBoundsTheMatmul) {
    ThreadPool pool(1);
    const double peak = measure_int8_peak_gmacs(pool, 0.1);
    if (std::string(kernel_isa()) == "scalar") {
        EXPECT_EQ(peak, 0.0);
        return;
    }
    if (peak == 0.0) GTEST_SKIP() << "no int8 peak loop for the " << kernel_isa() << " kernels";
    const double matmul_gmacs = measure_matmul_gflops(pool, 0.1) / 2;
    EXPECT_GT(peak, 0.8 * matmul_gmacs) << kernel_isa();
    EXPECT_LT(peak, 1e5);
}

TEST(Probe, CacheMakesThisDeviceInstantAndKeepsBenchFigures) {
    const CacheDir cache;
    EXPECT_EQ(device_cache_path(), cache.dir() + "/memwall/device.json");
    EXPECT_FALSE(cached_device());

    const MeasuredDevice m = probe_device({.n_threads = 2, .seconds = 0.4});
    ASSERT_TRUE(cached_device());
    EXPECT_DOUBLE_EQ(cached_device()->bandwidth.read_bytes_per_s, m.bandwidth.read_bytes_per_s);

    DeviceProfile d = this_device();
    EXPECT_EQ(d.id, "this");
    EXPECT_EQ(d.source, "measured");
    EXPECT_DOUBLE_EQ(d.bandwidth_bytes_per_s, m.bandwidth.read_bytes_per_s);
    EXPECT_DOUBLE_EQ(d.decode_efficiency, kDefaultDecodeEfficiency);
    EXPECT_EQ(d.efficiency_source, "default");
    EXPECT_LE(d.usable_bytes(), d.ram_bytes);

    // bench: 1 GB per token at half the probe's read bandwidth -> efficiency 0.5.
    const double tok_s = 0.5 * m.bandwidth.read_bytes_per_s / 1e9;
    record_bench_result(tok_s, 1000000000, 20.0, 2e9);
    d = this_device();
    EXPECT_NEAR(d.decode_efficiency, 0.5, 1e-9);
    EXPECT_EQ(d.efficiency_source, "measured by bench");
    EXPECT_NEAR(d.prefill_gflops, 40.0, 1e-9);
    // A new probe keeps what bench measured.
    probe_device({.n_threads = 2, .seconds = 0.3});
    EXPECT_NEAR(this_device().decode_efficiency, 0.5, 1e-9);

    // A cache from another machine is not used.
    MeasuredDevice other = *cached_device();
    other.system.cpu_name = "another CPU";
    std::ofstream(device_cache_path()) << measured_device_to_json(other);
    EXPECT_FALSE(cached_device());
    // Nor a damaged one.
    std::ofstream(device_cache_path()) << "{ not json";
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

TEST(Probe, CliTextAndJson) {
    const std::string env = "XDG_CACHE_HOME=" + test::temp_dir() + " ";
    const test::CommandResult j =
        test::run_command(env + test::cli_path() + " probe --json --seconds 0.4 -t 2");
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const json p = json::parse(j.out);
    for (const char* key :
         {"read_bandwidth_bytes_per_s", "triad_bandwidth_bytes_per_s", "matmul_gflops",
          "int8_peak_gmacs", "kernel_set", "bandwidth_threads", "cache_file"}) {
        EXPECT_TRUE(p.contains(key)) << key;
    }
    for (const char* key : {"cpu", "logical_cpus", "engine_threads", "simd", "caches",
                            "ram_total_bytes", "ram_available_bytes"}) {
        EXPECT_TRUE(p["system"].contains(key)) << key;
    }
    EXPECT_EQ(p["bandwidth_threads"], 2);
    const test::CommandResult t = test::run_command(env + test::cli_path() + " probe --no-measure");
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_NE(t.out.find("SIMD"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("RAM"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("Bandwidth"), std::string::npos) << t.out;
}

}  // namespace
}  // namespace mw
