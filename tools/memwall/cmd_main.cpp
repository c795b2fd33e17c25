// The main job on a fresh machine. `memwall` with no arguments: probe this machine, then plan
// the whole catalogue for it: which models it can run, at which quantization and context, and
// how fast, in one screen, with nothing downloaded. `memwall -m FILE ...`: plan the file for
// this machine, then run it.
#include <fmt/format.h>

#include <algorithm>

#include "common.h"
#include "plan_render.h"

namespace cli {

using nlohmann::json;

namespace {

// The value following any of the flags, or "".
std::string flag_value(const std::vector<std::string>& args,
                       std::initializer_list<const char*> flags) {
    for (size_t i = 1; i + 1 < args.size(); ++i) {
        for (const char* f : flags) {
            if (args[i] == f) return args[i + 1];
        }
    }
    return "";
}

bool has_flag(const std::vector<std::string>& args, std::initializer_list<const char*> flags) {
    for (const std::string& a : args) {
        for (const char* f : flags) {
            if (a == f || a.rfind(std::string(f) + "=", 0) == 0) return true;
        }
    }
    return false;
}

}  // namespace

int run_main_job() {
    mw_probe_params facts_only = mw_probe_default_params();
    facts_only.measure = false;
    facts_only.write_cache = false;
    const json facts = take_json(mw_probe_json(&facts_only), "probe");
    // "this" uses the cached probe of this machine, or measures it now (about 1.5 s) and caches it.
    const json request = {{"models", {{{"catalogue", "all"}}}},
                          {"devices", {"this"}},
                          {"ctx", 4096},
                          {"best_only", true}};
    const json plan = take_json(mw_plan_json(request.dump().c_str()), "plan");
    const json& sys = facts["system"];
    const json& dev = plan["devices"][0];

    fmt::print("memwall {}: which models this machine can run, before any download\n\n",
               mw_version());
    fmt::print("This machine  {}, {} threads for decoding ({})\n", sys["cpu"].get<std::string>(),
               dev["threads"].get<int>(), sys["simd"].get<std::string>());
    fmt::print("Memory        {} RAM, {} available now; read bandwidth {:.1f} GB/s (measured)\n",
               human_bytes(dev["ram_bytes"].get<double>()),
               human_bytes(dev["usable_bytes"].get<double>()),
               dev["bandwidth_bytes_per_s"].get<double>() / 1e9);
    fmt::print("Decode        {:.0f} % of that bandwidth ({})\n\n",
               100 * dev["decode_efficiency"].get<double>(),
               dev["efficiency_source"] == "default" ? "default until `memwall bench` measures it"
                                                     : dev["efficiency_source"].get<std::string>());

    struct Line {
        double params;
        std::string text;
    };
    std::vector<Line> fits;
    std::vector<std::pair<double, std::string>> too_large;
    std::map<std::string, const json*> model_of;
    for (const json& m : plan["models"]) model_of[m["name"].get<std::string>()] = &m;
    bool any_unrunnable = false;
    for (const json& rec : plan["recommendations"]) {
        const json& m = *model_of[rec["model"].get<std::string>()];
        const double params = m["n_params"].get<double>();
        if (!rec["found"].get<bool>()) {
            too_large.push_back({params, rec["model"].get<std::string>()});
            continue;
        }
        const json& r = rec["row"];
        any_unrunnable = any_unrunnable || !m["runnable"].get<bool>();
        fits.push_back(
            {params,
             fmt::format("  {:<19}{:>7.2f} B  {:<7}{:>7} {:<5}{:>10}  {:>6} tok/s  {:>6} tok/s{}",
                         rec["model"].get<std::string>() + (m["runnable"].get<bool>() ? "" : " +"),
                         params / 1e9, r["quant"].get<std::string>(), r["ctx"].get<int>(),
                         r["kv_type"].get<std::string>(),
                         human_bytes(r["total_bytes"].get<double>()),
                         human_rate(r["decode_tok_s_expected"].get<double>()),
                         human_rate(r["prefill_tok_s_expected"].get<double>()),
                         r["fits"] == "tight" ? "  (tight)" : "")});
    }
    std::sort(fits.begin(), fits.end(),
              [](const Line& a, const Line& b) { return a.params < b.params; });
    std::sort(too_large.begin(), too_large.end());
    fmt::print("Models that fit (best quantization and context up to 4096 tokens):\n");
    fmt::print("  {:<19}{:>9}  {:<7}{:>7} {:<5}{:>10}  {:>12}  {:>12}\n", "model", "params",
               "quant", "ctx", "KV", "memory", "decode", "prefill");
    for (const Line& l : fits) fmt::print("{}\n", l.text);
    if (fits.empty()) fmt::print("  none\n");
    if (!too_large.empty()) {
        std::string names;
        for (const auto& [params, name] : too_large) names += (names.empty() ? "" : ", ") + name;
        fmt::print("Too large for the memory available now: {}\n", names);
    }
    if (any_unrunnable)
        fmt::print("\n+ memwall cannot run this architecture yet; planned with its real shapes.\n");
    fmt::print("Details:  memwall plan --model NAME --device this    (every quantization)\n");
    fmt::print("Run one:  memwall -m MODEL.gguf -p \"Hello\"          (plans it, then runs it)\n");
    fmt::print("All subcommands: memwall --help\n");
    return 0;
}

std::vector<std::string> plan_then_run_args(const std::vector<std::string>& args) {
    const std::string path = flag_value(args, {"-m", "--model"});
    json request = {{"models", {{{"file", path}}}}, {"devices", {"this"}}};
    const std::string ctx = flag_value(args, {"-c", "--ctx-size"});
    request["ctx"] = ctx.empty() ? 0 : std::stoul(ctx);
    const std::string kv = flag_value(args, {"--cache-type-k"});
    if (!kv.empty()) request["kv_type"] = kv;
    const json plan = take_json(mw_plan_json(request.dump().c_str()), "plan");
    for (const json& r : plan["rows"]) {
        if (!r["file_type"].get<bool>()) continue;
        fmt::print(stderr,
                   "plan: {} ({}) with {} tokens needs {} (weights {}, KV cache {}, compute {}, "
                   "overhead {}); {} available: fits {}; decode ~{} tok/s expected (ceiling {})\n",
                   path, r["quant"].get<std::string>(), r["ctx"].get<int>(),
                   human_bytes(r["total_bytes"].get<double>()),
                   human_bytes(r["weights_bytes"].get<double>()),
                   human_bytes(r["kv_bytes"].get<double>()),
                   human_bytes(r["compute_bytes"].get<double>()),
                   human_bytes(r["overhead_bytes"].get<double>()),
                   human_bytes(r["usable_bytes"].get<double>()), r["fits"].get<std::string>(),
                   human_rate(r["decode_tok_s_expected"].get<double>()),
                   human_rate(r["decode_tok_s_ceiling"].get<double>()));
        if (!r["runnable"].get<bool>())
            fmt::print(stderr, "plan: {}\n", r["note"].get<std::string>());
    }
    std::vector<std::string> run = {args[0], "run"};
    run.insert(run.end(), args.begin() + 1, args.end());
    if (!has_flag(args, {"-p", "--prompt", "-f", "--file"})) {
        fmt::print(stderr, "run: no prompt given (-p TEXT): using \"Once upon a time\"\n");
        run.insert(run.end(), {"-p", "Once upon a time"});
        if (!has_flag(args, {"-n", "--n-predict"})) run.insert(run.end(), {"-n", "64"});
    }
    return run;
}

}  // namespace cli
