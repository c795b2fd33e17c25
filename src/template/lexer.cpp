#include "template/lexer.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "template/error.h"
#include "template/text.h"

namespace mw::tmpl {

namespace {

// Byte length of the whitespace character (str.isspace) at s[i], or 0.
size_t space_at(std::string_view s, size_t i) {
    if (i >= s.size()) return 0;
    const uint8_t c = uint8_t(s[i]);
    if (c < 0x80) return text::is_space(c) ? 1 : 0;
    const size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (i + n > s.size()) return 0;
    const std::u32string u = text::decode(s.substr(i, n));
    return !u.empty() && text::is_space(u[0]) ? n : 0;
}

size_t skip_space(std::string_view s, size_t i) {
    while (size_t n = space_at(s, i)) i += n;
    return i;
}

bool all_space(std::string_view s) {
    return !s.empty() && skip_space(s, 0) == s.size();
}

// Python's str.rstrip().
std::string_view rstrip(std::string_view s) {
    const std::u32string u = text::decode(s);
    size_t end = u.size();
    while (end > 0 && text::is_space(u[end - 1])) --end;
    size_t bytes = 0;
    for (size_t i = 0; i < end; ++i)
        bytes += u[i] < 0x80 ? 1 : u[i] < 0x800 ? 2 : u[i] < 0x10000 ? 3 : 4;
    return s.substr(0, bytes);
}

int count_newlines(std::string_view s) {
    return int(std::count(s.begin(), s.end(), '\n'));
}

bool is_name_start(char32_t c) {
    return c == '_' || (c < 0x80 ? ((c | 32) >= 'a' && (c | 32) <= 'z') : text::is_alpha(c));
}
bool is_name_char(char32_t c) {
    return is_name_start(c) || (c >= '0' && c <= '9') || (c >= 0x80 && text::is_alnum(c));
}

const char* const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                  "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                  ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};

// Python's "unicode-escape" decoding of a string literal's body, after its non-ASCII
// characters were written as backslash escapes (which is what Jinja2 does).
std::string unescape(std::string_view body, int line) {
    std::string out;
    const auto fail = [&](const char* what) {
        TemplateError e(ErrorKind::syntax, fmt::format("{} in string literal", what));
        e.locate(line, "string literal");
        throw e;
    };
    const auto hex = [&](size_t at, size_t n) -> char32_t {
        if (at + n > body.size()) fail("truncated escape");
        uint32_t v = 0;
        for (size_t k = 0; k < n; ++k) {
            const char c = body[at + k];
            const int d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
            if (d < 0) fail("truncated escape");
            v = v * 16 + uint32_t(d);
        }
        return char32_t(v);
    };
    for (size_t i = 0; i < body.size();) {
        if (body[i] != '\\' || i + 1 >= body.size()) {
            out += body[i++];
            continue;
        }
        const char e = body[i + 1];
        i += 2;
        char32_t cp = 0;
        switch (e) {
            case '\n':
                continue;  // line continuation
            case '\\':
            case '\'':
            case '"':
                out += e;
                continue;
            case 'a':
                out += '\a';
                continue;
            case 'b':
                out += '\b';
                continue;
            case 'f':
                out += '\f';
                continue;
            case 'n':
                out += '\n';
                continue;
            case 'r':
                out += '\r';
                continue;
            case 't':
                out += '\t';
                continue;
            case 'v':
                out += '\v';
                continue;
            case 'x':
                cp = hex(i, 2);
                i += 2;
                break;
            case 'u':
                cp = hex(i, 4);
                i += 4;
                break;
            case 'U':
                cp = hex(i, 8);
                i += 8;
                break;
            case 'N':
                fail("\\N{...} escape (not supported)");
                continue;
            default:
                if (e >= '0' && e <= '7') {
                    cp = char32_t(e - '0');
                    for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7';
                         ++k)
                        cp = cp * 8 + char32_t(body[i++] - '0');
                    break;
                }
                if (uint8_t(e) >= 0x80) {
                    // The backslash pairs with the one Jinja2's backslashreplace wrote before
                    // this character: what remains is that escape's text ("\xe9" -> "xe9").
                    const size_t start = i - 1;
                    size_t n = 1;
                    while (start + n < body.size() && (uint8_t(body[start + n]) & 0xC0) == 0x80)
                        ++n;
                    const char32_t c = text::decode(body.substr(start, n))[0];
                    out += '\\';
                    out += c < 0x100     ? fmt::format("x{:02x}", uint32_t(c))
                           : c < 0x10000 ? fmt::format("u{:04x}", uint32_t(c))
                                         : fmt::format("U{:08x}", uint32_t(c));
                    i = start + n;
                    continue;
                }
                out += '\\';  // unknown escapes stay as written
                out += e;
                continue;
        }
        if (cp > 0x10FFFF) fail("illegal Unicode character");
        if (cp >= 0xD800 && cp <= 0xDFFF) fail("surrogate code point");
        text::append_utf8(out, cp);
    }
    return out;
}

class Lexer {
  public:
    Lexer(std::string_view source, const LexOptions& options) : options_(options) {
        // Line breaks to "\n"; drop one trailing line break.
        src_.reserve(source.size());
        for (size_t i = 0; i < source.size(); ++i) {
            if (source[i] == '\r') {
                src_ += '\n';
                if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
            } else {
                src_ += source[i];
            }
        }
        if (!options.keep_trailing_newline && !src_.empty() && src_.back() == '\n') src_.pop_back();
    }

