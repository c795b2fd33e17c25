#include "template/format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "template/evaluator.h"
#include "template/text.h"

namespace mw::tmpl {

namespace {

// Widths and precisions beyond this are refused: Python would allocate them.
constexpr int64_t kMaxWidth = 1 << 20;

std::string int_digits(int64_t v, int base, bool upper) {
    uint64_t u = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    if (u == 0) return "0";
    std::string out;
    const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    while (u) {
        out += digits[u % unsigned(base)];
        u /= unsigned(base);
    }
    std::reverse(out.begin(), out.end());
    return out;
}

// Inserts `sep` every `every` digits from the right of the integer part of `digits`.
std::string group_digits(const std::string& digits, char sep, size_t every) {
    size_t int_end = digits.find_first_not_of("0123456789abcdefABCDEF");
    if (int_end == std::string::npos) int_end = digits.size();
    std::string out;
    for (size_t i = 0; i < int_end; ++i) {
        if (i > 0 && (int_end - i) % every == 0) out += sep;
        out += digits[i];
    }
    return out + digits.substr(int_end);
}

// sign + prefix + body padded to `width` code points.
std::string pad(const std::string& sign, const std::string& body, int64_t width, char align,
                char32_t fill) {
    const int64_t len = int64_t(text::length(sign) + text::length(body));
    if (width <= len) return sign + body;
    const int64_t n = width - len;
    std::string f;
    text::append_utf8(f, fill);
    const auto fills = [&](int64_t k) {
        std::string s;
        for (int64_t i = 0; i < k; ++i) s += f;
        return s;
    };
    switch (align) {
        case '<':
            return sign + body + fills(n);
        case '^':
            return fills(n / 2) + sign + body + fills(n - n / 2);
        case '=':
            return sign + fills(n) + body;
        default:
            return fills(n) + sign + body;
    }
}

std::string c_format_double(char conv, int precision, bool alt, double d) {
    char fmt[16];
    std::snprintf(fmt, sizeof fmt, "%%%s.*%c", alt ? "#" : "", conv);
    const int n = std::snprintf(nullptr, 0, fmt, precision, d);
    std::string out(size_t(n) + 1, '\0');
    std::snprintf(out.data(), out.size(), fmt, precision, d);
    out.resize(size_t(n));
    return out;
}

// Python's "general" formats: 'g' (threshold p) and the no-type float format with a
// precision (threshold p - 1, at least one digit after the point).
std::string general_format(double d, int64_t precision, bool alt, bool upper, bool no_type) {
    if (std::isinf(d) || std::isnan(d)) {
        std::string s = std::isnan(d) ? "nan" : "inf";
        return upper ? text::upper(s) : s;
    }
    const int p = int(precision == 0 ? 1 : precision);
    const std::string e = c_format_double('e', p - 1, false, d);
    const int exp = std::atoi(e.c_str() + e.find('e') + 1);
    const int threshold = no_type ? p - 1 : p;
    std::string out;
    if (exp >= -4 && exp < threshold) {
        out = c_format_double('f', p - 1 - exp, alt, d);
        if (!alt && out.find('.') != std::string::npos) {
            while (out.back() == '0') out.pop_back();
            if (out.back() == '.') out.pop_back();
        }
        if (no_type && out.find('.') == std::string::npos) out += ".0";
    } else {
        out = c_format_double('e', p - 1, alt, d);
        if (!alt) {
            const size_t epos = out.find('e');
            std::string mant = out.substr(0, epos);
            if (mant.find('.') != std::string::npos) {
                while (mant.back() == '0') mant.pop_back();
                if (mant.back() == '.') mant.pop_back();
            }
            out = mant + out.substr(epos);
        }
    }
    if (upper) out = text::upper(out);
    return out;
}

int64_t to_index(const Value& v, const char* conv) {
    if (v.is_undefined()) v.fail_undefined();
    if (v.is_integral()) return v.as_int();
    if (v.is_float()) {
        const double d = v.as_double();
        if (std::isnan(d)) throw_error(ErrorKind::value, "cannot convert float NaN to integer");
        if (!(std::fabs(d) < 9.2e18)) throw_error(ErrorKind::overflow, "integer too large");
        return int64_t(d);
    }
    throw_error(ErrorKind::type, "%{} format: a real number is required, not {}", conv,
                type_name(v));
}

double to_double(const Value& v) {
    if (v.is_undefined()) v.fail_undefined();
    if (!v.is_number()) throw_error(ErrorKind::type, "must be real number, not {}", type_name(v));
    return v.as_double();
}

struct Spec {
    char32_t fill = ' ';
    char align = 0;
    char sign = '-';
    bool alt = false;
    bool zero = false;
    int64_t width = -1;
    char grouping = 0;
    int64_t precision = -1;
    char type = 0;
};

Spec parse_spec(std::string_view spec_text) {
    const std::u32string s = text::decode(spec_text);
    Spec spec;
    size_t i = 0;
    const auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
    if (s.size() >= 2 && is_align(s[1])) {
        spec.fill = s[0];
        spec.align = char(s[1]);
        i = 2;
    } else if (!s.empty() && is_align(s[0])) {
        spec.align = char(s[0]);
        i = 1;
    }
    if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = char(s[i++]);
    if (i < s.size() && s[i] == 'z') ++i;
    if (i < s.size() && s[i] == '#') {
        spec.alt = true;
        ++i;
    }
    if (i < s.size() && s[i] == '0') {
        spec.zero = true;
        ++i;
    }
    const auto number = [&]() {
        int64_t n = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            n = n * 10 + (s[i++] - '0');
            if (n > kMaxWidth) throw_error(ErrorKind::limit, "format width too large");
        }
        return n;
    };
    if (i < s.size() && s[i] >= '0' && s[i] <= '9') spec.width = number();
    if (i < s.size() && (s[i] == ',' || s[i] == '_')) spec.grouping = char(s[i++]);
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (i >= s.size() || s[i] < '0' || s[i] > '9')
            throw_error(ErrorKind::value, "Format specifier missing precision");
        spec.precision = number();
    }
    if (i < s.size()) spec.type = char(s[i++]);
    if (i < s.size() || (spec.type & 0x80))
        throw_error(ErrorKind::value, "Invalid format specifier '{}'", spec_text);
    if (spec.zero && !spec.align) {
        spec.fill = '0';
        spec.align = '=';
    }
    return spec;
}

