#include "template/text.h"

#include <algorithm>
#include <unordered_map>

#include "template/error.h"
#include "vocab/unicode.h"
#include "vocab/unicode_data.h"

namespace mw::tmpl::text {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 (overlong forms, surrogates and code
// points above U+10FFFF are invalid, as Python's decoder has them).
size_t valid_sequence(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return uint8_t(s[k]); };
    const uint8_t c = b(i);
    if (c < 0x80) return 1;
    size_t n;
    char32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

// Uppercase as the inverse of the simple lowercase table, with the mappings that are not.
const std::unordered_map<char32_t, char32_t>& upper_table() {
    static const std::unordered_map<char32_t, char32_t> table = [] {
        std::unordered_map<char32_t, char32_t> t;
        for (size_t i = 0; i < unicode::data::kLowercaseCount; ++i) {
            const auto& p = unicode::data::kLowercase[i];
            t.emplace(char32_t(p.to), char32_t(p.from));  // first wins: the plain capital
        }
        t[U'\u00B5'] = U'\u039C';  // micro sign
        t[U'\u017F'] = U'S';       // long s
        t[U'\u03C2'] = U'\u03A3';  // final sigma
        t[U'\u1FBE'] = U'\u0399';
        t[U'\u01C5'] = U'\u01C4';  // title-case digraphs
        t[U'\u01C8'] = U'\u01C7';
        t[U'\u01CB'] = U'\u01CA';
        t[U'\u01F2'] = U'\u01F1';
        t[U'\u0130'] = U'\u0130';
        t[U'\u0131'] = U'I';  // dotless i
        return t;
    }();
    return table;
}

char32_t simple_upper(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
    const auto& t = upper_table();
    const auto it = t.find(c);
    return it == t.end() ? c : it->second;
}

char32_t simple_lower(char32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    return char32_t(unicode::to_lower(uint32_t(c)));
}

// Full uppercase mappings that expand (SpecialCasing.txt, the common ones).
const char32_t* full_upper(char32_t c) {
    switch (c) {
        case U'\u00DF':
            return U"SS";
        case U'\uFB00':
            return U"FF";
        case U'\uFB01':
            return U"FI";
        case U'\uFB02':
            return U"FL";
        case U'\uFB03':
            return U"FFI";
        case U'\uFB04':
            return U"FFL";
        case U'\uFB05':
        case U'\uFB06':
            return U"ST";
        case U'\u0149':
            return U"\u02BCN";
        default:
            return nullptr;
    }
}

void append_upper(std::u32string& out, char32_t c) {
    if (const char32_t* full = full_upper(c)) {
        out += full;
    } else {
        out += simple_upper(c);
    }
}

char32_t title_char(char32_t c) {
    if (c >= 0x01C4 && c <= 0x01CC) return 0x01C5 + 3 * ((c - 0x01C4) / 3);
    if (c >= 0x01F1 && c <= 0x01F3) return 0x01F2;
    return simple_upper(c);
}

void append_title(std::u32string& out, char32_t c) {
    if (c == U'\u00DF') {
        out += U"Ss";
    } else if (c >= 0xFB00 && c <= 0xFB06) {
        const char32_t* full = full_upper(c);
        out += full[0];
        for (const char32_t* p = full + 1; *p; ++p) out += simple_lower(*p);
    } else {
        out += title_char(c);
    }
}

void append_lower(std::u32string& out, std::u32string_view s, size_t i) {
    const char32_t c = s[i];
    if (c == U'\u0130') {
        out += U"i\u0307";
    } else if (c == U'\u03A3') {
        // Final sigma: after a cased letter and not before one.
        const bool after = i > 0 && is_cased(s[i - 1]);
        const bool before = i + 1 < s.size() && is_cased(s[i + 1]);
        out += (after && !before) ? U'\u03C2' : U'\u03C3';
    } else {
        out += simple_lower(c);
    }
}

bool in_chars(char32_t c, const std::u32string& chars) {
    return chars.find(c) != std::u32string::npos;
}

}  // namespace

std::optional<size_t> invalid_utf8_offset(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const size_t n = valid_sequence(s, i);
        if (n == 0) return i;
        i += n;
    }
    return std::nullopt;
}

