// Vocab::from_gguf on malformed or hostile metadata: an mw::Error naming the file and key,
// never a crash. Also random vocabularies and random bytes through every tokenizer.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "vocab/pretokenizer.h"
#include "vocab/unicode.h"
#include "vocab/vocab.h"

namespace mw {
namespace {

// A tiny valid byte-level BPE vocab: a, b, c, ab, abc, <|endoftext|>.
gguf::GgufWriter bpe_writer() {
    gguf::GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-2");
    w.set_array_strings("tokenizer.ggml.tokens", {"a", "b", "c", "ab", "abc", "<|endoftext|>"});
    const int32_t types[] = {1, 1, 1, 1, 1, 3};
    w.set_array_i32("tokenizer.ggml.token_type", types);
    w.set_array_strings("tokenizer.ggml.merges", {"a b", "ab c"});
    w.set_u32("tokenizer.ggml.bos_token_id", 5);
    w.set_u32("tokenizer.ggml.eos_token_id", 5);
    return w;
}

// A tiny valid SentencePiece vocab with byte fallback.
gguf::GgufWriter spm_writer() {
    std::vector<std::string> tokens = {"<unk>",
                                       "<s>",
                                       "</s>",
                                       "\xE2\x96\x81",
                                       "a",
                                       "\xE2\x96\x81"
                                       "a"};
    std::vector<float> scores = {0, 0, 0, -1, -2, -0.5f};
    std::vector<int32_t> types = {2, 3, 3, 1, 1, 1};
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(fmt::format("<0x{:02X}>", b));
        scores.push_back(0);
        types.push_back(6);
    }
    gguf::GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_array_strings("tokenizer.ggml.tokens", tokens);
    w.set_array_f32("tokenizer.ggml.scores", scores);
    w.set_array_i32("tokenizer.ggml.token_type", types);
    return w;
}

Vocab load(const gguf::GgufWriter& w) {
    const std::vector<uint8_t> bytes = w.to_bytes();
    return Vocab::from_gguf(gguf::GgufFile::parse(bytes, "vocab.gguf"));
}

// Loading must fail with `kind`, and the message must name the file and every `needles`.
void expect_error(const gguf::GgufWriter& w, ErrorKind kind,
                  std::initializer_list<std::string_view> needles) {
    try {
        load(w);
        ADD_FAILURE() << "no error; expected one mentioning " << *needles.begin();
    } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_EQ(e.kind(), kind) << message;
        EXPECT_NE(message.find("vocab.gguf"), std::string::npos) << message;
        for (const std::string_view needle : needles) {
            EXPECT_NE(message.find(needle), std::string::npos)
                << "'" << needle << "' not in: " << message;
        }
    }
}

TEST(VocabErrors, TheValidBaseVocabsLoad) {
    const Vocab bpe = load(bpe_writer());
    EXPECT_EQ(bpe.tokenize("abcab", false, false), (std::vector<int32_t>{4, 3}));
    EXPECT_EQ(bpe.tokenize("c<|endoftext|>", false, true), (std::vector<int32_t>{2, 5}));
    EXPECT_TRUE(bpe.is_eog(5));
    const Vocab spm = load(spm_writer());
    EXPECT_EQ(spm.tokenize("a a", true, false), (std::vector<int32_t>{1, 5, 5}));
    EXPECT_EQ(spm.tokenize("z", false, false),
              (std::vector<int32_t>{3, spm.find_token("<0x7A>")}));  // byte fallback
}

TEST(VocabErrors, MissingModel) {
    auto w = bpe_writer();
    w.remove("tokenizer.ggml.model");
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.model", "missing"});
}

TEST(VocabErrors, UnknownOrUnsupportedModel) {
    auto w = bpe_writer();
    w.set_string("tokenizer.ggml.model", "sentencepiece2");
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.model", "sentencepiece2"});
    w.set_string("tokenizer.ggml.model", "t5");
    expect_error(w, ErrorKind::unsupported, {"tokenizer.ggml.model", "t5"});
    w.set_u32("tokenizer.ggml.model", 3);
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.model", "string"});
}

