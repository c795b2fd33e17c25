// The C API of the planner and the probe (include/memwall.h, "Planning"): JSON in and out, every
// exception turned into NULL or a status plus mw_last_error().
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/api_error.h"
#include "api/api_fit.h"
#include "api/api_params.h"
#include "base/error.h"
#include "format/gguf.h"
#include "gpu/gpu.h"
#include "memwall.h"
#include "plan/device_cache.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "plan/spec_estimate.h"
#include "sys/mapped_file.h"

namespace {

using mw::guarded;

// A malloc'ed copy for the caller (freed by mw_free_string).
char* to_c_string(const std::string& s) {
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    if (!out) {
        mw::set_api_last_error("out of memory");
        return nullptr;
    }
    std::memcpy(out, s.c_str(), s.size() + 1);
    return out;
}

// Runs f (returning the JSON text) under guarded(); NULL on failure.
template <typename F>
char* json_result(F&& f) {
    std::string text;
    if (guarded([&] { text = f(); }) != MW_OK) return nullptr;
    return to_c_string(text);
}

mw::GgmlType kv_type(mw_type t, const char* which) {
    const auto type = static_cast<mw::GgmlType>(uint32_t(t));
    if (!mw::kv_type_from_name(mw::kv_type_name(type))) {
        mw::fail(mw::ErrorKind::invalid_argument, "unknown KV cache type {} for {}", int(t), which);
    }
    return type;
}

}  // namespace

namespace mw {

RunSettings run_settings_from(const mw_context_params& p) {
    RunSettings run;
    run.n_ctx = p.n_ctx;
    run.n_batch = p.n_batch;
    run.n_threads = p.n_threads;
    run.type_k = kv_type(p.type_k, "keys");
    run.type_v = kv_type(p.type_v, "values");
    run.n_seq = p.n_seq_max == 0 ? 1 : p.n_seq_max;
    return run;
}

void fit_to_c(const FitCheck& c, mw_fit* out) {
    std::memset(out, 0, sizeof *out);
    out->verdict = c.fit == Fit::yes ? MW_FIT_YES : c.fit == Fit::tight ? MW_FIT_TIGHT : MW_FIT_NO;
    out->n_ctx = c.memory.n_ctx;
    out->weights_bytes = c.memory.weights_bytes;
    out->kv_bytes = c.memory.kv_bytes;
    out->compute_bytes = c.memory.compute_bytes;
    out->overhead_bytes = c.memory.overhead_bytes;
    out->total_bytes = c.memory.total_bytes();
    out->available_bytes = c.available_bytes;
    const size_t n = std::min(c.message.size(), sizeof out->message - 1);
    std::memcpy(out->message, c.message.data(), n);
    out->message[n] = '\0';
}

}  // namespace mw

