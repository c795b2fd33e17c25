#include "plan/sustained.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "plan/speed_label.h"
#include "runtime/loaded_model.h"
#include "runtime/sensor_pacer.h"

namespace mw {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double hottest_of(const SensorSample& s) {
    double t = kNaN;
    for (double c : s.temp_c) {
        if (std::isfinite(c) && !(c <= t)) t = c;
    }
    return t;
}

double mean_mhz(const SensorSample& s) {
    double sum = 0;
    int n = 0;
    for (double f : s.cpu_mhz) {
        if (std::isfinite(f)) {
            sum += f;
            ++n;
        }
    }
    return n ? sum / n : kNaN;
}

// Mean of f over the samples that have a value.
template <typename F>
double mean_of(const std::vector<const SustainedSample*>& samples, F f) {
    double sum = 0;
    int n = 0;
    for (const SustainedSample* s : samples) {
        const double v = f(*s);
        if (std::isfinite(v)) {
            sum += v;
            ++n;
        }
    }
    return n ? sum / n : kNaN;
}

json number_or_null(double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}

json numbers_or_null(const std::vector<double>& vs) {
    json a = json::array();
    for (double v : vs) a.push_back(number_or_null(v));
    return a;
}

}  // namespace

SustainedSummary summarize(const std::vector<SustainedSample>& samples) {
    SustainedSummary s;
    if (samples.empty()) return s;
    for (const SustainedSample& x : samples) {
        s.tokens += x.tokens;
        s.seconds += x.seconds;
    }
    s.tok_s = s.seconds > 0 ? s.tokens / s.seconds : 0;
    const double total = samples.back().t_s;
    s.window_s = std::min(60.0, total / 2);
    // The intervals that start in the first window, and those that end in the last one.
    std::vector<const SustainedSample*> first, last;
    for (const SustainedSample& x : samples) {
        if (x.t_s - x.seconds < s.window_s - 1e-9) first.push_back(&x);
        if (x.t_s > total - s.window_s + 1e-9) last.push_back(&x);
    }
    auto rate = [](const std::vector<const SustainedSample*>& xs) {
        double tokens = 0, seconds = 0;
        for (const SustainedSample* x : xs) {
            tokens += x->tokens;
            seconds += x->seconds;
        }
        return seconds > 0 ? tokens / seconds : 0.0;
    };
    s.first_tok_s = rate(first);
    s.last_tok_s = rate(last);
    s.drop_pct = s.first_tok_s > 0 ? 100.0 * (s.first_tok_s - s.last_tok_s) / s.first_tok_s : 0;

    double energy = 0, energy_seconds = 0;
    int energy_tokens = 0;
    for (const SustainedSample& x : samples) {
        if (std::isfinite(x.energy_j)) {
            energy += x.energy_j;
            energy_tokens += x.tokens;
            energy_seconds += x.seconds;
        }
        const double t = hottest_of(x.sensors);
        if (std::isfinite(t) && !(t <= s.temp_c_max)) s.temp_c_max = t;
    }
    if (energy_seconds > 0) {
        s.energy_j = energy;
        s.mean_power_w = energy / energy_seconds;
        if (energy_tokens > 0) s.j_per_token = energy / energy_tokens;
    }
    s.first_temp_c = mean_of(first, [](const SustainedSample& x) { return hottest_of(x.sensors); });
    s.last_temp_c = mean_of(last, [](const SustainedSample& x) { return hottest_of(x.sensors); });
    s.first_mhz = mean_of(first, [](const SustainedSample& x) { return mean_mhz(x.sensors); });
    s.last_mhz = mean_of(last, [](const SustainedSample& x) { return mean_mhz(x.sensors); });
    return s;
}