std::string sign_of(bool negative, char sign) {
    if (negative) return "-";
    if (sign == '+') return "+";
    if (sign == ' ') return " ";
    return "";
}

std::string format_int_spec(int64_t v, const Spec& spec) {
    int base = 10;
    std::string prefix;
    switch (spec.type) {
        case 0:
        case 'd':
        case 'n':
            break;
        case 'b':
            base = 2;
            prefix = "0b";
            break;
        case 'o':
            base = 8;
            prefix = "0o";
            break;
        case 'x':
            base = 16;
            prefix = "0x";
            break;
        case 'X':
            base = 16;
            prefix = "0X";
            break;
        case 'c': {
            if (v < 0 || v > 0x10FFFF) throw_error(ErrorKind::overflow, "%c arg not in range");
            std::string s;
            text::append_utf8(s, char32_t(v));
            return pad("", s, spec.width, spec.align ? spec.align : '<', spec.fill);
        }
        default:
            throw_error(ErrorKind::value, "Unknown format code '{}' for object of type 'int'",
                        spec.type);
    }
    if (spec.precision >= 0)
        throw_error(ErrorKind::value, "Precision not allowed in integer format specifier");
    std::string digits = int_digits(v, base, spec.type == 'X');
    if (spec.grouping) digits = group_digits(digits, spec.grouping, base == 10 ? 3 : 4);
    const std::string sign = sign_of(v < 0, spec.sign) + (spec.alt ? prefix : "");
    return pad(sign, digits, spec.width, spec.align ? spec.align : '>', spec.fill);
}

