// Jinja2's built-in filters (jinja2/filters.py, 3.1), with transformers' tojson. Each follows
// the Python code it stands for, including what it does with undefined values and which
// filters return one-pass generators (map, select, unique, ...) rather than lists.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "template/filter_support.h"
#include "template/format.h"
#include "template/library.h"
#include "template/objects.h"
#include "template/ops.h"
#include "template/text.h"

namespace mw::tmpl {

namespace filters {

namespace {

Value f_abs(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("abs", args, {}, 0);
    if (v.is_float()) return Value::number(std::fabs(v.as_double()));
    if (v.is_integral()) {
        if (v.as_int() == INT64_MIN) throw_error(ErrorKind::overflow, "integer too large");
        return Value::integer(std::llabs(v.as_int()));
    }
    throw_error(ErrorKind::type, "bad operand type for abs(): '{}'", type_name(v));
}

Value f_attr(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("attr", args, {"name"}, 1);
    const std::string name = to_str(*a[0]);
    std::optional<Value> found;
    if (v.is_undefined()) v.fail_undefined();
    if (v.is_object()) {
        found = v.object()->attribute(ev, name);
    } else {
        found = builtin_attribute(v, name);
    }
    if (!found)
        return Value::undefined(
            fmt::format("'{} object' has no attribute '{}'", type_name(v), name));
    return ev.get_attr(v, name);
}

Value f_capitalize(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("capitalize", args, {}, 0);
    return like(v, text::capitalize(to_str(v)));
}

Value f_center(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("center", args, {"width"}, 0);
    const int64_t width = a[0] ? int_of(*a[0], "center") : 80;
    ev.check_size(size_t(std::max<int64_t>(width, 0)));
    return like(v, text::center(to_str(v), width, U' '));
}

Value f_length(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("length", args, {}, 0);
    return Value::integer(int64_t(length(v)));
}

Value f_default(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("default", args, {"default_value", "boolean"}, 0);
    if (v.is_undefined() || (opt_bool(a[1], false) && !truthy(v)))
        return a[0] ? *a[0] : Value::string("");
    return v;
}

Value f_escape(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("escape", args, {}, 0);
    return escape(v);
}

Value f_forceescape(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("forceescape", args, {}, 0);
    return Value::markup(text::html_escape(to_str(v)));
}

Value f_filesizeformat(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("filesizeformat", args, {"binary"}, 0);
    if (!v.is_number()) throw_error(ErrorKind::type, "float() argument must be a number");
    const double bytes = v.as_double();
    const bool binary = opt_bool(a[0], false);
    const double base = binary ? 1024 : 1000;
    static const char* const kDecimal[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char* const kBinary[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    if (bytes == 1) return Value::string("1 Byte");
    if (bytes < base) return Value::string(fmt::format("{} Bytes", int64_t(bytes)));
    double unit = base;
    for (int i = 0; i < 8; ++i) {
        unit = std::pow(base, i + 2);
        if (bytes < unit || i == 7)
            return Value::string(
                fmt::format("{:.1f} {}", base * bytes / unit, binary ? kBinary[i] : kDecimal[i]));
    }
    return Value::string("");
}

std::optional<double> parse_float(std::string s) {
    s = text::strip(s, std::nullopt, true, true);
    std::string t;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_' && i > 0 && i + 1 < s.size() && isdigit(uint8_t(s[i - 1])) &&
            isdigit(uint8_t(s[i + 1])))
            continue;
        t += s[i];
    }
    const std::string lowered = text::lower(t);
    const std::string body = (!lowered.empty() && (lowered[0] == '+' || lowered[0] == '-'))
                                 ? lowered.substr(1)
                                 : lowered;
    const double sign = !lowered.empty() && lowered[0] == '-' ? -1.0 : 1.0;
    if (body == "inf" || body == "infinity") return sign * HUGE_VAL;
    if (body == "nan") return std::nan("");
    if (body.empty() || body.find_first_not_of("0123456789.e+-") != std::string::npos)
        return std::nullopt;
    char* end = nullptr;
    const double d = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) return std::nullopt;
    return d;
}

Value f_float(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("float", args, {"default"}, 0);
    const Value fallback = a[0] ? *a[0] : Value::number(0.0);
    if (v.is_undefined()) v.fail_undefined();
    if (v.is_number()) return Value::number(v.as_double());
    if (v.is_string())
        if (const auto d = parse_float(v.str())) return Value::number(*d);
    return fallback;
}

Value f_format(Evaluator& ev, const Value& v, const CallArgs& args) {
    if (!args.positional.empty() && !args.keywords.empty())
        throw_error(ErrorKind::runtime,
                    "can't handle positional and keyword arguments at the same time");
    if (!args.keywords.empty()) {
        Dict d;
        for (const auto& [k, val] : args.keywords) d.set(Value::string(k), val);
        return like(v, format_percent(ev, to_str(v), Value::dict(std::move(d)), v.is_markup()));
    }
    return like(v, format_percent(ev, to_str(v), Value::tuple(args.positional), v.is_markup()));
}

Value f_indent(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("indent", args, {"width", "first", "blank"}, 0);
    if (v.is_undefined()) v.fail_undefined();
    if (!v.is_string())
        throw_error(ErrorKind::type, "unsupported operand type(s) for +=: '{}' and 'str'",
                    type_name(v));
    std::string indention;
    if (a[0] && a[0]->is_string()) {
        indention = a[0]->str();
    } else {
        const int64_t w = a[0] ? int_of(*a[0], "indent") : 4;
        ev.check_size(size_t(std::max<int64_t>(w, 0)));
        indention.assign(size_t(std::max<int64_t>(w, 0)), ' ');
    }
    const std::vector<std::string> lines = text::splitlines(v.str() + "\n", false);
    ev.check_size(v.str().size() + lines.size() * indention.size());
    std::string rv;
    if (opt_bool(a[2], false)) {
        for (size_t i = 0; i < lines.size(); ++i) {
            if (i) {
                rv += '\n';
                rv += indention;
            }
            rv += lines[i];
        }
    } else {
        rv = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) {
            rv += '\n';
            if (!lines[i].empty()) {
                rv += indention;
                rv += lines[i];
            }
        }
    }
    if (opt_bool(a[1], false)) rv = indention + rv;
    return like(v, std::move(rv));
}

std::optional<int64_t> parse_int(std::string s, int64_t base) {
    s = text::strip(s, std::nullopt, true, true);
    bool negative = false;
    size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    const auto prefix = [&](char p) {
        return i + 1 < s.size() && s[i] == '0' && (s[i + 1] | 32) == p;
    };
    if (base == 0) {
        base = prefix('x') ? 16 : prefix('o') ? 8 : prefix('b') ? 2 : 10;
        if (base != 10) i += 2;
    } else if ((base == 16 && prefix('x')) || (base == 8 && prefix('o')) ||
               (base == 2 && prefix('b'))) {
        i += 2;
    }
    if (base < 2 || base > 36 || i >= s.size()) return std::nullopt;
    int64_t v = 0;
    bool last_digit = false;
    for (; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '_' && last_digit && i + 1 < s.size() && s[i + 1] != '_') {
            last_digit = false;
            continue;
        }
        const int d = c >= '0' && c <= '9'                 ? c - '0'
                      : (c | 32) >= 'a' && (c | 32) <= 'z' ? (c | 32) - 'a' + 10
                                                           : 99;
        if (d >= base) return std::nullopt;
        if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))
            return std::nullopt;
        last_digit = true;
    }
    if (!last_digit) return std::nullopt;
    return negative ? -v : v;
}

