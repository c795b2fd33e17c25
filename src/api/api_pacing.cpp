// The C API of pacing, sensors, the sustained bench, speed labels and charts.
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "api/api_error.h"
#include "api/api_model.h"
#include "api/api_params.h"
#include "memwall.h"
#include "plan/speed_label.h"
#include "plan/sustained.h"
#include "report/documents.h"
#include "runtime/context.h"
#include "runtime/sensor_pacer.h"

struct mw_pacer {
    mw::PacerConfig config;
    std::string zone_filter;
    bool threads_from_context = false;
    std::unique_ptr<mw::SensorReader> sensors;
    std::optional<mw::SensorPacer> pacer;  // made at the first call once max_threads is known
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    std::string summary;
    std::string warnings;
};

namespace {

using mw::guarded;
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

mw_status invalid(const char* message) {
    mw::set_api_last_error(message);
    return MW_ERR_INVALID_ARGUMENT;
}

mw::GgmlType type_of(mw_type t) {
    return static_cast<mw::GgmlType>(t);
}

char* dup_string(const std::string& s) {
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    if (!out) {
        mw::set_api_last_error("out of memory");
        return nullptr;
    }
    std::memcpy(out, s.data(), s.size() + 1);
    return out;
}

json value_or_null(double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}

void pacer_start(mw_pacer* p, int max_threads) {
    mw::PacerConfig c = p->config;
    c.max_threads = max_threads;
    p->pacer.emplace(c, p->zone_filter, *p->sensors);
}

void fill_pace(const mw::PaceDecision& d, double temp_c, mw_pace* out) {
    if (!out) return;
    out->n_threads = d.threads;
    out->sleep_s = d.sleep_s;
    out->temp_c = temp_c;
    out->level = d.level;
    out->changed = d.changed;
    const size_t n = std::min(d.message.size(), sizeof out->message - 1);
    std::memcpy(out->message, d.message.data(), n);
    out->message[n] = '\0';
}

}  // namespace

namespace mw {

void pace_context(mw_pacer* p, Context& c, mw_pace* out) {
    if (p->threads_from_context) {
        pacer_start(p, c.n_threads());
        p->threads_from_context = false;
    }
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - p->t0).count();
    const PaceDecision d = p->pacer->decide(now);
    c.set_threads(std::min(d.threads, c.max_threads()));
    fill_pace(d, p->pacer->last_temp_c(), out);
    if (d.sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(d.sleep_s));
}

}  // namespace mw

