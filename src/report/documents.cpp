#include "report/documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "report/chart.h"

namespace mw {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double number(const json& v) {
    return v.is_number() ? v.get<double>() : kNaN;
}

const json& field(const json& j, const char* key, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) {
        fail(ErrorKind::invalid_argument, "chart: {} has no \"{}\"", where, key);
    }
    return j[key];
}

const json& array_field(const json& j, const char* key, const std::string& where) {
    const json& a = field(j, key, where);
    if (!a.is_array()) {
        fail(ErrorKind::invalid_argument, "chart: \"{}\" of {} is not an array", key, where);
    }
    return a;
}

std::string text(const json& j, const char* key, const std::string& fallback = "") {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                  : fallback;
}

std::vector<std::string> lines(const json& j, const char* key) {
    std::vector<std::string> out;
    if (!j.contains(key)) return out;
    if (j[key].is_string()) return {j[key].get<std::string>()};
    for (const json& l : j[key]) {
        if (l.is_string()) out.push_back(l.get<std::string>());
    }
    return out;
}

// ---- The sustained bench over time ----------------------------------------------------------

std::string sustained_chart(const json& d) {
    const json& samples = array_field(d, "samples", "the sustained bench");
    const json& sensors = field(d, "sensors", "the sustained bench");
    const json& summary = field(d, "summary", "the sustained bench");
    const double duration = samples.empty() ? 0 : number(samples.back().value("t_s", json()));
    const bool minutes = duration >= 300;
    const double per = minutes ? 1.0 / 60 : 1.0;

    chart::LineChart c;
    const std::string path = text(d, "model");
    c.title = "Sustained decode: " +
              (path.empty() ? std::string("model") : path.substr(path.rfind('/') + 1));
    if (!text(d, "model_desc").empty()) c.subtitle.push_back(text(d, "model_desc"));
    c.x.label = minutes ? "time since the start (min)" : "time since the start (s)";
    c.x.min = 0.0;
    std::vector<double> t, tok_s, threads, power;
    for (const json& s : samples) {
        t.push_back(number(s.value("t_s", json())) * per);
        tok_s.push_back(number(s.value("tok_s", json())));
        threads.push_back(number(s.value("threads", json())));
        power.push_back(number(s.value("power_w", json())));
    }
    if (!t.empty() && t.back() > 0) c.x.max = t.back();  // the run's end, not the next tick
    c.subtitle.push_back(fmt::format("{}; one point per {:g} s", text(d, "conditions"),
                                     number(d.value("interval_s", json()))));
    const double window = number(summary.value("window_s", json()));
    c.subtitle.push_back(fmt::format(
        "first {:.3g} s: {:.2f} tok/s, last {:.3g} s: {:.2f} tok/s ({:+.1f} %)", window,
        number(summary.value("first_tok_s", json())), window,
        number(summary.value("last_tok_s", json())), -number(summary.value("drop_pct", json()))));
    if (std::isfinite(number(summary.value("j_per_token", json())))) {
        c.subtitle.push_back(fmt::format(
            "energy {:.1f} J, {:.3f} J per token, {:.2f} W mean ({})", number(summary["energy_j"]),
            number(summary["j_per_token"]), number(summary.value("mean_power_w", json())),
            text(sensors, "energy_source")));
    }

    chart::Panel speed;
    speed.y.label = "decode (tok/s)";
    speed.y.min = 0.0;
    speed.series.push_back({"tok/s in each interval", t, tok_s, chart::Style::line_points});
    c.panels.push_back(speed);

    const json pacing = d.value("pacing", json());
    double limit = kNaN;
    if (pacing.is_object()) {
        chart::Panel p;
        p.y.label = "threads (paced)";
        p.y.min = 0.0;
        p.series.push_back({"threads at the end of each interval", t, threads});
        c.panels.push_back(p);
        if (number(pacing.value("max_temp_c", json())) > 0) limit = number(pacing["max_temp_c"]);
        c.footer.push_back("pacing: " + text(pacing, "summary"));
    }

    const json zones = sensors.value("thermal_zones", json::array());
    if (!zones.empty()) {
        chart::Panel p;
        p.y.label = "temperature (°C)";
        struct Zone {
            double hottest;
            chart::Series series;
        };
        std::vector<Zone> all;
        for (size_t z = 0; z < zones.size(); ++z) {
            chart::Series s{
                fmt::format("zone {} {}", zones[z].value("zone", 0), text(zones[z], "type")),
                t,
                {}};
            double hottest = -1e300;
            for (const json& x : samples) {
                const json temps = x.value("temp_c", json::array());
                const double v = z < temps.size() ? number(temps[z]) : kNaN;
                s.y.push_back(v);
                if (std::isfinite(v)) hottest = std::max(hottest, v);
            }
            all.push_back({hottest, s});
        }
        // The hottest six: a phone has dozens of zones, and the hot ones are the story.
        std::stable_sort(all.begin(), all.end(),
                         [](const Zone& a, const Zone& b) { return a.hottest > b.hottest; });
        for (size_t i = 0; i < all.size() && i < 6; ++i) p.series.push_back(all[i].series);
        if (all.size() > 6) {
            c.footer.push_back(fmt::format("temperature: the {} hottest of {} thermal zones drawn",
                                           6, all.size()));
        }
        if (std::isfinite(limit) && !t.empty()) {
            chart::Series l{fmt::format("limit {:g} °C (--max-temp)", limit),
                            {t.front(), t.back()},
                            {limit, limit},
                            chart::Style::dashed};
            l.color = 7;
            p.series.push_back(l);
        }
        p.note = "no temperature could be read";
        c.panels.push_back(p);
    }

    const json cpus = sensors.value("cpus", json::array());
    if (!cpus.empty()) {
        chart::Panel p;
        p.y.label = "CPU frequency (MHz)";
        std::vector<std::vector<double>> per_cpu(cpus.size());
        for (const json& x : samples) {
            const json f = x.value("cpu_mhz", json::array());
            for (size_t i = 0; i < cpus.size(); ++i) {
                per_cpu[i].push_back(i < f.size() ? number(f[i]) : kNaN);
            }
        }
        if (cpus.size() <= 4) {
            for (size_t i = 0; i < cpus.size(); ++i) {
                p.series.push_back({fmt::format("cpu{}", cpus[i].get<int>()), t, per_cpu[i]});
            }
        } else {
            chart::Series lo{"slowest core", t, {}}, mean{"mean of the cores", t, {}},
                hi{"fastest core", t, {}};
            for (size_t k = 0; k < t.size(); ++k) {
                double a = 1e300, b = -1e300, sum = 0;
                int n = 0;
                for (const auto& f : per_cpu) {
                    if (!std::isfinite(f[k])) continue;
                    a = std::min(a, f[k]);
                    b = std::max(b, f[k]);
                    sum += f[k];
                    ++n;
                }
                lo.y.push_back(n ? a : kNaN);
                mean.y.push_back(n ? sum / n : kNaN);
                hi.y.push_back(n ? b : kNaN);
            }
            p.series = {hi, mean, lo};
            c.footer.push_back(
                fmt::format("CPU frequency: {} cores, as slowest, mean and fastest", cpus.size()));
        }
        p.note = "no frequency could be read";
        c.panels.push_back(p);
    }

    if (std::any_of(power.begin(), power.end(), [](double w) { return std::isfinite(w); })) {
        chart::Panel p;
        p.y.label = "power (W)";
        p.y.min = 0.0;
        p.series.push_back({text(sensors, "energy_source", "power"), t, power});
        c.panels.push_back(p);
    }
    for (const json& m : sensors.value("missing", json::array())) {
        if (m.is_string()) c.footer.push_back("missing: " + m.get<std::string>());
    }
    return chart::render(c);
}

