#include "plan_render.h"

#include <fmt/format.h>

#include <cstdlib>
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
    return s;
}

std::string device_line(const json& d) {
    return fmt::format(
        "{}: {}; {} usable = {} RAM - {} {}, {:.1f} GB/s, decode efficiency {:.0f} % "
        "({})",
        d["id"].get<std::string>(), d["name"].get<std::string>(),
        human_bytes(d["usable_bytes"].get<double>()), human_bytes(d["ram_bytes"].get<double>()),
        human_bytes(d["os_reserve_bytes"].get<double>()),
        d["source"] == "measured" ? "in use now" : "OS reserve",
        d["bandwidth_bytes_per_s"].get<double>() / 1e9, 100 * d["decode_efficiency"].get<double>(),
        d["efficiency_source"].get<std::string>());
}

std::string recommendation_line(const json& rec) {
    if (!rec["found"].get<bool>()) {
        return fmt::format("  {}: {}", rec["device"].get<std::string>(),
                           rec["advice"].get<std::string>());
    }
    const json& r = rec["row"];
    return fmt::format("  {}: {} -> {}, decode ~{} tok/s (ceiling {}), prefill ~{} tok/s",
                       rec["device"].get<std::string>(), rec["advice"].get<std::string>(),
                       human_bytes(r["total_bytes"].get<double>()),
                       human_rate(r["decode_tok_s_expected"].get<double>()),
                       human_rate(r["decode_tok_s_ceiling"].get<double>()),
                       human_rate(r["prefill_tok_s_expected"].get<double>()));
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
            std::string head = fmt::format("  {:<8} {:>10} {:>10} {:>9} {:>9} {:>10} |", "quant",
                                           "weights", "KV cache", "compute", "overhead", "total");
            for (const std::string& id : device_ids) head += fmt::format(" {:<19}", id);
            fmt::print("{}\n", head);
            std::string sub = fmt::format("  {:<61}|", "");
            for (size_t i = 0; i < device_ids.size(); ++i)
                sub += fmt::format(" {:<19}", "fits tok/s (ceil)");
            fmt::print("{}\n", sub);
            for (const std::string& q : quants) {
                const json& r = memory_row(q);
                std::string line = fmt::format("  {:<8} {:>10} {:>10} {:>9} {:>9} {:>10} |", q,
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
        }
        fmt::print("  Recommendation:\n");
        for (const json& rec : plan["recommendations"]) {
            if (rec["model"] == name) fmt::print("{}\n", recommendation_line(rec));
        }
    }
    fmt::print(
        "\nfits: yes = at most 90 % of the usable memory, tight = at most all of it. tok/s: decode "
        "expected (ceiling = bandwidth / weight bytes read per token). * = the file's own type.\n");
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
    fmt::print("Caches     {}\n", caches.empty() ? "unknown" : caches);
    fmt::print("RAM        {}, {} available now ({})\n",
               human_bytes(s["ram_total_bytes"].get<double>()),
               human_bytes(s["ram_available_bytes"].get<double>()),
               s["ram_available_source"].get<std::string>());
    if (p["read_bandwidth_bytes_per_s"].get<double>() > 0) {
        fmt::print(
            "Bandwidth  read {:.1f} GB/s, triad {:.1f} GB/s ({} threads, {} per array, {:.1f} s)\n",
            p["read_bandwidth_bytes_per_s"].get<double>() / 1e9,
            p["triad_bandwidth_bytes_per_s"].get<double>() / 1e9, p["bandwidth_threads"].get<int>(),
            human_bytes(p["bandwidth_buffer_bytes"].get<double>()),
            p["bandwidth_seconds"].get<double>());
        fmt::print("Matmul     {:.1f} GFLOP/s (the engine's Q4_K matmul, 32 tokens)\n",
                   p["matmul_gflops"].get<double>());
    }
    if (p.contains("decode_efficiency")) {
        fmt::print("Decode     {:.0f} % of the read bandwidth (measured by bench)\n",
                   100 * p["decode_efficiency"].get<double>());
    }
    if (!p["cache_file"].get<std::string>().empty()) {
        fmt::print("Saved to   {} (used by `memwall plan --device this`)\n",
                   p["cache_file"].get<std::string>());
    }
}

}  // namespace cli
