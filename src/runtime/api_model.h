// The library object behind an mw_model handle, for the C API files other than api.cpp (which
// defines the handle).
#pragma once

#include "memwall.h"
#include "model/sampler.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"

namespace mw {

// Null for a null handle. Defined in api.cpp.
const LoadedModel* loaded_model_of(const mw_model* model);
class Context;
Context* context_of(mw_context* ctx);
// The library's context parameters from the C struct (throws invalid_argument for bad values).
ContextParams context_params_of(const mw_context_params& p);
SamplerParams sampler_params_of(const mw_sampler_params& p);

}  // namespace mw
