#include "vocab/unicode.h"

#include <algorithm>
#include <array>
#include <memory>

#include "vocab/unicode_data.h"

namespace mw::unicode {

namespace {

constexpr uint32_t kTableSize = kMaxCodepoint + 1;
constexpr uint8_t kWhitespaceBit = 0x08;  // above the 3-bit category

// One byte per codepoint (category + whitespace bit), expanded once from the range tables:
// the BPE pre-tokenizer asks for every codepoint of the text.
const std::vector<uint8_t>& info_table() {
    static const std::vector<uint8_t> table = [] {
        std::vector<uint8_t> t(kTableSize, undefined);
        for (size_t i = 0; i < data::kCategoryRangeCount; ++i) {
            const uint32_t start = data::kCategoryRanges[i].start;
            const uint32_t end =
                i + 1 < data::kCategoryRangeCount ? data::kCategoryRanges[i + 1].start : kTableSize;
            std::fill(t.begin() + start, t.begin() + std::min(end, kTableSize),
                      data::kCategoryRanges[i].category_class);
        }
        for (size_t i = 0; i < data::kWhiteSpaceCount; ++i)
            t[data::kWhiteSpace[i]] |= kWhitespaceBit;
        return t;
    }();
    return table;
}

struct ByteCharMaps {
    std::array<std::string, 256> byte_to_char;
    std::array<int16_t, 512> char_to_byte;  // every byte character is below U+0200
};

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// get U+0100 onwards in byte order.
const ByteCharMaps& byte_char_maps() {
    static const ByteCharMaps maps = [] {
        ByteCharMaps m;
        m.char_to_byte.fill(-1);
        auto printable = [](int b) {
            return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        };
        uint32_t next = 0x100;
        for (int b = 0; b < 256; ++b) {
            const uint32_t cpt = printable(b) ? uint32_t(b) : next++;
            m.byte_to_char[b] = encode_utf8(cpt);
            m.char_to_byte[cpt] = int16_t(b);
        }
        return m;
    }();
    return maps;
}

}  // namespace

CodepointInfo info(uint32_t cpt) {
    if (cpt > kMaxCodepoint) return {};
    const uint8_t v = info_table()[cpt];
    return {Category(v & 0x07), (v & kWhitespaceBit) != 0};
}

uint32_t to_lower(uint32_t cpt) {
    const auto* begin = data::kLowercase;
    const auto* end = data::kLowercase + data::kLowercaseCount;
    const auto* it = std::lower_bound(
        begin, end, cpt, [](const data::CodepointPair& p, uint32_t c) { return p.from < c; });
    return it != end && it->from == cpt ? it->to : cpt;
}

uint32_t nfd_first(uint32_t cpt) {
    const auto* begin = data::kNfdFirst;
    const auto* end = data::kNfdFirst + data::kNfdFirstCount;
    // First range whose last codepoint is >= cpt.
    const auto* it = std::lower_bound(
        begin, end, cpt, [](const data::NfdRange& r, uint32_t c) { return r.last < c; });
    return it != end && it->first <= cpt ? it->nfd : cpt;
}

size_t sequence_length(uint8_t lead) {
    static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLengths[lead >> 4];
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    auto cont = [&](size_t i) { return i < n && (s[i] & 0xC0) == 0x80; };
    size_t i = 0;
    while (i < n) {
        const uint8_t b = s[i];
        uint32_t cpt = kReplacementChar;
        size_t len = 1;
        if (b < 0x80) {
            cpt = b;
        } else if ((b & 0xE0) == 0xC0 && cont(i + 1)) {
            cpt = (uint32_t(b & 0x1F) << 6) | (s[i + 1] & 0x3F);
            len = 2;
        } else if ((b & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
            cpt = (uint32_t(b & 0x0F) << 12) | (uint32_t(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            len = 3;
        } else if ((b & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
            cpt = (uint32_t(b & 0x07) << 18) | (uint32_t(s[i + 1] & 0x3F) << 12) |
                  (uint32_t(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
            len = 4;
            if (cpt > kMaxCodepoint) {
                cpt = kReplacementChar;
                len = 1;
            }
        }
        out.push_back(cpt);
        i += len;
    }
    return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
    if (cpt < 0x80) {
        out.push_back(char(cpt));
    } else if (cpt < 0x800) {
        out.push_back(char(0xC0 | (cpt >> 6)));
        out.push_back(char(0x80 | (cpt & 0x3F)));
    } else if (cpt < 0x10000) {
        out.push_back(char(0xE0 | (cpt >> 12)));
        out.push_back(char(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cpt & 0x3F)));
    } else {
        out.push_back(char(0xF0 | ((cpt >> 18) & 0x07)));
        out.push_back(char(0x80 | ((cpt >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cpt & 0x3F)));
    }
}

std::string encode_utf8(uint32_t cpt) {
    std::string s;
    append_utf8(s, cpt);
    return s;
}

std::string_view byte_to_bpe_char(uint8_t byte) {
    return byte_char_maps().byte_to_char[byte];
}

int bpe_char_to_byte(uint32_t cpt) {
    return cpt < 512 ? byte_char_maps().char_to_byte[cpt] : -1;
}

}  // namespace mw::unicode
