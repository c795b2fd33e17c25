#include "plan_render.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>
#include <map>
#include <vector>

#include "common.h"

namespace cli {

using nlohmann::json;

json take_json(char* text, const std::string& doing) {
    if (!text) fail(doing + ": " + mw_last_error());
    json j = json::parse(text);
    mw_free_string(text);
    return j;
}

std::string human_bytes(double bytes) {
    if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
    if (bytes < 1024.0 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024);
    if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
    return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

std::string human_rate(double r) {
    if (r <= 0) return "-";
    if (r < 1) return fmt::format("{:.2f}", r);
    if (r < 100) return fmt::format("{:.1f}", r);
    return fmt::format("{:.0f}", r);
}

std::string stream_rate(const json& o) {
    const double lo = o["decode_tok_s"].get<double>();
    const double hi = o.value("decode_tok_s_skewed", lo);
    if (human_rate(hi) == human_rate(lo)) return human_rate(lo);
    return human_rate(lo) + "-" + human_rate(hi);
}

namespace {

std::string model_summary(const json& m, const std::string& kv_type) {
    const double params = m["n_params"].get<double>();
    std::string s = fmt::format("{}: {}, {} parameters, {} layers", m["name"].get<std::string>(),
                                m["arch"].get<std::string>(),
                                params >= 1e9 ? fmt::format("{:.2f} B", params / 1e9)
                                              : fmt::format("{:.2f} M", params / 1e6),
                                m["n_layer"].get<int>());
    if (m["n_expert"].get<int>() > 0) {
        s += fmt::format(", {} experts ({} per token)", m["n_expert"].get<int>(),
                         m["n_expert_used"].get<int>());
    }
    s += fmt::format(", KV cache {} per token ({})",
                     human_bytes(m["kv_bytes_per_token"].get<double>()), kv_type);
    // What the architecture saves (older plan files lack these fields).
    if (m.value("sliding_window_layers", 0) > 0) {
        s += fmt::format("; {} of the {} layers keep only a {}-token window (+ batch)",
                         m["sliding_window_layers"].get<int>(), m["n_layer"].get<int>(),
                         m["sliding_window"].get<int>());
    }
    if (m.value("kv_latent", 0) > 0) {
        s += fmt::format("; latent attention caches a {}-wide latent + {} rope dims per token",
                         m["kv_latent"].get<int>(),
                         m["head_dim_k"].get<int>() - m["kv_latent"].get<int>());
    }
    if (m.value("recurrent_layers", 0) > 0) {
        s += fmt::format(
            "; {} of the {} layers are recurrent (no KV cache): {} of state per "
            "sequence, whatever the context",
            m["recurrent_layers"].get<int>(), m["n_layer"].get<int>(),
            human_bytes(m["state_bytes_per_sequence"].get<double>()));
    }
    return s;
}

std::string device_line(const json& d) {
    const bool measured = d["source"] == "measured";
    std::string bandwidth = d.value("bandwidth_source", "");
    if (d.value("measured_at", int64_t(0)) > 0) {
        bandwidth = fmt::format("+- {:.1f} %, {} of {}", 100 * d["bandwidth_spread"].get<double>(),
                                bandwidth, human_time(d["measured_at"].get<int64_t>()));
    }
    std::string line = fmt::format(
        "{}: {}; {} usable = {} RAM - {} {}, {:.1f} GB/s ({}), decode efficiency {:.0f} % ({})",
        d["id"].get<std::string>(), d["name"].get<std::string>(),
        human_bytes(d["usable_bytes"].get<double>()), human_bytes(d["ram_bytes"].get<double>()),
        human_bytes(d["os_reserve_bytes"].get<double>()), measured ? "in use now" : "OS reserve",
        d["bandwidth_bytes_per_s"].get<double>() / 1e9, bandwidth,
        100 * d["decode_efficiency"].get<double>(), d["efficiency_source"].get<std::string>());
    if (!d.value("note", "").empty()) line += "\n    " + d["note"].get<std::string>();
    return line;
}

// How a model that does not fit in RAM runs with --mem-budget at the device's free memory: each
// quantization's tok/s (fastest first), what the range means, where the storage rate comes from,
// and the command to paste.
std::string streamed_lines(const json& s) {
    const json& options = s["options"];
    const json& best = options[0];
    const bool experts = s["kind"] == "experts";
    std::string rates;
    for (const json& o : options) {
        rates += fmt::format("{}{} ~{} tok/s", rates.empty() ? "" : ", ",
                             o["quant"].get<std::string>(), stream_rate(o));
    }
    std::string text = fmt::format(
        "    with --mem-budget {} (95 % of its free memory), {} streamed from storage: {}\n",
        s["budget_arg"].get<std::string>(), experts ? "experts" : "layers", rates);
    if (experts) {
        text += fmt::format(
            "    tok/s from uniform routing (the worst case) to expert popularity ~ rank^-{:.1f} "
            "in each layer (skewed routers as measured); storage {}\n",
            best["router_skew"].get<double>(), best["storage_source"].get<std::string>());
    } else {
        text += fmt::format("    each token reads the layers that do not stay; storage {}\n",
                            best["storage_source"].get<std::string>());
    }
    return text + "    " + s["run_command"].get<std::string>();
}

std::string found_line_base(const json& rec, const json& r) {
    return fmt::format(
        "  {}: {} -> {}, decode ~{} tok/s (ceiling {}; {}), prefill ~{} tok/s ({})",
        rec["device"].get<std::string>(), rec["advice"].get<std::string>(),
        human_bytes(r["total_bytes"].get<double>()),
        human_rate(r["decode_tok_s_expected"].get<double>()),
        human_rate(r["decode_tok_s_ceiling"].get<double>()), r.value("decode_conditions", ""),
        human_rate(r["prefill_tok_s_expected"].get<double>()), r.value("prefill_conditions", ""));
}

std::string recommendation_found_line(const json& rec, const json& r) {
    std::string spec;
    if (r.contains("speculative")) {
        const json& s = r["speculative"];
        spec = fmt::format(
            "\n    speculative (estimate): acceptance {:.2f}, {} drafted -> {:.2f} tokens per "
            "pass, a pass ~{:.2f}x a step{}: decode ~{} tok/s",
            s["draft_acceptance"].get<double>(), s["draft_max"].get<int>(),
            s["tokens_per_pass"].get<double>(), s["pass_cost"].get<double>(),
            s.value("draft_cost", 0.0) > 0 ? " (the draft model's reads included)" : "",
            human_rate(s["decode_tok_s_expected"].get<double>()));
    }
    return found_line_base(rec, r) + spec;
}

std::string recommendation_line(const json& rec) {
    if (!rec["found"].get<bool>()) {
        std::string line = fmt::format("  {}: {}", rec["device"].get<std::string>(),
                                       rec["advice"].get<std::string>());
        if (rec.contains("streamed")) line += "\n" + streamed_lines(rec["streamed"]);
        return line;
    }
    const json& r = rec["row"];
    if (rec.contains("streamed")) {
        return recommendation_found_line(rec, r) + "\n    faster streamed:\n" +
               streamed_lines(rec["streamed"]);
    }
    return recommendation_found_line(rec, r);
}

// Rows under memory budgets: the runtime's refusal, or the expert cache, its predicted hit rate,
// the bytes read from storage per token and the decode speed that gives.
void print_budget_rows(const json& plan, const std::string& model) {
    bool any = false;
    for (const json& r : plan["budget_rows"]) {
        if (r["model"] != model) continue;
        if (!any) {
            fmt::print(
                "  Under a memory budget (--mem-budget; {}, {} file; MoE hit rate for uniform "
                "routing):\n",
                r["quant"].get<std::string>(), human_bytes(r["file_bytes"].get<double>()));
            any = true;
        }
        const double fraction = r["budget_fraction"].get<double>();
        std::string line = fmt::format("    {:<11} {:>10} {:>5}: ", r["device"].get<std::string>(),
                                       human_bytes(r["budget_bytes"].get<double>()),
                                       fraction > 0 ? fmt::format("{:.0f} %", 100 * fraction) : "");
        if (!r["fits"].get<bool>()) {
            line += "refused: " + r["refusal"].get<std::string>();
        } else if (r.value("streams_layers", false) &&
                   r["cache_slots"].get<uint64_t>() >= r["n_layer"].get<uint64_t>()) {
            line += fmt::format("fits whole, ~{} tok/s as in RAM",
                                human_rate(r["decode_tok_s"].get<double>()));
        } else if (r.value("streams_layers", false)) {
            line += fmt::format(
                "layers streamed: {} of {} in memory ({} staying), {} read per token at {:.2f} "
                "GB/s{} -> ~{} tok/s (in RAM {})",
                r["cache_slots"].get<uint64_t>(), r["n_layer"].get<uint64_t>(),
                r["layers_pinned"].get<uint64_t>(),
                human_bytes(r["storage_bytes_per_token"].get<double>()),
                r["storage_bytes_per_s"].get<double>() / 1e9,
                r["storage_assumed"].get<bool>() ? " (assumed)" : "",
                human_rate(r["decode_tok_s"].get<double>()),
                human_rate(r["in_ram_decode_tok_s"].get<double>()));
        } else if (!r["moe"].get<bool>()) {
            line += fmt::format("fits whole, ~{} tok/s as in RAM",
                                human_rate(r["decode_tok_s"].get<double>()));
        } else {
            line += fmt::format(
                "cache {}/{} experts, hit {:.0f} %, {} read per token at {:.2f} GB/s{} -> ~{} "
                "tok/s (in RAM {})",
                r["cache_slots"].get<uint64_t>(), r["experts_total"].get<uint64_t>(),
                100 * r["hit_rate"].get<double>(),
                human_bytes(r["storage_bytes_per_token"].get<double>()),
                r["storage_bytes_per_s"].get<double>() / 1e9,
                r["storage_assumed"].get<bool>() ? " (assumed)" : "",
                human_rate(r["decode_tok_s"].get<double>()),
                human_rate(r["in_ram_decode_tok_s"].get<double>()));
        }
        if (!r["note"].get<std::string>().empty()) line += "; " + r["note"].get<std::string>();
        fmt::print("{}\n", line);
    }
    if (!any) return;
    // Where each device's storage figure comes from, once.
    for (const json& d : plan["devices"]) {
        fmt::print("    storage of {}: {}\n", d["id"].get<std::string>(),
                   d["storage"]["source"].get<std::string>());
    }
}

}  // namespace

void print_plan(const json& plan) {
    const std::string kv_type = plan["kv_type"].get<std::string>();
    std::vector<std::string> device_ids;
    for (const json& d : plan["devices"]) device_ids.push_back(d["id"].get<std::string>());

    fmt::print("Devices:\n");
    for (const json& d : plan["devices"]) fmt::print("  {}\n", device_line(d));

    for (const json& m : plan["models"]) {
        const std::string name = m["name"].get<std::string>();
        fmt::print("\n{}\n", model_summary(m, kv_type));
        if (m.contains("remote")) {
            const json& r = m["remote"];
            fmt::print("  remote: read {} of the {} file ({} bytes in {} range request{}){}\n",
                       human_bytes(r["bytes_read"].get<double>()),
                       human_bytes(r["file_bytes"].get<double>()), r["bytes_read"].get<uint64_t>(),
                       r["requests"].get<int>(), r["requests"].get<int>() == 1 ? "" : "s",
                       r["sha256"].get<std::string>().empty()
                           ? ""
                           : ", SHA-256 " + r["sha256"].get<std::string>() + " (server)");
        }
        if (!m["runnable"].get<bool>()) fmt::print("  note: {}\n", m["note"].get<std::string>());
        // Rows of this model, grouped by quantization in plan order, one cell per device.
        std::vector<std::string> quants;
        std::map<std::string, std::map<std::string, const json*>> cells;
        for (const json& r : plan["rows"]) {
            if (r["model"] != name) continue;
            const std::string q =
                r["quant"].get<std::string>() + (r["file_type"].get<bool>() ? "*" : "");
            if (!cells.count(q)) quants.push_back(q);
            cells[q][r["device"].get<std::string>()] = &r;
        }
        if (!quants.empty()) {
            // Memory columns: the first device's rows (others differ only by their thread count).
            auto memory_row = [&](const std::string& q) -> const json& {
                const auto it = cells[q].find(device_ids.front());
                return it != cells[q].end() ? *it->second : *cells[q].begin()->second;
            };
            const json& first = memory_row(quants[0]);
            fmt::print("  context {} tokens, KV cache {}\n", first["ctx"].get<int>(),
                       first["kv_type"].get<std::string>());
            if (first.contains("draft") && first["draft"].is_object()) {
                const json& d = first["draft"];
                const auto b = [&](const char* k) { return human_bytes(d[k].get<double>()); };
                const std::string state = d["state_bytes"].get<uint64_t>()
                                              ? " + recurrent state " + b("state_bytes")
                                              : "";
                fmt::print(
                    "  with the draft model {}: {} (weights {} + KV cache {}{} + compute {} + "
                    "overhead {}), in each total\n",
                    plan.value("draft_model", std::string()), b("total_bytes"), b("weights_bytes"),
                    b("kv_bytes"), state, b("compute_bytes"), b("overhead_bytes"));
            }
            std::string head = fmt::format("  {:<8} {:>10} {:>10} {:>9} {:>9} {:>10} |", "quant",
                                           "weights", "KV cache", "compute", "overhead", "total");
            for (const std::string& id : device_ids) head += fmt::format(" {:<19}", id);
            fmt::print("{}\n", head);
            std::string sub = fmt::format("  {:<61}|", "");
            for (size_t i = 0; i < device_ids.size(); ++i)
                sub += fmt::format(" {:<19}", "fits tok/s (ceil)");
            fmt::print("{}\n", sub);
            std::string cannot_run;  // the first note of a quantization memwall cannot run
            for (const std::string& q : quants) {
                const json& r = memory_row(q);
                const bool runnable = r.value("runnable", true);
                if (!runnable && cannot_run.empty() && m["runnable"].get<bool>())
                    cannot_run = r.value("note", "");
                std::string line = fmt::format("  {:<8} {:>10} {:>10} {:>9} {:>9} {:>10} |",
                                               runnable ? q : q + " +",
                                               human_bytes(r["weights_bytes"].get<double>()),
                                               human_bytes(r["kv_bytes"].get<double>()),
                                               human_bytes(r["compute_bytes"].get<double>()),
                                               human_bytes(r["overhead_bytes"].get<double>()),
                                               human_bytes(r["total_bytes"].get<double>()));
                for (const std::string& id : device_ids) {
                    const auto it = cells[q].find(id);
                    if (it == cells[q].end()) {
                        line += fmt::format(" {:<19}", "");
                        continue;
                    }
                    const json& c = *it->second;
                    line += fmt::format(
                        " {:<19}",
                        fmt::format("{:<5} {:>5} ({})", c["fits"].get<std::string>(),
                                    human_rate(c["decode_tok_s_expected"].get<double>()),
                                    human_rate(c["decode_tok_s_ceiling"].get<double>())));
                }
                fmt::print("{}\n", line);
            }
            // Where it does not fit in RAM: streamed at each device's free memory.
            std::map<std::string, const json*> streamed;
            for (const json& rec : plan["recommendations"]) {
                if (rec["model"] == name && rec.contains("streamed"))
                    streamed[rec["device"].get<std::string>()] = &rec["streamed"];
            }
            if (!streamed.empty()) {
                std::string line =
                    fmt::format("  {:<61}|", "streamed at the device's --mem-budget");
                for (const std::string& id : device_ids) {
                    const auto it = streamed.find(id);
                    const json* o = it == streamed.end() ? nullptr : &(*it->second)["options"][0];
                    line += fmt::format(
                        " {:<19}", o ? o->at("quant").get<std::string>() + " " + stream_rate(*o)
                                     : std::string());
                }
                fmt::print("{}\n", line);
            }
            // The conditions those speeds hold for, per device (its threads differ).
            std::string at;
            for (const std::string& id : device_ids) {
                const auto it = cells[quants[0]].find(id);
                if (it == cells[quants[0]].end()) continue;
                at += fmt::format("{}{}: {}", at.empty() ? "" : "; ", id,
                                  it->second->value("decode_conditions", ""));
            }
            fmt::print("  tok/s at {}\n", at);
            if (!cannot_run.empty())
                fmt::print("  + memwall cannot run this quantization yet (never recommended): {}\n",
                           cannot_run);
        }
        fmt::print("  Recommendation:\n");
        for (const json& rec : plan["recommendations"]) {
            if (rec["model"] == name) fmt::print("{}\n", recommendation_line(rec));
        }
        if (plan.contains("budget_rows")) print_budget_rows(plan, name);
    }
    // The legend says only what applies to the tables above.
    bool file_rows = false;
    for (const json& r : plan["rows"]) file_rows = file_rows || r["file_type"].get<bool>();
    fmt::print(
        "\nfits: yes = at most 90 % of the usable memory, tight = at most all of it. tok/s: decode "
        "expected (ceiling = bandwidth / weight bytes read per token).{}\n",
        file_rows ? " * = the file's own type." : "");
    for (const json& d : plan["devices"]) {
        if (d["source"] != "measured") continue;
        fmt::print("tok/s on {}: +- {:.1f} % (the spread of the measurements behind it)\n",
                   d["id"].get<std::string>(), 100 * d["decode_spread"].get<double>());
    }
}

std::string human_time(int64_t unix_seconds) {
    if (unix_seconds <= 0) return "never";
    const std::time_t t = std::time_t(unix_seconds);
    std::tm local{};
    localtime_r(&t, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
    return text;
}

namespace {

// "40.1 GB/s +- 2.1 % (median of 9 passes, 1 outlier)"
std::string rate_line(const json& stats, double scale, const char* unit) {
    const int n = stats.value("passes", 0), outliers = stats.value("outliers", 0);
    return fmt::format(
        "{:.1f} {} +- {:.1f} % (median of {} passes{})", stats.value("median", 0.0) / scale, unit,
        100 * stats.value("spread", 0.0), n,
        outliers
            ? fmt::format(", {} outlier{} in {:.1f}-{:.1f}", outliers, outliers > 1 ? "s" : "",
                          stats["min"].get<double>() / scale, stats["max"].get<double>() / scale)
            : "");
}

std::string bench_line(const json& m) {
    if (!m.contains("bench"))
        return "no bench record (memwall bench --record -m FILE measures the decode efficiency)";
    const json& b = m["bench"];
    const bool matches = b["probe_measured_at"] == m["measured_at"] &&
                         b["probe_read_bandwidth_bytes_per_s"] == m["read_bandwidth_bytes_per_s"];
    if (!matches) return "bench's figures belong to another measurement: not used";
    return fmt::format("bench: decode {:.0f} % of it (recorded {}, {} threads, {})",
                       100 * b["decode_efficiency"].get<double>(),
                       human_time(b["recorded_at"].get<int64_t>()), b["threads"].get<int>(),
                       b["model"].get<std::string>());
}

// "1.9 GB/s in order, 1.4 GB/s random 1 MiB" of a saved storage figure.
std::string storage_brief(const json& s) {
    std::string random;
    for (const json& r : s["random"]) {
        if (r["block_bytes"].get<uint64_t>() == (1u << 20))
            random =
                fmt::format(", {:.2f} GB/s random 1 MiB", r["bytes_per_s"].get<double>() / 1e9);
    }
    return fmt::format("{:.2f} GB/s in order{}", s["sequential_bytes_per_s"].get<double>() / 1e9,
                       random);
}

void print_storage(const json& s) {
    fmt::print("Storage    {}: in order {}\n", s["dir"].get<std::string>(),
               rate_line(s["sequential"], 1e9, "GB/s"));
    for (const json& r : s["random"]) {
        fmt::print("           random {:>7} {}\n", human_bytes(r["block_bytes"].get<double>()),
                   rate_line(r["rate"], 1e9, "GB/s"));
    }
    fmt::print("           {}, a {} test file (written in {:.1f} s, deleted), {:.1f} s in all\n",
               s["direct_io"].get<bool>() ? "O_DIRECT" : "pread + posix_fadvise(DONTNEED)",
               human_bytes(s["file_bytes"].get<double>()), s["write_seconds"].get<double>(),
               s["seconds"].get<double>());
    if (!s["note"].get<std::string>().empty())
        fmt::print("           note: {}\n", s["note"].get<std::string>());
}

}  // namespace

void print_gpus(const json& g) {
    if (g["devices"].empty()) {
        fmt::print("GPU        none: {}\n", g["error"].get<std::string>());
        return;
    }
    int i = 0;
    for (const json& d : g["devices"]) {
        double local = 0, other = 0;
        for (const json& h : d["heaps"]) {
            (h["device_local"].get<bool>() ? local : other) += h["bytes"].get<double>();
        }
        fmt::print(
            "{}  {}: {} ({}, Vulkan {}), {} device-local{}, {}; subgroup {}, fp16 {}, int8 dot "
            "{}, host import {}, bindings up to {}\n",
            i == 0 ? "GPU      " : "         ", i, d["name"].get<std::string>(),
            d["type"].get<std::string>(), d["api_version"].get<std::string>(), human_bytes(local),
            other > 0 ? fmt::format(" + {} host", human_bytes(other)) : "",
            d["unified"].get<bool>() ? "unified memory (weights used in place)"
                                     : "own memory (weights copied)",
            d["subgroup_size"].get<int>(), d["fp16"].get<bool>() ? "yes" : "no",
            d["int8_dot"].get<bool>() ? "yes" : "no", d["host_import"].get<bool>() ? "yes" : "no",
            human_bytes(d["max_binding_range"].get<double>()));
        ++i;
    }
}

void print_probe(const json& p) {
    const json& s = p["system"];
    fmt::print("CPU        {} ({}), {} logical CPUs, {} threads for decoding\n",
               s["cpu"].get<std::string>(), s["arch"].get<std::string>(),
               s["logical_cpus"].get<int>(), s["engine_threads"].get<int>());
    fmt::print("SIMD       {}\n", s["simd"].get<std::string>());
    std::string caches;
    for (const json& c : s["caches"]) {
        const std::string type = c["type"].get<std::string>();
        const char* suffix = type == "Data" ? "d" : type == "Instruction" ? "i" : "";
        caches += fmt::format("{}L{}{} {}{}", caches.empty() ? "" : ", ", c["level"].get<int>(),
                              suffix, human_bytes(c["bytes"].get<double>()),
                              c["shared_by"].get<int>() > 1
                                  ? fmt::format(" (shared by {})", c["shared_by"].get<int>())
                                  : "");
    }
    const std::string source = s.value("caches_source", "");
    fmt::print("Caches     {}\n",
               caches.empty()
                   ? "unknown (neither sysfs nor CPUID lists them)"
                   : caches + (source == "CPUID" ? " (from CPUID: sysfs lists none)" : ""));
    fmt::print("RAM        {}, {} available now ({})\n",
               human_bytes(s["ram_total_bytes"].get<double>()),
               human_bytes(s["ram_available_bytes"].get<double>()),
               s["ram_available_source"].get<std::string>());
    const bool measured = p["read_bandwidth_bytes_per_s"].get<double>() > 0;
    if (measured) {
        fmt::print("Bandwidth  read  {}\n", rate_line(p["read_bandwidth"], 1e9, "GB/s"));
        fmt::print("           triad {}\n", rate_line(p["triad_bandwidth"], 1e9, "GB/s"));
        const double llc = p["last_level_cache_bytes"].get<double>();
        const double buffer = p["bandwidth_buffer_bytes"].get<double>();
        fmt::print(
            "           {} threads, 3 arrays of {}{}, {:.1f} s; other work took {:.0f} % of "
            "the CPU time\n",
            p["bandwidth_threads"].get<int>(), human_bytes(buffer),
            llc > 0 ? fmt::format(" ({:.1f} x the last-level cache)", 3 * buffer / llc)
                    : std::string(" (last-level cache unknown)"),
            p["bandwidth_seconds"].get<double>(), 100 * p["others_cpu_share"].get<double>());
        fmt::print("Matmul     {} (the engine's Q4_K matmul, 32 tokens)\n",
                   rate_line(p["matmul"], 1, "GFLOP/s"));
        if (p.value("int8_peak_gmacs", 0.0) > 0) {
            fmt::print(
                "Int8 peak  {:.1f} GMAC/s ({:.0f} GOP/s), {} threads, kernel set {} (its dot "
                "product in a register-only loop: what prefill is a share of)\n",
                p["int8_peak_gmacs"].get<double>(), 2 * p["int8_peak_gmacs"].get<double>(),
                p.value("int8_peak_threads", 0), p.value("kernel_set", std::string("?")));
        }
        const std::string contention = p["contention"].get<std::string>();
        fmt::print("Contention {}\n", contention.empty() ? "none seen" : "LIKELY: " + contention);
    }
    if (p.contains("storage")) print_storage(p["storage"]);
    const json& before = p["saved_before"];
    if (p["saved"].get<bool>()) {
        fmt::print("Saved      this measurement, to {}: plans for this machine use it\n",
                   p["cache_file"].get<std::string>());
        if (p["dropped_bench"].get<bool>()) {
            fmt::print(
                "           bench's figures of the previous measurement were dropped: "
                "rerun memwall bench --record -m FILE\n");
        }
    } else if (before.is_object()) {
        const double saved_bw = before["read_bandwidth_bytes_per_s"].get<double>();
        fmt::print(
            "Saved      read {:.1f} GB/s +- {:.1f} %, measured {} ({}): what plans for "
            "this machine use\n",
            saved_bw / 1e9, 100 * before["read_bandwidth"]["spread"].get<double>(),
            human_time(before["measured_at"].get<int64_t>()), p["cache_file"].get<std::string>());
        fmt::print("           {}\n", bench_line(before));
        if (before.contains("storage")) {
            fmt::print("           storage {} in {}, measured {}\n",
                       storage_brief(before["storage"]),
                       before["storage"]["dir"].get<std::string>(),
                       human_time(before["storage"]["measured_at"].get<int64_t>()));
        } else {
            fmt::print("           no storage figure saved (plans under a budget assume one)\n");
        }
        if (measured && saved_bw > 0) {
            fmt::print("           this run: {:+.1f} % read bandwidth against it{}\n",
                       100 * (p["read_bandwidth_bytes_per_s"].get<double>() / saved_bw - 1),
                       p["save_requested"].get<bool>() ? "" : " (--save replaces it)");
        }
    } else {
        fmt::print("Saved      nothing yet{}\n", p["save_requested"].get<bool>() ? ""
                                                 : measured
                                                     ? " (--save keeps this measurement for plans)"
                                                     : "");
    }
}

}  // namespace cli
