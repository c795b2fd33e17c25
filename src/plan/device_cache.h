// This machine as a planning device: the probe's measurements, kept in a small JSON file so that
// `memwall plan --device this` is instant, plus the decode efficiency `bench` measures.
//
// The file is $XDG_CACHE_HOME/memwall/device.json (default ~/.cache/memwall/device.json). It is
// used only on the machine that wrote it (same CPU name, CPU count and RAM size); `memwall probe`
// always measures afresh and rewrites it, keeping bench's figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "plan/devices.h"
#include "plan/probe.h"

namespace mw {

struct MeasuredDevice {
    SystemInfo system;
    BandwidthResult bandwidth;
    double matmul_gflops = 0;  // the engine's Q4_K matmul, all engine threads
    // The kernels' int8 dot product in a register-only loop, all engine threads; and the set.
    double int8_peak_gmacs = 0;
    std::string kernel_set;
    int64_t measured_at = 0;  // unix time
    // Written by `bench`: measured decode tok/s / (read bandwidth / weight bytes per token).
    std::optional<double> decode_efficiency;
    // Written by `bench`: measured prompt tok/s x FLOPs per token.
    std::optional<double> prefill_gflops;
};

// The engine's decode efficiency before `bench` has measured it: the share of the probe's read
// bandwidth that a decode step reaches (its matmuls stream the weights like the probe does).
inline constexpr double kDefaultDecodeEfficiency = 0.8;

// "" when neither XDG_CACHE_HOME nor HOME is set.
std::string device_cache_path();

struct ProbeOptions {
    int n_threads = 0;     // 0: the engine's default thread count
    double seconds = 1.5;  // measurement budget
    bool measure = true;   // false: system facts only
    bool write_cache = true;
};
MeasuredDevice probe_device(const ProbeOptions& options);

// The cached measurement of this machine, if any.
std::optional<MeasuredDevice> cached_device();

// This machine as a plan device: the cached measurement (measured and cached now if there is
// none), with the memory available now as its usable memory.
DeviceProfile this_device();
DeviceProfile device_from_measurement(const MeasuredDevice& m, const MemoryNow& memory);

// Records what `bench` measured on this machine. Returns the cache path written.
std::string record_bench_result(double decode_tok_s, uint64_t decode_bytes_per_token,
                                double prompt_tok_s, double prompt_flops_per_token);

std::string measured_device_to_json(const MeasuredDevice& m);
MeasuredDevice measured_device_from_json(const std::string& text);

}  // namespace mw