Value f_int(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("int", args, {"default", "base"}, 0);
    const Value fallback = a[0] ? *a[0] : Value::integer(0);
    if (v.is_undefined()) v.fail_undefined();
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.is_float()) {
        const double d = v.as_double();
        if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
        return Value::integer(int64_t(d));
    }
    if (v.is_string()) {
        const int64_t base = a[1] ? int_of(*a[1], "int") : 10;
        if (const auto i = parse_int(v.str(), base)) return Value::integer(*i);
        if (const auto d = parse_float(v.str()))
            if (std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value::integer(int64_t(*d));
    }
    return fallback;
}

Value f_lower(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("lower", args, {}, 0);
    return like(v, text::lower(to_str(v)));
}

Value f_upper(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("upper", args, {}, 0);
    return like(v, text::upper(to_str(v)));
}

Value f_pprint(Evaluator&, const Value& v, const CallArgs&) {
    return Value::string(repr(v));
}

Value f_replace(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("replace", args, {"old", "new", "count"}, 2);
    const std::string s = to_str(v), old = to_str(*a[0]), with = to_str(*a[1]);
    const int64_t count = a[2] && !a[2]->is_none() ? int_of(*a[2], "replace") : -1;
    if (with.size() > old.size())
        ev.check_size(s.size() + (s.size() / std::max<size_t>(old.size(), 1) + 1) *
                                     (with.size() - old.size()));
    ev.charge(s.size());
    return Value::string(text::replace(s, old, with, count));
}