    std::vector<Token> run() {
        while (pos_ < src_.size()) root();
        tokens_.push_back({TokenType::eof, "", 0, 0, line_});
        return std::move(tokens_);
    }

  private:
    [[noreturn]] void fail(const std::string& message) {
        TemplateError e(ErrorKind::syntax, message);
        e.locate(line_, "template text");
        throw e;
    }

    void emit(TokenType type, std::string value) { tokens_.push_back({type, value, 0, 0, line_}); }

    void emit_data(std::string_view original, std::string_view kept, int lines_before) {
        if (!kept.empty()) tokens_.push_back({TokenType::data, std::string(kept), 0, 0, line_});
        (void)lines_before;
        line_ += count_newlines(original);
    }

    // Applies the `-` / lstrip_blocks rules to the text before a tag and emits it.
    void data_before_tag(std::string_view text, char sign, bool is_variable) {
        std::string_view kept = text;
        if (sign == '-') {
            kept = rstrip(text);
        } else if (sign != '+' && options_.lstrip_blocks && !is_variable) {
            const size_t nl = text.rfind('\n');
            const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if ((l_pos > 0 || line_starting_) && all_space(text.substr(l_pos)))
                kept = text.substr(0, l_pos);
        }
        emit_data(text, kept, 0);
    }

    // After a closing tag: whitespace control of what follows it.
    void after_end(char sign, bool trim) {
        if (sign == '-') {
            const size_t end = skip_space(src_, pos_);
            line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
            pos_ = end;
        } else if (sign != '+' && trim && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
            ++line_;
        }
        line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    }

    static char sign_at(std::string_view s, size_t i) {
        return i < s.size() && (s[i] == '-' || s[i] == '+') ? s[i] : 0;
    }

    // `{% raw %}` at `at` (any sign, any spacing): the position after its closing tag.
    std::optional<size_t> raw_begin(size_t at, char& end_sign) const {
        const std::string_view s = src_;
        size_t i = at + 2;
        if (sign_at(s, i)) ++i;
        i = skip_space(s, i);
        if (s.substr(i, 3) != "raw") return std::nullopt;
        i = skip_space(s, i + 3);
        if (s.substr(i, 3) == "-%}") {
            end_sign = '-';
            return i + 3;
        }
        if (s.substr(i, 2) == "%}") {
            end_sign = '+';  // no trim_blocks after raw's opening tag
            return i + 2;
        }
        return std::nullopt;
    }

    void root() {
        const std::string_view s = src_;
        size_t tag = pos_;
        while (true) {
            tag = s.find('{', tag);
            if (tag == std::string_view::npos || tag + 1 >= s.size()) {
                emit_data(s.substr(pos_), s.substr(pos_), 0);
                pos_ = s.size();
                return;
            }
            const char k = s[tag + 1];
            if (k == '{' || k == '%' || k == '#') break;
            ++tag;
        }
        const char kind = s[tag + 1];
        const char sign = sign_at(s, tag + 2);
        const std::string_view text = s.substr(pos_, tag - pos_);
        char raw_end_sign = 0;
        const std::optional<size_t> raw = kind == '%' ? raw_begin(tag, raw_end_sign) : std::nullopt;
        data_before_tag(text, sign, kind == '{');
        pos_ = tag + 2 + (sign ? 1 : 0);
        line_starting_ = false;
        if (raw) {
            line_ += count_newlines(s.substr(pos_, *raw - pos_));
            pos_ = *raw;
            after_end(raw_end_sign, false);
            raw_body();
        } else if (kind == '#') {
            comment();
        } else {
            emit(kind == '{' ? TokenType::var_begin : TokenType::block_begin, "");
            tag_body(kind == '{');
        }
    }

