#include "format/json_text.h"

#include <set>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace mw {
namespace {

// The deepest nesting of arrays and objects outside strings, found before parsing so that a
// document of a million '[' is refused without building a million nested values.
int nesting_depth(std::span<const uint8_t> bytes, int limit) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (const uint8_t c : bytes) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
            if (deepest > limit) return deepest;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is what matters.
std::string without_exception_tag(const char* what) {
    std::string_view s(what);
    if (!s.empty() && s.front() == '[') {
        const size_t end = s.find("] ");
        if (end != s.npos) s.remove_prefix(end + 2);
    }
    return std::string(s);
}

struct DuplicateKey {
    std::string key;
};

}  // namespace

nlohmann::json parse_json_strict(std::span<const uint8_t> bytes, const std::string& name,
                                 const char* what, const JsonLimits& limits) {
    if (nesting_depth(bytes, limits.max_depth) > limits.max_depth) {
        fail(ErrorKind::bad_file, "{}: the {} nests arrays and objects more than {} deep", name,
             what, limits.max_depth);
    }
    // One set of keys per open object: a key seen twice in the same object is an error, not a
    // silent "last one wins".
    std::vector<std::set<std::string>> open_objects;
    const nlohmann::json::parser_callback_t check_keys =
        [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
            using E = nlohmann::json::parse_event_t;
            if (event == E::object_start) {
                open_objects.emplace_back();
            } else if (event == E::object_end) {
                if (!open_objects.empty()) open_objects.pop_back();
            } else if (event == E::key && !open_objects.empty()) {
                std::string key = parsed.get<std::string>();
                if (!open_objects.back().insert(key).second) throw DuplicateKey{std::move(key)};
            }
            return true;
        };
    const char* first = reinterpret_cast<const char*>(bytes.data());
    try {
        return nlohmann::json::parse(first, first + bytes.size(), check_keys);
    } catch (const DuplicateKey& d) {
        fail(ErrorKind::bad_file, "{}: the {} has the key \"{}\" twice in one object", name, what,
             d.key);
    } catch (const nlohmann::json::exception& e) {
        fail(ErrorKind::bad_file, "{}: the {} is not valid JSON: {}", name, what,
             without_exception_tag(e.what()));
    }
}

const char* json_type_word(const nlohmann::json& v) {
    switch (v.type()) {
        case nlohmann::json::value_t::null:
            return "null";
        case nlohmann::json::value_t::object:
            return "an object";
        case nlohmann::json::value_t::array:
            return "an array";
        case nlohmann::json::value_t::string:
            return "a string";
        case nlohmann::json::value_t::boolean:
            return "a boolean";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
            return "an integer";
        case nlohmann::json::value_t::number_float:
            return "a number";
        default:
            return "a value";
    }
}

std::string json_brief(const nlohmann::json& v) {
    std::string s = v.is_structured()
                        ? std::string(v.is_array() ? "[...]" : "{...}")
                        : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    return s;
}

}  // namespace mw