extern "C" {

int32_t mw_speed_label(const mw_speed_conditions* c, char* buf, size_t buf_size) {
    if (!c) return 0;
    mw::SpeedConditions s;
    s.n_prompt = c->n_prompt;
    s.n_gen = c->n_gen;
    s.depth = c->n_depth;
    s.depth_max = c->n_depth_max;
    s.threads = c->n_threads;
    s.type_k = type_of(c->type_k);
    s.type_v = type_of(c->type_v);
    if (c->sampling) s.sampling = mw::sampler_params_of(*c->sampling);
    const std::string label = mw::speed_label(s);
    if (buf && buf_size > 0) {
        const size_t n = std::min(label.size(), buf_size - 1);
        std::memcpy(buf, label.data(), n);
        buf[n] = '\0';
    }
    return int32_t(label.size());
}

char* mw_sensors_json(void) {
    char* out = nullptr;
    guarded([&] {
        mw::SensorReader r;
        const mw::SensorSample s = r.sample(0.0);
        json zones = json::array();
        for (size_t i = 0; i < r.zones().size(); ++i) {
            zones.push_back({{"zone", r.zones()[i].index},
                             {"type", r.zones()[i].type},
                             {"celsius", value_or_null(s.temp_c[i])}});
        }
        json mhz = json::array();
        for (double f : s.cpu_mhz) mhz.push_back(value_or_null(f));
        const json j = {{"root", r.root()},
                        {"cpus", r.cpus()},
                        {"cpu_mhz", mhz},
                        {"thermal_zones", zones},
                        {"energy_source", r.energy_source()},
                        {"missing", r.missing()},
                        {"warnings", r.take_warnings()}};
        out = dup_string(j.dump(1));
    });
    return out;
}

mw_status mw_context_set_threads(mw_context* ctx, int32_t n_threads) {
    mw::Context* c = mw::context_of(ctx);
    if (!c) return invalid("mw_context_set_threads: ctx is NULL");
    if (n_threads < 1 || n_threads > c->max_threads()) {
        mw::set_api_last_error("mw_context_set_threads: " + std::to_string(n_threads) +
                               " threads: the context has 1 to " +
                               std::to_string(c->max_threads()));
        return MW_ERR_INVALID_ARGUMENT;
    }
    c->set_threads(n_threads);
    return MW_OK;
}

void mw_pacer_params_init(mw_pacer_params* out, size_t struct_size) {
    const mw::PacerConfig d;
    mw_pacer_params p{};
    p.max_temp_c = 0;
    p.hysteresis_c = d.hysteresis_c;
    p.max_tps = 0;
    p.temp_zone = nullptr;
    p.max_threads = 0;
    p.min_threads = 1;
    p.settle_s = d.settle_s;
    mw::init_params(out, struct_size, p);
}

mw_status mw_pacer_create(const mw_pacer_params* params, mw_pacer** out) {
    if (!out) return invalid("mw_pacer_create: out is NULL");
    *out = nullptr;
    mw_pacer_params p;
    if (!mw::read_params(params, mw_pacer_default_params(), &p, "mw_pacer_params"))
        return MW_ERR_INVALID_ARGUMENT;
    if (!(p.hysteresis_c >= 0) || !(p.settle_s >= 0) || std::isnan(p.max_temp_c) ||
        std::isnan(p.max_tps) || p.max_threads < 0 || p.min_threads < 0) {
        return invalid("mw_pacer_create: a parameter is negative or NaN");
    }
    return guarded([&] {
        auto pacer = std::make_unique<mw_pacer>();
        pacer->config.max_temp_c = p.max_temp_c;
        pacer->config.hysteresis_c = p.hysteresis_c;
        pacer->config.max_tps = p.max_tps;
        pacer->config.min_threads = std::max(1, p.min_threads);
        pacer->config.settle_s = p.settle_s;
        pacer->zone_filter = p.temp_zone ? p.temp_zone : "";
        pacer->sensors = std::make_unique<mw::SensorReader>();
        pacer->threads_from_context = p.max_threads == 0;
        // Without a context to ask, the pacer can still report its warning now.
        pacer_start(pacer.get(), p.max_threads > 0 ? p.max_threads : 1);
        *out = pacer.release();
    });
}

void mw_pacer_free(mw_pacer* pacer) {
    delete pacer;
}

const char* mw_pacer_warning(const mw_pacer* p) {
    return p && p->pacer && !p->pacer->warning().empty() ? p->pacer->warning().c_str() : nullptr;
}

mw_status mw_pacer_decide(mw_pacer* p, double now_s, double temp_c, mw_pace* out) {
    if (!p) return invalid("mw_pacer_decide: pacer is NULL");
    if (!std::isfinite(now_s)) return invalid("mw_pacer_decide: now_s is not a finite time");
    return guarded([&] {
        const std::optional<double> given =
            std::isfinite(temp_c) ? std::optional<double>(temp_c) : std::nullopt;
        const mw::PaceDecision d = p->pacer->decide(now_s, given);
        fill_pace(d, p->pacer->last_temp_c(), out);
    });
}

mw_status mw_pacer_pace(mw_pacer* p, mw_context* ctx, mw_pace* out) {
    if (!p) return invalid("mw_pacer_pace: pacer is NULL");
    mw::Context* c = mw::context_of(ctx);
    if (!c) return invalid("mw_pacer_pace: ctx is NULL");
    return guarded([&] { mw::pace_context(p, *c, out); });
}

const char* mw_pacer_summary(mw_pacer* p) {
    if (!p) return "";
    p->summary = p->pacer->pacer().summary();
    return p->summary.c_str();
}

const char* mw_pacer_take_warnings(mw_pacer* p) {
    if (!p) return "";
    p->warnings.clear();
    for (const std::string& w : p->sensors->take_warnings()) p->warnings += w + "\n";
    return p->warnings.c_str();
}

void mw_sustained_params_init(mw_sustained_params* out, size_t struct_size) {
    mw_sustained_params p{};
    p.duration_s = 60;
    p.interval_s = 5;
    p.tokens = nullptr;
    p.n_tokens = 0;
    p.n_keep = 0;
    p.pacing = nullptr;
    p.model_path = nullptr;
    p.progress = nullptr;
    p.user_data = nullptr;
    mw::init_params(out, struct_size, p);
}

char* mw_bench_sustained_json(mw_context* ctx, const mw_sustained_params* params) {
    mw::Context* c = mw::context_of(ctx);
    mw_sustained_params p;
    if (!params) {
        mw::set_api_last_error("mw_bench_sustained_json: params are required");
        return nullptr;
    }
    if (!mw::read_params(params, mw_sustained_default_params(), &p, "mw_sustained_params"))
        return nullptr;
    if (!c || !p.tokens || p.n_tokens <= 0) {
        mw::set_api_last_error("mw_bench_sustained_json: ctx, params and tokens are required");
        return nullptr;
    }
    char* out = nullptr;
    guarded([&] {
        mw::SustainedOptions o;
        o.duration_s = p.duration_s;
        o.interval_s = p.interval_s;
        o.feed.assign(p.tokens, p.tokens + p.n_tokens);
        o.n_keep = p.n_keep;
        if (p.pacing) {
            mw::PacerConfig pc;
            pc.max_temp_c = p.pacing->max_temp_c;
            pc.hysteresis_c = p.pacing->hysteresis_c;
            pc.max_tps = p.pacing->max_tps;
            pc.min_threads = std::max(1, p.pacing->min_threads);
            pc.settle_s = p.pacing->settle_s;
            o.pacing = pc;
            o.temp_zone = p.pacing->temp_zone ? p.pacing->temp_zone : "";
        }
        if (p.progress) {
            o.on_sample = [&p](const mw::SustainedSample& s) {
                mw_sustained_sample x{};
                x.t_s = s.t_s;
                x.n_tokens = s.tokens;
                x.tok_s = s.tok_s;
                x.n_threads = s.threads;
                x.temp_c_max = kNaN;
                for (double t : s.sensors.temp_c) {
                    if (std::isfinite(t) && !(t <= x.temp_c_max)) x.temp_c_max = t;
                }
                double sum = 0;
                int n = 0;
                for (double f : s.sensors.cpu_mhz) {
                    if (std::isfinite(f)) {
                        sum += f;
                        ++n;
                    }
                }
                x.cpu_mhz_mean = n ? sum / n : kNaN;
                x.power_w = s.sensors.power_w;
                x.rss_bytes = s.rss_bytes;
                return p.progress(&x, p.user_data);
            };
        }
        mw::SensorReader sensors;
        const mw::SustainedResult r = mw::run_sustained(*c, sensors, o);
        out = dup_string(
            mw::sustained_json(r, sensors, o, c->model().desc, p.model_path ? p.model_path : ""));
    });
    return out;
}

char* mw_chart_svg(const char* document_json) {
    if (!document_json) {
        mw::set_api_last_error("mw_chart_svg: the document is NULL");
        return nullptr;
    }
    char* out = nullptr;
    guarded([&] { out = dup_string(mw::chart_svg(document_json)); });
    return out;
}

}  // extern "C"
