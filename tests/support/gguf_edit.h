// Editing real GGUF files for load-error tests: a copy with keys or tensors changed, and the
// check that loading it fails with a message naming the problem. GoogleTest-only (the fuzz
// targets link tiny_model.cpp, not this).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "format/gguf_writer.h"

namespace mw::test {

// A copy of the GGUF at `source` (every key and tensor, `drop_tensor` left out) with `edit`
// applied, written as `name`.gguf in the test's temporary folder; returns its path.
std::string edited_gguf_copy(const std::string& source, const std::string& name,
                             const std::function<void(gguf::GgufWriter&)>& edit,
                             const std::string& drop_tensor = "");
// Loading `path` fails with an error whose message holds every string of `says`.
void expect_load_error(const std::string& path, const std::vector<std::string>& says);

}  // namespace mw::test
