// The sustained bench: decode without pause for a duration (context shifts when the cache is
// full) and record, per interval, tok/s, CPU frequency per core, thermal zones, energy and RSS,
// so that the speed after the chip has heated up is seen, not only the first minute's. A pacer
// may run in the loop, to see what a temperature or speed limit costs.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/pacer.h"
#include "runtime/sensors.h"

namespace mw {

struct SustainedSample {
    double t_s = 0;      // end of the interval, since the start
    double seconds = 0;  // length of the interval
    int tokens = 0;      // decoded in it
    double tok_s = 0;
    uint32_t n_past_min = 0, n_past_max = 0;  // cache depth while decoding in it
    int threads = 0;                          // at its end
    double idle_s = 0;                        // paced gaps in it
    SensorSample sensors;
    double energy_j = 0;  // in the interval; NaN without an energy sensor
    uint64_t rss_bytes = 0;
};

struct SustainedOptions {
    double duration_s = 60;
    double interval_s = 5;
    std::vector<int32_t> feed;  // token ids decoded in turn (the sampler is not part of this)
    uint32_t n_keep = 0;        // tokens a context shift keeps
    std::optional<PacerConfig> pacing;
    std::string temp_zone;  // thermal zones the pacer reads (type contains this; "" = all)
    // After each interval; returning false stops the run there.
    std::function<bool(const SustainedSample&)> on_sample;
};

struct SustainedSummary {
    int tokens = 0;
    double seconds = 0;
    double tok_s = 0;
    double window_s = 0;  // "first minute": min(60 s, half the run)
    double first_tok_s = 0, last_tok_s = 0;
    double drop_pct = 0;  // (first - last) / first
    double energy_j = NAN;
    double j_per_token = NAN;  // over the intervals with an energy reading
    double mean_power_w = NAN;
    double temp_c_max = NAN;                       // hottest reading of any zone
    double first_temp_c = NAN, last_temp_c = NAN;  // mean of the hottest zone per window
    double first_mhz = NAN, last_mhz = NAN;        // mean over cores and the window
};

SustainedSummary summarize(const std::vector<SustainedSample>& samples);

struct SustainedResult {
    std::vector<SustainedSample> samples;
    SustainedSummary summary;
    std::string conditions;  // speed_label(): "tg d512-640 t2 kv f16 no sampler"
    int threads = 0;
    std::string pacing;  // the pacer's summary ("" when unpaced)
    std::vector<std::string> warnings;
};

// Runs from the context's current cache contents (the caller decodes any prompt first).
SustainedResult run_sustained(Context& ctx, SensorReader& sensors, const SustainedOptions& options);

// The JSON document (docs: `memwall bench --duration ... --json`), which report/ charts.
std::string sustained_json(const SustainedResult& r, const SensorReader& sensors,
                           const SustainedOptions& options, const std::string& model_desc,
                           const std::string& model_path);

}  // namespace mw
