// The template lexer: text and tags to tokens, with Jinja2's whitespace rules as transformers
// configures them (trim_blocks, lstrip_blocks, keep_trailing_newline=False) and the `-`/`+`
// markers. Line breaks are normalised to "\n" first, as Jinja2 does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mw::tmpl {

enum class TokenType {
    data,         // template text between tags (never empty)
    var_begin,    // {{
    var_end,      // }}
    block_begin,  // {%
    block_end,    // %}
    name,
    string,    // value: the unescaped text
    integer,   // int_value
    floating,  // float_value
    op,        // value: the operator ("+", "//", "(", ...)
    eof,
};

struct Token {
    TokenType type;
    std::string value;
    int64_t int_value = 0;
    double float_value = 0;
    int line = 1;
};

struct LexOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
    bool keep_trailing_newline = false;
};

// Throws TemplateError (syntax) with the line of the offending character. The last token is
// eof. The source must be valid UTF-8.
std::vector<Token> lex(std::string_view source, const LexOptions& options = {});

// "end of print statement", "'in'", ... as Jinja2's messages describe tokens.
std::string describe(const Token& token);

}  // namespace mw::tmpl
