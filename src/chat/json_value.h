// JSON documents as template values, the way Python's json.loads gives them to Jinja2: objects
// keep their key order, integers stay integers, strings are (repaired) UTF-8.
#pragma once

#include <nlohmann/json.hpp>

#include "template/value.h"

namespace mw::chat {

// Nesting deeper than 256 levels is refused (mw::Error, invalid_argument).
tmpl::Value json_to_value(const nlohmann::ordered_json& json);

}  // namespace mw::chat
