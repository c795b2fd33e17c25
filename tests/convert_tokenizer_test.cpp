// Tokenizer conversion: SentencePiece tokenizer.model and Hugging Face tokenizer.json become
// tokenizer.ggml.* metadata that tokenizes exactly like the GGUF vocabularies llama.cpp wrote.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "convert/hf_vocab.h"
#include "convert/spm_model.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "vocab/vocab.h"

namespace {

using nlohmann::json;
namespace cv = mw::convert;

struct GgufVocabFile {
    std::vector<uint8_t> bytes;
    mw::gguf::GgufFile file;
};

GgufVocabFile load(const std::string& relative) {
    GgufVocabFile f;
    f.bytes = mw::test::read_file(mw::test::shared_path(relative));
    f.file = mw::gguf::GgufFile::parse(f.bytes, relative);
    return f;
}

std::vector<std::string> strings_of(const mw::gguf::GgufFile& f, const char* key) {
    std::vector<std::string> out;
    const mw::gguf::Value* v = f.get_array(key, mw::gguf::ValueType::string);
    if (!v) return out;
    for (std::string_view s : v->strings) out.emplace_back(s);
    return out;
}

std::vector<int64_t> ints_of(const mw::gguf::GgufFile& f, const char* key) {
    std::vector<int64_t> out;
    const mw::gguf::Value* v = f.get_array(key, mw::gguf::ValueType::i32);
    for (uint64_t i = 0; v && i < v->count; ++i) out.push_back(v->elem_i64(i));
    return out;
}

// The converted vocabulary as a vocab-only GGUF, parsed back.
struct ConvertedVocab {
    std::vector<uint8_t> bytes;
    mw::gguf::GgufFile file;
};

ConvertedVocab round_trip(const cv::GgufVocab& v) {
    mw::gguf::GgufWriter w;
    w.set_string("general.architecture", "llama");
    cv::write_vocab(w, v);
    ConvertedVocab c;
    c.bytes = w.to_bytes();
    c.file = mw::gguf::GgufFile::parse(c.bytes, "converted");
    return c;
}

// Test strings: llama.cpp's tokenizer test inputs and the reference strings.
std::vector<std::string> test_strings() {
    std::vector<std::string> out;
    const std::string inp = mw::test::read_text(
        mw::test::shared_path("testdata/tokenizer/ggml-vocab-llama-spm.gguf.inp"));
    const std::string sep = "\n__ggml_vocab_test__\n";
    for (size_t at = 0; at < inp.size();) {
        const size_t end = inp.find(sep, at);
        out.push_back(inp.substr(at, end == std::string::npos ? std::string::npos : end - at));
        if (end == std::string::npos) break;
        at = end + sep.size();
    }
    const json ref =
        json::parse(mw::test::read_text(mw::test::shared_path("reference/tokenizer.json")));
    for (const json& s : ref.at("strings")) out.push_back(s.at("text").get<std::string>());
    out.push_back(mw::test::read_text(mw::test::shared_path("testdata/text/war-and-peace.txt"))
                      .substr(0, 3000));
    return out;
}

void expect_same_tokenization(const mw::gguf::GgufFile& expected,
                              const mw::gguf::GgufFile& actual) {
    const mw::Vocab a = mw::Vocab::from_gguf(expected);
    const mw::Vocab b = mw::Vocab::from_gguf(actual);
    EXPECT_EQ(a.bos(), b.bos());
    EXPECT_EQ(a.eos(), b.eos());
    EXPECT_EQ(a.add_bos(), b.add_bos());
    int checked = 0;
    for (const std::string& s : test_strings()) {
        for (const bool special : {false, true}) {
            EXPECT_EQ(a.tokenize(s, true, special), b.tokenize(s, true, special)) << s;
            ++checked;
        }
    }
    EXPECT_GT(checked, 50);
}

TEST(ConvertTokenizer, SentencePieceModelMatchesLlamaSpmGguf) {
    const std::vector<uint8_t> model =
        mw::test::read_file(mw::test::shared_path("testdata/tokenizer/llama2-spm/tokenizer.model"));
    const cv::SpmModel spm = cv::parse_spm_model(model, "tokenizer.model");
    EXPECT_EQ(spm.model_type, 2);  // BPE
    EXPECT_EQ(spm.unk_id, 0);
    EXPECT_EQ(spm.bos_id, 1);
    EXPECT_EQ(spm.eos_id, 2);
    EXPECT_EQ(spm.pad_id, -1);
    EXPECT_TRUE(spm.byte_fallback);
    EXPECT_TRUE(spm.add_dummy_prefix);
    cv::GgufVocab v = cv::vocab_from_spm(spm);
    v.set_special_id("bos", 1);
    v.set_special_id("eos", 2);
    v.set_special_id("unknown", 0);
    const GgufVocabFile ref = load("testdata/tokenizer/ggml-vocab-llama-spm.gguf");
    const ConvertedVocab ours = round_trip(v);

    EXPECT_EQ(strings_of(ours.file, "tokenizer.ggml.tokens"),
              strings_of(ref.file, "tokenizer.ggml.tokens"));
    EXPECT_EQ(ints_of(ours.file, "tokenizer.ggml.token_type"),
              ints_of(ref.file, "tokenizer.ggml.token_type"));
    const auto* a = ours.file.get_array("tokenizer.ggml.scores", mw::gguf::ValueType::f32);
    const auto* b = ref.file.get_array("tokenizer.ggml.scores", mw::gguf::ValueType::f32);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->count, b->count);
    EXPECT_EQ(std::memcmp(a->data, b->data, a->count * 4), 0) << "scores differ bitwise";
    expect_same_tokenization(ref.file, ours.file);
}