    void comment() {
        const std::string_view s = src_;
        const size_t start = pos_;
        const size_t close = s.find("#}", pos_);
        if (close == std::string_view::npos) fail("Missing end of comment tag");
        size_t body_end = close;
        char sign = 0;
        if (close > start && (s[close - 1] == '-' || s[close - 1] == '+')) {
            sign = s[close - 1];
            --body_end;
        }
        line_ += count_newlines(s.substr(start, close + 2 - start));
        pos_ = close + 2;
        after_end(sign, options_.trim_blocks);
    }

    void raw_body() {
        const std::string_view s = src_;
        // The first `{%[-+]? endraw %}`.
        size_t at = pos_;
        while (true) {
            at = s.find("{%", at);
            if (at == std::string_view::npos) fail("Missing end of raw directive");
            size_t i = at + 2;
            const char sign = sign_at(s, i);
            if (sign) ++i;
            i = skip_space(s, i);
            if (s.substr(i, 6) == "endraw") {
                i = skip_space(s, i + 6);
                char end_sign = 0;
                size_t end = 0;
                if (s.substr(i, 3) == "+%}" || s.substr(i, 3) == "-%}") {
                    end_sign = s[i];
                    end = i + 3;
                } else if (s.substr(i, 2) == "%}") {
                    end = i + 2;
                }
                if (end) {
                    data_before_tag(s.substr(pos_, at - pos_), sign, false);
                    line_ += count_newlines(s.substr(at, end - at));
                    pos_ = end;
                    after_end(end_sign, options_.trim_blocks);
                    return;
                }
            }
            at += 2;
        }
    }

    void tag_body(bool variable) {
        const std::string_view s = src_;
        std::vector<char> balance;
        while (true) {
            if (pos_ >= s.size()) return;  // the parser reports the unclosed tag
            if (balance.empty()) {
                if (variable) {
                    if (s.substr(pos_, 3) == "-}}") {
                        emit(TokenType::var_end, "");
                        pos_ += 3;
                        after_end('-', false);
                        return;
                    }
                    if (s.substr(pos_, 2) == "}}") {
                        emit(TokenType::var_end, "");
                        pos_ += 2;
                        after_end(0, false);
                        return;
                    }
                } else {
                    const char sign = sign_at(s, pos_);
                    if (s.substr(pos_ + (sign ? 1 : 0), 2) == "%}") {
                        emit(TokenType::block_end, "");
                        pos_ += sign ? 3 : 2;
                        after_end(sign, options_.trim_blocks);
                        return;
                    }
                }
            }
            if (const size_t n = space_at(s, pos_)) {
                const size_t end = skip_space(s, pos_);
                line_ += count_newlines(s.substr(pos_, end - pos_));
                pos_ = end;
                (void)n;
                continue;
            }
            if (number()) continue;
            if (name()) continue;
            if (string_literal()) continue;
            op(balance);
        }
    }

    // Digits with single underscores between them, from i; returns the end (i if none).
    size_t digits(size_t i, bool (*ok)(char)) const {
        const std::string_view s = src_;
        if (i >= s.size() || !ok(s[i])) return i;
        size_t j = i + 1;
        while (j < s.size()) {
            if (ok(s[j])) {
                ++j;
            } else if (s[j] == '_' && j + 1 < s.size() && ok(s[j + 1])) {
                j += 2;
            } else {
                break;
            }
        }
        return j;
    }