std::string repair_utf8(std::string_view s) {
    if (!invalid_utf8_offset(s)) return std::string(s);
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const size_t n = valid_sequence(s, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    return out;
}

bool is_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return uint8_t(c) < 0x80; });
}

std::u32string decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const uint8_t c = uint8_t(s[i]);
        size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        n = std::min(n, s.size() - i);
        char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
        for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3F);
        out += cp;
        i += n;
    }
    return out;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += char(c);
    } else if (c < 0x800) {
        out += char(0xC0 | (c >> 6));
        out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += char(0xE0 | (c >> 12));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
    } else {
        out += char(0xF0 | (c >> 18));
        out += char(0x80 | ((c >> 12) & 0x3F));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
    }
}

std::string encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) append_utf8(out, c);
    return out;
}

size_t length(std::string_view s) {
    size_t n = 0;
    for (char c : s) n += (uint8_t(c) & 0xC0) != 0x80;
    return n;
}

std::string substr(std::string_view s, size_t start, size_t stop) {
    if (is_ascii(s)) {
        start = std::min(start, s.size());
        stop = std::clamp(stop, start, s.size());
        return std::string(s.substr(start, stop - start));
    }
    const std::u32string u = decode(s);
    start = std::min(start, u.size());
    stop = std::clamp(stop, start, u.size());
    return encode(std::u32string_view(u).substr(start, stop - start));
}

bool is_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_alpha(char32_t c) {
    if (c < 0x80) return (c | 32) >= 'a' && (c | 32) <= 'z';
    return unicode::info(uint32_t(c)).is_letter();
}

bool is_numeric(char32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    return unicode::info(uint32_t(c)).is_number();
}

bool is_alnum(char32_t c) {
    return is_alpha(c) || is_numeric(c);
}

bool is_lower(char32_t c) {
    return simple_upper(c) != c || c == U'\u00DF';
}
bool is_upper(char32_t c) {
    return simple_lower(c) != c;
}
bool is_cased(char32_t c) {
    return is_lower(c) || is_upper(c);
}

bool is_printable(char32_t c) {
    if (c < 0x80) return c >= 0x20 && c < 0x7F;
    const auto cat = unicode::info(uint32_t(c)).category;
    return cat != unicode::control && cat != unicode::undefined && cat != unicode::separator;
}

bool is_word(char32_t c) {
    return c == '_' || is_alnum(c);
}

bool is_linebreak(char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
           c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
}

std::string lower(std::string_view s) {
    if (is_ascii(s)) {
        std::string out(s);
        for (char& c : out) c = char(simple_lower(char32_t(c)));
        return out;
    }
    const std::u32string u = decode(s);
    std::u32string out;
    for (size_t i = 0; i < u.size(); ++i) append_lower(out, u, i);
    return encode(out);
}

std::string upper(std::string_view s) {
    if (is_ascii(s)) {
        std::string out(s);
        for (char& c : out) c = char(simple_upper(char32_t(c)));
        return out;
    }
    std::u32string out;
    for (char32_t c : decode(s)) append_upper(out, c);
    return encode(out);
}

std::string swapcase(std::string_view s) {
    const std::u32string u = decode(s);
    std::u32string out;
    for (size_t i = 0; i < u.size(); ++i) {
        if (is_upper(u[i])) {
            append_lower(out, u, i);
        } else if (is_lower(u[i])) {
            append_upper(out, u[i]);
        } else {
            out += u[i];
        }
    }
    return encode(out);
}

std::string title(std::string_view s) {
    const std::u32string u = decode(s);
    std::u32string out;
    bool previous_cased = false;
    for (size_t i = 0; i < u.size(); ++i) {
        if (previous_cased) {
            append_lower(out, u, i);
        } else {
            append_title(out, u[i]);
        }
        previous_cased = is_cased(u[i]);
    }
    return encode(out);
}

