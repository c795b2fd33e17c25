#include "runtime/sensors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

namespace mw {
namespace {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The contents of a small file (sysfs attributes are at most a page), or the errno why not.
struct FileText {
    bool ok = false;
    int error = 0;
    std::string text;
};

FileText read_small(const std::string& path) {
    FileText r;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r.error = errno;
        return r;
    }
    char buf[256];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            r.error = errno;
            ::close(fd);
            return r;
        }
        if (n == 0 || r.text.size() > 4096) break;
        r.text.append(buf, size_t(n));
    }
    ::close(fd);
    r.ok = true;
    return r;
}

std::string trimmed(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
}

// What a warning shows of a bad value: printable and short.
std::string shown(const std::string& s) {
    std::string out;
    for (char c : s.substr(0, 24)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
    return s.size() > 24 ? out + "..." : out;
}

// "cpu12" -> 12, "thermal_zone3" -> 3 (prefix then digits only); -1 otherwise.
int numbered(const std::string& name, std::string_view prefix) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
    int n = 0;
    const char* b = name.data() + prefix.size();
    const char* e = name.data() + name.size();
    const auto [ptr, ec] = std::from_chars(b, e, n);
    return ec == std::errc() && ptr == e ? n : -1;
}

// Sorted numbered entries of a folder ("cpu0", "cpu1", ...); empty when it cannot be listed.
std::vector<std::pair<int, std::string>> numbered_entries(const std::string& dir,
                                                          std::string_view prefix) {
    std::vector<std::pair<int, std::string>> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const int n = numbered(name, prefix);
        if (n >= 0) out.push_back({n, it->path().string()});
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool exists(const std::string& path) {
    std::error_code ec;
    return fs::exists(path, ec);
}

}  // namespace

std::string sysfs_root() {
    const char* root = std::getenv("MEMWALL_SYSFS_ROOT");
    if (root && *root) {
        std::string r = root;
        while (r.size() > 1 && r.back() == '/') r.pop_back();
        return r;
    }
    return "/sys";
}

SensorReader::SensorReader(std::string root) : root_(std::move(root)) {
    // CPU frequency per core.
    std::string freq_why;
    for (const auto& [cpu, dir] : numbered_entries(root_ + "/devices/system/cpu", "cpu")) {
        for (const char* name : {"scaling_cur_freq", "cpuinfo_cur_freq"}) {
            const std::string path = dir + "/cpufreq/" + name;
            if (!exists(path)) continue;
            const FileText t = read_small(path);
            if (!t.ok) {
                if (freq_why.empty()) {
                    freq_why = fmt::format("{} is not readable ({})", path, std::strerror(t.error));
                }
                continue;
            }
            cpus_.push_back(cpu);
            cpu_freq_paths_.push_back(path);
            break;
        }
    }
    if (cpus_.empty()) {
        missing_.push_back("cpufreq: " + (freq_why.empty()
                                              ? fmt::format("no devices/system/cpu/cpu*/cpufreq/"
                                                            "scaling_cur_freq under {}",
                                                            root_)
                                              : freq_why));
    }

    // Thermal zones and their types.
    std::string thermal_why;
    for (const auto& [n, dir] : numbered_entries(root_ + "/class/thermal", "thermal_zone")) {
        const std::string path = dir + "/temp";
        if (!exists(path)) continue;
        const FileText t = read_small(path);
        if (!t.ok && (t.error == EACCES || t.error == EPERM)) {
            if (thermal_why.empty()) {
                thermal_why = fmt::format("{} is not readable ({})", path, std::strerror(t.error));
            }
            continue;
        }
        // Other read errors (a zone whose device is asleep) may pass: kept, NaN when so.
        const FileText type = read_small(dir + "/type");
        std::string name = type.ok ? trimmed(type.text) : "";
        zones_.push_back({n, name.empty() ? "unknown" : name, path});
    }
    if (zones_.empty()) {
        missing_.push_back("thermal: " +
                           (thermal_why.empty()
                                ? fmt::format("no class/thermal/thermal_zone*/temp under {}", root_)
                                : thermal_why));
    }
    discover_energy();
}

