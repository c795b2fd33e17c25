// The attributes of built-in values that templates call: Python's str, list, tuple, dict, int
// and float methods, bound to their value. Mutating list and dict methods exist but refuse to
// run, as in Jinja2's ImmutableSandboxedEnvironment.
#include <algorithm>
#include <cmath>
#include <string_view>

#include "template/evaluator.h"
#include "template/format.h"
#include "template/library.h"
#include "template/objects.h"
#include "template/text.h"

namespace mw::tmpl {

namespace {

const std::string& str_arg(const Value& v, const char* fn) {
    if (!v.is_string())
        throw_error(ErrorKind::type, "{}() argument must be str, not {}", fn, type_name(v));
    return v.str();
}

std::optional<std::string> opt_str(const std::optional<Value>& v, const char* fn) {
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_string())
        throw_error(ErrorKind::type, "{}() argument must be str or None, not {}", fn,
                    type_name(*v));
    return v->str();
}

int64_t int_arg(const Value& v) {
    if (!v.is_integral())
        throw_error(ErrorKind::type, "'{}' object cannot be interpreted as an integer",
                    type_name(v));
    return v.as_int();
}

std::optional<int64_t> opt_index(const std::optional<Value>& v) {
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_integral())
        throw_error(ErrorKind::type,
                    "slice indices must be integers or None or have an __index__ method");
    return v->as_int();
}

char32_t fill_arg(const std::optional<Value>& v, const char* fn) {
    if (!v) return U' ';
    const std::string& s = str_arg(*v, fn);
    const std::u32string u = text::decode(s);
    if (u.size() != 1)
        throw_error(ErrorKind::type, "The fill character must be exactly one character long");
    return u[0];
}

Value str_list(const std::vector<std::string>& parts) {
    List out;
    for (const auto& p : parts) out.push_back(Value::string(p));
    return Value::list(std::move(out));
}

// startswith / endswith: a string or a tuple of strings, optional [start:end] (CPython's
// tailmatch: a start past the end matches nothing, not even "").
Value affix(const Value& self, const CallArgs& args, bool starts) {
    const char* fn = starts ? "startswith" : "endswith";
    const auto a = bind_args(fn, args, {"prefix", "start", "end"}, 1);
    const std::u32string s = text::decode(self.str());
    const int64_t len = int64_t(s.size());
    int64_t lo = opt_index(a[1]).value_or(0), hi = opt_index(a[2]).value_or(len);
    if (hi > len) {
        hi = len;
    } else if (hi < 0) {
        hi = std::max<int64_t>(0, hi + len);
    }
    if (lo < 0) lo = std::max<int64_t>(0, lo + len);
    const auto check = [&](const Value& p) {
        if (!p.is_string())
            throw_error(ErrorKind::type, "{} first arg must be str or a tuple of str, not {}", fn,
                        type_name(p));
        const std::u32string u = text::decode(p.str());
        const int64_t n = int64_t(u.size());
        if (hi - n < lo) return false;
        const size_t at = size_t(starts ? lo : hi - n);
        return std::u32string_view(s).substr(at, u.size()) == u;
    };
    if (a[0]->is_tuple()) {
        for (const Value& p : a[0]->items())
            if (check(p)) return Value::boolean(true);
        return Value::boolean(false);
    }
    return Value::boolean(check(*a[0]));
}

Value find_like(const Value& self, const CallArgs& args, const char* fn, bool reverse, bool raise) {
    const auto a = bind_args(fn, args, {"sub", "start", "end"}, 1);
    const std::u32string s = text::decode(self.str());
    const std::u32string sub = text::decode(str_arg(*a[0], fn));
    const auto [lo, hi] = text::resolve_range(opt_index(a[1]), opt_index(a[2]), s.size());
    const int64_t at = text::find(s, sub, lo, hi, reverse);
    if (at < 0 && raise) throw_error(ErrorKind::value, "substring not found");
    return Value::integer(at);
}

