#include "runtime/sensor_pacer.h"

#include <fmt/format.h>

#include <cmath>

namespace mw {
namespace {

constexpr double kReadInterval = 0.010;  // seconds between two sensor reads

}  // namespace

SensorPacer::SensorPacer(const PacerConfig& config, const std::string& zone_filter,
                         SensorReader& sensors)
    : pacer_(config), sensors_(sensors), zones_(sensors.zones_matching(zone_filter)) {
    if (config.max_temp_c <= 0) return;
    if (sensors.zones().empty()) {
        std::string why = "no thermal zone";
        for (const std::string& m : sensors.missing()) {
            if (m.rfind("thermal: ", 0) == 0) why = m.substr(9);
        }
        warning_ = fmt::format("--max-temp: {}: there is no temperature to pace by", why);
    } else if (zones_.empty()) {
        std::string types;
        for (const ThermalZone& z : sensors.zones()) types += (types.empty() ? "" : ", ") + z.type;
        warning_ = fmt::format(
            "--max-temp: no thermal zone's type contains \"{}\" (types: {}): there is no "
            "temperature to pace by",
            zone_filter, types);
    }
}

PaceDecision SensorPacer::decide(double now_s, std::optional<double> temp_c) {
    std::string where;
    if (!temp_c && pacer_.config().max_temp_c > 0 && !zones_.empty()) {
        if (!read_once_ || now_s - last_read_t_ >= kReadInterval) {
            last_ = sensors_.hottest(zones_);
            last_read_t_ = now_s;
            read_once_ = true;
        }
        if (std::isfinite(last_.celsius)) {
            temp_c = last_.celsius;
            const ThermalZone& z = sensors_.zones()[last_.zone];
            where = fmt::format("thermal_zone{} {}", z.index, z.type);
        }
    }
    last_temp_c_ = temp_c ? *temp_c : std::numeric_limits<double>::quiet_NaN();
    return pacer_.decide(now_s, temp_c, where);
}

}  // namespace mw
