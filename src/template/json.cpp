// json.dumps as transformers' tojson calls it: Python's separators and escaping, floats as
// repr() writes them, NaN and Infinity as Python allows them, keys in insertion order unless
// sort_keys.
#include <algorithm>
#include <cmath>

#include "template/format.h"
#include "template/text.h"

namespace mw::tmpl {

namespace {

struct JsonWriter {
    const JsonOptions& options;
    std::string out;

    void string(std::string_view s) {
        out += '"';
        for (char32_t c : text::decode(s)) {
            switch (c) {
                case '"':
                    out += "\\\"";
                    break;
                case '\\':
                    out += "\\\\";
                    break;
                case '\n':
                    out += "\\n";
                    break;
                case '\r':
                    out += "\\r";
                    break;
                case '\t':
                    out += "\\t";
                    break;
                case '\b':
                    out += "\\b";
                    break;
                case '\f':
                    out += "\\f";
                    break;
                default:
                    if (c < 0x20 || (options.ensure_ascii && c >= 0x7F)) {
                        if (c >= 0x10000) {
                            const char32_t v = c - 0x10000;
                            out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10),
                                               0xDC00 + (v & 0x3FF));
                        } else {
                            out += fmt::format("\\u{:04x}", uint32_t(c));
                        }
                    } else {
                        text::append_utf8(out, c);
                    }
            }
        }
        out += '"';
    }

    static std::string number(double d) {
        if (std::isnan(d)) return "NaN";
        if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
        return float_repr(d);
    }

    void newline(int depth) {
        if (!options.indent) return;
        out += '\n';
        for (int i = 0; i < depth; ++i) out += *options.indent;
    }

    const std::string& item_separator() const {
        static const std::string comma = ",", comma_space = ", ";
        if (options.item_separator) return *options.item_separator;
        return options.indent ? comma : comma_space;
    }

    void key(const Value& k) {
        switch (k.kind()) {
            case Kind::string:
                string(k.str());
                return;
            case Kind::integer:
                string(fmt::format("{}", k.as_int()));
                return;
            case Kind::boolean:
                string(k.as_bool() ? "true" : "false");
                return;
            case Kind::none:
                string("null");
                return;
            case Kind::floating:
                string(number(k.as_double()));
                return;
            default:
                throw_error(ErrorKind::type, "keys must be str, int, float, bool or None, not {}",
                            type_name(k));
        }
    }

    void value(const Value& v, int depth) {
        if (depth > 256) throw_error(ErrorKind::limit, "JSON nesting deeper than 256 levels");
        switch (v.kind()) {
            case Kind::none:
                out += "null";
                return;
            case Kind::boolean:
                out += v.as_bool() ? "true" : "false";
                return;
            case Kind::integer:
                out += fmt::format("{}", v.as_int());
                return;
            case Kind::floating:
                out += number(v.as_double());
                return;
            case Kind::string:
                string(v.str());
                return;
            case Kind::list:
            case Kind::tuple: {
                const List& items = v.items();
                if (items.empty()) {
                    out += "[]";
                    return;
                }
                out += '[';
                for (size_t i = 0; i < items.size(); ++i) {
                    if (i) out += item_separator();
                    newline(depth + 1);
                    value(items[i], depth + 1);
                }
                newline(depth);
                out += ']';
                return;
            }
            case Kind::dict: {
                const Dict& d = v.dict();
                if (d.size() == 0) {
                    out += "{}";
                    return;
                }
                std::vector<const std::pair<Value, Value>*> entries;
                for (const auto& e : d.entries) entries.push_back(&e);
                if (options.sort_keys)
                    std::stable_sort(entries.begin(), entries.end(),
                                     [](auto* a, auto* b) { return less(a->first, b->first); });
                out += '{';
                for (size_t i = 0; i < entries.size(); ++i) {
                    if (i) out += item_separator();
                    newline(depth + 1);
                    key(entries[i]->first);
                    out += options.key_separator;
                    value(entries[i]->second, depth + 1);
                }
                newline(depth);
                out += '}';
                return;
            }
            default:
                throw_error(ErrorKind::type, "Object of type {} is not JSON serializable",
                            type_name(v));
        }
    }
};

}  // namespace

std::string json_dumps(const Value& v, const JsonOptions& options) {
    JsonWriter w{options, {}};
    w.value(v, 0);
    return std::move(w.out);
}

}  // namespace mw::tmpl