// Gemma 4's tokenizer: BPE merges are required, BOS is always added (so its id must be set),
// and the file's pre-tokenizer is ignored (llama.cpp uses Gemma 4's for this model).
TEST(VocabErrors, Gemma4NeedsMergesAndBos) {
    gguf::GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gemma4");
    w.set_string("tokenizer.ggml.pre", "future-bpe");
    w.set_array_strings("tokenizer.ggml.tokens", {"<bos>", "a", "b", "ab", "\xE2\x96\x81"});
    w.set_array_strings("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.bos_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    const Vocab v = load(w);
    EXPECT_EQ(v.pre(), "gemma4");
    EXPECT_TRUE(v.add_bos());
    EXPECT_EQ(v.tokenize("ab ab", true, false), (std::vector<int32_t>{0, 3, 4, 3}));
    EXPECT_EQ(v.detokenize(std::vector<int32_t>{3, 4, 3}), "ab ab");
    w.remove("tokenizer.ggml.bos_token_id");
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.bos_token_id", "gemma4", "BOS"});
    w.set_u32("tokenizer.ggml.bos_token_id", 0);
    w.remove("tokenizer.ggml.merges");
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.merges", "missing", "gemma4"});
}

TEST(VocabErrors, UnknownPreTokenizer) {
    auto w = bpe_writer();
    w.set_string("tokenizer.ggml.pre", "future-bpe");
    expect_error(w, ErrorKind::unsupported, {"tokenizer.ggml.pre", "future-bpe"});
}

TEST(VocabErrors, MissingOrEmptyOrMistypedTokens) {
    auto w = bpe_writer();
    w.remove("tokenizer.ggml.tokens");
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.tokens", "missing"});
    w.set_array_strings("tokenizer.ggml.tokens", {});
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.tokens", "empty"});
    const int32_t ints[] = {1, 2, 3};
    w.set_array_i32("tokenizer.ggml.tokens", ints);
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.tokens"});
}

TEST(VocabErrors, DuplicateToken) {
    auto w = bpe_writer();
    w.set_array_strings("tokenizer.ggml.tokens", {"a", "b", "c", "ab", "a", "<|endoftext|>"});
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.tokens", "\"a\" twice", "0 and 4"});
}

TEST(VocabErrors, ArraysOfTheWrongLength) {
    auto w = spm_writer();
    const float scores[] = {0, 0, 0};
    w.set_array_f32("tokenizer.ggml.scores", scores);
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.scores", "3 entries for 262 tokens"});
    auto w2 = bpe_writer();
    const int32_t types[] = {1, 1};
    w2.set_array_i32("tokenizer.ggml.token_type", types);
    expect_error(w2, ErrorKind::bad_file, {"tokenizer.ggml.token_type", "2 entries for 6"});
}

TEST(VocabErrors, NanScore) {
    auto w = spm_writer();
    std::vector<float> scores(262, 0.0f);
    scores[4] = std::nanf("");
    w.set_array_f32("tokenizer.ggml.scores", scores);
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.scores", "[4]", "NaN"});
}

TEST(VocabErrors, ByteTokenNotSpelledAsAByte) {
    auto w = spm_writer();
    std::vector<int32_t> types(262, 6);
    w.set_array_i32("tokenizer.ggml.token_type", types);  // "<unk>" typed as a byte
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.token_type", "<unk>", "<0xXX>"});
}

TEST(VocabErrors, SpecialIdOutOfRange) {
    auto w = bpe_writer();
    w.set_u32("tokenizer.ggml.bos_token_id", 6);
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.bos_token_id", "= 6", "6 tokens"});
    w.set_i32("tokenizer.ggml.bos_token_id", -7);
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.bos_token_id", "-7"});
    auto w2 = bpe_writer();
    w2.set_u64("tokenizer.ggml.eos_token_id", 1ull << 40);
    expect_error(w2, ErrorKind::bad_file, {"tokenizer.ggml.eos_token_id"});
    auto w3 = bpe_writer();
    w3.set_string("tokenizer.ggml.unknown_token_id", "0");
    expect_error(w3, ErrorKind::bad_file, {"tokenizer.ggml.unknown_token_id", "integer"});
}

TEST(VocabErrors, MinusOneMeansNoToken) {
    // llama2.c conversions write -1 as u32 for absent tokens; llama.cpp keeps the default.
    auto w = spm_writer();
    w.set_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
    w.set_i32("tokenizer.ggml.seperator_token_id", -1);
    const Vocab v = load(w);
    EXPECT_EQ(v.pad(), kNoToken);
    EXPECT_EQ(v.sep(), kNoToken);
    EXPECT_EQ(v.bos(), 1);  // the default
}

TEST(VocabErrors, AddBosWithoutBos) {
    auto w = bpe_writer();
    w.remove("tokenizer.ggml.bos_token_id");  // the gpt2 default, 11, is beyond these 6 tokens
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    expect_error(w, ErrorKind::bad_file,
                 {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id"});
    w.set_string("tokenizer.ggml.add_bos_token", "yes");
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.add_bos_token", "bool"});
}

TEST(VocabErrors, MergesMissingOrMalformed) {
    auto w = bpe_writer();
    w.remove("tokenizer.ggml.merges");
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.merges", "missing"});
    w.set_array_strings("tokenizer.ggml.merges", {"a b", "abc"});
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.merges", "[1]", "\"abc\""});
    w.set_array_strings("tokenizer.ggml.merges", {"a b", "b x"});
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.merges", "[1]", "\"x\"", "not a token"});
    w.set_array_strings("tokenizer.ggml.merges", {"b c"});  // "bc" is not a token
    expect_error(w, ErrorKind::bad_file, {"tokenizer.ggml.merges", "[0]", "\"bc\""});
}

