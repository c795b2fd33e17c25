// memwall plan: will a model fit a device, at which quantization and context, and how fast will
// it decode; answered from the model's header, a config.json or the catalogue (no download).
// Also the refuse-or-fit check and the memory report `run` uses.
#include <fmt/format.h>

#include <algorithm>

#include "common.h"
#include "plan_render.h"

namespace cli {

using nlohmann::json;

void add_plan_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "plan",
        "Will a model fit a device, at which quantization and context, and how fast? (no "
        "arguments: a 35B dense model and a 30B MoE; no --device: this machine and 12/16/24 GB "
        "phones)");
    struct Options {
        std::vector<std::string> files, configs, models, devices, quants, positional;
        std::string ram, bandwidth, os_reserve;
        uint32_t n_ctx = 4096;
        uint32_t n_batch = 512;
        int threads = 0;
        std::string kv_type = "f16";
        bool json_out = false;
        bool list = false;
        bool best_only = false;
        bool ple_resident = false;
        double min_tps = 0;
        std::string plot;
        bool budgets = false;
        std::vector<std::string> mem_budgets;
        double draft_acceptance = -1;
        int draft_max = 8;
        std::string draft_model;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("model", opt->positional,
                    "GGUF file, URL (http, https, hf://OWNER/REPO/FILE) or catalogue model");
    cmd->add_option("-m,--file", opt->files,
                    "GGUF file or URL (only its header is read: a partial download works; a "
                    "remote file is read with range requests)");
    cmd->add_option("--config", opt->configs, "Hugging Face config.json");
    cmd->add_option("--model", opt->models,
                    "Model from the built-in catalogue (see --list), or all");
    cmd->add_option("--device", opt->devices,
                    "Device profile (see --list), or this (measured by probe; default: this, "
                    "phone-12g, phone-16g, phone-24g)");
    cmd->add_option("--ram", opt->ram, "RAM of an explicit device, e.g. 16G (G = GiB)");
    cmd->add_option("--bandwidth", opt->bandwidth,
                    "Memory bandwidth of an explicit device, e.g. 68G (GB/s; default: this "
                    "machine's saved measurement, else 51.2G)");
    cmd->add_option("--os-reserve", opt->os_reserve,
                    "Memory the OS keeps on the explicit device (default: as a phone)");
    cmd->add_option("-c,--ctx-size", opt->n_ctx, "Context size in tokens");
    cmd->add_option("--kv-type", opt->kv_type, "KV cache type: f16, f32, bf16, q8_0, q4_0");
    cmd->add_option("-q,--quant", opt->quants,
                    "Quantizations to plan (default F16 Q8_0 Q6_K Q5_K_M Q4_K_M Q3_K_M Q2_K)");
    cmd->add_option("-b,--batch-size", opt->n_batch, "Prompt tokens processed per step");
    cmd->add_option("-t,--threads", opt->threads, "Threads (0: the device's)");
    cmd->add_flag("--best", opt->best_only, "Rows: only the recommended configuration");
    cmd->add_flag("--ple-resident", opt->ple_resident,
                  "Gemma 4 E2B/E4B: plan the per-layer embedding table in memory (run's "
                  "--ple-resident) instead of on storage");
    cmd->add_option("--min-tps", opt->min_tps,
                    "Recommend the best quality that decodes at least this fast (tok/s), else the "
                    "fastest that fits (0: the best quality that fits, however slow)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_flag("--budgets", opt->budgets,
                  "Also plan under memory budgets of 25, 50 and 75 % of the file (a MoE model's "
                  "experts read from storage; docs/memory-budget.md)");
    cmd->add_option("--mem-budget", opt->mem_budgets,
                    "Also plan under this memory budget, e.g. 2G (G = GiB; repeatable)");
    cmd->add_option("--draft-acceptance", opt->draft_acceptance,
                    "Speculative decoding: the decode speed drafts accepted with probability P "
                    "would give (an estimate: a pass reads the weights once, computes k + 1 "
                    "tokens)");
    cmd->add_option("--draft-max", opt->draft_max, "With --draft-acceptance: tokens per draft")
        ->capture_default_str();
    cmd->add_option("--model-draft", opt->draft_model,
                    "A draft model (-md): its memory counts in every total (a context like "
                    "the target's), and with --draft-acceptance its reads count too");
    cmd->add_flag("--json", opt->json_out, "Print every number as JSON");
    cmd->add_flag("--list", opt->list, "List the catalogue's models and the device profiles");
    cmd->add_option("--plot", opt->plot,
                    "Also write the roofline as SVG: per quantization, each device's bandwidth "
                    "ceiling and expected tok/s, and the point `bench --record` measured");
    cmd->callback([opt] {
        const Options& o = *opt;
        if (o.list) {
            const json cat = take_json(mw_plan_catalogue_json(), "plan --list");
            if (o.json_out) {
                fmt::print("{}\n", cat.dump(1));
                return;
            }
            fmt::print("Models (--model):\n");
            for (const json& m : cat["models"]) {
                fmt::print("  {:<18} {:<18} {:>7.2f} B params  {}\n", m["id"].get<std::string>(),
                           m["name"].get<std::string>(), m["n_params"].get<double>() / 1e9,
                           m["arch"].get<std::string>());
            }
            fmt::print("Devices (--device, or this):\n");
            for (const json& d : cat["devices"]) {
                fmt::print("  {:<12} {}\n", d["id"].get<std::string>(),
                           d["name"].get<std::string>());
            }
            return;
        }
        json request = {{"ctx", o.n_ctx},
                        {"batch", o.n_batch},
                        {"threads", o.threads},
                        {"kv_type", o.kv_type},
                        {"best_only", o.best_only},
                        {"min_tps", o.min_tps},
                        {"ple_resident", o.ple_resident}};
        json models = json::array(), devices = json::array();
        auto is_url = [](const std::string& m) {
            for (const char* scheme : {"http://", "https://", "hf://"}) {
                if (m.rfind(scheme, 0) == 0) return true;
            }
            return false;
        };
        for (const std::string& f : o.files) models.push_back({{is_url(f) ? "url" : "file", f}});
        for (const std::string& c : o.configs) models.push_back({{"hf_config", c}});
        std::vector<std::string> names = o.positional;
        names.insert(names.end(), o.models.begin(), o.models.end());
        for (const std::string& m : names) {
            const bool is_file = m.size() > 5 && m.compare(m.size() - 5, 5, ".gguf") == 0;
            models.push_back({{is_url(m) ? "url" : is_file ? "file" : "catalogue", m}});
        }
        for (const std::string& d : o.devices) devices.push_back(d);
        if (o.ram.empty() && !o.bandwidth.empty())
            fail_usage("plan: --bandwidth describes an explicit device: give its --ram too");
        if (o.ram.empty() && !o.os_reserve.empty())
            fail_usage("plan: --os-reserve describes an explicit device: give its --ram too");
        if (!o.ram.empty()) {
            json d = {{"ram", o.ram}};
            if (!o.bandwidth.empty()) d["bandwidth"] = o.bandwidth;
            if (!o.os_reserve.empty()) d["os_reserve"] = o.os_reserve;
            devices.push_back(d);
        }
        // Neither --device nor --ram: this machine, and the phones the seed plans target.
        if (devices.empty()) devices = {"this", "phone-12g", "phone-16g", "phone-24g"};
        request["models"] = models;
        request["devices"] = devices;
        if (!o.quants.empty()) request["quants"] = o.quants;
        if (o.budgets) request["budget_fractions"] = {0.25, 0.5, 0.75};
        if (o.draft_acceptance >= 0 || o.draft_max != 8) {
            if (!(o.draft_acceptance >= 0 && o.draft_acceptance <= 1)) {
                fail_usage("plan: --draft-acceptance P: a probability 0..1 (with --draft-max)");
            }
            if (o.draft_max < 1) fail_usage("plan: --draft-max: 1 or more tokens");
            request["draft_acceptance"] = o.draft_acceptance;
            request["draft_max"] = o.draft_max;
            if (!o.draft_model.empty()) request["draft_model"] = o.draft_model;
        } else if (!o.draft_model.empty()) {
            request["draft_model"] = o.draft_model;  // its memory, in every row's total
        }
        if (!o.mem_budgets.empty()) {
            json sizes = json::array();
            for (const std::string& b : o.mem_budgets)
                sizes.push_back(parse_bytes(b, "--mem-budget"));
            request["mem_budgets"] = sizes;
        }
        const json plan = take_json(mw_plan_json(request.dump().c_str()), "plan");
        if (!o.plot.empty()) write_chart(plan.dump(), o.plot);
        if (o.json_out) {
            fmt::print("{}\n", plan.dump(1));
        } else {
            print_plan(plan);
        }
    });
}

