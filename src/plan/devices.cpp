#include "plan/devices.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "base/error.h"

namespace mw {
namespace {

constexpr uint64_t GiB = uint64_t(1) << 30;

// Bandwidths are the spec peaks of the memory bus: transfers/s x bus width (64-bit for phones'
// LPDDR5/5X, 128-bit for the laptop's dual-channel DDR5, 32-bit for the Pi 5). The reserve is
// what a phone's OS, services and launcher keep resident (Android's low-memory killer starts on
// apps well before RAM is full); efficiency is the share of peak bandwidth that CPU decoding
// typically reaches there. Prefill throughput is a rough CPU figure; `--device this` measures it.
DeviceProfile profile(const char* id, const char* name, double ram_gib, double reserve_gib,
                      double bandwidth_gb_s, double efficiency, double prefill_gflops,
                      int n_threads) {
    DeviceProfile d;
    d.n_threads = n_threads;
    d.id = id;
    d.name = name;
    d.ram_bytes = uint64_t(ram_gib * double(GiB));
    d.os_reserve_bytes = uint64_t(reserve_gib * double(GiB));
    d.bandwidth_bytes_per_s = bandwidth_gb_s * 1e9;
    d.decode_efficiency = efficiency;
    d.efficiency_source = "typical";
    d.prefill_gflops = prefill_gflops;
    d.prefill_source = "typical";
    d.source = "built-in";
    d.bandwidth_source = "spec peak";
    return d;
}

// Storage nobody measured: typical read rates of the storage such a device has, with the page
// cache bypassed; random = reads of about 1 MiB, two in flight (what an expert cache issues).
// Below the interface's sequential peak: flash serves scattered reads slower.
DeviceProfile assume_storage(DeviceProfile d, double seq_gb_s, double random_gb_s,
                             const char* what) {
    d.storage_seq_bytes_per_s = seq_gb_s * 1e9;
    d.storage_random = {{uint64_t(1) << 20, random_gb_s * 1e9}};
    d.storage_assumed = true;
    d.storage_source = what;
    return d;
}

constexpr const char* kUfs31 = "assumed: UFS 3.1 (2.0 GB/s in order, 1.2 GB/s random 1 MiB)";
constexpr const char* kUfs40 = "assumed: UFS 4.0 (3.5 GB/s in order, 2.0 GB/s random 1 MiB)";

std::vector<DeviceProfile> build_profiles() {
    return {
        assume_storage(profile("phone-8g", "Phone, 8 GB LPDDR5-6400", 8, 3.5, 51.2, 0.55, 60, 4),
                       2.0, 1.2, kUfs31),
        assume_storage(
            profile("phone-12g", "Phone, 12 GB LPDDR5X-8533", 12, 4.0, 68.3, 0.55, 100, 6), 3.5,
            2.0, kUfs40),
        assume_storage(
            profile("phone-16g", "Phone, 16 GB LPDDR5X-9600", 16, 4.5, 76.8, 0.55, 150, 6), 3.5,
            2.0, kUfs40),
        assume_storage(
            profile("phone-24g", "Phone, 24 GB LPDDR5X-10667", 24, 5.5, 85.3, 0.55, 200, 6), 3.5,
            2.0, kUfs40),
        assume_storage(profile("laptop-16g", "Laptop, 16 GB DDR5-5600 dual channel", 16, 4.0, 89.6,
                               0.6, 250, 8),
                       5.0, 2.5,
                       "assumed: PCIe 4.0 NVMe SSD (5.0 GB/s in order, 2.5 GB/s random 1 MiB)"),
        assume_storage(
            profile("rpi5-8g", "Raspberry Pi 5, 8 GB LPDDR4X-4267", 8, 1.0, 17.1, 0.5, 25, 4), 0.09,
            0.06, "assumed: A2 microSD card (90 MB/s in order, 60 MB/s random 1 MiB)"),
    };
}

std::string lower(std::string_view s) {
    std::string out;
    for (char c : s) out += char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

const std::vector<DeviceProfile>& device_profiles() {
    static const std::vector<DeviceProfile> profiles = build_profiles();
    return profiles;
}

const DeviceProfile* find_device_profile(std::string_view id) {
    const std::string wanted = lower(id);
    for (const DeviceProfile& d : device_profiles()) {
        if (d.id == wanted) return &d;
    }
    return nullptr;
}

std::vector<const DeviceProfile*> seed_devices() {
    return {find_device_profile("phone-12g"), find_device_profile("phone-16g"),
            find_device_profile("phone-24g")};
}

DeviceProfile explicit_device(uint64_t ram_bytes, double bandwidth_bytes_per_s,
                              std::optional<uint64_t> os_reserve_bytes) {
    DeviceProfile d;
    d.id = "explicit";
    d.ram_bytes = ram_bytes;
    // A phone's reserve: 2.5 GiB plus an eighth of RAM (8 GB: 3.5 GiB, 24 GB: 5.5 GiB).
    d.os_reserve_bytes = os_reserve_bytes.value_or(
        std::min<uint64_t>(ram_bytes / 2, uint64_t(2.5 * double(GiB)) + ram_bytes / 8));
    d.bandwidth_bytes_per_s = bandwidth_bytes_per_s;
    d.decode_efficiency = 0.55;
    d.efficiency_source = "typical";
    d.prefill_gflops = 100;
    d.prefill_source = "typical";
    d.source = "explicit";
    d.bandwidth_source = "given";
    d.name = fmt::format("{:.1f} GiB RAM, {:.1f} GB/s", double(ram_bytes) / double(GiB),
                         bandwidth_bytes_per_s / 1e9);
    // Phone-like figures throughout (reserve, efficiency): a phone's storage too.
    return assume_storage(d, 3.5, 2.0, kUfs40);
}

double DeviceProfile::storage_random_bytes_per_s(uint64_t read_bytes) const {
    double best = 0, best_distance = 0;
    for (const auto& [bytes, rate] : storage_random) {
        if (!(rate > 0) || bytes == 0) continue;
        const double d =
            std::abs(std::log(double(std::max<uint64_t>(read_bytes, 1)) / double(bytes)));
        if (best == 0 || d < best_distance) {
            best = rate;
            best_distance = d;
        }
    }
    return best;
}

double parse_size(std::string_view text, bool binary, const char* what) {
    const std::string s(text);
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(s, &used);
    } catch (const std::exception&) {
        fail(ErrorKind::invalid_argument, "{} \"{}\": expected a number such as 16G", what, s);
    }
    // "GiB/s" -> "g": drop a rate, a byte unit and the binary marker.
    std::string suffix = lower(s.substr(used));
    for (std::string_view tail : {"/s", "b", "i"}) {
        if (suffix.size() >= tail.size() &&
            std::string_view(suffix).substr(suffix.size() - tail.size()) == tail) {
            suffix.resize(suffix.size() - tail.size());
        }
    }
    const double k = binary ? 1024.0 : 1000.0;
    double scale = 1;
    if (suffix.empty()) {
        scale = 1;
    } else if (suffix == "k") {
        scale = k;
    } else if (suffix == "m") {
        scale = k * k;
    } else if (suffix == "g") {
        scale = k * k * k;
    } else if (suffix == "t") {
        scale = k * k * k * k;
    } else {
        fail(ErrorKind::invalid_argument, "{} \"{}\": unknown unit \"{}\" (use K, M, G or T)", what,
             s, s.substr(used));
    }
    if (!(value > 0) || !std::isfinite(value * scale)) {
        fail(ErrorKind::invalid_argument, "{} \"{}\" must be positive", what, s);
    }
    return value * scale;
}

}  // namespace mw
