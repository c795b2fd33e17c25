// Jinja2's built-in tests (jinja2/tests.py) and the global functions a template can call:
// Jinja2's range (the sandbox's, at most 100000 items), dict, namespace, cycler and joiner, and
// transformers' raise_exception and strftime_now.
#include <ctime>

#include "template/evaluator.h"
#include "template/library.h"
#include "template/objects.h"
#include "template/ops.h"
#include "template/text.h"

namespace mw::tmpl {

namespace {

using Bound = std::vector<std::optional<Value>>;

const Value& one_arg(const char* test, const CallArgs& args) {
    static const Bound* unused = nullptr;
    (void)unused;
    if (args.positional.size() + args.keywords.size() != 1)
        throw_error(ErrorKind::type, "test '{}' takes exactly one argument", test);
    return args.positional.empty() ? args.keywords[0].second : args.positional[0];
}

void no_args(const char* test, const CallArgs& args) {
    if (!args.empty()) throw_error(ErrorKind::type, "test '{}' takes no arguments", test);
}

bool t_odd(Evaluator& ev, const Value& v, const CallArgs& a) {
    no_args("odd", a);
    return equal(binary_op(ev, BinaryOp::mod, v, Value::integer(2)), Value::integer(1));
}
bool t_even(Evaluator& ev, const Value& v, const CallArgs& a) {
    no_args("even", a);
    return equal(binary_op(ev, BinaryOp::mod, v, Value::integer(2)), Value::integer(0));
}
bool t_divisibleby(Evaluator& ev, const Value& v, const CallArgs& a) {
    return equal(binary_op(ev, BinaryOp::mod, v, one_arg("divisibleby", a)), Value::integer(0));
}
bool t_defined(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("defined", a);
    return !v.is_undefined();
}
bool t_undefined(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("undefined", a);
    return v.is_undefined();
}
bool t_filter(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("filter", a);
    return v.is_string() && find_filter(v.str()) != nullptr;
}
bool t_test(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("test", a);
    return v.is_string() && find_test(v.str()) != nullptr;
}
bool t_none(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("none", a);
    return v.is_none();
}
bool t_boolean(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("boolean", a);
    return v.is_bool();
}
bool t_false(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("false", a);
    return v.is_bool() && !v.as_bool();
}
bool t_true(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("true", a);
    return v.is_bool() && v.as_bool();
}
bool t_integer(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("integer", a);
    return v.is_int();
}
bool t_float(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("float", a);
    return v.is_float();
}
bool case_test(const Value& v, bool lower) {
    bool cased = false;
    for (char32_t c : text::decode(to_str(v))) {
        if (lower ? text::is_upper(c) : text::is_lower(c)) return false;
        cased |= lower ? text::is_lower(c) : text::is_upper(c);
    }
    return cased;
}
bool t_lower(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("lower", a);
    return case_test(v, true);
}
bool t_upper(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("upper", a);
    return case_test(v, false);
}
bool t_string(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("string", a);
    return v.is_string();
}
bool t_mapping(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("mapping", a);
    return v.is_dict();
}
bool t_number(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("number", a);
    return v.is_number();
}
bool t_sequence(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("sequence", a);
    return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict();
}
bool t_iterable(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("iterable", a);
    return iterable(v) || v.object_as<Loop>() != nullptr;
}
bool t_callable(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("callable", a);
    // Undefined defines __call__ (which raises), so Python calls it callable.
    return v.is_undefined() || (v.is_object() && v.object()->callable()) ||
           v.object_as<Loop>() != nullptr;
}
bool t_sameas(Evaluator&, const Value& v, const CallArgs& a) {
    const Value& other = one_arg("sameas", a);
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
        case Kind::none:
        case Kind::undefined:
            return v.is_none() || v.same_object(other);
        case Kind::boolean:
            return v.as_bool() == other.as_bool();
        case Kind::integer:  // CPython caches the small ints
            return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
        default:
            return v.same_object(other);
    }
}
bool t_escaped(Evaluator&, const Value& v, const CallArgs& a) {
    no_args("escaped", a);
    return v.is_markup();
}
bool t_in(Evaluator& ev, const Value& v, const CallArgs& a) {
    return contains(ev, one_arg("in", a), v);
}

template <CompareOp Op>
bool t_compare(Evaluator& ev, const Value& v, const CallArgs& a) {
    return compare_op(ev, Op, v, one_arg("comparison", a));
}

struct TestEntry {
    std::string_view name;
    TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"odd", t_odd},
    {"even", t_even},
    {"divisibleby", t_divisibleby},
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"filter", t_filter},
    {"test", t_test},
    {"none", t_none},
    {"boolean", t_boolean},
    {"false", t_false},
    {"true", t_true},
    {"integer", t_integer},
    {"float", t_float},
    {"lower", t_lower},
    {"upper", t_upper},
    {"string", t_string},
    {"mapping", t_mapping},
    {"number", t_number},
    {"sequence", t_sequence},
    {"iterable", t_iterable},
    {"callable", t_callable},
    {"sameas", t_sameas},
    {"escaped", t_escaped},
    {"in", t_in},
    {"==", t_compare<CompareOp::eq>},
    {"eq", t_compare<CompareOp::eq>},
    {"equalto", t_compare<CompareOp::eq>},
    {"!=", t_compare<CompareOp::ne>},
    {"ne", t_compare<CompareOp::ne>},
    {">", t_compare<CompareOp::gt>},
    {"gt", t_compare<CompareOp::gt>},
    {"greaterthan", t_compare<CompareOp::gt>},
    {">=", t_compare<CompareOp::ge>},
    {"ge", t_compare<CompareOp::ge>},
    {"<", t_compare<CompareOp::lt>},
    {"lt", t_compare<CompareOp::lt>},
    {"lessthan", t_compare<CompareOp::lt>},
    {"<=", t_compare<CompareOp::le>},
    {"le", t_compare<CompareOp::le>},
};