void SensorReader::discover_energy() {
    std::vector<std::string> why;
    // RAPL: the top-level packages only (intel-rapl:0, intel-rapl:1): their sub-zones (core,
    // uncore, dram as intel-rapl:0:0 ...) are parts of them or overlap.
    std::vector<std::string> names;
    for (const auto& [n, dir] : numbered_entries(root_ + "/class/powercap", "intel-rapl:")) {
        const std::string path = dir + "/energy_uj";
        if (!exists(path)) continue;
        const FileText t = read_small(path);
        if (!t.ok) {
            why.push_back(fmt::format("{} is not readable ({}{})", path, std::strerror(t.error),
                                      t.error == EACCES ? "; root only since Linux 5.10" : ""));
            continue;
        }
        RaplPackage p;
        p.energy_path = path;
        const FileText range = read_small(dir + "/max_energy_range_uj");
        int64_t v = 0;
        const std::string r = range.ok ? trimmed(range.text) : "";
        if (std::from_chars(r.data(), r.data() + r.size(), v).ec == std::errc()) p.max_range_uj = v;
        rapl_.push_back(p);
        const FileText name = read_small(dir + "/name");
        names.push_back(fmt::format("intel-rapl:{}{}", n,
                                    name.ok ? " (" + trimmed(name.text) + ")" : std::string()));
    }
    if (!rapl_.empty()) {
        energy_source_ = "RAPL ";
        for (size_t i = 0; i < names.size(); ++i) energy_source_ += (i ? " + " : "") + names[i];
        return;
    }
    // A battery: what the whole machine draws while it discharges.
    std::error_code ec;
    std::vector<std::string> supplies;
    for (fs::directory_iterator it(root_ + "/class/power_supply", ec), end; !ec && it != end;
         it.increment(ec)) {
        supplies.push_back(it->path().string());
    }
    std::sort(supplies.begin(), supplies.end());
    for (const std::string& dir : supplies) {
        const FileText type = read_small(dir + "/type");
        if (!type.ok || trimmed(type.text) != "Battery") continue;
        const bool power = read_small(dir + "/power_now").ok;
        const bool cv = read_small(dir + "/current_now").ok && read_small(dir + "/voltage_now").ok;
        if (!power && !cv) {
            why.push_back(
                fmt::format("battery {} has neither power_now nor current_now and "
                            "voltage_now",
                            dir));
            continue;
        }
        battery_dir_ = dir;
        energy_source_ = fmt::format("battery {} ({})", fs::path(dir).filename().string(),
                                     power ? "power_now" : "current_now x voltage_now");
        return;
    }
    if (why.empty()) {
        why.push_back(fmt::format(
            "no class/powercap/intel-rapl:*/energy_uj nor a battery in class/power_supply under {}",
            root_));
    }
    std::string line = "energy: ";
    for (size_t i = 0; i < why.size(); ++i) line += (i ? "; " : "") + why[i];
    missing_.push_back(line);
}

void SensorReader::warn(const std::string& path, const std::string& why) {
    if (!warned_.insert(path).second) return;
    warnings_.push_back(fmt::format("sensor {}: {}; ignored", path, why));
}

std::optional<int64_t> SensorReader::read_integer(const std::string& path, Sign sign) {
    const FileText t = read_small(path);
    if (!t.ok) {
        warn(path, fmt::format("cannot be read ({})", std::strerror(t.error)));
        return std::nullopt;
    }
    const std::string s = trimmed(t.text);
    if (s.empty()) {
        warn(path, "empty");
        return std::nullopt;
    }
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) {
        warn(path, fmt::format("\"{}\" is not a whole number", shown(s)));
        return std::nullopt;
    }
    if (sign == Sign::positive && v < 0) {
        warn(path, fmt::format("{} is negative", v));
        return std::nullopt;
    }
    return v;
}

