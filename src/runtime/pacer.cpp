#include "runtime/pacer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace mw {
namespace {

// Idle gap before each token, as a multiple of its own time, at the levels past the thread
// steps: the duty cycle falls to 80, 67, 50, 33, 20 and 11 %.
constexpr double kGapRatios[] = {0.25, 0.5, 1, 2, 4, 8};
constexpr int kGapLevels = int(sizeof kGapRatios / sizeof kGapRatios[0]);
// No gap longer than this, whatever the token took: a paced stream stays a stream.
constexpr double kMaxSleep = 10.0;
// A reading this much above the one that caused the last back-off means it is still rising.
constexpr double kRising = 0.5;

}  // namespace

Pacer::Pacer(const PacerConfig& config) : config_(config) {
    config_.max_threads = std::max(1, config_.max_threads);
    config_.min_threads = std::clamp(config_.min_threads, 1, config_.max_threads);
    config_.hysteresis_c = std::max(0.0, config_.hysteresis_c);
    config_.settle_s = std::max(0.0, config_.settle_s);
}

int Pacer::max_level() const {
    return config_.max_threads - config_.min_threads + kGapLevels;
}

int Pacer::threads_at(int level) const {
    return config_.max_threads - std::min(level, config_.max_threads - config_.min_threads);
}

double Pacer::gap_ratio_at(int level) const {
    const int gap_level = level - (config_.max_threads - config_.min_threads);
    return gap_level <= 0 ? 0.0 : kGapRatios[std::min(gap_level, kGapLevels) - 1];
}

std::string Pacer::describe(int level) const {
    const int t = threads_at(level);
    const double g = gap_ratio_at(level);
    std::string s = fmt::format("{} thread{}", t, t == 1 ? "" : "s");
    if (g > 0) s += fmt::format(", idle {:g}x the token time before each token", g);
    return s;
}

PaceDecision Pacer::decide(double now_s, std::optional<double> temp_c, const std::string& sensor) {
    // The token just finished started when the previous gap ended; its own time excludes the gap.
    const double prev_start = last_t_ + last_sleep_;
    if (started_) {
        const double elapsed = std::max(0.0, now_s - last_t_);
        const double busy = std::max(1e-6, elapsed - last_sleep_);
        busy_s_ = busy_s_ > 0 ? 0.5 * busy_s_ + 0.5 * busy : busy;
        if (level_ > 0) backed_off_s_ += elapsed;
        ++n_tokens_;
    } else {
        started_ = true;
        start_t_ = now_s;
    }

    PaceDecision d;
    if (config_.max_temp_c > 0 && temp_c && std::isfinite(*temp_c)) {
        const double t = *temp_c;
        const double limit = config_.max_temp_c;
        max_temp_seen_ = std::max(max_temp_seen_, t);
        const std::string where = sensor.empty() ? "" : " (" + sensor + ")";
        if (t >= limit && level_ < max_level()) {
            // Step again at once while it still rises; after settle_s/2 when it is no cooler
            // than at the last step; after settle_s when it is still over the limit at all.
            const double since = now_s - last_change_t_;
            const bool step = level_ == 0 || !last_change_up_ || t >= temp_at_backoff_ + kRising ||
                              (since >= config_.settle_s / 2 && t >= temp_at_backoff_) ||
                              since >= config_.settle_s;
            if (step) {
                ++level_;
                ++n_backoffs_;
                d.changed = true;
                d.message = fmt::format("{:.1f} °C >= {:.1f} °C{}: back off to {}", t, limit, where,
                                        describe(level_));
                temp_at_backoff_ = t;
                last_change_up_ = true;
                last_change_t_ = now_s;
            }
        } else if (t <= limit - config_.hysteresis_c && level_ > 0 &&
                   now_s - last_change_t_ >= config_.settle_s) {
            --level_;
            ++n_recoveries_;
            d.changed = true;
            d.message = fmt::format("{:.1f} °C <= {:.1f} °C{}: recover to {}", t,
                                    limit - config_.hysteresis_c, where, describe(level_));
            last_change_up_ = false;
            last_change_t_ = now_s;
        }
    }
    deepest_ = std::max(deepest_, level_);

    double sleep = gap_ratio_at(level_) * busy_s_;
    if (config_.max_tps > 0 && n_tokens_ > 0) {
        sleep = std::max(sleep, prev_start + 1.0 / config_.max_tps - now_s);
    }
    d.sleep_s = std::clamp(sleep, 0.0, kMaxSleep);
    d.threads = threads_at(level_);
    d.level = level_;
    slept_s_ += d.sleep_s;
    last_t_ = now_s;
    last_sleep_ = d.sleep_s;
    return d;
}

std::string Pacer::summary() const {
    // Each token's slot runs from its start to the next one's, the last gap included: N tokens
    // paced at N tok/s take one second.
    const double wall = last_t_ + last_sleep_ - start_t_;
    std::string s;
    if (config_.max_temp_c > 0) {
        s = fmt::format("{} back-off{}, {} recover{}", n_backoffs_, n_backoffs_ == 1 ? "" : "s",
                        n_recoveries_, n_recoveries_ == 1 ? "y" : "ies");
        if (deepest_ > 0) {
            s += fmt::format("; {:.1f} s of {:.1f} s backed off (at most: {})", backed_off_s_, wall,
                             describe(deepest_));
        }
        s += max_temp_seen_ > -1e299 ? fmt::format("; hottest {:.1f} °C (limit {:.1f} °C)",
                                                   max_temp_seen_, config_.max_temp_c)
                                     : "; no temperature was read";
    }
    if (config_.max_tps > 0) {
        s += fmt::format("{}limit {:g} tok/s", s.empty() ? "" : "; ", config_.max_tps);
    }
    if (wall > 0 && n_tokens_ > 0) {
        s += fmt::format("; {:.2f} tok/s over the wall time, {:.1f} s idle", n_tokens_ / wall,
                         slept_s_);
    }
    return s;
}

}  // namespace mw