// ---- globals -------------------------------------------------------------------------------

int64_t range_arg(const Value& v) {
    if (!v.is_integral())
        throw_error(ErrorKind::type, "'{}' object cannot be interpreted as an integer",
                    type_name(v));
    return v.as_int();
}

Value g_range(Evaluator& ev, const Value&, const CallArgs& args) {
    if (!args.keywords.empty()) throw_error(ErrorKind::type, "range() takes no keyword arguments");
    const size_t n = args.positional.size();
    if (n < 1 || n > 3)
        throw_error(ErrorKind::type, "range expected at most 3 arguments, got {}", n);
    int64_t start = 0, stop, step = 1;
    if (n == 1) {
        stop = range_arg(args.positional[0]);
    } else {
        start = range_arg(args.positional[0]);
        stop = range_arg(args.positional[1]);
        if (n == 3) step = range_arg(args.positional[2]);
    }
    if (step == 0) throw_error(ErrorKind::value, "range() arg 3 must not be zero");
    const __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
    const __int128 count = span <= 0 ? 0
                                     : (span + (step > 0 ? step : -__int128(step)) - 1) /
                                           (step > 0 ? step : -__int128(step));
    if (count > 100000)
        throw_error(ErrorKind::overflow,
                    "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    List out;
    out.reserve(size_t(count));
    for (int64_t i = 0; i < int64_t(count); ++i) out.push_back(Value::integer(start + i * step));
    ev.tick(uint64_t(count) / 16);
    return Value::list(std::move(out));
}

// dict(*args, **kwargs) as Python builds it.
Dict build_dict(Evaluator& ev, const CallArgs& args, const char* fn) {
    Dict d;
    if (args.positional.size() > 1)
        throw_error(ErrorKind::type, "{} expected at most 1 argument, got {}", fn,
                    args.positional.size());
    if (!args.positional.empty()) {
        const Value& src = args.positional[0];
        if (src.is_dict()) {
            d = src.dict();
        } else {
            for (const Value& pair : to_list(ev, src)) {
                if (!iterable(pair) || pair.is_undefined())
                    throw_error(ErrorKind::type,
                                "cannot convert dictionary update sequence element to a sequence");
                const List kv = to_list(ev, pair);
                if (kv.size() != 2)
                    throw_error(ErrorKind::value,
                                "dictionary update sequence element has length {}; 2 is required",
                                kv.size());
                check_hashable(kv[0]);
                d.set(kv[0], kv[1]);
            }
        }
    }
    for (const auto& [k, v] : args.keywords) d.set(Value::string(k), v);
    return d;
}

Value g_dict(Evaluator& ev, const Value&, const CallArgs& args) {
    return Value::dict(build_dict(ev, args, "dict"));
}

Value g_namespace(Evaluator& ev, const Value&, const CallArgs& args) {
    auto ns = std::make_shared<Namespace>();
    ns->attrs = build_dict(ev, args, "namespace");
    ev.track(ns);
    return Value::object(std::move(ns));
}

Value g_cycler(Evaluator&, const Value&, const CallArgs& args) {
    if (args.positional.empty())
        throw_error(ErrorKind::runtime, "at least one item has to be provided");
    return Value::object(std::make_shared<Cycler>(args.positional));
}

Value g_joiner(Evaluator&, const Value&, const CallArgs& args) {
    const auto a = bind_args("joiner", args, {"sep"}, 0);
    return Value::object(std::make_shared<Joiner>(a[0] ? to_str(*a[0]) : ", "));
}

Value g_lipsum(Evaluator&, const Value&, const CallArgs&) {
    throw_error(ErrorKind::runtime, "lipsum() is not supported (its text is random)");
}

Value g_raise_exception(Evaluator&, const Value&, const CallArgs& args) {
    const auto a = bind_args("raise_exception", args, {"message"}, 1);
    throw TemplateError(ErrorKind::raised, to_str(*a[0]));
}

Value g_strftime_now(Evaluator& ev, const Value&, const CallArgs& args) {
    const auto a = bind_args("strftime_now", args, {"format"}, 1);
    if (ev.context().strftime_now) return Value::string(*ev.context().strftime_now);
    if (!a[0]->is_string())
        throw_error(ErrorKind::type, "strftime() argument 1 must be str, not {}", type_name(*a[0]));
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    std::string buf(256, '\0');
    const std::string& format = a[0]->str();
    if (format.empty()) return Value::string("");
    for (int tries = 0; tries < 8; ++tries) {
        const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
        if (n > 0) return Value::string(text::repair_utf8(buf.substr(0, n)));
        if (buf.size() > 65536) break;
        buf.resize(buf.size() * 4);
    }
    return Value::string("");
}

struct GlobalEntry {
    std::string_view name;
    NativeFn fn;
    const char* display;
};

constexpr GlobalEntry kGlobals[] = {
    {"range", g_range, "range"},
    {"dict", g_dict, "dict"},
    {"namespace", g_namespace, "namespace"},
    {"cycler", g_cycler, "cycler"},
    {"joiner", g_joiner, "joiner"},
    {"lipsum", g_lipsum, "lipsum"},
    {"raise_exception", g_raise_exception, "raise_exception"},
    {"strftime_now", g_strftime_now, "strftime_now"},
};

}  // namespace

TestFn find_test(std::string_view name) {
    for (const auto& t : kTests)
        if (t.name == name) return t.fn;
    return nullptr;
}

std::optional<Value> find_global(std::string_view name) {
    for (const auto& g : kGlobals)
        if (g.name == name) return make_function(g.display, g.fn);
    return std::nullopt;
}

}  // namespace mw::tmpl