Value f_round(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("round", args, {"precision", "method"}, 0);
    const int64_t precision = a[0] ? int_of(*a[0], "round") : 0;
    const std::string method = a[1] ? to_str(*a[1]) : "common";
    if (method != "common" && method != "ceil" && method != "floor")
        throw_error(ErrorKind::runtime, "method must be common, ceil or floor");
    if (v.is_undefined())
        throw_error(ErrorKind::type, "type Undefined doesn't define __round__ method");
    if (!v.is_number())
        throw_error(ErrorKind::type, "type {} doesn't define __round__ method", type_name(v));
    if (method == "common") {
        if (v.is_integral() && precision >= 0) return Value::integer(v.as_int());
        const double d = v.as_double();
        if (!std::isfinite(d)) return Value::number(d);
        if (precision > 300) return Value::number(d);
        if (precision < -300) return Value::number(0.0 * d);
        // Correctly rounded, ties to even, as Python's round() on the exact binary value.
        const double x = precision >= 0 ? d : d / std::pow(10.0, double(-precision));
        char buf[400];
        std::snprintf(buf, sizeof buf, "%.*f", precision >= 0 ? int(precision) : 0, x);
        double r = std::strtod(buf, nullptr);
        if (precision < 0) r *= std::pow(10.0, double(-precision));
        if (v.is_integral()) return Value::integer(int64_t(r));
        return Value::number(r);
    }
    const double scale = std::pow(10.0, double(precision));
    const double x = v.as_double() * scale;
    return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("safe", args, {}, 0);
    return v.is_markup() ? v : Value::markup(to_str(v));
}

Value f_string(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("string", args, {}, 0);
    return v.is_string() ? v : Value::string(to_str(v));
}

Value f_striptags(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("striptags", args, {}, 0);
    std::string s = to_str(v), out;
    for (size_t i = 0; i < s.size();) {
        if (s.compare(i, 4, "<!--") == 0) {
            const size_t end = s.find("-->", i + 4);
            if (end == std::string::npos) {
                out += s.substr(i);
                break;
            }
            i = end + 3;
        } else if (s[i] == '<' && s.find('>', i) != std::string::npos) {
            i = s.find('>', i) + 1;
        } else {
            out += s[i++];
        }
    }
    std::string joined;
    for (const std::string& w : text::split(out, std::nullopt, -1)) {
        if (!joined.empty()) joined += ' ';
        joined += w;
    }
    static const std::pair<const char*, const char*> kEntities[] = {
        {"&lt;", "<"},   {"&gt;", ">"},        {"&quot;", "\""}, {"&#39;", "'"},
        {"&#34;", "\""}, {"&nbsp;", "\u00a0"}, {"&amp;", "&"}};
    for (const auto& [from, to] : kEntities) joined = text::replace(joined, from, to, -1);
    return Value::string(std::move(joined));
}

Value f_title(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("title", args, {}, 0);
    // Words start after "-", whitespace, "(", "{", "[" or "<" (jinja2's regex), not after
    // every non-letter as str.title() has it.
    const std::u32string u = text::decode(to_str(v));
    const auto sep = [](char32_t c) {
        return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || text::is_space(c);
    };
    std::string out;
    for (size_t i = 0; i < u.size();) {
        size_t j = i;
        const bool is_sep = sep(u[i]);
        while (j < u.size() && sep(u[j]) == is_sep) ++j;
        const std::string item = text::encode(std::u32string_view(u).substr(i, j - i));
        if (is_sep) {
            out += item;
        } else {
            out += text::upper(text::substr(item, 0, 1)) +
                   text::lower(text::substr(item, 1, SIZE_MAX));
        }
        i = j;
    }
    return Value::string(std::move(out));
}