namespace {

// "draft_acceptance" (and "draft_max", default 8) in the request: every row, and every
// recommendation's row, gets "speculative": what drafts accepted at that rate would give.
std::string add_speculative(const std::string& request_json, std::string result) {
    const nlohmann::json req = nlohmann::json::parse(request_json, nullptr, false);
    if (req.is_discarded() || !req.is_object() || !req.contains("draft_acceptance")) return result;
    const nlohmann::json& pj = req["draft_acceptance"];
    if (!pj.is_number() || !(pj.get<double>() >= 0 && pj.get<double>() <= 1)) {
        mw::fail(mw::ErrorKind::invalid_argument,
                 "plan request: \"draft_acceptance\" must be a probability 0..1, not {}",
                 pj.dump());
    }
    int64_t k = 8;
    if (req.contains("draft_max")) {
        const nlohmann::json& kj = req["draft_max"];
        if (!kj.is_number_integer() || kj.get<int64_t>() < 1 || kj.get<int64_t>() > 1024) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "plan request: \"draft_max\" must be a token count 1..1024, not {}",
                     kj.dump());
        }
        k = kj.get<int64_t>();
    }
    // A draft model: each drafted token reads its weights, a cost against the target's step
    // in the ratio of the bytes each reads per token (both bound by bandwidth).
    double draft_bytes = 0;
    if (req.contains("draft_model")) {
        if (!req["draft_model"].is_string()) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "plan request: \"draft_model\" must be a file path, not {}",
                     req["draft_model"].dump());
        }
        const std::string path = req["draft_model"].get<std::string>();
        const mw::MappedFile file = mw::MappedFile::open(path);
        const mw::gguf::GgufFile g =
            mw::gguf::GgufFile::parse(file.bytes(), path, {.header_only = true});
        draft_bytes = double(mw::model_facts(g, "").bytes_per_token);
    }
    nlohmann::json plan = nlohmann::json::parse(result);
    auto annotate = [&](nlohmann::json& row) {
        const double target_bytes = row.value("decode_bytes_per_token", 0.0);
        const double draft_cost = target_bytes > 0 ? draft_bytes / target_bytes : 0.0;
        const mw::SpecEstimate e = mw::estimate_speculative(
            row.value("decode_tok_s_expected", 0.0), row.value("prefill_tok_s_expected", 0.0),
            pj.get<double>(), uint32_t(k), draft_cost);
        row["speculative"] = {{"draft_acceptance", pj.get<double>()},
                              {"draft_max", k},
                              {"draft_cost", draft_cost},
                              {"tokens_per_pass", e.tokens_per_pass},
                              {"pass_cost", e.pass_cost},
                              {"decode_tok_s_expected", e.decode_tok_s}};
    };
    for (nlohmann::json& row : plan["rows"]) annotate(row);
    for (nlohmann::json& rec : plan["recommendations"]) {
        if (rec.contains("row")) annotate(rec["row"]);
    }
    return plan.dump();
}

}  // namespace

