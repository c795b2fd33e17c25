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
// make_speculator's parts, for the server's slots: the limits (checked), and the drafter of
// sequence `seq` (a draft model drafts on that sequence of `draft`; its vocabulary is checked by
// the caller, check_draft_pairs). The oracle is refused unless allow_oracle.
SpecParams spec_params_of(const mw_spec_params& params);
std::unique_ptr<Drafter> make_drafter(Context& target, Context* draft, const mw_spec_params& params,
                                      uint32_t seq, bool allow_oracle);

}  // namespace mw
