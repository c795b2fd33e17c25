// The C API of the planner and the probe (include/memwall.h, "Planning"): JSON in and out, every
// exception turned into NULL or a status plus mw_last_error().
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "base/error.h"
#include "memwall.h"
#include "plan/device_cache.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "runtime/api_error.h"

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

extern "C" {

void mw_free_string(char* s) {
    std::free(s);
}

mw_probe_params mw_probe_default_params(void) {
    mw_probe_params p;
    p.n_threads = 0;
    p.seconds = 1.5;
    p.measure = true;
    p.write_cache = true;
    return p;
}

char* mw_probe_json(const mw_probe_params* params) {
    const mw_probe_params p = params ? *params : mw_probe_default_params();
    return json_result([&] {
        mw::ProbeOptions o;
        o.n_threads = p.n_threads;
        o.seconds = p.seconds > 0 ? p.seconds : 1.5;
        o.measure = p.measure;
        o.write_cache = p.write_cache && p.measure;
        const mw::MeasuredDevice device = mw::probe_device(o);
        return mw::probe_to_json(device, o.write_cache ? mw::device_cache_path() : "");
    });
}

char* mw_plan_json(const char* request_json) {
    return json_result([&] {
        const mw::PlanRequest request =
            mw::plan_request_from_json(request_json ? request_json : "");
        return mw::plan_result_to_json(mw::make_plan(request));
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
    const mw_context_params p = params ? *params : mw_context_default_params();
    return guarded([&] {
        mw::RunSettings run;
        run.n_ctx = p.n_ctx;
        run.n_batch = p.n_batch;
        run.n_threads = p.n_threads;
        run.type_k = kv_type(p.type_k, "keys");
        run.type_v = kv_type(p.type_v, "values");
        run.n_seq = p.n_seq_max == 0 ? 1 : p.n_seq_max;
        const mw::FitCheck c = mw::check_fit(path, run);
        out->verdict = c.fit == mw::Fit::yes     ? MW_FIT_YES
                       : c.fit == mw::Fit::tight ? MW_FIT_TIGHT
                                                 : MW_FIT_NO;
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
    });
}

mw_status mw_device_record_bench(uint64_t decode_bytes_per_token, double decode_tok_s,
                                 double prompt_flops_per_token, double prompt_tok_s) {
    return guarded([&] {
        mw::record_bench_result(decode_tok_s, decode_bytes_per_token, prompt_tok_s,
                                prompt_flops_per_token);
    });
}

}  // extern "C"
