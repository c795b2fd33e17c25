// Measuring this machine for plans: memory bandwidth and matmul throughput as robust statistics
// (the median of several passes, outliers flagged, the spread reported), sized against the
// last-level cache, and judged for contention (other work on the CPUs, passes that disagree).
//
// The bandwidth measurement takes its pass timings and the CPU load through an interface
// (BandwidthPasses), so that tests script noisy and contended runs without sleeping or loading
// the machine; MemoryPasses is the real one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sys/probe.h"
#include "tensor/parallel.h"

namespace mw {

// Repeated measurements of one rate, summarised robustly.
struct RateStats {
    double median = 0;
    // Relative: the largest distance of a kept pass from the median, / median. The median of the
    // kept passes moves by no more than this when a minority of passes is disturbed.
    double spread = 0;
    double min = 0, max = 0;  // over every pass, outliers included
    int n = 0;
    int n_outliers = 0;  // passes far from the median (see kOutlierDistance), left out of spread
};
// A pass is an outlier when it lies further from the median than max(4 x the median absolute
// deviation, 5 % of the median): measurement noise is a few percent, contention tens of percent.
RateStats robust_stats(const std::vector<double>& rates);

// Limits a measurement must meet to be kept as this machine's figure.
inline constexpr double kMaxSpread = 0.10;          // passes agree within +-10 %
inline constexpr double kMaxOthersCpuShare = 0.25;  // other work took at most 25 % of the CPUs
inline constexpr double kMaxOutlierFraction = 1.0 / 3;

// Where the bandwidth measurement's timings come from.
class BandwidthPasses {
  public:
    virtual ~BandwidthPasses() = default;
    virtual uint64_t array_bytes() const = 0;  // per array; three arrays
    virtual int n_threads() const = 0;
    // Seconds one pass took: read = sum the three arrays; triad = a[i] = b[i] + s * c[i].
    virtual double read_pass() = 0;
    virtual double triad_pass() = 0;
    // Of the CPU time the measurement's threads needed since the first pass, the share that
    // other work took (other processes, and the hypervisor's steal time): 0 none, 1 all of it.
    virtual double others_cpu_share() = 0;
};

// The real passes: three arrays of `array_bytes` touched first by the threads that read them.
std::unique_ptr<BandwidthPasses> memory_passes(Parallel& par, uint64_t array_bytes);

struct BandwidthResult {
    RateStats read;             // bytes/s summing 3 x buffer_bytes
    RateStats triad;            // bytes/s counted as 3 x 8 bytes per element (STREAM's convention)
    uint64_t buffer_bytes = 0;  // per array
    uint64_t last_level_cache_bytes = 0;  // what the arrays were sized against (0: unknown)
    int n_threads = 0;
    double seconds = 0;
    double others_cpu_share = 0;
    std::string contention;  // why the figures look disturbed; "" when they do not

    double read_bytes_per_s() const { return read.median; }
};

// At least `min_passes` passes of each kernel, more while the summed pass time is within
// `seconds` (at most 32 each). Deterministic for scripted timings.
BandwidthResult measure_bandwidth(BandwidthPasses& passes, double seconds, int min_passes = 5);

// Why a measurement should not be kept (more than a third of the passes outliers, a spread
// above kMaxSpread, or other work above kMaxOthersCpuShare of the CPUs); "" when it is fine.
std::string judge_contention(const BandwidthResult& r);

// Array size for a machine: three arrays together at least 4 x the last-level cache (all
// instances of it), or 1 GiB and 4 x the largest cache seen when the cache is unknown, but at
// most a quarter of the available memory. `why` says what it was sized against.
struct ArraySize {
    uint64_t bytes = 0;  // per array
    uint64_t last_level_cache_bytes = 0;
    std::string why;
};
ArraySize choose_array_bytes(const SystemInfo& system);

// The last-level cache this process can fill: the largest level's size times its instances
// across the logical CPUs (0 when no cache is known).
uint64_t last_level_cache_bytes(const SystemInfo& system);

// The engine's own Q4_K matmul (4096 x 512 weight, 32 tokens) repeated for about `seconds`:
// GFLOP/s per pass.
RateStats measure_matmul_gflops(Parallel& par, double seconds);

// The int8 peak of the installed kernel set (KernelSet::int8_peak: a register-only loop of its
// dot-product instruction, e.g. AVX-512 VNNI vpdpbusd, NEON sdot/smmla) on every thread of `par`
// at once for about `seconds`: multiply-accumulates per second, all threads together. What
// prefill is measured against (bench/kernels-table); 0 for the scalar set.
struct Int8Peak {
    double macs_per_s = 0;
    int n_threads = 0;
    std::string kernel_set;
};
Int8Peak measure_int8_peak(Parallel& par, double seconds);

// Counts the CPU time other work takes on the CPUs this process may run on (/proc/stat per CPU,
// steal included, less this process's own time) and reports it as a share of what `n_threads`
// busy threads need: other work on CPUs the threads leave idle does not count. Zero where
// /proc/stat cannot be read.
class CpuLoadMonitor {
  public:
    explicit CpuLoadMonitor(int n_threads);  // starts counting
    double others_cpu_share() const;

  private:
    double start_busy_ = 0, start_self_ = 0, start_wall_ = 0;
    int n_threads_ = 1;
    bool available_ = false;
};

}  // namespace mw