SustainedResult run_sustained(Context& ctx, SensorReader& sensors, const SustainedOptions& o) {
    if (!(o.duration_s > 0))
        fail(ErrorKind::invalid_argument, "sustained bench: duration must be > 0");
    if (!(o.interval_s > 0))
        fail(ErrorKind::invalid_argument, "sustained bench: interval must be > 0");
    if (o.feed.empty()) fail(ErrorKind::invalid_argument, "sustained bench: no tokens to decode");
    if (o.n_keep + 2 > ctx.n_ctx()) {
        fail(ErrorKind::invalid_argument,
             "sustained bench: a context of {} tokens keeping {} at each shift leaves nothing to "
             "discard",
             ctx.n_ctx(), o.n_keep);
    }
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    auto now = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };

    SustainedResult r;
    r.threads = ctx.n_threads();
    std::optional<SensorPacer> pacer;
    if (o.pacing) {
        PacerConfig pc = *o.pacing;
        pc.max_threads = ctx.n_threads();
        pacer.emplace(pc, o.temp_zone, sensors);
        if (!pacer->warning().empty()) r.warnings.push_back(pacer->warning());
    }
    sensors.sample(0.0);  // the energy counters' starting point
    const uint32_t depth0 = ctx.n_past();
    uint32_t depth_min = depth0, depth_max = depth0;

    SustainedSample cur;
    cur.n_past_min = cur.n_past_max = ctx.n_past();
    double interval_start = 0, next_boundary = o.interval_s, last_energy = 0;
    size_t pos = 0;
    for (;;) {
        if (ctx.n_past() >= ctx.n_ctx()) {
            ctx.shift(o.n_keep, (ctx.n_ctx() - o.n_keep) / 2);
        }
        ctx.decode(&o.feed[pos++ % o.feed.size()], 1, false);
        ++cur.tokens;
        cur.n_past_min = std::min(cur.n_past_min, ctx.n_past());
        cur.n_past_max = std::max(cur.n_past_max, ctx.n_past());
        if (pacer) {
            const PaceDecision d = pacer->decide(now());
            ctx.set_threads(d.threads);
            if (d.sleep_s > 0) {
                std::this_thread::sleep_for(std::chrono::duration<double>(d.sleep_s));
                cur.idle_s += d.sleep_s;
            }
        }
        const double t = now();
        const bool done = t >= o.duration_s;
        if (t < next_boundary && !done) continue;

        cur.t_s = t;
        cur.seconds = t - interval_start;
        cur.tok_s = cur.seconds > 0 ? cur.tokens / cur.seconds : 0;
        cur.threads = ctx.n_threads();
        cur.sensors = sensors.sample(t);
        cur.energy_j =
            std::isfinite(cur.sensors.energy_j) ? cur.sensors.energy_j - last_energy : kNaN;
        if (std::isfinite(cur.sensors.energy_j)) last_energy = cur.sensors.energy_j;
        cur.rss_bytes = process_memory().rss_bytes;
        depth_min = std::min(depth_min, cur.n_past_min);
        depth_max = std::max(depth_max, cur.n_past_max);
        for (std::string& w : sensors.take_warnings()) r.warnings.push_back(std::move(w));
        r.samples.push_back(cur);
        const bool go_on = !o.on_sample || o.on_sample(cur);
        if (done || !go_on) break;
        interval_start = t;
        while (next_boundary <= t) next_boundary += o.interval_s;
        cur = SustainedSample{};
        cur.n_past_min = cur.n_past_max = ctx.n_past();
    }
    r.summary = summarize(r.samples);
    SpeedConditions c;
    c.n_gen = -1;
    c.depth = int(depth_min);
    c.depth_max = int(depth_max);
    c.threads = r.threads;
    c.type_k = ctx.type_k();
    c.type_v = ctx.type_v();
    r.conditions = speed_label(c);
    if (pacer) r.pacing = pacer->pacer().summary();
    ctx.set_threads(r.threads);
    return r;
}

std::string sustained_json(const SustainedResult& r, const SensorReader& sensors,
                           const SustainedOptions& o, const std::string& model_desc,
                           const std::string& model_path) {
    json zones = json::array();
    for (const ThermalZone& z : sensors.zones()) {
        zones.push_back({{"zone", z.index}, {"type", z.type}});
    }
    json samples = json::array();
    for (const SustainedSample& s : r.samples) {
        samples.push_back({{"t_s", s.t_s},
                           {"seconds", s.seconds},
                           {"tokens", s.tokens},
                           {"tok_s", s.tok_s},
                           {"n_past", {s.n_past_min, s.n_past_max}},
                           {"threads", s.threads},
                           {"idle_s", s.idle_s},
                           {"cpu_mhz", numbers_or_null(s.sensors.cpu_mhz)},
                           {"temp_c", numbers_or_null(s.sensors.temp_c)},
                           {"power_w", number_or_null(s.sensors.power_w)},
                           {"energy_j", number_or_null(s.energy_j)},
                           {"rss_bytes", s.rss_bytes}});
    }
    const SustainedSummary& m = r.summary;
    json pacing = nullptr;
    if (o.pacing) {
        pacing = {{"max_temp_c", o.pacing->max_temp_c},
                  {"max_tps", o.pacing->max_tps},
                  {"temp_zone", o.temp_zone},
                  {"summary", r.pacing}};
    }
    const json doc = {{"kind", "memwall.sustained_bench"},
                      {"model", model_path},
                      {"model_desc", model_desc},
                      {"conditions", r.conditions},
                      {"threads", r.threads},
                      {"duration_s", o.duration_s},
                      {"interval_s", o.interval_s},
                      {"pacing", pacing},
                      {"sensors",
                       {{"root", sensors.root()},
                        {"cpus", sensors.cpus()},
                        {"thermal_zones", zones},
                        {"energy_source", sensors.energy_source()},
                        {"missing", sensors.missing()},
                        {"warnings", r.warnings}}},
                      {"samples", samples},
                      {"summary",
                       {{"tokens", m.tokens},
                        {"seconds", m.seconds},
                        {"tok_s", m.tok_s},
                        {"window_s", m.window_s},
                        {"first_tok_s", m.first_tok_s},
                        {"last_tok_s", m.last_tok_s},
                        {"drop_pct", m.drop_pct},
                        {"energy_j", number_or_null(m.energy_j)},
                        {"j_per_token", number_or_null(m.j_per_token)},
                        {"mean_power_w", number_or_null(m.mean_power_w)},
                        {"temp_c_max", number_or_null(m.temp_c_max)},
                        {"first_temp_c", number_or_null(m.first_temp_c)},
                        {"last_temp_c", number_or_null(m.last_temp_c)},
                        {"first_mhz", number_or_null(m.first_mhz)},
                        {"last_mhz", number_or_null(m.last_mhz)}}}};
    return doc.dump(1);
}

}  // namespace mw
