// The main job on a fresh machine. `memwall` with no arguments: probe this machine, then plan
// the whole catalogue for it: which models it can run, at which quantization and context, and
// how fast, in one screen, with nothing downloaded. `memwall -m FILE ...`: plan the file for
// this machine, then run it.
#include <fmt/format.h>

#include <algorithm>
#include <map>

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

// Where the bandwidth figure comes from, in words.
std::string bandwidth_origin(const json& dev) {
    const std::string source = dev["bandwidth_source"].get<std::string>();
    if (source == "saved measurement") {
        return fmt::format("saved measurement of {}",
                           human_time(dev["measured_at"].get<int64_t>()));
    }
    return dev["note"].get<std::string>();
}

}  // namespace

int run_main_job(double min_tps) {
    mw_probe_params facts_only = mw_probe_default_params();
    facts_only.measure = false;
    const json facts = take_json(mw_probe_json(&facts_only), "probe");
    // "this" uses the saved measurement of this machine, or measures it now (a few seconds) and
    // saves it when nothing is saved and it does not look contended.
    // The phones too: what they run only with experts streamed from storage.
    const json request = {{"models", {{{"catalogue", "all"}}}},
                          {"devices", {"this", "phone-12g", "phone-16g", "phone-24g"}},
                          {"ctx", 4096},
                          {"best_only", true},
                          {"min_tps", min_tps}};
    const json plan = take_json(mw_plan_json(request.dump().c_str()), "plan");
    const json& sys = facts["system"];
    const json& dev = plan["devices"][0];

    fmt::print("memwall {}: which models this machine can run, before any download\n\n",
               mw_version());
    fmt::print("This machine  {}, {} threads for decoding ({})\n", sys["cpu"].get<std::string>(),
               dev["threads"].get<int>(), sys["simd"].get<std::string>());
    fmt::print("Memory        {} RAM, {} available now\n",
               human_bytes(dev["ram_bytes"].get<double>()),
               human_bytes(dev["usable_bytes"].get<double>()));
    fmt::print("Bandwidth     {:.1f} GB/s read +- {:.1f} % (measured: {})\n",
               dev["bandwidth_bytes_per_s"].get<double>() / 1e9,
               100 * dev["bandwidth_spread"].get<double>(), bandwidth_origin(dev));
    if (dev["efficiency_source"] == "default") {
        fmt::print(
            "Decode        {:.0f} % of that bandwidth (a default, until `memwall bench "
            "--record -m FILE.gguf` measures it)\n",
            100 * dev["decode_efficiency"].get<double>());
    } else {
        fmt::print("Decode        {:.0f} % of that bandwidth (measured by bench on {})\n",
                   100 * dev["decode_efficiency"].get<double>(),
                   human_time(dev["efficiency_measured_at"].get<int64_t>()));
    }
    fmt::print("Prefill       {:.0f} GFLOP/s ({})\n", dev["prefill_gflops"].get<double>(),
               dev["prefill_source"].get<std::string>());
    fmt::print(
        "              `memwall probe` measures again and compares; `probe --save` "
        "replaces the saved figures, `probe --reset` forgets them\n\n");

    struct Line {
        bool runnable;
        double params;
        std::string text;
        std::string name, repo, file;  // where to download the file ("" when unknown)
        std::string quant;
        double decode_tok_s = 0;  // expected (streamed: the cautious end)
        bool streams = false;
    };
    std::vector<Line> fits;
    std::vector<std::pair<double, std::string>> too_large;
    std::vector<std::string> phones;  // MoE models a phone runs only with experts streamed
    std::map<std::string, const json*> model_of;
    for (const json& m : plan["models"]) model_of[m["name"].get<std::string>()] = &m;
    for (const json& rec : plan["recommendations"]) {
        const json& m = *model_of[rec["model"].get<std::string>()];
        const double params = m["n_params"].get<double>();
        const std::string name = rec["model"].get<std::string>();
        const bool runnable = m["runnable"].get<bool>();
        const bool streams = !rec["found"].get<bool>() && rec.contains("streamed");
        if (rec["device"] != "this") {
            if (streams && rec["streamed"]["kind"] == "experts") {
                const json& s = rec["streamed"];
                phones.push_back(
                    fmt::format("  {:<19}{:<11}{:<7} --mem-budget {:<6} {:>9} tok/s  "
                                "streams experts",
                                name, rec["device"].get<std::string>(),
                                s["options"][0]["quant"].get<std::string>(),
                                s["budget_arg"].get<std::string>(), stream_rate(s["options"][0])));
            }
            continue;
        }
        if (streams) {
            // Too large for the memory available now, runnable with --mem-budget.
            const json& s = rec["streamed"];
            const json& o = s["options"][0];
            const bool experts = s["kind"] == "experts";
            fits.push_back(
                {runnable, params,
                 fmt::format("  {:<19}{:>7.2f} B  {:<7}{:>7} {:<5}{:>10}  {:>9} tok/s  {:>6} "
                             "tok/s  streams {} (--mem-budget {})",
                             name, params / 1e9, o["quant"].get<std::string>(), s["ctx"].get<int>(),
                             plan["kv_type"].get<std::string>(),
                             human_bytes(s["budget_bytes"].get<double>()), stream_rate(o), "-",
                             experts ? "experts" : "layers", s["budget_arg"].get<std::string>()),
                 name, s.value("hf_repo", ""), s.value("hf_file", ""),
                 o["quant"].get<std::string>(), o["decode_tok_s"].get<double>(), true});
            continue;
        }
        if (!rec["found"].get<bool>()) {
            too_large.push_back({params, name});
            continue;
        }
        const json& r = rec["row"];
        fits.push_back(
            {runnable, params,
             fmt::format("  {:<19}{:>7.2f} B  {:<7}{:>7} {:<5}{:>10}  {:>9} tok/s  {:>6} tok/s{}",
                         name + (runnable ? "" : " +"), params / 1e9, r["quant"].get<std::string>(),
                         r["ctx"].get<int>(), r["kv_type"].get<std::string>(),
                         human_bytes(r["total_bytes"].get<double>()),
                         human_rate(r["decode_tok_s_expected"].get<double>()),
                         human_rate(r["prefill_tok_s_expected"].get<double>()),
                         r["fits"] == "tight" ? "  (tight)" : ""),
             name, r.value("hf_repo", ""), r.value("hf_file", ""), r["quant"].get<std::string>(),
             r["decode_tok_s_expected"].get<double>(), false});
    }
    // What memwall can run first, smallest first.
    std::sort(fits.begin(), fits.end(), [](const Line& a, const Line& b) {
        return a.runnable != b.runnable ? a.runnable : a.params < b.params;
    });
    std::sort(too_large.begin(), too_large.end());
    const bool any_unrunnable =
        std::any_of(fits.begin(), fits.end(), [](const Line& l) { return !l.runnable; });
    // The spread covers what was measured: with a default efficiency, only the bandwidth.
    const std::string spread =
        dev["efficiency_source"] == "default"
            ? fmt::format("decode +- {:.0f} % for the bandwidth, the efficiency a default",
                          100 * dev["decode_spread"].get<double>())
            : fmt::format("decode +- {:.0f} %", 100 * dev["decode_spread"].get<double>());
    fmt::print("Models that fit ({}, context up to 4096 tokens; {}):\n",
               min_tps > 0 ? fmt::format("the best quantization that decodes at {} tok/s or more "
                                         "(--min-tps), else the fastest",
                                         human_rate(min_tps))
                           : std::string("the best quantization"),
               spread);
    fmt::print("  {:<19}{:>9}  {:<7}{:>7} {:<5}{:>10}  {:>15}  {:>12}\n", "model", "params",
               "quant", "ctx", "KV", "memory", "decode", "prefill");
    for (const Line& l : fits) fmt::print("{}\n", l.text);
    if (fits.empty()) fmt::print("  none\n");
    if (!too_large.empty()) {
        std::string names;
        for (const auto& [params, name] : too_large) names += (names.empty() ? "" : ", ") + name;
        fmt::print("Too large for the memory available now: {}\n", names);
    }
    for (const json& r : plan["rows"]) {
        if (r["device"] != "this") continue;
        fmt::print(
            "Speeds at {} (decode: one token after an empty cache) and {} (prefill), each "
            "row's KV type\n",
            r.value("decode_conditions", ""), r.value("prefill_conditions", ""));
        break;
    }
    if (std::any_of(fits.begin(), fits.end(),
                    [](const Line& l) { return l.text.find(" streams ") != std::string::npos; })) {
        fmt::print(
            "streams: too large for the memory free now, runs with --mem-budget (the rest read "
            "from storage as needed); a MoE's decode is a range from uniform to skewed routing\n");
    }
    if (!phones.empty()) {
        fmt::print(
            "\nOn phones, only with experts streamed from storage (memwall plan --model NAME "
            "--device ID: details and the run line):\n");
        for (const std::string& p : phones) fmt::print("{}\n", p);
    }
    if (any_unrunnable) {
        fmt::print("+ memwall cannot run this architecture yet; planned with its real shapes.\n");
    }
    size_t repo_width = 0;
    for (const Line& l : fits) {
        if (l.runnable) repo_width = std::max(repo_width, l.repo.size());
    }
    if (repo_width > 0) {
        fmt::print(
            "\nWhere to get them (Hugging Face: huggingface.co/REPO, the file of the "
            "quantization above):\n");
        for (const Line& l : fits) {
            if (l.runnable && !l.repo.empty())
                fmt::print("  {:<19}{:<{}}  {}\n", l.name, l.repo, repo_width, l.file);
        }
    }
    // The top pick: the largest model memwall runs here at the speed asked, with its file.
    const Line* top = nullptr;
    for (const Line& l : fits) {
        const bool fast = min_tps <= 0 || l.decode_tok_s >= min_tps;
        const bool whole = l.file.size() > 5 && l.file.compare(l.file.size() - 5, 5, ".gguf") == 0;
        if (l.runnable && fast && !l.streams && whole && !l.repo.empty() &&
            (!top || l.params > top->params))
            top = &l;
    }
    if (top) {
        fmt::print("\nTop pick: {} {}, ~{} tok/s here. Download and run it:\n", top->name,
                   top->quant, human_rate(top->decode_tok_s));
        fmt::print("  memwall pull hf://{}/{} -o {}\n", top->repo, top->file, top->file);
        fmt::print("  memwall -m {} -p \"Hello\"\n", top->file);
    }
    fmt::print(
        "\nAny other GGUF file:  memwall plan -m FILE.gguf, or memwall plan URL before "
        "downloading it\n\n");
    fmt::print(
        "Details:  memwall plan --model NAME    (every quantization; this machine and "
        "phones)\n");
    fmt::print("Run one:  memwall -m MODEL.gguf -p \"Hello\"    (plans it, then runs it)\n");
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
    const json plan = take_json(mw_plan_json(request.dump().c_str()), "cannot load the model");
    for (const json& r : plan["rows"]) {
        if (!r["file_type"].get<bool>()) continue;
        fmt::print(
            stderr,
            "plan: {} ({}) with {} tokens needs {} (weights {}, KV cache {}, compute {}, "
            "overhead {}); {} available: fits {}; decode ~{} tok/s +- {:.0f} % expected "
            "(ceiling {}; {})\n",
            path, r["quant"].get<std::string>(), r["ctx"].get<int>(),
            human_bytes(r["total_bytes"].get<double>()),
            human_bytes(r["weights_bytes"].get<double>()), human_bytes(r["kv_bytes"].get<double>()),
            human_bytes(r["compute_bytes"].get<double>()),
            human_bytes(r["overhead_bytes"].get<double>()),
            human_bytes(r["usable_bytes"].get<double>()), r["fits"].get<std::string>(),
            human_rate(r["decode_tok_s_expected"].get<double>()),
            100 * plan["devices"][0]["decode_spread"].get<double>(),
            human_rate(r["decode_tok_s_ceiling"].get<double>()), r.value("decode_conditions", ""));
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
