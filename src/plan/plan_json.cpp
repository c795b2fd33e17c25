#include "plan/plan_json.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/recurrent_state.h"
#include "plan/catalogue.h"
#include "plan/device_cache.h"
#include "plan/speed_label.h"
#include "sys/thread_pool.h"

namespace mw {
namespace {

using nlohmann::json;

json device_json(const DeviceProfile& d) {
    json j = {{"id", d.id},
              {"name", d.name},
              {"source", d.source},
              {"ram_bytes", d.ram_bytes},
              {"os_reserve_bytes", d.os_reserve_bytes},
              {"usable_bytes", d.usable_bytes()},
              {"bandwidth_bytes_per_s", d.bandwidth_bytes_per_s},
              {"decode_efficiency", d.decode_efficiency},
              {"efficiency_source", d.efficiency_source},
              {"prefill_gflops", d.prefill_gflops},
              {"prefill_source", d.prefill_source},
              {"threads", d.n_threads},
              {"bandwidth_source", d.bandwidth_source},
              {"bandwidth_spread", d.bandwidth_spread},
              {"measured_at", d.measured_at},
              {"efficiency_measured_at", d.efficiency_measured_at},
              {"decode_spread", d.decode_spread},
              {"note", d.note}};
    json random = json::array();
    for (const auto& [bytes, rate] : d.storage_random)
        random.push_back({{"block_bytes", bytes}, {"bytes_per_s", rate}});
    j["storage"] = {{"sequential_bytes_per_s", d.storage_seq_bytes_per_s},
                    {"random", random},
                    {"assumed", d.storage_assumed},
                    {"source", d.storage_source},
                    {"spread", d.storage_spread},
                    {"measured_at", d.storage_measured_at}};
    if (d.measured_decode_tok_s > 0 && d.measured_decode_bytes_per_token > 0) {
        j["measured_decode_tok_s"] = d.measured_decode_tok_s;
        j["measured_decode_bytes_per_token"] = d.measured_decode_bytes_per_token;
    }
    return j;
}

// A draft model's share of a row (null without one): it is in the row's total_bytes.
json draft_json(const MemoryPlan& m) {
    if (!m.draft) return nullptr;
    const MemoryPlan& d = *m.draft;
    return {{"weights_bytes", d.weights_bytes},   {"kv_bytes", d.kv_bytes},
            {"state_bytes", d.state_bytes},       {"compute_bytes", d.compute_bytes},
            {"overhead_bytes", d.overhead_bytes}, {"total_bytes", d.total_bytes()},
            {"target_bytes", m.own_bytes()}};
}

json row_json(const PlanRow& r) {
    return {{"model", r.model},
            {"device", r.device},
            {"quant", r.quant},
            {"file_type", r.file_type},
            {"ctx", r.memory.n_ctx},
            {"kv_type", r.kv_type},
            {"weights_bytes", r.memory.weights_bytes},
            {"kv_bytes", r.memory.kv_bytes},
            {"state_bytes", r.memory.state_bytes},
            {"compute_bytes", r.memory.compute_bytes},
            {"overhead_bytes", r.memory.overhead_bytes},
            {"total_bytes", r.memory.total_bytes()},
            {"draft", draft_json(r.memory)},
            {"ram_bytes", r.ram_bytes},
            {"os_reserve_bytes", r.os_reserve_bytes},
            {"usable_bytes", r.usable_bytes},
            {"fits", fit_name(r.fit)},
            {"decode_bytes_per_token", r.speed.decode_bytes_per_token},
            {"decode_tok_s_ceiling", r.speed.decode_tok_s_ceiling},
            {"decode_tok_s_expected", r.speed.decode_tok_s_expected},
            {"decode_tok_s_ceiling_full_ctx", r.speed.decode_tok_s_ceiling_full_ctx},
            {"prefill_tok_s_expected", r.speed.prefill_tok_s_expected},
            {"runnable", r.runnable},
            {"note", r.note}};
}

json budget_row_json(const BudgetRow& r) {
    return {{"model", r.model},
            {"device", r.device},
            {"quant", r.quant},
            {"budget_bytes", r.budget_bytes},
            {"budget_fraction", r.budget_fraction},
            {"file_bytes", r.file_bytes},
            {"moe", r.moe},
            {"streams_layers", r.streams_layers},
            {"runnable", r.runnable},
            {"resident_bytes", r.resident_bytes},
            {"expert_bytes", r.expert_bytes},
            {"reserve_bytes", r.reserve_bytes},
            {"kv_bytes", r.kv_bytes},
            {"scratch_bytes", r.scratch_bytes},
            {"slot_bytes", r.slot_bytes},
            {"expert_read_bytes", r.expert_read_bytes},
            {"experts_total", r.experts_total},
            {"experts_per_token", r.experts_per_token},
            {"fits", r.fits},
            {"refusal", r.refusal},
            {"cache_slots", r.cache_slots},
            {"cache_fraction", r.cache_fraction},
            {"hit_rate", r.hit_rate},
            {"n_layer", r.n_layer},
            {"layers_pinned", r.layers_pinned},
            {"hit_rate_model", r.streams_layers
                                   ? "layers in order: the share of the layers' bytes that stay"
                                   : "uniform routing: hit rate = cached share of the experts"},
            {"misses_per_token", r.misses_per_token},
            {"storage_bytes_per_token", r.storage_bytes_per_token},
            {"ram_bytes_per_token", r.ram_bytes_per_token},
            {"ram_bytes_per_s", r.ram_bytes_per_s},
            {"storage_bytes_per_s", r.storage_bytes_per_s},
            {"storage_assumed", r.storage_assumed},
            {"storage_source", r.storage_source},
            {"ram_seconds_per_token", r.ram_seconds_per_token},
            {"storage_seconds_per_token", r.storage_seconds_per_token},
            {"decode_tok_s", r.decode_tok_s},
            {"hit_rate_skewed", r.hit_rate_skewed},
            {"decode_tok_s_skewed", r.decode_tok_s_skewed},
            {"router_skew", r.moe ? kRouterSkew : 0.0},
            {"in_ram_decode_tok_s", r.in_ram_decode_tok_s},
            {"note", r.note}};
}

json model_json(const PlannedModel& m) {
    const HParams& hp = m.facts.hp;
    uint32_t n_swa_layers = 0;
    for (uint32_t il = 0; il < hp.n_layer; ++il) n_swa_layers += hp.swa_layer(il) ? 1 : 0;
    json j = {{"name", m.name},
              {"source", m.source},
              {"origin", m.origin},
              {"arch", hp.arch},
              {"quant", m.facts.quant},
              {"n_params", m.facts.n_params},
              {"n_vocab", hp.n_vocab},
              {"n_ctx_train", hp.n_ctx_train},
              {"n_embd", hp.n_embd},
              {"n_layer", hp.n_layer},
              {"n_head", hp.n_head},
              {"n_head_kv", hp.n_head_kv},
              {"head_dim_k", hp.head_dim_k},
              {"head_dim_v", hp.head_dim_v},
              {"n_expert", hp.n_expert},
              {"n_expert_used", hp.n_expert_used},
              {"weights_bytes", m.facts.weights_bytes},
              {"header_bytes", m.facts.header_bytes},
              {"decode_bytes_per_token", m.facts.bytes_per_token},
              {"prefill_flops_per_token", m.facts.flops_per_token},
              {"kv_bytes_per_token", m.kv_bytes_per_token},
              {"sliding_window", hp.n_swa},
              {"sliding_window_layers", n_swa_layers},
              {"kv_latent", hp.kv_lora_rank},
              {"recurrent_layers", hp.n_recurrent_layers()},
              {"state_bytes_per_sequence", RecurrentState::bytes_per_sequence(hp)},
              {"runnable", m.facts.runnable},
              {"note", m.facts.note}};
    if (m.remote) {
        const RemoteSource& r = *m.remote;
        j["remote"] = {{"url", r.url},
                       {"resolved_url", r.resolved_url},
                       {"file_bytes", r.file_bytes},
                       {"bytes_read", r.bytes_read},
                       {"requests", r.requests},
                       {"etag", r.etag},
                       {"sha256", r.sha256}};
    }
    return j;
}

std::string key_string(const json& j, const char* key) {
    if (!j.is_string()) {
        fail(ErrorKind::invalid_argument, "plan request: \"{}\" must be a string, not {}", key,
             j.dump());
    }
    return j.get<std::string>();
}

// A size given as a number of bytes or as text ("16G").
double size_value(const json& j, const char* key, bool binary) {
    if (j.is_number()) return j.get<double>();
    return parse_size(key_string(j, key), binary, key);
}

DeviceProfile device_from_json(const json& d) {
    if (d.is_string()) {
        const std::string id = d.get<std::string>();
        if (id == "this") return this_device_placeholder();
        if (const DeviceProfile* p = find_device_profile(id)) return *p;
        std::string known = "this";
        for (const DeviceProfile& p : device_profiles()) known += ", " + p.id;
        fail(ErrorKind::invalid_argument, "unknown device \"{}\" (known: {})", id, known);
    }
    if (!d.is_object() || !d.contains("ram")) {
        fail(ErrorKind::invalid_argument,
             "plan request: a device is a profile name or {{\"ram\": \"16G\", \"bandwidth\": "
             "\"68G\"}}, not {}",
             d.dump());
    }
    std::optional<uint64_t> reserve;
    if (d.contains("os_reserve"))
        reserve = uint64_t(size_value(d["os_reserve"], "os_reserve", true));
    const uint64_t ram = uint64_t(size_value(d["ram"], "ram", true));
    if (d.contains("bandwidth"))
        return explicit_device(ram, size_value(d["bandwidth"], "bandwidth", false), reserve);
    // No bandwidth: this machine's saved measurement (and what bench measured against it), or a
    // stated default; nothing is measured for it.
    if (const std::optional<MeasuredDevice> m = cached_device()) {
        const DeviceProfile here = device_from_measurement(*m, memory_now());
        DeviceProfile e = explicit_device(ram, here.bandwidth_bytes_per_s, reserve);
        e.decode_efficiency = here.decode_efficiency;
        e.efficiency_source = here.efficiency_source + " on this machine";
        e.efficiency_measured_at = here.efficiency_measured_at;
        e.bandwidth_source = "this machine's saved measurement";
        e.bandwidth_spread = here.bandwidth_spread;
        e.measured_at = here.measured_at;
        e.decode_spread = here.decode_spread;
        e.storage_seq_bytes_per_s = here.storage_seq_bytes_per_s;
        e.storage_random = here.storage_random;
        e.storage_assumed = here.storage_assumed;
        e.storage_source = here.storage_source + " (this machine)";
        e.storage_spread = here.storage_spread;
        e.storage_measured_at = here.storage_measured_at;
        e.name += " (this machine's bandwidth)";
        return e;
    }
    DeviceProfile e = explicit_device(ram, kDefaultExplicitBandwidth, reserve);
    e.bandwidth_source = "default: no saved measurement of this machine (memwall probe --save)";
    e.name += " (default bandwidth)";
    return e;
}

}  // namespace

PlanRequest plan_request_from_json(const std::string& text) {
    json j;
    try {
        j = text.empty() ? json::object() : json::parse(text);
    } catch (const json::exception& e) {
        fail(ErrorKind::invalid_argument, "plan request: not valid JSON: {}", e.what());
    }
    if (!j.is_object()) fail(ErrorKind::invalid_argument, "plan request: not a JSON object");
    PlanRequest r;
    for (const json& m : j.value("models", json::array())) {
        if (!m.is_object() || m.size() != 1) {
            fail(ErrorKind::invalid_argument,
                 "plan request: a model is {{\"file\": PATH}}, {{\"url\": URL}}, "
                 "{{\"hf_config\": PATH}} or {{\"catalogue\": NAME}}, not {}",
                 m.dump());
        }
        // The key is copied: items()' proxies die with the full expression (ASan caught it).
        const std::string kind = m.begin().key();
        const json& value = m.begin().value();
        const std::string v = key_string(value, kind.c_str());
        if (kind == "file") {
            r.models.push_back({ModelSource::Kind::file, v});
        } else if (kind == "url") {
            r.models.push_back({ModelSource::Kind::url, v});
        } else if (kind == "hf_config") {
            r.models.push_back({ModelSource::Kind::hf_config, v});
        } else if (kind == "catalogue" && v == "all") {
            for (const ModelSpec& s : model_catalogue()) {
                r.models.push_back({ModelSource::Kind::catalogue, s.id});
            }
        } else if (kind == "catalogue") {
            r.models.push_back({ModelSource::Kind::catalogue, v});
        } else {
            fail(ErrorKind::invalid_argument, "plan request: unknown model kind \"{}\"", kind);
        }
    }
    for (const json& d : j.value("devices", json::array()))
        r.devices.push_back(device_from_json(d));
    for (const json& q : j.value("quants", json::array())) {
        const std::string name = key_string(q, "quants");
        const auto recipe = recipe_from_name(name);
        if (!recipe) {
            std::string known;
            for (QuantRecipe k : all_recipes())
                known += (known.empty() ? "" : ", ") + std::string(recipe_name(k));
            fail(ErrorKind::invalid_argument, "unknown quantization \"{}\" (known: {})", name,
                 known);
        }
        r.quants.push_back(*recipe);
    }
    auto count = [&](const char* key, uint32_t fallback) -> uint32_t {
        if (!j.contains(key)) return fallback;
        if (!j[key].is_number_integer() || j[key].get<int64_t>() < 0 ||
            j[key].get<int64_t>() > int64_t(UINT32_MAX)) {
            fail(ErrorKind::invalid_argument, "plan request: \"{}\" = {} is not a valid count", key,
                 j[key].dump());
        }
        return j[key].get<uint32_t>();
    };
    r.run.n_ctx = count("ctx", 4096);
    r.run.n_batch = count("batch", 512);
    r.run.n_threads = int(count("threads", 0));
    if (j.contains("kv_type")) {
        const std::string name = key_string(j["kv_type"], "kv_type");
        const auto type = kv_type_from_name(name);
        if (!type) {
            fail(ErrorKind::invalid_argument,
                 "unknown KV cache type \"{}\" (f32, f16, bf16, q8_0, q4_0)", name);
        }
        r.run.type_k = r.run.type_v = *type;
    }
    if (j.contains("ple_resident")) {
        if (!j["ple_resident"].is_boolean()) {
            fail(ErrorKind::invalid_argument,
                 "plan request: \"ple_resident\" = {} is not true or false",
                 j["ple_resident"].dump());
        }
        r.run.ple_resident = j["ple_resident"].get<bool>();
    }
    if (j.contains("draft_model")) {
        if (!j["draft_model"].is_string()) {
            fail(ErrorKind::invalid_argument,
                 "plan request: \"draft_model\" must be a file path, not {}",
                 j["draft_model"].dump());
        }
        set_draft_model(r.run, j["draft_model"].get<std::string>());
        if (j.contains("draft_max")) r.run.draft_max = std::max(1u, count("draft_max", 8));
    }
    r.best_only = j.value("best_only", false);
    if (j.contains("min_tps")) {
        const json& m = j["min_tps"];
        if (!m.is_number() || !(m.get<double>() >= 0)) {
            fail(ErrorKind::invalid_argument,
                 "plan request: \"min_tps\" must be a decode speed >= 0 (tok/s), not {}", m.dump());
        }
        r.min_tps = m.get<double>();
    }
    for (const json& f : j.value("budget_fractions", json::array())) {
        if (!f.is_number() || !(f.get<double>() > 0 && f.get<double>() <= 1)) {
            fail(ErrorKind::invalid_argument,
                 "plan request: \"budget_fractions\" holds fractions of the file in (0, 1], not {}",
                 f.dump());
        }
        r.budget_fractions.push_back(f.get<double>());
    }
    for (const json& b : j.value("mem_budgets", json::array())) {
        const double bytes = size_value(b, "mem_budgets", true);
        if (!(bytes >= 1)) {
            fail(ErrorKind::invalid_argument, "plan request: \"mem_budgets\": {} is not a size",
                 b.dump());
        }
        r.mem_budgets.push_back(uint64_t(bytes));
    }
    return r;
}

std::string plan_result_to_json(const PlanResult& result) {
    json models = json::array(), devices = json::array(), rows = json::array(),
         recs = json::array();
    for (const PlannedModel& m : result.models) models.push_back(model_json(m));
    for (const DeviceProfile& d : result.devices) devices.push_back(device_json(d));
    // Catalogue rows say where a file of that quantization is published.
    std::map<std::string, std::string> catalogue_id;
    for (const PlannedModel& m : result.models) {
        if (m.source == "catalogue") catalogue_id[m.name] = m.origin;
    }
    // The conditions the predicted speeds hold for, stated as a measured speed states them.
    auto with_details = [&](const PlanRow& r) {
        json j = row_json(r);
        const auto it = catalogue_id.find(r.model);
        if (it != catalogue_id.end()) {
            const HfFile f = hf_file_for(it->second, r.quant, r.memory.weights_bytes);
            if (!f.repo.empty()) {
                j["hf_repo"] = f.repo;
                j["hf_file"] = f.file;
            }
        }
        SpeedConditions c;
        c.type_k = result.run.type_k;
        c.type_v = result.run.type_v;
        // The threads the plan assumed, resolved as the planner resolves them.
        c.threads = result.run.n_threads;
        for (const DeviceProfile& d : result.devices) {
            if (d.id == r.device && c.threads <= 0) c.threads = d.n_threads;
        }
        if (c.threads <= 0) c.threads = default_thread_count();
        c.n_gen = -1;  // one token at a time, from an empty cache
        j["decode_conditions"] = speed_label(c);
        c.n_gen = 0;
        c.n_prompt = int(std::min<uint32_t>(r.memory.n_ctx, 512));
        j["prefill_conditions"] = speed_label(c);
        return j;
    };
    for (const PlanRow& r : result.rows) rows.push_back(with_details(r));
    json budget_rows = json::array();
    for (const BudgetRow& r : result.budget_rows) budget_rows.push_back(budget_row_json(r));
    for (const Recommendation& r : result.recommendations) {
        json rec = {
            {"model", r.model}, {"device", r.device}, {"found", r.found}, {"advice", r.advice}};
        if (r.found) rec["row"] = with_details(r.row);
        if (r.streamed) {
            json options = json::array();
            for (const BudgetRow& o : r.streamed->options) options.push_back(budget_row_json(o));
            rec["streamed"] = {{"budget_bytes", r.streamed->budget_bytes},
                               {"budget_arg", r.streamed->budget_arg},
                               {"kind", r.streamed->options.front().moe ? "experts" : "layers"},
                               {"run_command", r.streamed->run_command},
                               {"ctx", r.streamed->n_ctx},
                               {"options", options}};
            const auto it = catalogue_id.find(r.model);
            if (it != catalogue_id.end()) {
                const BudgetRow& best = r.streamed->options.front();
                const HfFile f = hf_file_for(it->second, best.quant, best.file_bytes);
                if (!f.repo.empty()) {
                    rec["streamed"]["hf_repo"] = f.repo;
                    rec["streamed"]["hf_file"] = f.file;
                }
            }
        }
        recs.push_back(rec);
    }
    const json out = {{"ctx", result.run.n_ctx},
                      {"draft_model", result.run.draft ? json(result.run.draft_name) : json()},
                      {"min_tps", result.min_tps},
                      {"kv_type", kv_type_name(result.run.type_k)},
                      {"models", models},
                      {"devices", devices},
                      {"rows", rows},
                      {"recommendations", recs},
                      {"budget_rows", budget_rows}};
    return out.dump(1);
}

std::string catalogue_to_json() {
    json models = json::array(), devices = json::array();
    for (const ModelSpec& s : model_catalogue()) {
        models.push_back({{"id", s.id},
                          {"name", s.name},
                          {"arch", s.arch},
                          {"n_params", count_params(spec_tensors(s))},
                          {"nominal_params", s.nominal_params},
                          {"n_layer", s.n_layer},
                          {"n_embd", s.n_embd},
                          {"n_head", s.n_head},
                          {"n_head_kv", s.n_head_kv},
                          {"n_expert", s.n_expert},
                          {"n_expert_used", s.n_expert_used},
                          {"n_ctx_train", s.n_ctx_train}});
    }
    for (const DeviceProfile& d : device_profiles()) devices.push_back(device_json(d));
    return json({{"models", models}, {"devices", devices}}).dump(1);
}

std::string probe_to_json(const MeasuredDevice& device, const std::optional<MeasuredDevice>& before,
                          const std::optional<SaveResult>& saved) {
    json j = json::parse(measured_device_to_json(device));
    j["cache_file"] = device_cache_path();
    j["saved_before"] = before ? json::parse(measured_device_to_json(*before)) : json(nullptr);
    j["save_requested"] = saved.has_value();
    j["saved"] = saved && saved->saved;
    j["not_saved"] = saved ? saved->reason : "";
    j["dropped_bench"] = saved && saved->dropped_bench;
    return j.dump(1);
}

std::string record_result_to_json(const RecordResult& r) {
    return json({{"recorded", r.recorded},
                 {"reason", r.reason},
                 {"cache_file", r.path},
                 {"read_bandwidth_now_bytes_per_s", r.read_bytes_per_s_now},
                 {"device", json::parse(measured_device_to_json(r.device))}})
        .dump(1);
}

}  // namespace mw
