#include "chat/json_value.h"

#include "base/error.h"
#include "template/text.h"

namespace mw::chat {

namespace {

tmpl::Value convert(const nlohmann::ordered_json& j, int depth) {
    using tmpl::Value;
    if (depth > 256) fail(ErrorKind::invalid_argument, "JSON nested deeper than 256 levels");
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
            return Value::none();
        case nlohmann::ordered_json::value_t::boolean:
            return Value::boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return Value::integer(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const uint64_t u = j.get<uint64_t>();
            if (u <= uint64_t(INT64_MAX)) return Value::integer(int64_t(u));
            return Value::number(double(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return Value::number(j.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return Value::string(tmpl::text::repair_utf8(j.get_ref<const std::string&>()));
        case nlohmann::ordered_json::value_t::array: {
            tmpl::List items;
            items.reserve(j.size());
            for (const auto& item : j) items.push_back(convert(item, depth + 1));
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            tmpl::Dict d;
            d.entries.reserve(j.size());
            for (const auto& [k, v] : j.items())
                d.entries.emplace_back(Value::string(tmpl::text::repair_utf8(k)),
                                       convert(v, depth + 1));
            return Value::dict(std::move(d));
        }
        default:
            fail(ErrorKind::invalid_argument, "binary data is not a JSON value a template can use");
    }
}

}  // namespace

tmpl::Value json_to_value(const nlohmann::ordered_json& json) {
    return convert(json, 0);
}

}  // namespace mw::chat
