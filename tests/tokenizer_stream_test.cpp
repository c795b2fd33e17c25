// The streaming detokenizer and the Unicode helpers under the tokenizers.
#include <gtest/gtest.h>

#include "format/gguf.h"
#include "support/test_support.h"
#include "vocab/unicode.h"
#include "vocab/vocab.h"

namespace mw {
namespace {

Vocab load_vocab(const std::string& relative) {
    const std::string path = test::shared_path(relative);
    const std::vector<uint8_t> bytes = test::read_file(path);
    return Vocab::from_gguf(gguf::GgufFile::parse(bytes, path));
}

// Strict UTF-8 (no overlongs, surrogates or codepoints above U+10FFFF).
bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto b = uint8_t(s[i]);
        size_t n = b < 0x80                   ? 1
                   : (b >= 0xC2 && b <= 0xDF) ? 2
                   : (b >= 0xE0 && b <= 0xEF) ? 3
                   : (b >= 0xF0 && b <= 0xF4) ? 4
                                              : 0;
        if (n == 0 || i + n > s.size()) return false;
        uint32_t cpt = n == 1 ? b : b & (0xFF >> (n + 1));
        for (size_t k = 1; k < n; ++k) {
            const auto c = uint8_t(s[i + k]);
            if ((c & 0xC0) != 0x80) return false;
            cpt = (cpt << 6) | (c & 0x3F);
        }
        const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cpt < min[n] || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

void expect_streams_whole_characters(const Vocab& vocab, const std::string& text) {
    const auto ids = vocab.tokenize(text, false, false);
    TokenTextStream stream(vocab);
    std::string streamed, pieces;
    size_t held_back = 0;
    for (const int32_t id : ids) {
        const std::string out = stream.push(id);
        EXPECT_TRUE(valid_utf8(out)) << "token " << id;
        held_back += out.empty();
        streamed += out;
        pieces += vocab.token_to_piece(id, false);
    }
    streamed += stream.finish();
    EXPECT_EQ(streamed, pieces);
    EXPECT_GT(held_back, 0u) << "the text should need some tokens held back";
}

TEST(TokenTextStream, NeverSplitsACharacterSpm) {
    // Llama 2's vocab has no 🙂, 🦙 or 墙: they come as byte tokens.
    const Vocab spm = load_vocab("testdata/tokenizer/ggml-vocab-llama-spm.gguf");
    ASSERT_EQ(spm.tokenize("🙂", false, false).size(), 5u);  // "▁" + 4 bytes
    expect_streams_whole_characters(spm,
                                    "内存墙 🙂 Привет 🦙.cpp 😶\u200d🌫️ ok");
}

TEST(TokenTextStream, NeverSplitsACharacterByteLevelBpe) {
    const Vocab gpt2 = load_vocab("testdata/tokenizer/ggml-vocab-gpt-2.gguf");
    expect_streams_whole_characters(
        gpt2, "内存墙 🙂 Привет 🦙.cpp 😶\u200d🌫️ កាន់តែ ok");
}

TEST(TokenTextStream, HoldsBackUntilTheCharacterIsComplete) {
    const Vocab spm = load_vocab("testdata/tokenizer/ggml-vocab-llama-spm.gguf");
    auto byte = [&](const char* name) { return spm.find_token(name); };
    TokenTextStream stream(spm);
    EXPECT_EQ(stream.push(byte("<0xF0>")), "");
    EXPECT_EQ(stream.push(byte("<0x9F>")), "");
    EXPECT_EQ(stream.push(byte("<0x99>")), "");
    EXPECT_EQ(stream.push(byte("<0x82>")), "🙂");
    EXPECT_EQ(stream.finish(), "");
}

TEST(TokenTextStream, InvalidBytesBecomeReplacementCharacters) {
    const Vocab spm = load_vocab("testdata/tokenizer/ggml-vocab-llama-spm.gguf");
    auto byte = [&](const char* name) { return spm.find_token(name); };
    TokenTextStream stream(spm);
    // A byte that can never start a character is replaced at once.
    EXPECT_EQ(stream.push(byte("<0xFF>")), "\xEF\xBF\xBD");
    // A started character broken by the next byte: one U+FFFD, then the byte.
    EXPECT_EQ(stream.push(byte("<0xE2>")), "");
    EXPECT_EQ(stream.push(byte("<0x41>")),
              "\xEF\xBF\xBD"
              "A");
    // Surrogates and overlong forms are not valid starts either.
    EXPECT_EQ(stream.push(byte("<0xED>")), "");
    EXPECT_EQ(stream.push(byte("<0xA0>")), "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(stream.push(byte("<0xC0>")), "\xEF\xBF\xBD");
    // An unfinished character at the end comes out as one U+FFFD.
    EXPECT_EQ(stream.push(byte("<0xF0>")), "");
    EXPECT_EQ(stream.push(byte("<0x9F>")), "");
    EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
    // finish() starts afresh.
    EXPECT_EQ(stream.push(spm.find_token("\xE2\x96\x81Hello")), " Hello");
}

TEST(TokenTextStream, ControlTokensPrintOnlyWhenAsked) {
    const Vocab spm = load_vocab("testdata/tokenizer/ggml-vocab-llama-spm.gguf");
    TokenTextStream plain(spm), special(spm, true);
    EXPECT_EQ(plain.push(spm.eos()), "");
    EXPECT_EQ(special.push(spm.eos()), "</s>");
}

TEST(Unicode, CategoriesFromTheGeneratedTables) {
    using namespace unicode;
    EXPECT_TRUE(info('a').is_letter());
    EXPECT_TRUE(info(0x5185).is_letter());  // 内
    EXPECT_TRUE(info('7').is_number());
    EXPECT_TRUE(info(0x00BD).is_number());  // ½
    EXPECT_TRUE(info('!').is_punctuation());
    EXPECT_TRUE(info('~').is_symbol());
    EXPECT_TRUE(info(0x1F642).is_symbol());  // 🙂
    EXPECT_TRUE(info(0x0301).is_mark());     // combining acute
    EXPECT_TRUE(info(0x200D).is_control());  // ZWJ is Cf
    EXPECT_EQ(info(0x0378).category, undefined);
    EXPECT_EQ(info(0x110000).category, undefined);
    EXPECT_EQ(info(0x2EBF0).category, letter);  // CJK Ext. I (Unicode 15.1), as in llama.cpp
    for (const uint32_t space : {0x09u, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2009u, 0x3000u}) {
        EXPECT_TRUE(info(space).whitespace) << space;
    }
    EXPECT_FALSE(info(0x200B).whitespace);  // zero width space is not White_Space
    EXPECT_FALSE(info(0x1C).whitespace);
}

TEST(Unicode, LowercaseAndFirstNfdCodepoint) {
    using namespace unicode;
    EXPECT_EQ(to_lower('A'), uint32_t('a'));
    EXPECT_EQ(to_lower(0x00C0), 0x00E0u);        // À
    EXPECT_EQ(to_lower(0x0130), uint32_t('i'));  // İ: first codepoint of its lowercase
    EXPECT_EQ(to_lower(0x041F), 0x043Fu);        // П
    EXPECT_EQ(to_lower('a'), uint32_t('a'));
    EXPECT_EQ(nfd_first(0x00E9), uint32_t('e'));  // é
    EXPECT_EQ(nfd_first(0x1EDB), uint32_t('o'));  // ớ decomposes twice
    EXPECT_EQ(nfd_first(0xAC00), 0x1100u);        // 가: Hangul, algorithmic
    EXPECT_EQ(nfd_first(0xD7A3), 0x1112u);        // 힣
    EXPECT_EQ(nfd_first(0x212B), uint32_t('A'));  // Å angstrom sign
    EXPECT_EQ(nfd_first('x'), uint32_t('x'));
}

TEST(Unicode, DecodesLikeLlamaCpp) {
    using unicode::decode_utf8;
    EXPECT_EQ(decode_utf8("a\xC3\xA9"), (std::vector<uint32_t>{'a', 0xE9}));
    // Each byte that does not start a complete sequence becomes one U+FFFD.
    EXPECT_EQ(decode_utf8("\xE2\x82"), (std::vector<uint32_t>{0xFFFD, 0xFFFD}));
    EXPECT_EQ(decode_utf8("\x80z"), (std::vector<uint32_t>{0xFFFD, 'z'}));
    // Lenient like llama.cpp: overlong forms and surrogates decode.
    EXPECT_EQ(decode_utf8("\xC0\x80"), (std::vector<uint32_t>{0}));
    EXPECT_EQ(decode_utf8("\xED\xA0\x80"), (std::vector<uint32_t>{0xD800}));
    EXPECT_EQ(decode_utf8("\xF7\xBF\xBF\xBF").size(), 4u);
    EXPECT_EQ(unicode::encode_utf8(0x1F642), "🙂");
    EXPECT_EQ(unicode::byte_to_bpe_char(' '), "\xC4\xA0");   // Ġ
    EXPECT_EQ(unicode::byte_to_bpe_char('\n'), "\xC4\x8A");  // Ċ
    EXPECT_EQ(unicode::bpe_char_to_byte(0x120), ' ');
    EXPECT_EQ(unicode::bpe_char_to_byte('a'), 'a');
    EXPECT_EQ(unicode::bpe_char_to_byte(0x3000), -1);
}

}  // namespace
}  // namespace mw
