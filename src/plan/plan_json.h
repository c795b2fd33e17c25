// JSON in and out of the planner: what the C API (mw_plan_json, mw_probe_json) speaks. The keys
// are listed in docs/plan.md.
#pragma once

#include <optional>
#include <string>

#include "plan/device_cache.h"
#include "plan/planner.h"

namespace mw {

// {"models": [{"file": P} | {"url": URL} | {"hf_config": P} | {"catalogue": NAME | "all"}],
//  "devices": ["this" | PROFILE_ID | {"ram": "16G", "bandwidth": "68G", "os_reserve": "4G"}],
//  "ctx": 4096, "kv_type": "f16", "quants": ["Q4_K_M"], "batch": 512, "threads": 0,
//  "best_only": false, "min_tps": 0, "ple_resident": false}; every key optional. Throws
//  ErrorKind::invalid_argument naming the key.
PlanRequest plan_request_from_json(const std::string& text);
std::string plan_result_to_json(const PlanResult& result);
// The catalogue's models (with their parameter counts) and the device profiles.
std::string catalogue_to_json();
// The probe's result, the measurement saved before it (if any) and, when it was to be saved,
// whether it was.
std::string probe_to_json(const MeasuredDevice& device, const std::optional<MeasuredDevice>& before,
                          const std::optional<SaveResult>& saved);
// What bench's record did.
std::string record_result_to_json(const RecordResult& r);

}  // namespace mw