std::string format_float_spec(double d, const Spec& spec) {
    const bool negative = std::signbit(d) && !std::isnan(d);
    const double a = std::fabs(d);
    const int64_t p = spec.precision < 0 ? 6 : spec.precision;
    std::string body;
    switch (spec.type) {
        case 0:
            body = spec.precision < 0 ? float_repr(a) : general_format(a, p, spec.alt, false, true);
            break;
        case 'e':
        case 'E':
        case 'f':
        case 'F':
            body = c_format_double(spec.type, int(p), spec.alt, a);
            break;
        case 'g':
        case 'G':
        case 'n':
            body = general_format(a, p, spec.alt, spec.type == 'G', false);
            break;
        case '%':
            body = c_format_double('f', int(p), spec.alt, a * 100) + "%";
            break;
        default:
            throw_error(ErrorKind::value, "Unknown format code '{}' for object of type 'float'",
                        spec.type);
    }
    if (spec.grouping) body = group_digits(body, spec.grouping, 3);
    return pad(sign_of(negative, spec.sign), body, spec.width, spec.align ? spec.align : '>',
               spec.fill);
}

// The next argument of a %-format.
struct PercentArgs {
    const Value& args;
    const List* tuple = nullptr;
    size_t next = 0;

    const Value& take() {
        if (!tuple) {
            if (next++ == 0) return args;
        } else if (next < tuple->size()) {
            return (*tuple)[next++];
        }
        throw_error(ErrorKind::type, "not enough arguments for format string");
    }
};

}  // namespace

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    const std::string s(buf, res.ptr);
    // "-d.ddde[+-]XX": split into sign, digits and the decimal exponent.
    const size_t epos = s.find('e');
    std::string mant = s.substr(0, epos);
    const int exp = std::atoi(s.c_str() + epos + 1);
    std::string sign;
    if (mant[0] == '-') {
        sign = "-";
        mant.erase(0, 1);
    }
    std::string digits;
    for (char c : mant)
        if (c != '.') digits += c;
    const int decpt = exp + 1;
    std::string out;
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out = "0." + std::string(size_t(-decpt), '0') + digits;
        } else if (size_t(decpt) >= digits.size()) {
            out = digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
        }
    } else {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
    }
    return sign + out;
}

std::string format_spec(const Value& v, std::string_view spec_text) {
    if (spec_text.empty()) return to_str(v);
    const Spec spec = parse_spec(spec_text);
    if (v.is_string()) {
        if (spec.type && spec.type != 's')
            throw_error(ErrorKind::value, "Unknown format code '{}' for object of type 'str'",
                        spec.type);
        if (spec.sign != '-')
            throw_error(ErrorKind::value, "Sign not allowed in string format specifier");
        if (spec.align == '=')
            throw_error(ErrorKind::value, "'=' alignment not allowed in string format specifier");
        std::string s = v.str();
        if (spec.precision >= 0) s = text::substr(s, 0, size_t(spec.precision));
        return pad("", s, spec.width, spec.align ? spec.align : '<', spec.fill);
    }
    if (v.is_integral()) {
        if (spec.type && std::string_view("eEfFgG%").find(spec.type) != std::string_view::npos)
            return format_float_spec(v.as_double(), spec);
        return format_int_spec(v.as_int(), spec);
    }
    if (v.is_float()) return format_float_spec(v.as_double(), spec);
    throw_error(ErrorKind::type, "unsupported format string passed to {}.__format__", type_name(v));
}

