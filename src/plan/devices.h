// Devices a plan is made for: built-in profiles (phones, a laptop, a Raspberry Pi 5), explicit
// figures (--ram 16G --bandwidth 68G), or this machine as measured by the probe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mw {

struct DeviceProfile {
    std::string id;    // "phone-12g": what --device accepts
    std::string name;  // "Phone, 12 GB LPDDR5X-8533"
    uint64_t ram_bytes = 0;
    // Memory the OS, its services and the foreground UI keep (on this machine: what other
    // processes use now), so usable = ram - reserve.
    uint64_t os_reserve_bytes = 0;
    // Memory bandwidth the decode ceiling uses: the spec peak for a profile, the measured
    // multi-threaded read bandwidth for this machine.
    double bandwidth_bytes_per_s = 0;
    // Decode tok/s achieved / ceiling: measured by `bench` on this machine, a typical value
    // for profiles.
    double decode_efficiency = 0;
    std::string efficiency_source;  // "measured by bench", "typical", "default"
    // Matrix throughput for prompt processing, GFLOP/s (measured on this machine).
    double prefill_gflops = 0;
    std::string source;  // "built-in", "explicit", "measured"
    int n_threads = 0;   // threads decoding uses there (sizes the per-thread scratch)
    // This machine: the decode speed `bench --record` measured, and the weight bytes per token
    // of that model (0 when none was recorded); the measured point of `plan --plot`.
    double measured_decode_tok_s = 0;
    uint64_t measured_decode_bytes_per_token = 0;

    // Where the figures come from, so that a plan can say what is measured and what is assumed.
    std::string bandwidth_source;  // "spec peak", "given", "saved measurement", "measured now"
    double bandwidth_spread = 0;   // relative spread of a measured bandwidth (0: not measured)
    int64_t measured_at = 0;       // unix time of the bandwidth measurement (0: none)
    int64_t efficiency_measured_at = 0;  // unix time of bench's record (0: not measured)
    // Relative spread of the expected decode tok/s: bench's repetitions when it measured the
    // efficiency (the bandwidth cancels out), else the bandwidth's.
    double decode_spread = 0;
    std::string prefill_source;  // "typical", "measured by bench", "0.85 x the measured matmul"
    std::string note;            // e.g. why a measurement made now was not saved

    // Storage read bandwidth, page cache bypassed: where a model's experts come from under a
    // memory budget (docs/memory-budget.md). Measured by `probe --save` on this machine; for
    // profiles and explicit devices a typical figure of their storage, marked assumed.
    double storage_seq_bytes_per_s = 0;  // one reader, large reads in order
    // Random reads, two in flight: (bytes per read, bytes/s), by increasing read size.
    std::vector<std::pair<uint64_t, double>> storage_random;
    bool storage_assumed = true;
    std::string storage_source;  // "measured in DIR", or what the assumed figure stands for
    double storage_spread = 0;   // relative spread of the random reads (0: not measured)
    int64_t storage_measured_at = 0;

    // The random-read rate at the read size nearest `read_bytes` (on a log scale); 0: none.
    double storage_random_bytes_per_s(uint64_t read_bytes) const;

    uint64_t usable_bytes() const {
        return ram_bytes > os_reserve_bytes ? ram_bytes - os_reserve_bytes : 0;
    }
};

const std::vector<DeviceProfile>& device_profiles();
// By id, ignoring case ("phone-12g", "Phone-12G"). Null when unknown.
const DeviceProfile* find_device_profile(std::string_view id);
// The devices `memwall plan` shows without arguments: 12, 16 and 24 GB phones.
std::vector<const DeviceProfile*> seed_devices();

// The bandwidth of an explicit device given only its RAM, when this machine has no saved
// measurement either: a phone's LPDDR5-6400 (51.2 GB/s), the slowest profile but the Pi's.
inline constexpr double kDefaultExplicitBandwidth = 51.2e9;

// Explicit figures, e.g. --ram 16G --bandwidth 68G. The OS reserve defaults to that of a phone
// of the same size (a conservative guess when nothing else is known).
DeviceProfile explicit_device(uint64_t ram_bytes, double bandwidth_bytes_per_s,
                              std::optional<uint64_t> os_reserve_bytes = std::nullopt);

// "16G", "16GB", "16GiB", "512M", "68e9", "1.5T": sizes with SI-looking suffixes. Memory sizes
// (binary = true) read G as GiB; bandwidths (binary = false) read G as 10^9. Throws
// ErrorKind::invalid_argument naming `what`.
double parse_size(std::string_view text, bool binary, const char* what);

}  // namespace mw
