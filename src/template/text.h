// Python's str semantics on UTF-8 text: code points, whitespace as str.isspace() has it, case
// mappings, and the string methods templates call (strip, split, title, replace, find, ...).
// Every function here takes valid UTF-8 (see repair_utf8) and counts positions in code points.
//
// Case mapping uses the Unicode tables of src/vocab (simple lowercase; uppercase is its
// inverse, plus the common full mappings such as "ß" -> "SS" and Greek final sigma), which
// agrees with Python for the scripts chat templates meet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mw::tmpl::text {

// Offset of the first byte that does not start a valid UTF-8 sequence, or nullopt.
std::optional<size_t> invalid_utf8_offset(std::string_view s);
// Invalid sequences become U+FFFD (for text that came from outside without a check).
std::string repair_utf8(std::string_view s);

bool is_ascii(std::string_view s);
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
void append_utf8(std::string& out, char32_t c);
size_t length(std::string_view s);  // in code points
// The code points [start, stop) (clamped) as UTF-8.
std::string substr(std::string_view s, size_t start, size_t stop);

// Character classes as Python's str.isXXX() define them for one code point.
bool is_space(char32_t c);
bool is_alpha(char32_t c);
bool is_numeric(char32_t c);  // also used for isdigit/isdecimal
bool is_alnum(char32_t c);
bool is_lower(char32_t c);
bool is_upper(char32_t c);
bool is_cased(char32_t c);
bool is_printable(char32_t c);
bool is_word(char32_t c);       // the regex class \w
bool is_linebreak(char32_t c);  // str.splitlines boundaries

std::string lower(std::string_view s);
std::string upper(std::string_view s);
std::string swapcase(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()

// strip/lstrip/rstrip: `chars` nullopt strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
// str.split / str.rsplit; `sep` nullopt splits on runs of whitespace. maxsplit < 0: no limit.
// ValueError for an empty separator.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
// str.replace; count < 0: all.
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);

// Python slice bounds resolved for a sequence of `len` items (negative indices, clamping).
struct SliceIndices {
    int64_t start, stop, step;
    size_t count;
};
// ValueError when step == 0.
SliceIndices resolve_slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                           std::optional<int64_t> step, size_t len);
// [start:end] as str.find takes them: negative bounds count from the end, `end` is clamped
// to the length, `start` is not (a start past the end finds nothing).
std::pair<size_t, size_t> resolve_range(std::optional<int64_t> start, std::optional<int64_t> end,
                                        size_t len);

// Code point index of `sub` in s[start:end], or -1 (str.find / str.rfind).
int64_t find(std::u32string_view s, std::u32string_view sub, size_t start, size_t end,
             bool reverse);
// Non-overlapping occurrences in s[start:end] (str.count).
size_t count(std::u32string_view s, std::u32string_view sub, size_t start, size_t end);

std::string center(std::string_view s, int64_t width, char32_t fill);
std::string ljust(std::string_view s, int64_t width, char32_t fill);
std::string rjust(std::string_view s, int64_t width, char32_t fill);
std::string zfill(std::string_view s, int64_t width);
std::string expandtabs(std::string_view s, int64_t tabsize);

// repr() of a string: quotes chosen and characters escaped as Python does.
std::string py_repr(std::string_view s);
// &, <, >, ", ' as markupsafe.escape writes them.
std::string html_escape(std::string_view s);

}  // namespace mw::tmpl::text