std::string format_percent(Evaluator& ev, std::string_view format, const Value& args,
                           bool escape_args) {
    PercentArgs source{args};
    if (args.is_tuple()) source.tuple = &args.items();
    const bool mapping = args.is_dict();
    std::string out;
    size_t i = 0;
    const auto bad_char = [&](size_t at) {
        const std::u32string rest = text::decode(format.substr(at));
        std::string c;
        text::append_utf8(c, rest[0]);
        throw_error(ErrorKind::value, "unsupported format character '{}' (0x{:x}) at index {}", c,
                    uint32_t(rest[0]), text::length(format.substr(0, at)));
    };
    bool used_mapping = false;
    while (i < format.size()) {
        const size_t pct = format.find('%', i);
        if (pct == std::string_view::npos) {
            out.append(format.substr(i));
            break;
        }
        out.append(format.substr(i, pct - i));
        i = pct + 1;
        if (i >= format.size()) throw_error(ErrorKind::value, "incomplete format");
        const Value* arg = nullptr;
        if (format[i] == '(') {
            if (!mapping) throw_error(ErrorKind::type, "format requires a mapping");
            int depth = 1;
            size_t j = i + 1;
            while (j < format.size() && depth > 0) {
                if (format[j] == '(') ++depth;
                if (format[j] == ')') --depth;
                ++j;
            }
            if (depth > 0) throw_error(ErrorKind::value, "incomplete format key");
            const std::string key(format.substr(i + 1, j - i - 2));
            arg = args.dict().find(key);
            if (!arg) throw_error(ErrorKind::key, "{}", text::py_repr(key));
            used_mapping = true;
            i = j;
        }
        Spec spec;
        spec.align = '>';
        bool zero = false;
        for (; i < format.size(); ++i) {
            const char c = format[i];
            if (c == '-') {
                spec.align = '<';
            } else if (c == '+' || c == ' ') {
                if (spec.sign != '+') spec.sign = c;
            } else if (c == '#') {
                spec.alt = true;
            } else if (c == '0') {
                zero = true;
            } else {
                break;
            }
        }
        const auto number = [&](int64_t& target) {
            if (i < format.size() && format[i] == '*') {
                ++i;
                const Value& w = source.take();
                if (!w.is_integral()) throw_error(ErrorKind::type, "* wants int");
                target = w.as_int();
                if (target < 0 && &target == &spec.width) {
                    spec.align = '<';
                    target = -target;
                }
            } else {
                int64_t n = -1;
                while (i < format.size() && format[i] >= '0' && format[i] <= '9') {
                    n = (n < 0 ? 0 : n * 10) + (format[i++] - '0');
                    if (n > kMaxWidth) throw_error(ErrorKind::limit, "format width too large");
                }
                if (n >= 0) target = n;
            }
            if (target > kMaxWidth) throw_error(ErrorKind::limit, "format width too large");
        };
        number(spec.width);
        if (i < format.size() && format[i] == '.') {
            ++i;
            spec.precision = 0;
            number(spec.precision);
        }
        while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L')) ++i;
        if (i >= format.size()) throw_error(ErrorKind::value, "incomplete format");
        const char conv = format[i];
        if (conv == '%') {
            out += '%';
            ++i;
            continue;
        }
        if (!arg) arg = &source.take();
        const char fill_align = spec.align;
        const bool zero_pad = zero && fill_align != '<';
        std::string sign, body;
        switch (conv) {
            case 's':
            case 'r':
            case 'a': {
                body = conv == 's' ? to_str(*arg) : repr(*arg);
                if (conv == 'a') {
                    std::string ascii;
                    for (char32_t c : text::decode(body)) {
                        if (c < 0x80) {
                            ascii += char(c);
                        } else {
                            ascii += c < 0x100     ? fmt::format("\\x{:02x}", uint32_t(c))
                                     : c < 0x10000 ? fmt::format("\\u{:04x}", uint32_t(c))
                                                   : fmt::format("\\U{:08x}", uint32_t(c));
                        }
                    }
                    body = ascii;
                }
                if (escape_args && !(conv == 's' && arg->is_markup()))
                    body = text::html_escape(body);
                if (spec.precision >= 0) body = text::substr(body, 0, size_t(spec.precision));
                out += pad("", body, spec.width, fill_align, ' ');
                break;
            }
            case 'c': {
                if (arg->is_string() && text::length(arg->str()) == 1) {
                    body = arg->str();
                } else if (arg->is_integral()) {
                    const int64_t c = arg->as_int();
                    if (c < 0 || c > 0x10FFFF)
                        throw_error(ErrorKind::overflow, "%c arg not in range(0x110000)");
                    text::append_utf8(body, char32_t(c));
                } else {
                    throw_error(ErrorKind::type, "%c requires int or char");
                }
                out += pad("", body, spec.width, fill_align, ' ');
                break;
            }
            case 'd':
            case 'i':
            case 'u':
            case 'x':
            case 'X':
            case 'o': {
                const bool decimal = conv == 'd' || conv == 'i' || conv == 'u';
                if (!decimal && !arg->is_integral()) {
                    if (arg->is_undefined()) arg->fail_undefined();
                    throw_error(ErrorKind::type, "%{} format: an integer is required, not {}", conv,
                                type_name(*arg));
                }
                const int64_t v = to_index(*arg, std::string(1, conv).c_str());
                body = int_digits(v, decimal ? 10 : conv == 'o' ? 8 : 16, conv == 'X');
                if (spec.precision > int64_t(body.size()))
                    body.insert(0, size_t(spec.precision) - body.size(), '0');
                sign = sign_of(v < 0, spec.sign);
                if (spec.alt && !decimal) sign += conv == 'o' ? "0o" : conv == 'x' ? "0x" : "0X";
                out += zero_pad ? pad(sign, body, spec.width, '=', '0')
                                : pad(sign, body, spec.width, fill_align, ' ');
                break;
            }
            case 'e':
            case 'E':
            case 'f':
            case 'F':
            case 'g':
            case 'G': {
                const double d = to_double(*arg);
                const int p = int(spec.precision < 0 ? 6 : spec.precision);
                sign = sign_of(std::signbit(d) && !std::isnan(d), spec.sign);
                body = c_format_double(conv, p, spec.alt, std::fabs(d));
                const bool finite = std::isfinite(d);
                out += zero_pad && finite ? pad(sign, body, spec.width, '=', '0')
                                          : pad(sign, body, spec.width, fill_align, ' ');
                break;
            }
            default:
                bad_char(i);
        }
        ++i;
        ev.check_size(out.size());
        ev.charge(out.size());
    }
    if (!mapping && source.tuple && source.next < source.tuple->size())
        throw_error(ErrorKind::type, "not all arguments converted during string formatting");
    if (!mapping && !source.tuple && source.next == 0)
        throw_error(ErrorKind::type, "not all arguments converted during string formatting");
    (void)used_mapping;
    return out;
}