std::string capitalize(std::string_view s) {
    const std::u32string u = decode(s);
    std::u32string out;
    for (size_t i = 0; i < u.size(); ++i) {
        if (i == 0) {
            append_title(out, u[i]);
        } else {
            append_lower(out, u, i);
        }
    }
    return encode(out);
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
    const std::u32string u = decode(s);
    const std::u32string set = chars ? decode(*chars) : std::u32string();
    const auto strippable = [&](char32_t c) { return chars ? in_chars(c, set) : is_space(c); };
    size_t begin = 0, end = u.size();
    if (left)
        while (begin < end && strippable(u[begin])) ++begin;
    if (right)
        while (end > begin && strippable(u[end - 1])) --end;
    return encode(std::u32string_view(u).substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit) {
    std::vector<std::string> out;
    if (maxsplit < 0) maxsplit = INT64_MAX;
    if (sep) {
        if (sep->empty()) throw_error(ErrorKind::value, "empty separator");
        size_t pos = 0;
        while (maxsplit-- > 0) {
            const size_t at = s.find(*sep, pos);
            if (at == std::string_view::npos) break;
            out.emplace_back(s.substr(pos, at - pos));
            pos = at + sep->size();
        }
        out.emplace_back(s.substr(pos));
        return out;
    }
    const std::u32string u = decode(s);
    size_t i = 0;
    while (true) {
        while (i < u.size() && is_space(u[i])) ++i;
        if (i == u.size()) break;
        if (maxsplit-- <= 0) {
            out.push_back(encode(std::u32string_view(u).substr(i)));  // trailing space kept
            break;
        }
        const size_t start = i;
        while (i < u.size() && !is_space(u[i])) ++i;
        out.push_back(encode(std::u32string_view(u).substr(start, i - start)));
    }
    return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit) {
    std::vector<std::string> out;
    if (maxsplit < 0) maxsplit = INT64_MAX;
    if (sep) {
        if (sep->empty()) throw_error(ErrorKind::value, "empty separator");
        size_t end = s.size();
        while (maxsplit-- > 0) {
            if (end < sep->size()) break;
            const size_t at = s.rfind(*sep, end - sep->size());
            if (at == std::string_view::npos) break;
            out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
            end = at;
        }
        out.emplace_back(s.substr(0, end));
        std::reverse(out.begin(), out.end());
        return out;
    }
    const std::u32string u = decode(s);
    size_t i = u.size();
    while (true) {
        while (i > 0 && is_space(u[i - 1])) --i;
        if (i == 0) break;
        if (maxsplit-- <= 0) {
            out.push_back(encode(std::u32string_view(u).substr(0, i)));  // leading space kept
            break;
        }
        const size_t end = i;
        while (i > 0 && !is_space(u[i - 1])) --i;
        out.push_back(encode(std::u32string_view(u).substr(i, end - i)));
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
    const std::u32string u = decode(s);
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i < u.size(); ++i) {
        if (!is_linebreak(u[i])) continue;
        size_t end = i;
        if (u[i] == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ++i;
        out.push_back(
            encode(std::u32string_view(u).substr(start, (keepends ? i + 1 : end) - start)));
        start = i + 1;
    }
    if (start < u.size()) out.push_back(encode(std::u32string_view(u).substr(start)));
    return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with,
                    int64_t count) {
    if (count < 0) count = INT64_MAX;
    std::string out;
    if (old.empty()) {
        // Between every code point, and at both ends.
        const std::u32string u = decode(s);
        for (size_t i = 0; i <= u.size(); ++i) {
            if (count > 0) {
                out += with;
                --count;
            }
            if (i < u.size()) append_utf8(out, u[i]);
        }
        return out;
    }
    size_t pos = 0;
    while (count-- > 0) {
        const size_t at = s.find(old, pos);
        if (at == std::string_view::npos) break;
        out.append(s.substr(pos, at - pos));
        out.append(with);
        pos = at + old.size();
    }
    out.append(s.substr(pos));
    return out;
}

SliceIndices resolve_slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                           std::optional<int64_t> step, size_t size) {
    const int64_t len = int64_t(size);
    const int64_t st = step.value_or(1);
    if (st == 0) throw_error(ErrorKind::value, "slice step cannot be zero");
    const auto clamp = [&](std::optional<int64_t> v, int64_t if_missing) {
        if (!v) return if_missing;
        int64_t x = *v;
        if (x < 0) {
            x += len;
            if (x < 0) x = st < 0 ? -1 : 0;
        } else if (x >= len) {
            x = st < 0 ? len - 1 : len;
        }
        return x;
    };
    SliceIndices r;
    r.step = st;
    if (st > 0) {
        r.start = clamp(start, 0);
        r.stop = clamp(stop, len);
        r.count = r.stop > r.start ? size_t((r.stop - r.start + st - 1) / st) : 0;
    } else {
        r.start = clamp(start, len - 1);
        r.stop = clamp(stop, -1);
        r.count = r.start > r.stop ? size_t((r.start - r.stop - st - 1) / -st) : 0;
    }
    return r;
}

std::pair<size_t, size_t> resolve_range(std::optional<int64_t> start, std::optional<int64_t> end,
                                        size_t size) {
    const int64_t len = int64_t(size);
    const auto fix = [&](std::optional<int64_t> v, int64_t if_missing) {
        if (!v) return if_missing;
        int64_t x = *v;
        if (x < 0) x = std::max<int64_t>(0, x + len);
        return x;
    };
    // The start is not clamped to the length: a start past the end finds nothing.
    return {size_t(fix(start, 0)), size_t(std::min(fix(end, len), len))};
}

int64_t find(std::u32string_view s, std::u32string_view sub, size_t start, size_t end,
             bool reverse) {
    if (start > end || end - start < sub.size()) return -1;
    const std::u32string_view window = s.substr(start, end - start);
    const size_t at = reverse ? window.rfind(sub) : window.find(sub);
    return at == std::u32string_view::npos ? -1 : int64_t(start + at);
}

size_t count(std::u32string_view s, std::u32string_view sub, size_t start, size_t end) {
    if (start > end) return 0;
    const std::u32string_view window = s.substr(start, end - start);
    if (sub.empty()) return window.size() + 1;
    size_t n = 0;
    for (size_t at = window.find(sub); at != std::u32string_view::npos;
         at = window.find(sub, at + sub.size()))
        ++n;
    return n;
}

std::string center(std::string_view s, int64_t width, char32_t fill) {
    const int64_t len = int64_t(length(s));
    if (width <= len) return std::string(s);
    const int64_t marg = width - len;
    const int64_t left = marg / 2 + (marg & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) append_utf8(out, fill);
    out += s;
    for (int64_t i = 0; i < marg - left; ++i) append_utf8(out, fill);
    return out;
}

std::string ljust(std::string_view s, int64_t width, char32_t fill) {
    std::string out(s);
    for (int64_t i = int64_t(length(s)); i < width; ++i) append_utf8(out, fill);
    return out;
}

std::string rjust(std::string_view s, int64_t width, char32_t fill) {
    std::string out;
    for (int64_t i = int64_t(length(s)); i < width; ++i) append_utf8(out, fill);
    return out + std::string(s);
}

std::string zfill(std::string_view s, int64_t width) {
    const int64_t len = int64_t(length(s));
    if (width <= len) return std::string(s);
    std::string out(s);
    const size_t at = (!out.empty() && (out[0] == '+' || out[0] == '-')) ? 1 : 0;
    out.insert(at, size_t(width - len), '0');
    return out;
}

std::string expandtabs(std::string_view s, int64_t tabsize) {
    std::u32string out;
    size_t column = 0;
    for (char32_t c : decode(s)) {
        if (c == '\t') {
            if (tabsize > 0) {
                const size_t n = size_t(tabsize) - column % size_t(tabsize);
                out.append(n, U' ');
                column += n;
            }
        } else {
            out += c;
            column = (c == '\n' || c == '\r') ? 0 : column + 1;
        }
    }
    return encode(out);
}

std::string py_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t c : decode(s)) {
        if (c == char32_t(quote) || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (is_printable(c)) {
            append_utf8(out, c);
        } else if (c < 0x100) {
            out += fmt::format("\\x{:02x}", uint32_t(c));
        } else if (c < 0x10000) {
            out += fmt::format("\\u{:04x}", uint32_t(c));
        } else {
            out += fmt::format("\\U{:08x}", uint32_t(c));
        }
    }
    out += quote;
    return out;
}

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

}  // namespace mw::tmpl::text
