// Shared by the C API files that plan a model's memory (api_plan.cpp, api_remote.cpp): the
// context parameters as the planner's settings, and its verdict as an mw_fit.
#pragma once

#include "memwall.h"
#include "plan/planner.h"

namespace mw {

// Throws ErrorKind::invalid_argument for a KV cache type the runtime does not have.
RunSettings run_settings_from(const mw_context_params& params);
void fit_to_c(const FitCheck& check, mw_fit* out);

}  // namespace mw
