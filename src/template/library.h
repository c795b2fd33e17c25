// What a template can call: Jinja2's built-in filters and tests, the global functions of the
// sandbox and of transformers (range, namespace, dict, cycler, joiner, raise_exception,
// strftime_now), and the attributes and methods of str, list, dict, int and float values.
#pragma once

#include <optional>
#include <string_view>

#include "template/value.h"

namespace mw::tmpl {

using FilterFn = Value (*)(Evaluator& ev, const Value& value, const CallArgs& args);
using TestFn = bool (*)(Evaluator& ev, const Value& value, const CallArgs& args);

// nullptr when there is no such filter / test (filters.cpp, tests.cpp).
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// A global function by name, or nullopt (globals.cpp).
std::optional<Value> find_global(std::string_view name);

// Python's getattr(obj, name) on values that are not Objects: methods of str, list, tuple and
// dict, number attributes. nullopt when there is no such attribute. Mutating methods of lists
// and dicts give an undefined value that raises SecurityError when called, as Jinja2's
// ImmutableSandboxedEnvironment does (methods.cpp).
std::optional<Value> builtin_attribute(const Value& obj, std::string_view name);

// A function object for built-ins: name for messages, and the code.
using NativeFn = Value (*)(Evaluator& ev, const Value& self, const CallArgs& args);
Value make_function(const char* name, NativeFn fn, Value self = Value());

}  // namespace mw::tmpl
