// memwall bench --duration: decode without pause for minutes and record, per interval, tok/s,
// CPU frequency per core, thermal zones, energy and RSS (the library's mw_bench_sustained_json);
// print the series as it comes, then first- vs last-minute speed, energy per token and the
// sensors that were missing. --json / --csv for the series, --plot for a chart.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common.h"

namespace cli {
namespace {

using nlohmann::json;

// "10m", "90s", "90", "1.5h", "500ms": seconds.
double parse_duration(const std::string& text, const char* flag) {
    size_t used = 0;
    double v = -1;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    const std::string unit = used > 0 ? text.substr(used) : "";
    double scale = -1;
    if (unit.empty() || unit == "s") scale = 1;
    if (unit == "ms") scale = 1e-3;
    if (unit == "m" || unit == "min") scale = 60;
    if (unit == "h") scale = 3600;
    if (used == 0 || scale < 0 || !(v > 0) || !std::isfinite(v)) {
        fail_usage(fmt::format("{} {}: expected a duration such as 90s, 10m or 1h", flag, text));
    }
    return v * scale;
}

std::string or_dash(double v, const char* format_spec) {
    return std::isfinite(v) ? fmt::format(fmt::runtime(format_spec), v) : "-";
}

struct Live {
    bool print = false;
};

bool on_sample(const mw_sustained_sample* s, void* user_data) {
    if (!static_cast<const Live*>(user_data)->print) return true;
    fmt::print("{:>8.1f} {:>9.2f} {:>7} {:>8} {:>9} {:>8} {:>10.1f}\n", s->t_s, s->tok_s,
               s->n_threads, or_dash(s->temp_c_max, "{:.1f}"), or_dash(s->cpu_mhz_mean, "{:.0f}"),
               or_dash(s->power_w, "{:.2f}"), s->rss_bytes / 1048576.0);
    std::fflush(stdout);
    return true;
}

double number(const json& v) {
    return v.is_number() ? v.get<double>() : NAN;
}

void print_csv(const json& doc) {
    const json& sensors = doc["sensors"];
    std::string head =
        "t_s,seconds,tokens,tok_s,n_past_min,n_past_max,threads,idle_s,power_w,"
        "energy_j,rss_bytes";
    for (const json& c : sensors["cpus"]) head += fmt::format(",cpu{}_mhz", c.get<int>());
    for (const json& z : sensors["thermal_zones"]) {
        std::string type = z["type"].get<std::string>();
        std::replace(type.begin(), type.end(), ',', '_');
        head += fmt::format(",zone{}_{}_c", z["zone"].get<int>(), type);
    }
    fmt::print("{}\n", head);
    auto cell = [](const json& v) {
        return v.is_number() ? fmt::format("{}", v.get<double>()) : "";
    };
    for (const json& s : doc["samples"]) {
        std::string line = fmt::format(
            "{:.3f},{:.3f},{},{:.3f},{},{},{},{:.3f},{},{},{}", s["t_s"].get<double>(),
            s["seconds"].get<double>(), s["tokens"].get<int>(), s["tok_s"].get<double>(),
            s["n_past"][0].get<int>(), s["n_past"][1].get<int>(), s["threads"].get<int>(),
            s["idle_s"].get<double>(), cell(s["power_w"]), cell(s["energy_j"]),
            s["rss_bytes"].get<uint64_t>());
        // (Appended in two steps: GCC 12 warns falsely about "," + std::string here.)
        for (const json* values : {&s["cpu_mhz"], &s["temp_c"]}) {
            for (const json& v : *values) {
                line += ',';
                line += cell(v);
            }
        }
        fmt::print("{}\n", line);
    }
}

void print_summary(const json& doc) {
    const json& m = doc["summary"];
    const json& sensors = doc["sensors"];
    const double w = number(m["window_s"]);
    fmt::print("\n{} tokens in {:.1f} s: {:.2f} tok/s ({})\n", m["tokens"].get<int>(),
               number(m["seconds"]), number(m["tok_s"]), doc["conditions"].get<std::string>());
    fmt::print("first {:.3g} s: {:.2f} tok/s; last {:.3g} s: {:.2f} tok/s; drop {:.1f} %\n", w,
               number(m["first_tok_s"]), w, number(m["last_tok_s"]), number(m["drop_pct"]));
    if (std::isfinite(number(m["temp_c_max"]))) {
        fmt::print(
            "temperature: hottest zone {:.1f} °C in the first {:.3g} s, {:.1f} °C in the "
            "last; {:.1f} °C at most\n",
            number(m["first_temp_c"]), w, number(m["last_temp_c"]), number(m["temp_c_max"]));
    }
    if (std::isfinite(number(m["first_mhz"]))) {
        fmt::print("CPU frequency: {:.0f} MHz mean in the first {:.3g} s, {:.0f} MHz in the last\n",
                   number(m["first_mhz"]), w, number(m["last_mhz"]));
    }
    if (std::isfinite(number(m["j_per_token"]))) {
        fmt::print("energy: {:.1f} J, {:.4f} J per token, {:.2f} W mean ({})\n",
                   number(m["energy_j"]), number(m["j_per_token"]), number(m["mean_power_w"]),
                   sensors["energy_source"].get<std::string>());
    }
    if (doc["pacing"].is_object()) {
        fmt::print("pacing: {}\n", doc["pacing"]["summary"].get<std::string>());
    }
    for (const json& line : sensors["missing"]) {
        fmt::print("missing sensor: {}\n", line.get<std::string>());
    }
}

}  // namespace

void SustainedOptions::add_to(CLI::App& bench) {
    bench.add_option("--duration", duration,
                     "Decode without pause this long (90s, 10m, 1h) and record speed, CPU "
                     "frequency, temperatures, energy and RSS per --interval");
    bench.add_option("--interval", interval, "Interval of the --duration series (default 5s)");
    bench.add_option("--plot", plot,
                     "Write a chart of the --duration series (SVG): tok/s and, where the sensors "
                     "exist, temperature, frequency and power over time");
    pacing.add_to(bench);
}

void run_sustained_bench(const SustainedBench& b, const SustainedOptions& o) {
    const double duration = parse_duration(o.duration, "--duration");
    const double interval = parse_duration(o.interval, "--interval");
    if (interval > duration) fail_usage("bench: --interval is longer than --duration");
    if (b.n_gen < 2)
        fail_usage("bench --duration: -n (the tokens decoded between context shifts) must be >= 2");
    const bool quiet = b.json || b.csv;
    ModelPtr model = load_model(b.model, false, quiet);
    const int32_t n_vocab = mw_model_n_vocab(model.get());

    // The prompt and the -d tokens stay; the -n decoded tokens after them are halved by a context
    // shift whenever the cache is full, so the depth cycles between the two.
    const uint32_t n_keep = uint32_t(b.n_prompt + b.n_depth);
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = n_keep + uint32_t(b.n_gen);
    cp.n_batch = b.n_batch ? b.n_batch : uint32_t(std::max(b.n_prompt + b.n_depth, 1));
    cp.n_threads = b.threads;
    cp.type_k = b.type_k;
    cp.type_v = b.type_v;
    ContextPtr ctx = create_context(model.get(), cp);
    if (n_keep > 0) {
        const std::vector<mw_token> prompt = bench_prompt_ids(int(n_keep), n_vocab);
        if (mw_status st = mw_decode(ctx.get(), prompt.data(), int32_t(prompt.size()), false);
            st != MW_OK) {
            fail_status(st, "bench");
        }
    }
    const std::vector<mw_token> feed = bench_prompt_ids(std::max(b.n_gen, 64), n_vocab);

    mw_pacer_params pacing = mw_pacer_default_params();
    pacing.max_temp_c = o.pacing.max_temp;
    pacing.max_tps = o.pacing.max_tps;
    pacing.temp_zone = o.pacing.temp_zone.c_str();
    Live live{!quiet};
    mw_sustained_params sp = mw_sustained_default_params();
    sp.duration_s = duration;
    sp.interval_s = interval;
    sp.tokens = feed.data();
    sp.n_tokens = int32_t(feed.size());
    sp.n_keep = n_keep;
    sp.pacing = o.pacing.enabled() ? &pacing : nullptr;
    sp.model_path = b.model.path.c_str();
    sp.progress = on_sample;
    sp.user_data = &live;
    if (!quiet) {
        mw_speed_conditions c{};
        c.n_gen = -1;
        c.n_depth = int32_t(n_keep);
        c.n_depth_max = int32_t(cp.n_ctx);
        c.n_threads = mw_context_n_threads(ctx.get());
        c.type_k = b.type_k;
        c.type_v = b.type_v;
        fmt::print("sustained decode for {:g} s, one line per {:g} s ({})\n", duration, interval,
                   speed_label(c));
        fmt::print("{:>8} {:>9} {:>7} {:>8} {:>9} {:>8} {:>10}\n", "time s", "tok/s", "threads",
                   "hot °C", "mean MHz", "power W", "RSS MiB");
    }
    char* text = mw_bench_sustained_json(ctx.get(), &sp);
    if (!text) fail(fmt::format("bench: {}", mw_last_error()));
    const std::string doc_text = text;
    mw_free_string(text);
    const json doc = json::parse(doc_text);
    for (const json& w : doc["sensors"]["warnings"]) {
        fmt::print(stderr, "warning: {}\n", w.get<std::string>());
    }
    if (b.json) {
        fmt::print("{}\n", doc_text);
    } else if (b.csv) {
        print_csv(doc);
    } else {
        print_summary(doc);
    }
    if (!o.plot.empty()) {
        write_chart(doc_text, o.plot);
        if (!quiet) fmt::print("chart: {}\n", o.plot);
    }
}

}  // namespace cli
