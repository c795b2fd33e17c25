// This machine as a planning device: a saved measurement (the probe's bandwidth and matmul
// figures, and what `bench --record` measured against that bandwidth) in a small JSON file, so
// that `memwall plan --device this` is instant and every plan uses the same figures.
//
// The file is $XDG_CACHE_HOME/memwall/device.json (default ~/.cache/memwall/device.json). It is
// used only on the machine that wrote it (same CPU name, CPU count and RAM size). It is written
// when nothing is saved yet and a measurement is needed, by `memwall probe --save` and by
// `memwall bench --record`, never with a measurement that looks contended (unless forced);
// `memwall probe --reset` removes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "plan/devices.h"
#include "plan/measure.h"
#include "plan/storage.h"
#include "sys/probe.h"

namespace mw {

// What `bench --record` measured, relative to one bandwidth measurement.
struct BenchRecord {
    // Measured decode tok/s / (read bandwidth / weight bytes per token).
    double decode_efficiency = 0;
    double decode_tok_s = 0;
    double decode_spread = 0;  // standard deviation / mean over the repetitions
    uint64_t decode_bytes_per_token = 0;
    double prefill_gflops = 0;  // measured prompt tok/s x FLOPs per token; 0: not measured
    int n_threads = 0;
    int64_t recorded_at = 0;  // unix time
    std::string model;
    // The bandwidth measurement the efficiency is relative to: a record is used only with it.
    int64_t probe_measured_at = 0;
    double probe_read_bytes_per_s = 0;
};

struct MeasuredDevice {
    SystemInfo system;
    BandwidthResult bandwidth;
    RateStats matmul_gflops;  // the engine's Q4_K matmul, all measurement threads
    Int8Peak int8_peak;       // the kernel set's int8 dot-product peak, all measurement threads
    int64_t measured_at = 0;  // unix time
    std::optional<BenchRecord> bench;
    // The storage read bandwidth of a folder (probe --storage-dir, or the current folder): kept
    // across saves that did not measure it, since it does not depend on the memory's figures.
    std::optional<StorageResult> storage;
    // Whether `bench` belongs to this bandwidth measurement (recorded against it).
    bool bench_matches() const;
};

// The engine's decode efficiency before `bench` has measured it: the share of the probe's read
// bandwidth that a decode step reaches (its matmuls stream the weights like the probe does).
inline constexpr double kDefaultDecodeEfficiency = 0.8;
// Prompt processing is mostly matmuls; the rest of a layer costs roughly another 15 %.
inline constexpr double kDefaultPrefillShareOfMatmul = 0.85;

// "" when neither XDG_CACHE_HOME nor HOME is set.
std::string device_cache_path();

struct ProbeOptions {
    int n_threads = 0;           // 0: the engine's default thread count
    double seconds = 1.5;        // measurement budget (at least 5 passes of each kernel)
    bool measure = true;         // false: system facts only
    uint64_t array_bytes = 0;    // per array; 0: choose_array_bytes()
    std::string storage_dir;     // measure the storage read bandwidth there; "": not measured
    uint64_t storage_bytes = 0;  // its test file; 0: StorageOptions' default (256 MiB)
};
// Measures this machine; writes nothing.
MeasuredDevice probe_device(const ProbeOptions& options);

// The saved measurement of this machine, if any.
std::optional<MeasuredDevice> cached_device();

struct SaveResult {
    bool saved = false;
    std::string reason;  // why not, when not saved
    std::string path;
    bool dropped_bench = false;  // the saved bench record belonged to the replaced measurement
};
// Saves `m` as this machine's measurement, unless it looks contended (its own contention, or a
// read bandwidth further below the saved one than its own spread: plans would move by more than
// the spread they report) and `force` is false.
// A bench record of the replaced measurement is dropped: it is relative to that bandwidth.
SaveResult save_measurement(const MeasuredDevice& m, bool force);
// Removes the saved measurement. False when there was none.
bool reset_device_cache();

// This machine as a plan device: the saved measurement, or one made now (and saved when nothing
// was saved and it does not look contended), with the memory available now as its usable memory.
DeviceProfile this_device();
// "this" in a plan request before it is measured: make_plan resolves it with this_device() once
// the models are read.
DeviceProfile this_device_placeholder();
bool is_this_device_placeholder(const DeviceProfile& d);
DeviceProfile device_from_measurement(const MeasuredDevice& m, const MemoryNow& memory);

// What bench measured on this machine, to record.
struct BenchFigures {
    std::string model;
    int n_threads = 0;
    int n_reps = 0;
    uint64_t decode_bytes_per_token = 0;
    double decode_tok_s = 0, decode_tok_s_sd = 0;
    double prompt_flops_per_token = 0;
    double prompt_tok_s = 0, prompt_tok_s_sd = 0;
};
struct RecordResult {
    bool recorded = false;
    std::string reason;  // why not, when not recorded
    std::string path;
    double read_bytes_per_s_now = 0;  // the bandwidth measured for the check
    MeasuredDevice device;            // what is saved now (recorded or not)
};
// Records bench's figures against the saved measurement (measured and saved first when there is
// none), after checking that the machine was not contended: the decode repetitions agree within
// kMaxSpread, and a bandwidth measured now with bench's threads is neither contended itself nor
// further below the saved one than their spreads explain. `force` records anyway. `check`
// replaces the real passes of that bandwidth measurement (tests script it).
RecordResult record_bench(const BenchFigures& figures, bool force,
                          BandwidthPasses* check = nullptr);

std::string measured_device_to_json(const MeasuredDevice& m);
MeasuredDevice measured_device_from_json(const std::string& text);

}  // namespace mw
