// Codepoint helpers for the tokenizers: UTF-8 decoding as llama.cpp does it, codepoint
// categories, lowercase, llama.cpp's one-codepoint "NFD", and GPT-2's byte <-> character map.
//
// Token ids must equal llama.cpp's, so these follow llama.cpp's behaviour rather than the strict
// Unicode rules where the two differ (lenient decoding, simple case mapping, NFD reduced to the
// first codepoint). The tables come from scripts/gen-unicode-tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mw::unicode {

inline constexpr uint32_t kReplacementChar = 0xFFFD;
inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// Category classes (the index is the bit llama.cpp uses for the class).
enum Category : uint8_t {
    undefined = 0,  // Cn: not assigned
    number = 1,     // \p{N}
    letter = 2,     // \p{L}
    separator = 3,  // \p{Z}
    mark = 4,       // \p{M}
    punctuation = 5,
    symbol = 6,
    control = 7,  // Cc, Cf, Co, Cs
};

struct CodepointInfo {
    Category category = undefined;
    bool whitespace = false;  // the White_Space property

    bool is_number() const { return category == number; }
    bool is_letter() const { return category == letter; }
    bool is_mark() const { return category == mark; }
    bool is_punctuation() const { return category == punctuation; }
    bool is_symbol() const { return category == symbol; }
    bool is_control() const { return category == control; }
};

// Codepoints above U+10FFFF are "undefined", not whitespace.
CodepointInfo info(uint32_t cpt);
// Simple lowercase mapping (the codepoint itself when it has none).
uint32_t to_lower(uint32_t cpt);
// First codepoint of the canonical decomposition (the codepoint itself when it has none).
uint32_t nfd_first(uint32_t cpt);

// Length of the UTF-8 sequence that `lead` starts, judged by its top four bits only (1 for
// continuation bytes). This is how llama.cpp's SPM and BPE tokenizers cut text into symbols.
size_t sequence_length(uint8_t lead);

// Decodes like llama.cpp: every byte that does not start a well-formed sequence (lead byte,
// enough continuation bytes) becomes one U+FFFD. Overlong forms and surrogates are accepted as
// decoded; sequences that decode above U+10FFFF are rejected byte by byte.
std::vector<uint32_t> decode_utf8(std::string_view text);
// Appends the UTF-8 encoding of `cpt` (which must be <= U+10FFFF).
void append_utf8(std::string& out, uint32_t cpt);
std::string encode_utf8(uint32_t cpt);

// GPT-2 byte-level BPE maps every byte to a printable character: this is its UTF-8 text.
std::string_view byte_to_bpe_char(uint8_t byte);
// The byte a GPT-2 byte character stands for, or -1 when `cpt` is not one of the 256.
int bpe_char_to_byte(uint32_t cpt);

}  // namespace mw::unicode