// ---- The roofline of a plan ------------------------------------------------------------------

std::string human_params(double n) {
    return n >= 1e9 ? fmt::format("{:.2f} B parameters", n / 1e9)
                    : fmt::format("{:.1f} M parameters", n / 1e6);
}

std::string plan_chart(const json& plan) {
    const json& models = array_field(plan, "models", "the plan");
    const json& devices = array_field(plan, "devices", "the plan");
    const json& rows = array_field(plan, "rows", "the plan");
    if (models.empty()) fail(ErrorKind::invalid_argument, "chart: the plan has no models");

    // One x range for every panel: all rows and measured points, with some room.
    double xmin = 1e300, xmax = -1e300;
    auto widen = [&](double gb) {
        if (!(gb > 0)) return;
        xmin = std::min(xmin, gb);
        xmax = std::max(xmax, gb);
    };
    for (const json& r : rows) widen(number(r.value("decode_bytes_per_token", json())) / 1e9);
    for (const json& dv : devices) {
        widen(number(dv.value("measured_decode_bytes_per_token", json())) / 1e9);
    }
    if (!(xmin <= xmax)) fail(ErrorKind::invalid_argument, "chart: the plan has no rows to draw");
    const double xlo = xmin / 1.4, xhi = xmax * 1.4;

    chart::LineChart c;
    c.title = "Decode speed against the weight bytes each token reads";
    c.x = {"weight bytes read per decoded token (GB)", true, xlo, xhi};
    std::string conditions;
    if (!rows.empty()) conditions = text(rows[0], "decode_conditions");
    c.subtitle.push_back(
        "ceiling = memory bandwidth / bytes per token; expected = ceiling x the device's decode "
        "efficiency; one point per quantization");
    c.subtitle.push_back(fmt::format("context {} tokens, KV cache {}{}", plan.value("ctx", 0),
                                     text(plan, "kv_type", "f16"),
                                     conditions.empty() ? "" : "; speeds at " + conditions));
    // Quantization names beside the points of the fastest device (nothing above them to hide).
    size_t labelled = 0;
    for (size_t di = 0; di < devices.size(); ++di) {
        auto speed = [&](size_t i) {
            return number(devices[i].value("bandwidth_bytes_per_s", json())) *
                   number(devices[i].value("decode_efficiency", json()));
        };
        if (speed(di) > speed(labelled)) labelled = di;
    }
    bool any_hollow = false;
    for (const json& m : models) {
        const std::string name = text(m, "name");
        chart::Panel p;
        p.title = fmt::format("{}: {}, {}", name, text(m, "arch"),
                              human_params(number(m.value("n_params", json()))));
        p.y = {"decode (tok/s)", true};
        for (size_t di = 0; di < devices.size(); ++di) {
            const json& dv = devices[di];
            const std::string id = text(dv, "id");
            const double bw = number(dv.value("bandwidth_bytes_per_s", json()));
            const double eff = number(dv.value("decode_efficiency", json()));
            chart::Series ceiling{fmt::format("{}: ceiling, {:.1f} GB/s", id, bw / 1e9),
                                  {xlo, xhi},
                                  {bw / (xlo * 1e9), bw / (xhi * 1e9)}};
            ceiling.color = int(di);
            chart::Series expected{fmt::format("{}: expected, {:.0f} % of it", id, 100 * eff),
                                   {},
                                   {},
                                   chart::Style::dashed_points};
            expected.color = int(di);
            std::vector<const json*> mine;
            for (const json& r : rows) {
                if (text(r, "model") == name && text(r, "device") == id) mine.push_back(&r);
            }
            std::sort(mine.begin(), mine.end(), [](const json* a, const json* b) {
                return number(a->value("decode_bytes_per_token", json())) <
                       number(b->value("decode_bytes_per_token", json()));
            });
            for (const json* r : mine) {
                expected.x.push_back(number(r->value("decode_bytes_per_token", json())) / 1e9);
                expected.y.push_back(number(r->value("decode_tok_s_expected", json())));
                expected.labels.push_back(di == labelled ? text(*r, "quant") : "");
                const bool fits = text(*r, "fits") != "no";
                expected.hollow.push_back(!fits);
                any_hollow |= !fits;
            }
            p.series.push_back(ceiling);
            if (!mine.empty()) p.series.push_back(expected);
            const double measured = number(dv.value("measured_decode_tok_s", json()));
            const double measured_gb =
                number(dv.value("measured_decode_bytes_per_token", json())) / 1e9;
            if (measured > 0 && measured_gb > 0) {
                chart::Series point{fmt::format("{}: measured (bench --record)", id),
                                    {measured_gb},
                                    {measured},
                                    chart::Style::points,
                                    chart::Marker::diamond,
                                    {fmt::format("measured {:.1f} tok/s", measured)}};
                point.color = int(di);
                p.series.push_back(point);
            }
        }
        c.panels.push_back(p);
    }
    if (any_hollow) {
        c.footer.push_back(
            "hollow points: that quantization does not fit the device's usable memory");
    }
    for (const json& dv : devices) {
        c.footer.push_back(fmt::format("{}: {}", text(dv, "id"), text(dv, "name")));
    }
    return chart::render(c);
}

