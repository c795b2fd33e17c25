// Errors of the template interpreter. Parsing and rendering throw TemplateError; the message
// names the template, the line and the construct, then the kind of error as Python's Jinja2
// calls it ("UndefinedError: 'foo' is undefined"), so that a render that fails in Jinja2 fails
// here with a message a template author recognises.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace mw::tmpl {

// The Python exception Jinja2 would raise; only used in messages and tests.
enum class ErrorKind {
    syntax,         // TemplateSyntaxError (lexing, parsing, unknown filter or test)
    undefined,      // UndefinedError: an operation on an undefined value
    type,           // TypeError
    value,          // ValueError
    key,            // KeyError
    index,          // IndexError
    zero_division,  // ZeroDivisionError
    overflow,       // OverflowError (also integers beyond 64 bits)
    security,       // SecurityError: the sandbox refused (mutating a list, private attribute)
    raised,         // TemplateError from raise_exception()
    runtime,        // TemplateRuntimeError and others
    limit,          // a resource limit of this interpreter (loop count, depth, output size)
};

const char* error_kind_name(ErrorKind kind);

// Thrown while parsing or rendering. `line`/`construct` are filled in by the innermost node
// that knows them, so helpers below the evaluator throw without a location.
class TemplateError : public std::exception {
  public:
    TemplateError(ErrorKind kind, std::string message)
        : kind_(kind), message_(std::move(message)) {}

    ErrorKind kind() const { return kind_; }
    const std::string& message() const { return message_; }
    int line() const { return line_; }
    const std::string& construct() const { return construct_; }
    bool located() const { return line_ > 0; }
    void locate(int line, std::string construct) {
        line_ = line;
        construct_ = std::move(construct);
    }
    // The template's name, prefixed once the error leaves the template (Template::render).
    void set_template_name(std::string name) { name_ = std::move(name); }

    // "template 'NAME', line 3, in filter 'tojson': TypeError: Object of type ..."
    const char* what() const noexcept override;

  private:
    ErrorKind kind_;
    std::string message_;
    int line_ = 0;
    std::string construct_;
    std::string name_;
    mutable std::string what_;
};

template <typename... Args>
[[noreturn]] void throw_error(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
    throw TemplateError(kind, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace mw::tmpl