mw_fit check_fit_or_fail(const std::string& path, const mw_context_params& params, bool force,
                         bool speculating, const std::string& draft_path, int draft_max, bool mtp) {
    mw_fit fit;
    const mw_status st =
        mtp ? mw_check_fit_mtp(path.c_str(), std::max(1, draft_max), &params, &fit)
        : speculating
            ? mw_check_fit_draft(path.c_str(), draft_path.empty() ? nullptr : draft_path.c_str(),
                                 draft_max, &params, &fit)
            : mw_check_fit(path.c_str(), &params, &fit);
    if (st != MW_OK) fail_status(st, "cannot load the model");
    if (fit.verdict == MW_FIT_NO) {
        if (!force) {
            fail(draft_path.empty() ? fmt::format("{}: {}", path, fit.message)
                                    : fmt::format("{} with the draft model {}: {}", path,
                                                  draft_path, fit.message));
        }
        fmt::print(stderr, "warning (--force): {}\n", fit.message);
    } else if (fit.verdict == MW_FIT_TIGHT) {
        fmt::print(stderr, "warning: tight fit, less than 10 % to spare: {}\n", fit.message);
    }
    return fit;
}

void print_memory_report(const mw_perf& perf, const mw_fit& plan) {
    const double predicted = double(plan.total_bytes);
    const double measured = double(std::max(perf.peak_rss_bytes, perf.rss_bytes));
    fmt::print(stderr, "memory (from the allocator and the OS):\n");
    fmt::print(stderr, "  weights     {} mapped, {} resident now\n",
               human_bytes(double(perf.weights_bytes)),
               human_bytes(double(perf.weights_resident_bytes)));
    fmt::print(stderr, "  KV cache    {} allocated\n", human_bytes(double(perf.kv_bytes)));
    fmt::print(stderr, "  scratch     {} allocated\n", human_bytes(double(perf.scratch_bytes)));
    fmt::print(stderr, "  RSS         {} now, peak {}\n", human_bytes(double(perf.rss_bytes)),
               human_bytes(measured));
    fmt::print(stderr, "  page faults {} major (read from storage), {} minor\n", perf.major_faults,
               perf.minor_faults);
    if (predicted > 0) {
        fmt::print(
            stderr,
            "  plan        peak RSS {} predicted for a full context ({:+.1f} % vs measured)\n",
            human_bytes(predicted), 100.0 * (predicted - measured) / measured);
    }
}

}  // namespace cli