namespace {

// The checks and reading shared by the speculative fit checks (`name` for the messages); `plan`
// gives the FitCheck from the context's settings.
template <class Plan>
mw_status speculative_fit(const char* name, const char* path, int32_t draft_max,
                          const mw_context_params* params, mw_fit* out, Plan plan) {
    if (!path || !out) {
        mw::set_api_last_error(fmt::format("{}: path or out is NULL", name));
        return MW_ERR_INVALID_ARGUMENT;
    }
    if (draft_max < 1) {
        mw::set_api_last_error(
            fmt::format("{}: draft_max {}: give 1 or more tokens", name, draft_max));
        return MW_ERR_INVALID_ARGUMENT;
    }
    std::memset(out, 0, sizeof *out);
    mw_context_params p;
    if (!mw::read_params(params, mw_context_default_params(), &p, "mw_context_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return guarded([&] { mw::fit_to_c(plan(mw::run_settings_from(p)), out); });
}

}  // namespace

extern "C" {

void mw_free_string(char* s) {
    std::free(s);
}

void mw_probe_params_init(mw_probe_params* out, size_t struct_size) {
    mw_probe_params p{};
    p.n_threads = 0;
    p.seconds = 1.5;
    p.measure = true;
    p.write_cache = false;
    p.force = false;
    p.array_bytes = 0;
    p.storage_dir = nullptr;
    p.storage_bytes = 0;
    mw::init_params(out, struct_size, p);
}

char* mw_probe_json(const mw_probe_params* params) {
    mw_probe_params p;
    if (!mw::read_params(params, mw_probe_default_params(), &p, "mw_probe_params")) return nullptr;
    return json_result([&] {
        mw::ProbeOptions o;
        o.n_threads = p.n_threads;
        o.seconds = p.seconds > 0 ? p.seconds : 1.5;
        o.measure = p.measure;
        o.array_bytes = p.array_bytes;
        if (p.storage_dir) o.storage_dir = p.storage_dir;
        o.storage_bytes = p.storage_bytes;
        const std::optional<mw::MeasuredDevice> before = mw::cached_device();
        const mw::MeasuredDevice device = mw::probe_device(o);
        std::optional<mw::SaveResult> saved;
        if (p.write_cache && p.measure) saved = mw::save_measurement(device, p.force);
        return mw::probe_to_json(device, before, saved);
    });
}

char* mw_gpu_devices_json(void) {
    return json_result([] {
        const mw::gpu::Devices found = mw::gpu::list_devices();
        nlohmann::json devices = nlohmann::json::array();
        for (const mw::gpu::DeviceInfo& d : found.devices) {
            nlohmann::json heaps = nlohmann::json::array();
            for (const mw::gpu::MemoryHeap& h : d.heaps) {
                heaps.push_back({{"bytes", h.bytes}, {"device_local", h.device_local}});
            }
            devices.push_back({{"name", d.name},
                               {"type", d.type},
                               {"api_version", d.api_version},
                               {"heaps", heaps},
                               {"unified", d.unified},
                               {"subgroup_size", d.subgroup_size},
                               {"fp16", d.fp16},
                               {"int8_dot", d.int8_dot},
                               {"host_import", d.host_import},
                               {"max_binding_range", d.max_binding_range}});
        }
        return nlohmann::json{{"devices", devices}, {"error", found.error}}.dump();
    });
}

mw_status mw_device_reset(bool* removed) {
    return guarded([&] {
        const bool r = mw::reset_device_cache();
        if (removed) *removed = r;
    });
}

char* mw_plan_json(const char* request_json) {
    return json_result([&] {
        const std::string text = request_json ? request_json : "";
        const mw::PlanRequest request = mw::plan_request_from_json(text);
        return add_speculative(text, mw::plan_result_to_json(mw::make_plan(request)));
    });
}

char* mw_plan_catalogue_json(void) {
    return json_result([] { return mw::catalogue_to_json(); });
}

mw_status mw_check_fit(const char* path, const mw_context_params* params, mw_fit* out) {
    if (!path || !out) {
        mw::set_api_last_error("mw_check_fit: path or out is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
    std::memset(out, 0, sizeof *out);
    mw_context_params p;
    if (!mw::read_params(params, mw_context_default_params(), &p, "mw_context_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return guarded([&] { mw::fit_to_c(mw::check_fit(path, mw::run_settings_from(p)), out); });
}

mw_status mw_check_fit_draft(const char* path, const char* draft_path, int32_t draft_max,
                             const mw_context_params* params, mw_fit* out) {
    return speculative_fit(
        "mw_check_fit_draft", path, draft_max, params, out, [&](const mw::RunSettings& run) {
            return mw::check_fit(path, draft_path ? draft_path : "", uint32_t(draft_max), run);
        });
}

mw_status mw_check_fit_mtp(const char* path, int32_t draft_max, const mw_context_params* params,
                           mw_fit* out) {
    return speculative_fit("mw_check_fit_mtp", path, draft_max, params, out,
                           [&](mw::RunSettings run) {
                               run.mtp = true;
                               run.draft_max = uint32_t(draft_max);
                               return mw::check_fit(path, run);
                           });
}

char* mw_device_record_bench(const mw_bench_record* record) {
    return json_result([&] {
        if (!record) mw::fail(mw::ErrorKind::invalid_argument, "mw_device_record_bench: NULL");
        mw::BenchFigures f;
        f.model = record->model ? record->model : "";
        f.n_threads = record->n_threads;
        f.n_reps = record->n_reps;
        f.decode_bytes_per_token = record->decode_bytes_per_token;
        f.decode_tok_s = record->decode_tok_s;
        f.decode_tok_s_sd = record->decode_tok_s_sd;
        f.prompt_flops_per_token = record->prompt_flops_per_token;
        f.prompt_tok_s = record->prompt_tok_s;
        f.prompt_tok_s_sd = record->prompt_tok_s_sd;
        if (f.n_threads <= 0) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "mw_device_record_bench: n_threads {} (the threads bench used)", f.n_threads);
        }
        return mw::record_result_to_json(mw::record_bench(f, record->force));
    });
}

}  // extern "C"