template <typename Pred>
Value all_chars(const Value& self, Pred pred) {
    const std::u32string s = text::decode(self.str());
    return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), pred));
}

// islower / isupper: some cased character, and none of the other case.
Value case_test(const Value& self, bool want_lower) {
    bool cased = false;
    for (char32_t c : text::decode(self.str())) {
        if (want_lower ? text::is_upper(c) : text::is_lower(c)) return Value::boolean(false);
        cased |= want_lower ? text::is_lower(c) : text::is_upper(c);
    }
    return Value::boolean(cased);
}

Value str_method(Evaluator& ev, const Value& self, const CallArgs& args, std::string_view name) {
    const std::string& s = self.str();
    ev.charge(s.size());
    const auto no_args = [&](const char* fn) {
        if (!args.empty()) throw_error(ErrorKind::type, "{}() takes no arguments", fn);
    };
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const auto a = bind_args(std::string(name).c_str(), args, {"chars"}, 0);
        return Value::string(
            text::strip(s, opt_str(a[0], "strip"), name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
        const auto a = bind_args(std::string(name).c_str(), args, {"sep", "maxsplit"}, 0);
        const std::optional<std::string> sep = opt_str(a[0], "split");
        const int64_t maxsplit = a[1] ? int_arg(*a[1]) : -1;
        return str_list(name == "split" ? text::split(s, sep, maxsplit)
                                        : text::rsplit(s, sep, maxsplit));
    }
    if (name == "splitlines") {
        const auto a = bind_args("splitlines", args, {"keepends"}, 0);
        return str_list(text::splitlines(s, a[0] && truthy(*a[0])));
    }
    if (name == "startswith" || name == "endswith") return affix(self, args, name == "startswith");
    if (name == "upper") return no_args("upper"), Value::string(text::upper(s));
    if (name == "lower" || name == "casefold")
        return no_args("lower"), Value::string(text::lower(s));
    if (name == "title") return no_args("title"), Value::string(text::title(s));
    if (name == "capitalize") return no_args("capitalize"), Value::string(text::capitalize(s));
    if (name == "swapcase") return no_args("swapcase"), Value::string(text::swapcase(s));
    if (name == "replace") {
        const auto a = bind_args("replace", args, {"old", "new", "count"}, 2);
        const std::string& old = str_arg(*a[0], "replace");
        const std::string& with = str_arg(*a[1], "replace");
        const int64_t count = a[2] ? int_arg(*a[2]) : -1;
        if (!with.empty() && old.size() < with.size())
            ev.check_size(s.size() + (s.size() / std::max<size_t>(old.size(), 1) + 1) *
                                         (with.size() - old.size()));
        return Value::string(text::replace(s, old, with, count));
    }
    if (name == "find") return find_like(self, args, "find", false, false);
    if (name == "rfind") return find_like(self, args, "rfind", true, false);
    if (name == "index") return find_like(self, args, "index", false, true);
    if (name == "rindex") return find_like(self, args, "rindex", true, true);
    if (name == "count") {
        const auto a = bind_args("count", args, {"sub", "start", "end"}, 1);
        const std::u32string u = text::decode(s);
        const auto [lo, hi] = text::resolve_range(opt_index(a[1]), opt_index(a[2]), u.size());
        return Value::integer(
            int64_t(text::count(u, text::decode(str_arg(*a[0], "count")), lo, hi)));
    }
    if (name == "join") {
        const auto a = bind_args("join", args, {"iterable"}, 1);
        std::string out;
        size_t i = 0;
        Iter it(ev, *a[0]);
        Value item;
        while (it.next(item)) {
            if (!item.is_string())
                throw_error(ErrorKind::type, "sequence item {}: expected str instance, {} found", i,
                            type_name(item));
            if (i++) out += s;
            out += item.str();
            ev.check_size(out.size());
        }
        ev.charge(out.size());
        return Value::string(std::move(out));
    }
    if (name == "format") return Value::string(format_braces(ev, s, args));
    if (name == "format_map") {
        if (args.positional.size() != 1 || !args.keywords.empty())
            throw_error(ErrorKind::type, "format_map() takes exactly one argument");
        if (!args.positional[0].is_dict())
            throw_error(ErrorKind::type, "format_map() argument must be a mapping");
        CallArgs kw;
        for (const auto& [k, v] : args.positional[0].dict().entries)
            if (k.is_string()) kw.keywords.emplace_back(k.str(), v);
        return Value::string(format_braces(ev, s, kw));
    }
    if (name == "center" || name == "ljust" || name == "rjust") {
        const auto a = bind_args(std::string(name).c_str(), args, {"width", "fillchar"}, 1);
        const int64_t width = int_arg(*a[0]);
        ev.check_size(size_t(std::max<int64_t>(width, 0)) * 4);
        const char32_t fill = fill_arg(a[1], "center");
        return Value::string(name == "center"  ? text::center(s, width, fill)
                             : name == "ljust" ? text::ljust(s, width, fill)
                                               : text::rjust(s, width, fill));
    }
    if (name == "zfill") {
        const auto a = bind_args("zfill", args, {"width"}, 1);
        const int64_t width = int_arg(*a[0]);
        ev.check_size(size_t(std::max<int64_t>(width, 0)));
        return Value::string(text::zfill(s, width));
    }
    if (name == "expandtabs") {
        const auto a = bind_args("expandtabs", args, {"tabsize"}, 0);
        const int64_t tab = a[0] ? int_arg(*a[0]) : 8;
        ev.check_size(s.size() * size_t(std::clamp<int64_t>(tab, 1, 1 << 20)));
        return Value::string(text::expandtabs(s, tab));
    }
    if (name == "partition" || name == "rpartition") {
        const auto a = bind_args(std::string(name).c_str(), args, {"sep"}, 1);
        const std::string& sep = str_arg(*a[0], "partition");
        if (sep.empty()) throw_error(ErrorKind::value, "empty separator");
        const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
        if (at == std::string::npos)
            return name == "partition"
                       ? Value::tuple({Value::string(s), Value::string(""), Value::string("")})
                       : Value::tuple({Value::string(""), Value::string(""), Value::string(s)});
        return Value::tuple({Value::string(s.substr(0, at)), Value::string(sep),
                             Value::string(s.substr(at + sep.size()))});
    }
    if (name == "removeprefix" || name == "removesuffix") {
        const auto a = bind_args(std::string(name).c_str(), args, {"affix"}, 1);
        const std::string& x = str_arg(*a[0], "removeprefix");
        if (name == "removeprefix" && s.compare(0, x.size(), x) == 0)
            return Value::string(s.substr(x.size()));
        if (name == "removesuffix" && s.size() >= x.size() && !x.empty() &&
            s.compare(s.size() - x.size(), x.size(), x) == 0)
            return Value::string(s.substr(0, s.size() - x.size()));
        return self;
    }
    no_args(std::string(name).c_str());
    if (name == "isalpha") return all_chars(self, text::is_alpha);
    if (name == "isalnum") return all_chars(self, text::is_alnum);
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric")
        return all_chars(self, text::is_numeric);
    if (name == "isspace") return all_chars(self, text::is_space);
    if (name == "islower") return case_test(self, true);
    if (name == "isupper") return case_test(self, false);
    if (name == "isascii") return Value::boolean(text::is_ascii(s));
    if (name == "isprintable") {
        const std::u32string u = text::decode(s);
        return Value::boolean(std::all_of(u.begin(), u.end(), text::is_printable));
    }
    if (name == "istitle") {
        bool cased = false, previous_cased = false;
        for (char32_t c : text::decode(s)) {
            if (text::is_upper(c)) {
                if (previous_cased) return Value::boolean(false);
                previous_cased = cased = true;
            } else if (text::is_lower(c)) {
                if (!previous_cased) return Value::boolean(false);
                previous_cased = cased = true;
            } else {
                previous_cased = false;
            }
        }
        return Value::boolean(cased);
    }
    if (name == "isidentifier") {
        const std::u32string u = text::decode(s);
        bool ok = !u.empty() && (u[0] == '_' || text::is_alpha(u[0]));
        for (size_t i = 1; ok && i < u.size(); ++i) ok = u[i] == '_' || text::is_alnum(u[i]);
        return Value::boolean(ok);
    }
    throw_error(ErrorKind::runtime, "str.{} is not implemented", name);
}

bool is_str_method(std::string_view name) {
    static constexpr std::string_view kNames[] = {
        "strip",        "lstrip",       "rstrip",  "split",      "rsplit",     "splitlines",
        "startswith",   "endswith",     "upper",   "lower",      "casefold",   "title",
        "capitalize",   "swapcase",     "replace", "find",       "rfind",      "index",
        "rindex",       "count",        "join",    "format",     "format_map", "center",
        "ljust",        "rjust",        "zfill",   "expandtabs", "partition",  "rpartition",
        "removeprefix", "removesuffix", "isalpha", "isalnum",    "isdigit",    "isdecimal",
        "isnumeric",    "isspace",      "islower", "isupper",    "isascii",    "isprintable",
        "istitle",      "isidentifier"};
    return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

Value sequence_method(Evaluator& ev, const Value& self, const CallArgs& args,
                      std::string_view name) {
    const List& items = self.items();
    if (name == "index") {
        const auto a = bind_args("index", args, {"value", "start", "stop"}, 1);
        const auto [lo, hi] = text::resolve_range(opt_index(a[1]), opt_index(a[2]), items.size());
        for (size_t i = lo; i < hi; ++i)
            if (equal(items[i], *a[0])) return Value::integer(int64_t(i));
        throw_error(ErrorKind::value, "{} is not in {}", repr(*a[0]),
                    self.is_list() ? "list" : "tuple");
    }
    if (name == "count") {
        const auto a = bind_args("count", args, {"value"}, 1);
        return Value::integer(int64_t(std::count_if(
            items.begin(), items.end(), [&](const Value& v) { return equal(v, *a[0]); })));
    }
    if (name == "copy") return Value::list(items);
    (void)ev;
    throw_error(ErrorKind::runtime, "list.{} is not implemented", name);
}

Value dict_method(Evaluator&, const Value& self, const CallArgs& args, std::string_view name) {
    const Dict& d = self.dict();
    if (name == "get") {
        const auto a = bind_args("get", args, {"key", "default"}, 1);
        check_hashable(*a[0]);
        if (const Value* v = d.find(*a[0])) return *v;
        return a[1] ? *a[1] : Value::none();
    }
    if (!args.empty()) throw_error(ErrorKind::type, "{}() takes no arguments", name);
    List out;
    for (const auto& [k, v] : d.entries) {
        if (name == "items") {
            out.push_back(Value::tuple({k, v}));
        } else {
            out.push_back(name == "keys" ? k : v);
        }
    }
    if (name == "copy") return self;
    const char* type = name == "items"  ? "dict_items"
                       : name == "keys" ? "dict_keys"
                                        : "dict_values";
    return Value::object(std::make_shared<DictView>(type, std::move(out)));
}

// Markup's methods: these return Markup and escape their string arguments.
bool markup_escaping(std::string_view name) {
    static constexpr std::string_view kNames[] = {
        "capitalize", "title",  "lower",  "upper", "replace",    "ljust",    "rjust",
        "lstrip",     "rstrip", "center", "strip", "expandtabs", "swapcase", "zfill"};
    return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

Value markup_method(Evaluator& ev, const Value& target, const CallArgs& args,
                    const std::string& name) {
    if (markup_escaping(name)) {
        CallArgs escaped = args;
        for (Value& a : escaped.positional)
            if (a.is_string()) a = escape(a);
        for (auto& [k, a] : escaped.keywords)
            if (a.is_string()) a = escape(a);
        return Value::markup(str_method(ev, target, escaped, name).str());
    }
    if (name == "join" && !args.positional.empty()) {
        List items;
        for (const Value& item : to_list(ev, args.positional[0])) items.push_back(escape(item));
        CallArgs escaped = args;
        escaped.positional[0] = Value::list(std::move(items));
        return Value::markup(str_method(ev, target, escaped, name).str());
    }
    Value result = str_method(ev, target, args, name);
    if (name == "split" || name == "rsplit" || name == "splitlines" || name == "partition" ||
        name == "rpartition") {
        List items = result.items();
        for (Value& item : items) item = Value::markup(item.str());
        return result.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    return result;
}

Value call_by_name(Evaluator& ev, const Value& self, const CallArgs& args) {
    // self is (value, name) packed in a tuple.
    const Value& target = self.items()[0];
    const std::string& name = self.items()[1].str();
    if (target.is_markup()) return markup_method(ev, target, args, name);
    if (target.is_string()) return str_method(ev, target, args, name);
    if (target.is_dict()) return dict_method(ev, target, args, name);
    return sequence_method(ev, target, args, name);
}

Value bound(const Value& obj, std::string_view name) {
    // The method's value and name ride along as its `self`.
    return make_function("method", call_by_name,
                         Value::tuple({obj, Value::string(std::string(name))}));
}

Value unsafe(const Value& obj, std::string_view name) {
    return Value::undefined(
        fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type_name(obj)),
        ErrorKind::security);
}

}  // namespace

std::optional<Value> builtin_attribute(const Value& obj, std::string_view name) {
    switch (obj.kind()) {
        case Kind::string:
            if (is_str_method(name)) return bound(obj, name);
            if (name == "encode" || name == "translate" || name == "maketrans")
                return Value::undefined(fmt::format("str.{} is not supported", name));
            return std::nullopt;
        case Kind::list:
        case Kind::tuple: {
            // groupby's items are named tuples (grouper, list); any pair answers to the names.
            if (obj.is_tuple() && obj.items().size() == 2 && (name == "grouper" || name == "list"))
                return obj.items()[name == "grouper" ? 0 : 1];
            if (name == "index" || name == "count" || (obj.is_list() && name == "copy"))
                return bound(obj, name);
            static constexpr std::string_view kMutating[] = {
                "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
            if (obj.is_list() &&
                std::find(std::begin(kMutating), std::end(kMutating), name) != std::end(kMutating))
                return unsafe(obj, name);
            return std::nullopt;
        }
        case Kind::dict: {
            if (name == "get" || name == "items" || name == "keys" || name == "values" ||
                name == "copy")
                return bound(obj, name);
            static constexpr std::string_view kMutating[] = {"clear", "pop", "popitem",
                                                             "setdefault", "update"};
            if (std::find(std::begin(kMutating), std::end(kMutating), name) != std::end(kMutating))
                return unsafe(obj, name);
            if (name == "fromkeys") return Value::undefined("dict.fromkeys is not supported");
            return std::nullopt;
        }
        case Kind::integer:
        case Kind::boolean:
            if (name == "real" || name == "numerator") return Value::integer(obj.as_int());
            if (name == "imag") return Value::integer(0);
            if (name == "denominator") return Value::integer(1);
            return std::nullopt;
        case Kind::floating:
            if (name == "real") return obj;
            if (name == "imag") return Value::number(0.0);
            if (name == "is_integer")
                return make_function(
                    "is_integer",
                    [](Evaluator&, const Value& self, const CallArgs&) {
                        const double d = self.as_double();
                        return Value::boolean(std::isfinite(d) && d == std::floor(d));
                    },
                    obj);
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

}  // namespace mw::tmpl
