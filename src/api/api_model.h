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
Sampler* sampler_of(mw_sampler* sampler);
// The library's context parameters from the C struct (throws invalid_argument for bad values).
ContextParams context_params_of(const mw_context_params& p);
SamplerParams sampler_params_of(const mw_sampler_params& p);
// What mw_pacer_pace does, for a context the library holds itself (a chat's, a server's): sets
// its threads for the next token and sleeps the idle gap. Defined in api_pacing.cpp.
void pace_context(mw_pacer* pacer, Context& ctx, mw_pace* out = nullptr);

}  // namespace mw
