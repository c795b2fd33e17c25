// The machine's sensors, read from sysfs: CPU frequency per core
// (devices/system/cpu/cpu*/cpufreq/scaling_cur_freq), thermal zones with their types
// (class/thermal/thermal_zone*/{temp,type}), and energy: the powercap RAPL package counters
// (class/powercap/intel-rapl:N/energy_uj), else a battery's power (class/power_supply/*:
// power_now, or current_now x voltage_now) integrated over time.
//
// The root is /sys unless MEMWALL_SYSFS_ROOT names another folder laid out the same way, so that
// tests (and anyone replaying a phone's trace) can feed recorded or scripted values. A sensor
// that is absent or unreadable is listed in missing(), never an error; a file holding garbage
// (empty, negative, not a number, implausible) is skipped for that reading with one warning per
// file (take_warnings()).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace mw {

// $MEMWALL_SYSFS_ROOT, or "/sys".
std::string sysfs_root();

struct ThermalZone {
    int index = 0;     // N of thermal_zoneN
    std::string type;  // "x86_pkg_temp", "cpu-0-0-usr", "battery", ...
    std::string temp_path;
};

struct SensorSample {
    std::vector<double> cpu_mhz;  // per cpus() entry; NaN when unreadable this time
    std::vector<double> temp_c;   // per zones() entry; NaN when unreadable this time
    double energy_j;              // since the reader's first sample; NaN without an energy sensor
    double power_w;               // mean since the previous sample; NaN when unknown
};

class SensorReader {
  public:
    explicit SensorReader(std::string root = sysfs_root());

    const std::string& root() const { return root_; }
    const std::vector<int>& cpus() const { return cpus_; }
    const std::vector<ThermalZone>& zones() const { return zones_; }
    // "intel-rapl:0 (package-0)", "battery BAT0 (current x voltage)", or "" when none.
    const std::string& energy_source() const { return energy_source_; }
    // One line per kind of sensor not found or not readable ("thermal: no ... under ...").
    const std::vector<std::string>& missing() const { return missing_; }

    // Everything, at time now_s (seconds on a monotonic clock, for the energy integral).
    SensorSample sample(double now_s);

    // Indices into zones() whose type contains `filter` (all zones when it is empty).
    std::vector<size_t> zones_matching(std::string_view filter) const;
    struct Hottest {
        double celsius;  // NaN when none of the zones could be read
        size_t zone;     // index into zones()
    };
    // The hottest of these zones now (reads only them).
    Hottest hottest(const std::vector<size_t>& zone_indices);

    // Warnings raised since the last call (garbage in a sensor file), each file warned once.
    std::vector<std::string> take_warnings();

  private:
    enum class Sign { positive, any };
    // The integer in a sysfs file, or nullopt (with a warning once per file when it holds
    // garbage, or cannot be read now although it could be opened at discovery).
    std::optional<int64_t> read_integer(const std::string& path, Sign sign);
    void warn(const std::string& path, const std::string& why);
    double read_temp_c(const ThermalZone& z);
    void discover_energy();
    std::optional<double> battery_power_w();

    std::string root_;
    std::vector<int> cpus_;
    std::vector<std::string> cpu_freq_paths_;
    std::vector<ThermalZone> zones_;
    std::vector<std::string> missing_;
    std::vector<std::string> warnings_;
    std::set<std::string> warned_;

    // Energy: RAPL packages, or one battery.
    struct RaplPackage {
        std::string energy_path;
        int64_t max_range_uj = 0;
        std::optional<int64_t> last_uj;
    };
    std::vector<RaplPackage> rapl_;
    std::string battery_dir_;
    std::string energy_source_;
    bool started_ = false;
    double last_t_ = 0;
    double energy_j_ = 0;
    std::optional<double> last_power_w_;
};

}  // namespace mw
