// Text from values the way Python writes it: float repr, the `%` operator on strings,
// str.format() and format(value, spec), and json.dumps (the `tojson` filter of transformers).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "template/value.h"

namespace mw::tmpl {

// repr(float): the shortest text that reads back as the same double, in Python's layout
// ("1.0", "1e+16", "1.5e-05", "inf", "nan").
std::string float_repr(double d);

// format_string % args (printf-style): a tuple supplies the arguments in order, a dict the
// %(name)s ones, anything else is the only argument.
// With `escape_args` (a Markup format string) %s and %r arguments are HTML-escaped.
std::string format_percent(Evaluator& ev, std::string_view format, const Value& args,
                           bool escape_args = false);
// format_string.format(*args, **kwargs), fields resolved through the sandbox's lookups.
std::string format_braces(Evaluator& ev, std::string_view format, const CallArgs& args);
// format(value, spec) with Python's format-spec mini-language for str, int and float.
std::string format_spec(const Value& v, std::string_view spec);

struct JsonOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;          // nullopt: one line
    std::optional<std::string> item_separator;  // nullopt: ", " (or "," with an indent)
    std::string key_separator = ": ";
    bool sort_keys = false;
};
// json.dumps(value, ...). TypeError for values JSON cannot hold (undefined, generators, ...).
std::string json_dumps(const Value& v, const JsonOptions& options);

}  // namespace mw::tmpl
