// A Pacer fed by the machine's sensors: the hottest thermal zone whose type matches a filter,
// read at most every 10 ms of the caller's clock (a zone read costs a few microseconds; some
// phone zones more). The clock stays the caller's, so a simulated one drives it in tests.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "runtime/pacer.h"
#include "runtime/sensors.h"

namespace mw {

class SensorPacer {
  public:
    // `sensors` must outlive this object.
    SensorPacer(const PacerConfig& config, const std::string& zone_filter, SensorReader& sensors);

    // temp_c: the temperature to use instead of reading the sensors (tests, callers with their
    // own source).
    PaceDecision decide(double now_s, std::optional<double> temp_c = std::nullopt);

    Pacer& pacer() { return pacer_; }
    const Pacer& pacer() const { return pacer_; }
    // Why --max-temp cannot work here (no zone to read, none matching the filter), or "".
    const std::string& warning() const { return warning_; }
    // The temperature the last decision used (NaN when there was none).
    double last_temp_c() const { return last_temp_c_; }

  private:
    Pacer pacer_;
    SensorReader& sensors_;
    std::vector<size_t> zones_;
    std::string warning_;
    double last_read_t_ = 0;
    bool read_once_ = false;
    SensorReader::Hottest last_{0, 0};
    double last_temp_c_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace mw