double SensorReader::read_temp_c(const ThermalZone& z) {
    const auto v = read_integer(z.temp_path, Sign::positive);
    if (!v) return kNaN;
    const double c = double(*v) / 1000.0;  // millidegrees Celsius (the sysfs ABI)
    if (c > 200.0) {
        warn(z.temp_path, fmt::format("{} m°C is not a plausible temperature", *v));
        return kNaN;
    }
    return c;
}

std::optional<double> SensorReader::battery_power_w() {
    const FileText status = read_small(battery_dir_ + "/status");
    if (status.ok && trimmed(status.text) == "Charging") {
        warn(battery_dir_ + "/status",
             "the battery is charging, so its current is not what the machine draws");
        return std::nullopt;
    }
    // Signs are a driver's convention (many phones report a discharge as negative current or
    // power): the magnitude is what flows.
    if (exists(battery_dir_ + "/power_now")) {
        const auto p = read_integer(battery_dir_ + "/power_now", Sign::any);
        if (!p) return std::nullopt;
        return std::abs(double(*p)) * 1e-6;  // µW
    }
    const auto i = read_integer(battery_dir_ + "/current_now", Sign::any);
    const auto u = read_integer(battery_dir_ + "/voltage_now", Sign::positive);
    if (!i || !u) return std::nullopt;
    return std::abs(double(*i)) * 1e-6 * double(*u) * 1e-6;  // µA x µV
}

SensorSample SensorReader::sample(double now_s) {
    SensorSample s{{}, {}, kNaN, kNaN};
    s.cpu_mhz.reserve(cpus_.size());
    for (const std::string& path : cpu_freq_paths_) {
        const auto khz = read_integer(path, Sign::positive);
        s.cpu_mhz.push_back(khz && *khz > 0 ? double(*khz) / 1000.0 : kNaN);
    }
    s.temp_c.reserve(zones_.size());
    for (const ThermalZone& z : zones_) s.temp_c.push_back(read_temp_c(z));

    const double dt = started_ ? now_s - last_t_ : 0.0;
    if (!rapl_.empty()) {
        double delta_j = 0;
        bool complete = true;
        for (RaplPackage& p : rapl_) {
            const auto uj = read_integer(p.energy_path, Sign::positive);
            if (!uj) {
                complete = false;
                continue;
            }
            if (p.last_uj) {
                int64_t d = *uj - *p.last_uj;
                if (d < 0) d += p.max_range_uj;  // the counter wrapped
                if (d >= 0) delta_j += double(d) * 1e-6;
            }
            p.last_uj = *uj;
        }
        if (started_) {
            energy_j_ += delta_j;
            if (complete && dt > 0) s.power_w = delta_j / dt;
        }
        s.energy_j = energy_j_;
    } else if (!battery_dir_.empty()) {
        const std::optional<double> p = battery_power_w();
        if (started_ && dt > 0) {
            if (p && last_power_w_) {
                energy_j_ += (*p + *last_power_w_) / 2 * dt;
                s.power_w = (*p + *last_power_w_) / 2;
            } else if (p || last_power_w_) {
                const double w = p ? *p : *last_power_w_;
                energy_j_ += w * dt;
                s.power_w = w;
            }
        }
        last_power_w_ = p;
        s.energy_j = energy_j_;
    }
    started_ = true;
    last_t_ = now_s;
    return s;
}

std::vector<size_t> SensorReader::zones_matching(std::string_view filter) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < zones_.size(); ++i) {
        if (filter.empty() || zones_[i].type.find(filter) != std::string::npos) out.push_back(i);
    }
    return out;
}

SensorReader::Hottest SensorReader::hottest(const std::vector<size_t>& zone_indices) {
    Hottest h{kNaN, 0};
    for (size_t i : zone_indices) {
        if (i >= zones_.size()) continue;
        const double c = read_temp_c(zones_[i]);
        if (std::isfinite(c) && !(c <= h.celsius)) h = {c, i};
    }
    return h;
}

std::vector<std::string> SensorReader::take_warnings() {
    std::vector<std::string> w;
    w.swap(warnings_);
    return w;
}

}  // namespace mw
