// The speculator the C API's parameters describe, for the C API files (mw_speculator_create,
// mw_chat_create). Defined in api_speculative.cpp.
#pragma once

#include <memory>

#include "memwall.h"
#include "runtime/speculative.h"

namespace mw {

// On sequence 0 of target; draft: the draft model's context (MW_SPEC_DRAFT), else null. Throws
// invalid_argument for bad parameters or a draft that cannot pair with the target.
std::unique_ptr<Speculator> make_speculator(Context& target, Context* draft,
                                            const mw_spec_params& params);
Speculator* speculator_of(mw_speculator* s);

}  // namespace mw