TEST(ConvertTokenizer, SentencePieceModelErrorsNameTheField) {
    const std::vector<uint8_t> model =
        mw::test::read_file(mw::test::shared_path("testdata/tokenizer/llama2-spm/tokenizer.model"));
    // Cut inside the first piece: a length that runs past the end.
    const std::vector<uint8_t> cut(model.begin(), model.begin() + 5);
    try {
        cv::parse_spm_model(cut, "cut.model");
        ADD_FAILURE() << "no error";
    } catch (const mw::Error& e) {
        EXPECT_NE(std::string(e.what()).find("cut.model"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("length"), std::string::npos) << e.what();
    }
    EXPECT_THROW(cv::parse_spm_model(std::vector<uint8_t>{}, "empty"), mw::Error);
    // A piece of type 9.
    const std::vector<uint8_t> bad_type = {0x0a, 0x05, 0x0a, 0x01, 'a', 0x18, 0x09};
    try {
        cv::parse_spm_model(bad_type, "t");
        ADD_FAILURE() << "no error";
    } catch (const mw::Error& e) {
        EXPECT_NE(std::string(e.what()).find("type = 9"), std::string::npos) << e.what();
    }
    // Groups (wire type 3) are not a SentencePiece encoding.
    EXPECT_THROW(cv::parse_spm_model(std::vector<uint8_t>{0x0b}, "t"), mw::Error);
    // Every truncation of a real model's first kilobyte is an error, never a crash.
    for (size_t n = 1; n < 1024; n += 7) {
        const std::vector<uint8_t> part(model.begin(), model.begin() + long(n));
        try {
            cv::parse_spm_model(part, "t");
        } catch (const mw::Error&) {
        }
    }
}

// A tokenizer.json in transformers' layout for a GGUF byte-level BPE vocabulary.
json tokenizer_json_of(const mw::gguf::GgufFile& f, bool merges_as_pairs) {
    const auto tokens = strings_of(f, "tokenizer.ggml.tokens");
    const auto types = ints_of(f, "tokenizer.ggml.token_type");
    json vocab = json::object(), added = json::array(), merges = json::array();
    for (size_t i = 0; i < tokens.size(); ++i) {
        vocab[tokens[i]] = i;
        if (types[i] == 3) {
            added.push_back(
                {{"id", i}, {"content", tokens[i]}, {"special", true}, {"normalized", false}});
        }
    }
    for (const std::string& m : strings_of(f, "tokenizer.ggml.merges")) {
        const size_t space = m.find(' ', 1);
        if (merges_as_pairs) {
            merges.push_back({m.substr(0, space), m.substr(space + 1)});
        } else {
            merges.push_back(m);
        }
    }
    json t;
    t["version"] = "1.0";
    t["added_tokens"] = added;
    t["normalizer"] = nullptr;
    t["pre_tokenizer"] = {{"type", "ByteLevel"},
                          {"add_prefix_space", false},
                          {"trim_offsets", true},
                          {"use_regex", true}};
    t["decoder"] = {{"type", "ByteLevel"}};
    t["model"] = {{"type", "BPE"}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", merges}};
    return t;
}

std::vector<uint8_t> bytes_of(const json& j) {
    const std::string s = j.dump();
    return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(ConvertTokenizer, ByteLevelTokenizerJsonRoundTrips) {
    // qwen2-tiny's vocabulary (GPT-2's first 4095 tokens + <|endoftext|>), written by llama.cpp.
    const GgufVocabFile ref = load("reference/models/qwen2-tiny-F16.gguf");
    for (const bool pairs : {false, true}) {
        cv::GgufVocab v = cv::vocab_from_tokenizer_json(
            bytes_of(tokenizer_json_of(ref.file, pairs)), "tokenizer.json");
        EXPECT_EQ(v.model, "gpt2");
        EXPECT_EQ(v.pre, "gpt-2");
        const std::string config =
            R"({"bos_token": "<|endoftext|>", "eos_token": {"content": "<|endoftext|>"}})";
        cv::apply_tokenizer_config(v, std::vector<uint8_t>(config.begin(), config.end()),
                                   "tokenizer_config.json");
        cv::validate_vocab(v, "test");
        const ConvertedVocab ours = round_trip(v);
        EXPECT_EQ(strings_of(ours.file, "tokenizer.ggml.tokens"),
                  strings_of(ref.file, "tokenizer.ggml.tokens"));
        EXPECT_EQ(ints_of(ours.file, "tokenizer.ggml.token_type"),
                  ints_of(ref.file, "tokenizer.ggml.token_type"));
        EXPECT_EQ(strings_of(ours.file, "tokenizer.ggml.merges"),
                  strings_of(ref.file, "tokenizer.ggml.merges"));
        EXPECT_EQ(ours.file.get_u32("tokenizer.ggml.bos_token_id"), 4095u);
        EXPECT_EQ(ours.file.get_u32("tokenizer.ggml.eos_token_id"), 4095u);
        expect_same_tokenization(ref.file, ours.file);
    }
}

json split_tokenizer(const std::string& regex) {
    json t;
    t["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", regex}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    t["model"] = {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}};
    return t;
}

TEST(ConvertTokenizer, DetectsThePreTokenizerFromItsSplitExpression) {
    const std::string llama3 =
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    const std::string qwen2 =
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    EXPECT_EQ(cv::vocab_from_tokenizer_json(bytes_of(split_tokenizer(llama3)), "t").pre,
              "llama-bpe");
    EXPECT_EQ(cv::vocab_from_tokenizer_json(bytes_of(split_tokenizer(qwen2)), "t").pre, "qwen2");
    // o200k, as gpt-oss's tokenizer.json spells it.
    const std::string o200k =
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+("
        "?i:'s|'t|"
        "'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}"
        "\\p{Lm}"
        "\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*["
        "\\r\\n]+|\\s+(?!\\S)|\\s+";
    EXPECT_EQ(cv::vocab_from_tokenizer_json(bytes_of(split_tokenizer(o200k)), "t").pre, "gpt-4o");
    const auto unknown = bytes_of(split_tokenizer("\\p{L}+|\\p{N}"));
    try {
        cv::vocab_from_tokenizer_json(unknown, "tok.json");
        ADD_FAILURE() << "no error";
    } catch (const mw::Error& e) {
        EXPECT_EQ(e.kind(), mw::ErrorKind::unsupported);
        EXPECT_NE(std::string(e.what()).find("pre_tokenizer"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("--vocab-pre"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cv::vocab_from_tokenizer_json(unknown, "t", "deepseek-llm").pre, "deepseek-llm");
    EXPECT_THROW(cv::vocab_from_tokenizer_json(unknown, "t", "no-such-pre"), mw::Error);
}

TEST(ConvertTokenizer, TokenizerJsonErrorsNameTheField) {
    auto error_of = [](const std::string& text) {
        try {
            cv::vocab_from_tokenizer_json(std::vector<uint8_t>(text.begin(), text.end()),
                                          "tok.json");
        } catch (const mw::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(error_of(R"({"model": {"type": "Unigram", "vocab": []}})").find("model.type"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"model": {"type": "BPE", "vocab": {"a": -1}}})").find("model.vocab"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}})").find("id 0"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]},
                          "pre_tokenizer": {"type": "ByteLevel"}})")
                  .find("model.merges[0]"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                          "added_tokens": [{"id": 0, "content": "b"}],
                          "pre_tokenizer": {"type": "ByteLevel"}})")
                  .find("added_tokens[0]"),
              std::string::npos);
    EXPECT_NE(error_of("{\"model\": ").find("not valid JSON"), std::string::npos);
}

// A SentencePiece vocabulary in transformers' BPE form (byte fallback, merges instead of scores)
// becomes a "llama" vocabulary whose scores follow the merge ranks, and tokenizes as the
// original does. Built from stories260K's vocabulary, whose scores fall with the id.
TEST(ConvertTokenizer, SentencePieceStyleTokenizerJsonTokenizesLikeTheOriginal) {
    const GgufVocabFile ref = load("models/stories260K.gguf");
    const auto tokens = strings_of(ref.file, "tokenizer.ggml.tokens");
    const auto types = ints_of(ref.file, "tokenizer.ggml.token_type");
    json vocab = json::object(), merges = json::array(), added = json::array();
    std::map<std::string, size_t> id_of;
    for (size_t i = 0; i < tokens.size(); ++i) {
        vocab[tokens[i]] = i;
        id_of[tokens[i]] = i;
        if (types[i] == 3) added.push_back({{"id", i}, {"content", tokens[i]}, {"special", true}});
    }
    // Merges in score order: each normal token as the first split into two tokens.
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (types[i] != 1) continue;
        const std::string& t = tokens[i];
        for (size_t cut = 1; cut < t.size(); ++cut) {
            if ((uint8_t(t[cut]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
            if (id_of.count(t.substr(0, cut)) && id_of.count(t.substr(cut))) {
                merges.push_back(t.substr(0, cut) + " " + t.substr(cut));
                break;
            }
        }
    }
    json j;
    j["added_tokens"] = added;
    j["pre_tokenizer"] = nullptr;
    j["model"] = {{"type", "BPE"},
                  {"byte_fallback", true},
                  {"unk_token", "<unk>"},
                  {"vocab", vocab},
                  {"merges", merges}};
    cv::GgufVocab v = cv::vocab_from_tokenizer_json(bytes_of(j), "tokenizer.json");
    EXPECT_EQ(v.model, "llama");
    EXPECT_EQ(v.types, std::vector<int32_t>(types.begin(), types.end()));
    v.set_special_id("bos", 1);
    v.set_special_id("eos", 2);
    cv::validate_vocab(v, "test");
    expect_same_tokenization(ref.file, round_trip(v).file);
}

TEST(ConvertTokenizer, TokenizerConfigSetsSpecialTokensAndTemplates) {
    cv::GgufVocab v;
    v.model = "llama";
    v.pre = "default";
    v.tokens = {"<unk>", "<s>", "</s>", "a", "b"};
    v.scores = {0, 0, 0, -1, -2};
    v.types = {2, 3, 3, 1, 1};
    const std::string config = R"({
        "added_tokens_decoder": {"4": {"content": "<|im_end|>", "special": false},
                                 "3": {"content": "x\u2581y", "special": false}},
        "bos_token": {"content": "<s>"}, "eos_token": "<|im_end|>", "unk_token": "<unk>",
        "add_bos_token": true, "add_eos_token": false, "add_prefix_space": false,
        "chat_template": [{"name": "default", "template": "T1"}, {"name": "tool_use", "template": "T2"}]})";
    cv::apply_tokenizer_config(v, std::vector<uint8_t>(config.begin(), config.end()), "tc.json");
    EXPECT_EQ(v.tokens[4], "<|im_end|>");
    EXPECT_EQ(v.types[4], cv::token_control);  // looks special: <|...|>
    EXPECT_EQ(v.tokens[3], "x y");             // user-defined: SentencePiece spaces pre-normalized
    EXPECT_EQ(v.types[3], cv::token_user_defined);
    EXPECT_EQ(v.scores[3], -1000.0f);
    EXPECT_EQ(v.special_id("bos"), 1u);
    EXPECT_EQ(v.special_id("eos"), 4u);
    EXPECT_EQ(v.special_id("unknown"), 0u);
    EXPECT_EQ(v.add_space_prefix, false);
    ASSERT_EQ(v.chat_templates.size(), 2u);
    EXPECT_EQ(v.chat_templates[0], (std::pair<std::string, std::string>("", "T1")));
    EXPECT_EQ(v.chat_templates[1].first, "tool_use");
    cv::pad_vocab(v, 8, "t");
    EXPECT_EQ(v.tokens[7], "[PAD7]");
    EXPECT_EQ(v.types[7], cv::token_unused);
    EXPECT_THROW(cv::pad_vocab(v, 4, "t"), mw::Error);

    const ConvertedVocab c = round_trip(v);
    EXPECT_EQ(c.file.get_bool("tokenizer.ggml.add_bos_token"), true);
    EXPECT_EQ(c.file.get_bool("tokenizer.ggml.add_eos_token"), false);
    EXPECT_EQ(c.file.get_string("tokenizer.chat_template"), "T1");
    EXPECT_EQ(c.file.get_string("tokenizer.chat_template.tool_use"), "T2");
    EXPECT_NO_THROW(mw::Vocab::from_gguf(c.file));
}

}  // namespace