Value f_tojson(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a =
        bind_args("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"}, 0);
    JsonOptions o;
    o.ensure_ascii = opt_bool(a[0], false);
    if (a[1] && !a[1]->is_none()) {
        if (a[1]->is_string()) {
            o.indent = a[1]->str();
        } else if (a[1]->is_integral()) {
            o.indent = std::string(size_t(std::clamp<int64_t>(a[1]->as_int(), 0, 1 << 16)), ' ');
        } else {
            throw_error(ErrorKind::type, "can't multiply sequence by non-int of type '{}'",
                        type_name(*a[1]));
        }
    }
    if (a[2] && !a[2]->is_none()) {
        if (!a[2]->is_sequence() || a[2]->items().size() != 2 || !a[2]->items()[0].is_string() ||
            !a[2]->items()[1].is_string())
            throw_error(ErrorKind::type, "separators must be a pair of strings");
        o.item_separator = a[2]->items()[0].str();
        o.key_separator = a[2]->items()[1].str();
    }
    o.sort_keys = opt_bool(a[3], false);
    std::string out = json_dumps(v, o);
    ev.check_size(out.size());
    ev.charge(out.size());
    return Value::string(std::move(out));
}

Value f_trim(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("trim", args, {"chars"}, 0);
    std::optional<std::string> chars;
    if (a[0] && !a[0]->is_none()) chars = to_str(*a[0]);
    return like(v, text::strip(to_str(v), chars, true, true));
}

Value f_truncate(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("truncate", args, {"length", "killwords", "end", "leeway"}, 0);
    const int64_t len = a[0] ? int_of(*a[0], "truncate") : 255;
    const std::string end = a[2] ? to_str(*a[2]) : "...";
    const int64_t leeway = a[3] && !a[3]->is_none() ? int_of(*a[3], "truncate") : 5;
    if (len < int64_t(text::length(end)))
        throw_error(ErrorKind::runtime, "expected length >= {}, got {}", text::length(end), len);
    if (leeway < 0) throw_error(ErrorKind::runtime, "expected leeway >= 0, got {}", leeway);
    if (int64_t(length(v)) <= len + leeway) return v;
    if (!v.is_string())
        throw_error(ErrorKind::type, "'{}' object is not subscriptable", type_name(v));
    const std::string head = text::substr(v.str(), 0, size_t(len - int64_t(text::length(end))));
    if (opt_bool(a[1], false)) return Value::string(head + end);
    const size_t space = head.rfind(' ');
    return Value::string((space == std::string::npos ? head : head.substr(0, space)) + end);
}

Value f_urlencode(Evaluator& ev, const Value& v, const CallArgs& args) {
    bind_args("urlencode", args, {}, 0);
    const auto quote = [](const std::string& s, bool for_qs) {
        std::string out;
        for (unsigned char c : s) {
            if (isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' ||
                (!for_qs && c == '/')) {
                out += char(c);
            } else if (for_qs && c == ' ') {
                out += '+';
            } else {
                out += fmt::format("%{:02X}", c);
            }
        }
        return out;
    };
    if (v.is_string() || !iterable(v)) return Value::string(quote(to_str(v), false));
    std::string out;
    const List pairs = v.is_dict() ? [&] {
        List p;
        for (const auto& [k, val] : v.dict().entries) p.push_back(Value::tuple({k, val}));
        return p;
    }() : to_list(ev, v);
    for (const Value& p : pairs) {
        const List kv = to_list(ev, p);
        if (kv.size() != 2) throw_error(ErrorKind::value, "expected key/value pairs");
        if (!out.empty()) out += '&';
        out += quote(to_str(kv[0]), true) + "=" + quote(to_str(kv[1]), true);
    }
    return Value::string(out);
}

Value f_unsupported(Evaluator&, const Value&, const CallArgs&) {
    throw_error(ErrorKind::runtime, "the urlize filter is not supported");
}