// ---- Bars ------------------------------------------------------------------------------------

std::string bars_chart(const json& spec) {
    chart::BarChart c;
    c.title = text(spec, "title", "memwall");
    c.subtitle = lines(spec, "subtitle");
    c.footer = lines(spec, "footer");
    const json& panels = array_field(spec, "panels", "the bar chart");
    for (size_t pi = 0; pi < panels.size(); ++pi) {
        const json& pj = panels[pi];
        const std::string where = fmt::format("panel {}", pi);
        chart::BarPanel p;
        p.title = text(pj, "title");
        p.y.label = text(pj, "y_label");
        for (const json& g : array_field(pj, "groups", where)) {
            if (!g.is_string()) {
                fail(ErrorKind::invalid_argument, "chart: {}: a group label is not text: {}", where,
                     g.dump());
            }
            p.groups.push_back(g.get<std::string>());
        }
        for (const json& s : array_field(pj, "series", where)) {
            const std::string name = text(s, "name");
            const json& values = array_field(s, "values", where + " series \"" + name + "\"");
            if (values.size() != p.groups.size()) {
                fail(ErrorKind::invalid_argument,
                     "chart: {} series \"{}\" has {} values for {} groups", where, name,
                     values.size(), p.groups.size());
            }
            p.series.push_back(name);
            std::vector<double> v;
            for (const json& x : values) v.push_back(number(x));
            p.values.push_back(v);
        }
        c.panels.push_back(p);
    }
    return chart::render(c);
}

}  // namespace

std::string chart_svg(const std::string& document_json) {
    json d;
    try {
        d = json::parse(document_json);
    } catch (const json::exception& e) {
        fail(ErrorKind::invalid_argument, "chart: not valid JSON: {}", e.what());
    }
    try {
        if (d.is_object() && text(d, "chart") == "bars") return bars_chart(d);
        if (d.is_object() && text(d, "kind") == "memwall.sustained_bench")
            return sustained_chart(d);
        if (d.is_object() && d.contains("rows") && d.contains("devices") && d.contains("models")) {
            return plan_chart(d);
        }
    } catch (const json::exception& e) {
        fail(ErrorKind::invalid_argument, "chart: a field has the wrong type: {}", e.what());
    }
    fail(
        ErrorKind::invalid_argument,
        "chart: the document is none of a sustained bench (\"kind\": \"memwall.sustained_bench\"), "
        "a plan (\"models\", \"devices\", \"rows\") or a bar chart (\"chart\": \"bars\")");
}

}  // namespace mw
