// Strict parsing of the JSON documents model folders carry (safetensors headers, config.json,
// tokenizer.json): malformed text, duplicate keys and absurd nesting become an mw::Error naming
// the file, never a crash or a silently ignored value.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>

namespace mw {

struct JsonLimits {
    int max_depth = 64;  // nesting of arrays and objects
};

// Parses `bytes` as one JSON document. `name` (normally the path) and `what` ("safetensors
// header", "config") appear in error messages. Throws ErrorKind::bad_file.
nlohmann::json parse_json_strict(std::span<const uint8_t> bytes, const std::string& name,
                                 const char* what, const JsonLimits& limits = {});

// The JSON type of a value as a word for messages ("a string", "an array", ...).
const char* json_type_word(const nlohmann::json& value);
// A short rendering of a value for messages (long strings and containers abbreviated).
std::string json_brief(const nlohmann::json& value);

}  // namespace mw