Value f_wordcount(Evaluator&, const Value& v, const CallArgs& args) {
    bind_args("wordcount", args, {}, 0);
    int64_t n = 0;
    bool in_word = false;
    for (char32_t c : text::decode(to_str(v))) {
        const bool w = text::is_word(c);
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value::integer(n);
}

// textwrap.wrap(width, expand_tabs=False, replace_whitespace=False), greedy, breaking words
// longer than a line; hyphens are not break points here.
Value f_wordwrap(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("wordwrap", args,
                              {"width", "break_long_words", "wrapstring", "break_on_hyphens"}, 0);
    const int64_t width = a[0] ? int_of(*a[0], "wordwrap") : 79;
    if (width <= 0) throw_error(ErrorKind::value, "invalid width {} (must be > 0)", width);
    const bool break_long = opt_bool(a[1], true);
    const std::string wrap = a[2] && !a[2]->is_none() ? to_str(*a[2]) : "\n";
    std::vector<std::string> out_lines;
    for (const std::string& line : text::splitlines(to_str(v), false)) {
        std::vector<std::string> wrapped;
        const std::u32string u = text::decode(line);
        std::vector<std::u32string> chunks;
        for (size_t i = 0; i < u.size();) {
            size_t j = i;
            const bool space = text::is_space(u[i]);
            while (j < u.size() && text::is_space(u[j]) == space) ++j;
            chunks.push_back(u.substr(i, j - i));
            i = j;
        }
        std::u32string cur;
        const auto flush = [&] {
            while (!cur.empty() && text::is_space(cur.back())) cur.pop_back();
            if (!cur.empty()) wrapped.push_back(text::encode(cur));
            cur.clear();
        };
        for (std::u32string chunk : chunks) {
            const bool space = text::is_space(chunk[0]);
            if (space && cur.empty()) continue;
            while (int64_t(cur.size() + chunk.size()) > width) {
                if (!space && break_long && (cur.empty() || int64_t(chunk.size()) > width)) {
                    const size_t room = size_t(width) - cur.size();
                    cur += chunk.substr(0, room);
                    chunk = chunk.substr(room);
                }
                flush();
                if (space) chunk.clear();
                if (chunk.empty() || !break_long || int64_t(chunk.size()) <= width) break;
            }
            cur += chunk;
        }
        flush();
        for (auto& w : wrapped) out_lines.push_back(std::move(w));
    }
    std::string out;
    for (size_t i = 0; i < out_lines.size(); ++i) out += (i ? wrap : "") + out_lines[i];
    return Value::string(std::move(out));
}

Value f_xmlattr(Evaluator&, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("xmlattr", args, {"autospace"}, 0);
    if (!v.is_dict())
        throw_error(ErrorKind::type, "'{}' object has no attribute 'items'", type_name(v));
    std::string rv;
    for (const auto& [k, val] : v.dict().entries) {
        if (val.is_none() || val.is_undefined()) continue;
        const std::string key = to_str(k);
        if (key.find_first_of(" \t\n\r\f\v/>=") != std::string::npos)
            throw_error(ErrorKind::value, "Invalid character in attribute name: {}",
                        text::py_repr(key));
        if (!rv.empty()) rv += ' ';
        rv += text::html_escape(key) + "=\"" + text::html_escape(to_str(val)) + "\"";
    }
    if (opt_bool(a[0], true) && !rv.empty()) rv = " " + rv;
    return Value::string(std::move(rv));
}

}  // namespace

namespace {

struct FilterEntry {
    std::string_view name;
    FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", f_filesizeformat},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"groupby", f_groupby},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"pprint", f_pprint},
    {"random", f_random},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"slice", f_slice},
    {"sort", f_sort},
    {"string", f_string},
    {"striptags", f_striptags},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", f_unique},
    {"upper", f_upper},
    {"urlencode", f_urlencode},
    {"urlize", f_unsupported},
    {"wordcount", f_wordcount},
    {"wordwrap", f_wordwrap},
    {"xmlattr", f_xmlattr},
};

}  // namespace

}  // namespace filters

FilterFn find_filter(std::string_view name) {
    for (const auto& f : filters::kFilters)
        if (f.name == name) return f.fn;
    return nullptr;
}

}  // namespace mw::tmpl