namespace {

struct BraceFormatter {
    Evaluator& ev;
    const CallArgs& args;
    int auto_index = 0;  // -1 once a manual index was used
    bool manual = false;

    Value field(std::string_view name) {
        size_t end = name.find_first_of(".[");
        if (end == std::string_view::npos) end = name.size();
        const std::string_view first = name.substr(0, end);
        Value obj;
        const bool numeric = !first.empty() && std::all_of(first.begin(), first.end(), [](char c) {
            return c >= '0' && c <= '9';
        });
        if (first.empty() || numeric) {
            size_t index;
            if (first.empty()) {
                if (manual)
                    throw_error(ErrorKind::value,
                                "cannot switch from manual field specification to automatic "
                                "field numbering");
                index = size_t(auto_index++);
            } else {
                if (auto_index > 0)
                    throw_error(ErrorKind::value,
                                "cannot switch from automatic field numbering to manual field "
                                "specification");
                manual = true;
                if (first.size() > 9) throw_error(ErrorKind::value, "Too many decimal digits");
                index = size_t(std::stoul(std::string(first)));
            }
            if (index >= args.positional.size())
                throw_error(ErrorKind::index,
                            "Replacement index {} out of range for positional args tuple", index);
            obj = args.positional[index];
        } else {
            const Value* v = nullptr;
            for (const auto& [k, val] : args.keywords)
                if (k == first) v = &val;
            if (!v) throw_error(ErrorKind::key, "{}", text::py_repr(first));
            obj = *v;
        }
        size_t i = end;
        while (i < name.size()) {
            if (name[i] == '.') {
                size_t j = name.find_first_of(".[", i + 1);
                if (j == std::string_view::npos) j = name.size();
                if (j == i + 1) throw_error(ErrorKind::value, "Empty attribute in format string");
                obj = ev.get_attr(obj, name.substr(i + 1, j - i - 1));
                i = j;
            } else {
                const size_t j = name.find(']', i);
                if (j == std::string_view::npos)
                    throw_error(ErrorKind::value, "Missing ']' in format string");
                const std::string_view key = name.substr(i + 1, j - i - 1);
                const bool digits = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
                    return c >= '0' && c <= '9';
                });
                obj = ev.get_item(obj, digits && key.size() < 18
                                           ? Value::integer(std::stoll(std::string(key)))
                                           : Value::string(std::string(key)));
                i = j + 1;
                if (i < name.size() && name[i] != '.' && name[i] != '[')
                    throw_error(ErrorKind::value,
                                "Only '.' or '[' may follow ']' in format field specifier");
            }
        }
        return obj;
    }

    std::string render(std::string_view format, int depth) {
        if (depth > 2) throw_error(ErrorKind::value, "Max string recursion exceeded");
        std::string out;
        size_t i = 0;
        while (i < format.size()) {
            const char c = format[i];
            if (c == '}') {
                if (i + 1 < format.size() && format[i + 1] == '}') {
                    out += '}';
                    i += 2;
                    continue;
                }
                throw_error(ErrorKind::value, "Single '}}' encountered in format string");
            }
            if (c != '{') {
                out += c;
                ++i;
                continue;
            }
            if (i + 1 < format.size() && format[i + 1] == '{') {
                out += '{';
                i += 2;
                continue;
            }
            // A replacement field: up to the matching '}'.
            int level = 1;
            size_t j = i + 1;
            while (j < format.size() && level > 0) {
                if (format[j] == '{') ++level;
                if (format[j] == '}') --level;
                ++j;
            }
            if (level > 0) throw_error(ErrorKind::value, "expected '}}' before end of string");
            const std::string_view inner = format.substr(i + 1, j - i - 2);
            size_t name_end = inner.find_first_of("!:");
            if (name_end == std::string_view::npos) name_end = inner.size();
            Value v = field(inner.substr(0, name_end));
            std::string_view spec;
            if (name_end < inner.size() && inner[name_end] == '!') {
                if (name_end + 1 >= inner.size())
                    throw_error(ErrorKind::value,
                                "end of string while looking for conversion specifier");
                const char conv = inner[name_end + 1];
                if (conv == 'r' || conv == 'a') {
                    v = Value::string(repr(v));
                } else if (conv == 's') {
                    v = Value::string(to_str(v));
                } else {
                    throw_error(ErrorKind::value, "Unknown conversion specifier {}", conv);
                }
                if (name_end + 2 < inner.size()) {
                    if (inner[name_end + 2] != ':')
                        throw_error(ErrorKind::value, "expected ':' after conversion specifier");
                    spec = inner.substr(name_end + 3);
                }
            } else if (name_end < inner.size()) {
                spec = inner.substr(name_end + 1);
            }
            const std::string resolved_spec = spec.find('{') != std::string_view::npos
                                                  ? render(spec, depth + 1)
                                                  : std::string(spec);
            out += format_spec(v, resolved_spec);
            ev.check_size(out.size());
            ev.charge(out.size());
            i = j;
        }
        return out;
    }
};

}  // namespace

std::string format_braces(Evaluator& ev, std::string_view format, const CallArgs& args) {
    BraceFormatter f{ev, args};
    return f.render(format, 0);
}

}  // namespace mw::tmpl
