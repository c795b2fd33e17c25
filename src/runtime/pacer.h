// Pacing a decode loop to a temperature or a speed. After each token the loop asks the pacer how
// to run the next one: with how many threads, and after how long an idle gap.
//
// Temperature (max_temp_c): the hotter it is, the higher the back-off level. Level 0 runs every
// thread without gaps; each level up takes one thread away down to min_threads, and the levels
// above that add an idle gap before each token of 1/4, 1/2, 1, 2, 4 and 8 times the token's own
// time. At or above the limit the pacer steps up one level, again at once while the temperature
// keeps rising above where it stepped, after settle_s/2 if it is no cooler than then, and after
// settle_s if it is still at the limit; once the temperature is hysteresis_c below the limit it
// steps down one level every settle_s (slowly: the chip's heat lags the load). A trace that heats
// 1 °C per token at full load is held within one token of the limit.
//
// Speed (max_tps): token starts are spaced at least 1/max_tps apart, a steady rate instead of
// bursts; the gap is the longer of this and the thermal one.
//
// The pacer keeps no clock and reads no sensor: decide() is given the time and the temperature,
// so tests drive it with simulated ones (api_pacing.cpp wires the real clock and sysfs).
#pragma once

#include <optional>
#include <string>

namespace mw {

struct PacerConfig {
    double max_temp_c = 0;  // <= 0: no temperature limit
    double hysteresis_c = 3;
    double max_tps = 0;  // <= 0: no speed limit
    int max_threads = 1;
    int min_threads = 1;
    double settle_s = 2;
};

struct PaceDecision {
    int threads = 1;       // for the next token
    double sleep_s = 0;    // idle before the next token
    int level = 0;         // back-off level (0: full speed)
    bool changed = false;  // level changed at this decision
    std::string message;   // why, when it changed ("" otherwise)
};

class Pacer {
  public:
    explicit Pacer(const PacerConfig& config);

    // Call when a token has been decoded, at time now_s (any monotonic clock, seconds), with the
    // temperature the limit applies to (nullopt: no reading) and where it was read (for the
    // message).
    PaceDecision decide(double now_s, std::optional<double> temp_c, const std::string& sensor = "");

    const PacerConfig& config() const { return config_; }
    int level() const { return level_; }
    int max_level() const;
    int threads_at(int level) const;
    // Idle gap at a level, as a multiple of the token's own time.
    double gap_ratio_at(int level) const;

    // "3 back-offs, 2 recoveries; 12.0 s of 20.0 s backed off (down to 1 thread, gaps up to 2x
    // the token time); 4.1 tok/s over the wall time; hottest 46.0 °C".
    std::string summary() const;
    int n_tokens() const { return n_tokens_; }
    double max_temp_seen() const { return max_temp_seen_; }

  private:
    std::string describe(int level) const;

    PacerConfig config_;
    int level_ = 0;
    bool started_ = false;
    double start_t_ = 0;
    double last_t_ = 0;      // when the previous decision was made
    double last_sleep_ = 0;  // the gap it asked for
    double busy_s_ = 0;      // the last token's own time (smoothed)
    double last_change_t_ = -1e300;
    double temp_at_backoff_ = -1e300;
    bool last_change_up_ = false;

    // For summary().
    int n_tokens_ = 0;
    int n_backoffs_ = 0;
    int n_recoveries_ = 0;
    int deepest_ = 0;
    double backed_off_s_ = 0;
    double slept_s_ = 0;
    double max_temp_seen_ = -1e300;
};

}  // namespace mw