// Every pre-tokenizer's expressions compile and split any text without losing a byte: with
// the 256 byte characters as the only tokens, detokenizing gives the text back.
TEST(VocabErrors, EveryKnownPreTokenizerSplitsLosslessly) {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.emplace_back(unicode::byte_to_bpe_char(uint8_t(b)));
    const std::string text =
        "Hello, y'all! It's 3.14159 — 1234567 ½ ① \t\n\r\n  x   \xC2\xA0y 内存墙 привет "
        "🙂\u200d "
        "<|x|> $+<=>^~|` ok'S 'LL \xFF end  ";
    const auto names = tokenizer::known_pre_tokenizers();
    ASSERT_GT(names.size(), 50u);
    // SentencePiece-style pre-tokenizers (gemma4) take "▁" for a space and <0xXX> bytes.
    std::vector<std::string> spm_tokens = {"\xE2\x96\x81"};
    std::vector<int32_t> spm_types = {1};
    for (int b = 0; b < 256; ++b) {
        spm_tokens.push_back(fmt::format("<0x{:02X}>", b));
        spm_types.push_back(6);
    }
    for (const std::string_view pre : names) {
        tokenizer::PreTokenizerConfig config;
        ASSERT_TRUE(tokenizer::pre_tokenizer_config(pre, config));
        gguf::GgufWriter w;
        w.set_string("tokenizer.ggml.model", "gpt2");
        w.set_string("tokenizer.ggml.pre", pre);
        w.set_array_strings("tokenizer.ggml.tokens", config.spm_style ? spm_tokens : tokens);
        if (config.spm_style) w.set_array_i32("tokenizer.ggml.token_type", spm_types);
        w.set_array_strings("tokenizer.ggml.merges", {});
        w.set_u32("tokenizer.ggml.bos_token_id", 0);
        const Vocab v = load(w);
        const auto ids = v.tokenize(text, false, false);
        std::string pieces;
        for (const int32_t id : ids) pieces += v.token_to_piece(id, false);
        // The invalid byte \xFF reaches byte-level BPE as U+FFFD, as in llama.cpp.
        std::string expected = text;
        expected.replace(expected.find('\xFF'), 1, "\xEF\xBF\xBD");
        EXPECT_EQ(pieces, expected) << pre;
    }
}

// Random vocabularies (random byte strings as tokens, random merges among them) and random
// input bytes: every tokenizer must return ids in range and never crash.
TEST(VocabErrors, RandomVocabsAndInputsNeverCrash) {
    std::mt19937 rng(1234);
    auto random_bytes = [&](size_t max_len) {
        std::string s(1 + rng() % max_len, '\0');
        for (char& c : s) c = char(rng() % 4 == 0 ? rng() % 256 : 'a' + rng() % 4);
        return s;
    };
    for (int round = 0; round < 40; ++round) {
        std::vector<std::string> tokens;
        std::set<std::string> seen;
        while (tokens.size() < 60) {
            std::string t = random_bytes(4);
            if (seen.insert(t).second) tokens.push_back(t);
        }
        std::vector<int32_t> types(tokens.size());
        for (auto& t : types) t = int32_t(rng() % 8);
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (types[i] == 6) types[i] = 1;  // byte tokens must be spelled <0xXX>
        }
        std::vector<float> scores(tokens.size());
        for (auto& s : scores) s = -float(rng() % 100);
        std::vector<std::string> merges;
        for (size_t i = 0; i < tokens.size(); ++i) {
            for (size_t j = 0; j < tokens.size(); ++j) {
                if (seen.count(tokens[i] + tokens[j]) && tokens[i].find(' ') == tokens[i].npos &&
                    !tokens[i].empty() && tokens[j].find(' ') == tokens[j].npos) {
                    merges.push_back(tokens[i] + " " + tokens[j]);
                }
            }
        }
        const char* const models[] = {"llama", "gpt2", "bert", "gemma4"};
        gguf::GgufWriter w;
        w.set_string("tokenizer.ggml.model", models[round % 4]);
        w.set_string("tokenizer.ggml.pre", round % 2 ? "qwen2" : "deepseek-llm");
        w.set_array_strings("tokenizer.ggml.tokens", tokens);
        w.set_array_i32("tokenizer.ggml.token_type", types);
        w.set_array_f32("tokenizer.ggml.scores", scores);
        w.set_array_strings("tokenizer.ggml.merges", merges);
        for (const char* key :
             {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
              "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.seperator_token_id"}) {
            w.set_u32(key, rng() % tokens.size());
        }
        const Vocab v = load(w);
        for (int k = 0; k < 20; ++k) {
            const std::string text = random_bytes(40);
            for (const bool special : {false, true}) {
                const auto ids = v.tokenize(text, special, special);
                for (const int32_t id : ids) ASSERT_TRUE(id >= 0 && id < v.n_tokens());
                TokenTextStream stream(v, special);
                for (const int32_t id : ids) stream.push(id);
                stream.finish();
                v.detokenize(ids, special, special);
            }
        }
    }
}

}  // namespace
}  // namespace mw
