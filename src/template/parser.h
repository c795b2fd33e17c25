// The template parser: tokens to the syntax tree, following Jinja2's grammar (jinja2/parser.py)
// with the loopcontrols extension (break, continue). After parsing, a check does what Jinja2's
// compiler does before rendering: unknown filters and tests are errors unless inside an `if`
// or an inline `if` (there they fail only when evaluated), `break`/`continue` must be inside a
// loop, and macros learn whether their body uses `caller`, `kwargs` or `varargs`.
#pragma once

#include <string_view>

#include "template/ast.h"
#include "template/lexer.h"

namespace mw::tmpl {

struct ParseOptions {
    LexOptions lex;
    int max_depth = 200;  // nesting of expressions and blocks
};

// Throws TemplateError (syntax) naming the line and the construct.
Body parse(std::string_view source, const ParseOptions& options = {});

// The checks after parsing (checker.cpp); throws TemplateError (syntax).
void check(Body& body);

}  // namespace mw::tmpl