    bool number() {
        const std::string_view s = src_;
        const auto dec = [](char c) { return c >= '0' && c <= '9'; };
        if (!dec(s[pos_])) return false;
        // Floats first (not right after a '.', so that `a.0.1` is two lookups).
        if (pos_ == 0 || s[pos_ - 1] != '.') {
            const size_t int_end = digits(pos_, dec);
            size_t end = int_end;
            bool is_float = false;
            if (end < s.size() && s[end] == '.' && end + 1 < s.size() && dec(s[end + 1])) {
                end = digits(end + 1, dec);
                is_float = true;
            }
            if (end < s.size() && (s[end] == 'e' || s[end] == 'E')) {
                size_t e = end + 1;
                if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
                const size_t exp_end = digits(e, dec);
                if (exp_end > e) {
                    end = exp_end;
                    is_float = true;
                }
            }
            if (is_float) {
                std::string t;
                for (char c : s.substr(pos_, end - pos_))
                    if (c != '_') t += c;
                double v = 0;
                std::from_chars(t.data(), t.data() + t.size(), v);
                tokens_.push_back({TokenType::floating, t, 0, v, line_});
                pos_ = end;
                return true;
            }
        }
        int base = 10;
        size_t start = pos_, end;
        if (s[pos_] == '0' && pos_ + 1 < s.size() &&
            std::string_view("bBoOxX").find(s[pos_ + 1]) != std::string_view::npos) {
            const char p = char(s[pos_ + 1] | 32);
            base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
            bool (*ok)(char) = p == 'b'   ? [](char c) { return c == '0' || c == '1'; }
                               : p == 'o' ? [](char c) { return c >= '0' && c <= '7'; }
                                          : [](char c) {
                                                return (c >= '0' && c <= '9') ||
                                                       ((c | 32) >= 'a' && (c | 32) <= 'f');
                                            };
            size_t first = pos_ + 2;
            if (first < s.size() && s[first] == '_') ++first;
            end = digits(first, ok);
            if (end == first) {
                end = pos_ + 1;  // just "0"
                base = 10;
            } else {
                start = pos_ + 2;
            }
        } else if (s[pos_] == '0') {
            end = digits(pos_, [](char c) { return c == '0'; });
        } else {
            end = digits(pos_, dec);
        }
        std::string t;
        for (char c : s.substr(start, end - start))
            if (c != '_') t += c;
        uint64_t v = 0;
        const auto res = std::from_chars(t.data(), t.data() + t.size(), v, base);
        if (res.ec != std::errc() || v > uint64_t(INT64_MAX))
            fail(fmt::format("integer literal {} is too large", s.substr(pos_, end - pos_)));
        tokens_.push_back({TokenType::integer, t, int64_t(v), 0, line_});
        pos_ = end;
        return true;
    }

    bool name() {
        const std::string_view s = src_;
        size_t i = pos_;
        bool first = true;
        while (i < s.size()) {
            const uint8_t c = uint8_t(s[i]);
            const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
            const char32_t cp = text::decode(s.substr(i, n))[0];
            if (!(first ? is_name_start(cp) : is_name_char(cp))) break;
            first = false;
            i += n;
        }
        if (i == pos_) return false;
        emit(TokenType::name, std::string(s.substr(pos_, i - pos_)));
        pos_ = i;
        return true;
    }

    bool string_literal() {
        const std::string_view s = src_;
        const char quote = s[pos_];
        if (quote != '\'' && quote != '"') return false;
        size_t i = pos_ + 1;
        while (i < s.size() && s[i] != quote) i += s[i] == '\\' ? 2 : 1;
        if (i >= s.size())
            fail(fmt::format("unexpected char {} at {}", quote == '"' ? "'\"'" : "\"'\"", pos_));
        const std::string_view body = s.substr(pos_ + 1, i - pos_ - 1);
        tokens_.push_back({TokenType::string, unescape(body, line_), 0, 0, line_});
        line_ += count_newlines(body);
        pos_ = i + 1;
        return true;
    }

    void op(std::vector<char>& balance) {
        const std::string_view s = src_;
        for (const char* o : kOperators) {
            const std::string_view sv(o);
            if (s.substr(pos_, sv.size()) != sv) continue;
            if (sv == "(" || sv == "[" || sv == "{") {
                balance.push_back(sv == "(" ? ')' : sv == "[" ? ']' : '}');
            } else if (sv == ")" || sv == "]" || sv == "}") {
                if (balance.empty()) fail(fmt::format("unexpected '{}'", sv));
                if (balance.back() != sv[0])
                    fail(fmt::format("unexpected '{}', expected '{}'", sv, balance.back()));
                balance.pop_back();
            }
            emit(TokenType::op, std::string(sv));
            pos_ += sv.size();
            return;
        }
        const uint8_t c = uint8_t(s[pos_]);
        const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        fail(fmt::format("unexpected char {} at {}", text::py_repr(s.substr(pos_, n)), pos_));
    }

    LexOptions options_;
    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
    if (const auto bad = text::invalid_utf8_offset(source)) {
        const int line = 1 + count_newlines(source.substr(0, *bad));
        TemplateError e(ErrorKind::syntax,
                        fmt::format("the template is not valid UTF-8 (byte {})", *bad));
        e.locate(line, "template text");
        throw e;
    }
    return Lexer(source, options).run();
}

std::string describe(const Token& token) {
    switch (token.type) {
        case TokenType::data:
            return "template data / text";
        case TokenType::var_begin:
            return "begin of print statement";
        case TokenType::var_end:
            return "end of print statement";
        case TokenType::block_begin:
            return "begin of statement block";
        case TokenType::block_end:
            return "end of statement block";
        case TokenType::name:
        case TokenType::op:
        case TokenType::integer:
        case TokenType::floating:
            return token.value;
        case TokenType::string:
            return "string";
        case TokenType::eof:
            return "end of template";
    }
    return "token";
}

}  // namespace mw::tmpl
