// Tokenizer ids against llama.cpp: its test-tokenizer-0 vectors (testdata/tokenizer/*.inp/.out)
// and the llama-tokenize outputs in reference/tokenizer.json; plus round trips and the
// throughput corpus.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "vocab/vocab.h"

namespace mw {
namespace {

Vocab load_vocab(const std::string& path) {
    const std::vector<uint8_t> bytes = test::read_file(path);
    return Vocab::from_gguf(gguf::GgufFile::parse(bytes, path));
}

std::string ids_text(const std::vector<int32_t>& ids) {
    std::string s;
    for (const int32_t id : ids) {
        s += ' ';
        s += std::to_string(id);
    }
    return s;
}

// A GoogleTest name from a vocab or file name.
std::string test_name(const std::string& name) {
    std::string out;
    for (const char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
}

// llama.cpp's test-tokenizer-0 format: strings separated by "\n__ggml_vocab_test__\n", and one
// line of space-separated ids per string.
struct VectorCase {
    std::string text;
    std::vector<int32_t> ids;
};

std::vector<VectorCase> read_vectors(const std::string& inp_path, const std::string& out_path) {
    const std::string inp = test::read_text(inp_path);
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    size_t pos = 0;
    while (pos < inp.size()) {
        const size_t next = inp.find(separator, pos);
        if (next == inp.npos) {
            texts.push_back(inp.substr(pos));
            break;
        }
        texts.push_back(inp.substr(pos, next - pos));
        pos = next + separator.size();
    }
    std::ifstream out(out_path);
    std::vector<VectorCase> cases;
    std::string line;
    for (size_t i = 0; std::getline(out, line); ++i) {
        if (i >= texts.size()) throw std::runtime_error("more .out lines than .inp strings");
        VectorCase c{texts[i], {}};
        std::istringstream ss(line);
        for (int32_t id; ss >> id;) c.ids.push_back(id);
        cases.push_back(std::move(c));
    }
    if (cases.size() != texts.size()) throw std::runtime_error(".inp/.out count mismatch");
    return cases;
}

bool cleaned_up_by_bpe_detokenizer(std::string_view s);

// The test-tokenizer-0 vectors of ggml-vocab-<name>.gguf (base; base.inp and base.out), tokenized
// as that test calls common_tokenize (add_special = false, parse_special = false): llama.cpp's
// ids; with `detokenize`, the ids give the text back too (unless the BPE clean-up of spaces
// changes it).
void expect_llama_vectors(const std::string& name, const std::string& base, bool detokenize) {
    const Vocab vocab = load_vocab(base);
    const auto cases = read_vectors(base + ".inp", base + ".out");
    ASSERT_GT(cases.size(), 40u);
    size_t passed = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto ids = vocab.tokenize(cases[i].text, false, false);
        EXPECT_EQ(ids, cases[i].ids)
            << name << " string " << i << " \"" << cases[i].text
            << "\"\n got:     " << ids_text(ids) << "\n expected:" << ids_text(cases[i].ids);
        passed += ids == cases[i].ids;
        if (!detokenize) continue;
        if (name == "gemma-4" && cleaned_up_by_bpe_detokenizer(cases[i].text)) continue;
        EXPECT_EQ(vocab.detokenize(ids), cases[i].text) << name << " string " << i;
    }
    testing::Test::RecordProperty("passed",
                                  std::to_string(passed) + "/" + std::to_string(cases.size()));
}

class LlamaCppVectors : public testing::TestWithParam<std::string> {};

TEST_P(LlamaCppVectors, IdsMatchLlamaCpp) {
    const std::string base =
        test::shared_path("testdata/tokenizer/ggml-vocab-" + GetParam() + ".gguf");
    expect_llama_vectors(GetParam(), base, false);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, LlamaCppVectors,
                         testing::Values("bert-bge", "deepseek-coder", "deepseek-llm", "falcon",
                                         "gpt-2", "llama-spm", "mpt", "phi-3", "refact",
                                         "starcoder"),
                         [](const testing::TestParamInfo<std::string>& p) {
                             return test_name(p.param);
                         });

// Newer vocabularies llama.cpp ships in its models/ folder with test-tokenizer-0 vectors, too
// large to keep here: checked when MEMWALL_LLAMA_MODELS_DIR names that folder (a llama.cpp
// checkout's models/), skipped otherwise.
class LlamaCppModelsVectors : public testing::TestWithParam<std::string> {};

TEST_P(LlamaCppModelsVectors, IdsMatchLlamaCpp) {
    const char* dir = std::getenv("MEMWALL_LLAMA_MODELS_DIR");
    if (!dir || !*dir) {
        GTEST_SKIP() << "set MEMWALL_LLAMA_MODELS_DIR to llama.cpp's models/ folder to check "
                        "ggml-vocab-"
                     << GetParam() << ".gguf against its vectors";
    }
    const std::string base = std::string(dir) + "/ggml-vocab-" + GetParam() + ".gguf";
    for (const std::string& path : {base, base + ".inp", base + ".out"}) {
        if (!std::filesystem::exists(path)) {
            GTEST_SKIP() << path << " does not exist (MEMWALL_LLAMA_MODELS_DIR=" << dir << ")";
        }
    }
    expect_llama_vectors(GetParam(), base, true);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, LlamaCppModelsVectors, testing::Values("gemma-4", "qwen35"),
                         [](const testing::TestParamInfo<std::string>& p) {
                             return test_name(p.param);
                         });

// The Llama 3 vocabulary is too large for the shared folder as GGUF, but its tokens and merges
// are there: rebuild the vocab-only GGUF (pre-tokenizer "llama-bpe") and check llama.cpp's
// vectors for it.
TEST(LlamaBpe, IdsMatchLlamaCppVectors) {
    const std::string dir = "testdata/tokenizer/llama3.2-bpe/";
    const auto encoder =
        nlohmann::json::parse(test::read_text(test::shared_path(dir + "encoder.json")));
    std::vector<std::string> tokens(encoder.size());
    for (const auto& [text, id] : encoder.items()) tokens.at(id.get<size_t>()) = text;
    std::vector<std::string> merges;
    std::istringstream bpe(test::read_text(test::shared_path(dir + "vocab.bpe")));
    for (std::string line; std::getline(bpe, line);) {
        if (!line.empty()) merges.push_back(line);
    }
    gguf::GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "llama-bpe");
    w.set_array_strings("tokenizer.ggml.tokens", tokens);
    w.set_array_strings("tokenizer.ggml.merges", merges);
    w.set_u32("tokenizer.ggml.bos_token_id", 0);  // the real file's is 128000, not in this list
    const auto bytes = w.to_bytes();
    const Vocab vocab = Vocab::from_gguf(gguf::GgufFile::parse(bytes, "llama3.2-bpe"));
    EXPECT_TRUE(vocab.add_bos());

    const std::string base = "testdata/tokenizer/orphan/ggml-vocab-llama-bpe.gguf";
    const auto cases =
        read_vectors(test::shared_path(base + ".inp"), test::shared_path(base + ".out"));
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto ids = vocab.tokenize(cases[i].text, false, false);
        EXPECT_EQ(ids, cases[i].ids)
            << "string " << i << " \"" << cases[i].text << "\"\n got:     " << ids_text(ids)
            << "\n expected:" << ids_text(cases[i].ids);
    }
}

// reference/tokenizer.json: llama-tokenize with add_special = the vocab's add_bos flag (that is
// what the tool passes) and parse_special = true.
TEST(TokenizerReference, IdsMatchLlamaTokenize) {
    const auto ref =
        nlohmann::json::parse(test::read_text(test::shared_path("reference/tokenizer.json")));
    std::map<std::string, std::string> strings;
    for (const auto& s : ref.at("strings")) strings[s.at("id")] = s.at("text");
    ASSERT_EQ(strings.size(), 23u);
    ASSERT_EQ(ref.at("vocabs").size(), 15u);
    for (const auto& [name, entry] : ref.at("vocabs").items()) {
        const Vocab vocab = load_vocab(test::shared_path(entry.at("path")));
        for (const auto& [sid, expected] : entry.at("ids").items()) {
            const auto ids = vocab.tokenize(strings.at(sid), vocab.add_bos(), true);
            EXPECT_EQ(ids, expected.get<std::vector<int32_t>>())
                << name << " " << sid << " \"" << strings.at(sid)
                << "\"\n got:     " << ids_text(ids)
                << "\n expected:" << ids_text(expected.get<std::vector<int32_t>>());
        }
    }
}

// llama.cpp's BPE detokenizer removes spaces before punctuation and some apostrophes
// (clean_up_tokenization_spaces); those strings do not come back unchanged.
bool cleaned_up_by_bpe_detokenizer(std::string_view s) {
    for (size_t i = 1; i < s.size(); ++i) {
        if (s[i - 1] != ' ') continue;
        if (s[i] == '?' || s[i] == '!' || s[i] == '.' || s[i] == ',' || s[i] == '\'') return true;
    }
    return false;
}

// Gemma 4's tokenizer ("gemma4") on a vocabulary cut from the real one (tests/data/tokenizer/
// gemma4-mini, see its README) with ids from llama.cpp for llama.cpp's strings and ours: without
// special handling (test-tokenizer-0) and with add_special and parse_special.
TEST(Gemma4Tokenizer, IdsMatchLlamaCppOnTheCutVocab) {
    const std::string dir = std::string(MEMWALL_TESTS_DIR) + "/data/tokenizer/gemma4-mini/";
    const Vocab vocab = load_vocab(dir + "vocab.gguf");
    EXPECT_EQ(vocab.model(), "gemma4");
    EXPECT_EQ(vocab.type(), VocabType::bpe);
    EXPECT_TRUE(vocab.add_bos());
    EXPECT_EQ(vocab.token_text(vocab.bos()), "<bos>");
    EXPECT_TRUE(vocab.is_eog(vocab.find_token("<turn|>")));
    EXPECT_TRUE(vocab.is_eog(vocab.eos()));
    EXPECT_FALSE(vocab.is_eog(vocab.find_token("</s>")));  // plain text in Gemma 4
    for (const auto& [file, special] : {std::pair{"ids.out", false}, {"ids-special.out", true}}) {
        const auto cases = read_vectors(dir + "strings.inp", dir + file);
        ASSERT_GT(cases.size(), 50u);
        for (size_t i = 0; i < cases.size(); ++i) {
            const auto ids = vocab.tokenize(cases[i].text, special, special);
            EXPECT_EQ(ids, cases[i].ids)
                << file << " string " << i << " \"" << cases[i].text
                << "\"\n got:     " << ids_text(ids) << "\n expected:" << ids_text(cases[i].ids);
        }
    }
}

// Pieces turn "▁" back into spaces and byte tokens into bytes, so text comes back unchanged
// (apart from llama.cpp's clean-up of spaces before punctuation).
TEST(Gemma4Tokenizer, DetokenizeGivesBackTheText) {
    const std::string dir = std::string(MEMWALL_TESTS_DIR) + "/data/tokenizer/gemma4-mini/";
    const Vocab vocab = load_vocab(dir + "vocab.gguf");
    const auto cases = read_vectors(dir + "strings.inp", dir + "ids.out");
    size_t checked = 0;
    for (const auto& c : cases) {
        if (cleaned_up_by_bpe_detokenizer(c.text)) continue;
        EXPECT_EQ(vocab.detokenize(vocab.tokenize(c.text, false, false)), c.text);
        const auto with_bos = vocab.tokenize(c.text, true, false);
        ASSERT_FALSE(with_bos.empty());
        EXPECT_EQ(with_bos.front(), vocab.bos());
        EXPECT_EQ(vocab.detokenize(with_bos, true), c.text);
        ++checked;
    }
    EXPECT_GT(checked, 30u);
    EXPECT_EQ(vocab.token_to_piece(vocab.find_token("<0x41>"), false), "A");
    EXPECT_EQ(vocab.detokenize(vocab.tokenize("<|turn>user\nHi<turn|>", true, true), true, true),
              "<|turn>user\nHi<turn|>");
}

class RoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, DetokenizeGivesBackTheText) {
    const std::string path = test::shared_path(GetParam());
    const Vocab vocab = load_vocab(path);
    const std::string inp = test::shared_path("testdata/tokenizer/ggml-vocab-gpt-2.gguf.inp");
    const auto cases = read_vectors(inp, inp.substr(0, inp.size() - 4) + ".out");
    size_t checked = 0;
    for (const auto& c : cases) {
        if (vocab.type() == VocabType::bpe && cleaned_up_by_bpe_detokenizer(c.text)) continue;
        const auto ids = vocab.tokenize(c.text, false, false);
        EXPECT_EQ(vocab.detokenize(ids), c.text) << ids_text(ids);
        // llama.cpp keeps the SPM space prefix when a BOS comes first, even one it removes.
        const auto with_bos = vocab.tokenize(c.text, true, false);
        const std::string prefix = vocab.add_space_prefix() && !c.text.empty() ? " " : "";
        EXPECT_EQ(vocab.detokenize(with_bos, true), prefix + c.text);
        ++checked;
    }
    EXPECT_GT(checked, 30u);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, RoundTrip,
                         testing::Values("testdata/tokenizer/ggml-vocab-llama-spm.gguf",
                                         "testdata/tokenizer/ggml-vocab-phi-3.gguf",
                                         "models/stories260K.gguf",
                                         "testdata/tokenizer/ggml-vocab-gpt-2.gguf",
                                         "testdata/tokenizer/ggml-vocab-falcon.gguf",
                                         "testdata/tokenizer/ggml-vocab-deepseek-llm.gguf",
                                         "testdata/tokenizer/ggml-vocab-starcoder.gguf"),
                         [](const testing::TestParamInfo<std::string>& p) {
                             const std::string file = p.param.substr(p.param.rfind('/') + 1);
                             return test_name(file.substr(0, file.find(".gguf")));
                         });

TEST(Detokenize, CleansSpacesBeforePunctuationLikeLlamaCpp) {
    const Vocab gpt2 = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-gpt-2.gguf"));
    const auto ids = gpt2.tokenize("Hello , world ! it ' s he 's I 've ok 't", false, false);
    EXPECT_EQ(gpt2.detokenize(ids), "Hello, world! it's he's I've ok 't");
}

TEST(Detokenize, SpmDropsOnlyTheSpacePrefix) {
    const Vocab spm = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-llama-spm.gguf"));
    const auto ids = spm.tokenize("  two spaces", false, false);
    EXPECT_EQ(spm.token_to_piece(ids[0], false)[0], ' ');
    EXPECT_EQ(spm.detokenize(ids), "  two spaces");
    EXPECT_EQ(spm.token_to_piece(spm.bos(), false), "");
    EXPECT_EQ(spm.token_to_piece(spm.bos(), true), "<s>");
    EXPECT_EQ(spm.token_to_piece(spm.find_token("<0x0A>"), false), "\n");
    EXPECT_EQ(spm.newline(), spm.find_token("<0x0A>"));
}

TEST(Vocab, SpecialTokensAndFlagsOfTheTestVocabs) {
    const Vocab spm = load_vocab(test::shared_path("models/stories260K.gguf"));
    EXPECT_EQ(spm.type(), VocabType::spm);
    EXPECT_EQ(spm.n_tokens(), 512);
    EXPECT_EQ(spm.bos(), 1);
    EXPECT_EQ(spm.eos(), 2);
    EXPECT_EQ(spm.unk(), 0);
    EXPECT_EQ(spm.pad(), kNoToken);  // written as 4294967295, i.e. none
    EXPECT_TRUE(spm.add_bos());
    EXPECT_FALSE(spm.add_eos());
    EXPECT_TRUE(spm.is_eog(2));
    EXPECT_FALSE(spm.is_eog(1));

    const Vocab gpt2 = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-gpt-2.gguf"));
    EXPECT_EQ(gpt2.type(), VocabType::bpe);
    EXPECT_EQ(gpt2.bos(), 50256);
    EXPECT_FALSE(gpt2.add_bos());
    EXPECT_TRUE(gpt2.is_eog(50256));
    EXPECT_EQ(gpt2.eot(), 50256);  // found by its text <|endoftext|>
    EXPECT_EQ(gpt2.newline(), 198);
    EXPECT_EQ(gpt2.token_to_piece(50256, false), "");
    EXPECT_EQ(gpt2.token_to_piece(50256, true), "<|endoftext|>");
    EXPECT_EQ(gpt2.token_to_piece(gpt2.find_token("\xC4\xA0world"), false), " world");

    const Vocab bert = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-bert-bge.gguf"));
    EXPECT_EQ(bert.type(), VocabType::wpm);
    EXPECT_EQ(bert.bos(), 101);
    EXPECT_EQ(bert.sep(), 102);
    EXPECT_EQ(bert.tokenize("Hello", true, false), (std::vector<int32_t>{101, 7592, 102}));

    const Vocab phi3 = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-phi-3.gguf"));
    EXPECT_EQ(phi3.eos(), 32000);
    EXPECT_TRUE(phi3.is_eog(phi3.find_token("<|end|>")));
    // Phi-3's special tokens eat the whitespace after them, except <|endoftext|>.
    EXPECT_EQ(phi3.tokenize("<|user|>\nHi<|end|>\n", false, true),
              phi3.tokenize("<|user|>Hi<|end|>", false, true));
    EXPECT_NE(phi3.tokenize("<|endoftext|> Hi", false, true),
              phi3.tokenize("<|endoftext|>Hi", false, true));
}

TEST(Tokenize, ParseSpecialOnlySplitsControlTokensWhenAsked) {
    const Vocab spm = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-llama-spm.gguf"));
    EXPECT_EQ(spm.tokenize("<s>", false, true), (std::vector<int32_t>{1}));
    const auto plain = spm.tokenize("<s>", false, false);
    EXPECT_GT(plain.size(), 1u);
    EXPECT_EQ(spm.detokenize(plain), "<s>");
    // User-defined tokens are split out even without parse_special (mpt's runs of spaces).
    const Vocab mpt = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-mpt.gguf"));
    const int32_t four_spaces = mpt.find_token("    ");
    ASSERT_NE(four_spaces, kNoToken);
    EXPECT_EQ(mpt.tokenize("a    b", false, false)[1], four_spaces);
}

TEST(Tokenize, InvalidUtf8NeverThrows) {
    const std::string junk =
        "ok \xFF\xFE \xC3 \xE2\x82 \xF0\x9F\x98 \xED\xA0\x80 \xF7\xBF\xBF\xBF end";
    for (const char* path : {"testdata/tokenizer/ggml-vocab-gpt-2.gguf",
                             "testdata/tokenizer/ggml-vocab-llama-spm.gguf",
                             "testdata/tokenizer/ggml-vocab-bert-bge.gguf",
                             "testdata/tokenizer/ggml-vocab-deepseek-llm.gguf",
                             "testdata/tokenizer/ggml-vocab-falcon.gguf"}) {
        const Vocab vocab = load_vocab(test::shared_path(path));
        const auto ids = vocab.tokenize(junk, true, true);
        EXPECT_GE(ids.size(), 4u) << path;
        for (const int32_t id : ids) EXPECT_TRUE(id >= 0 && id < vocab.n_tokens()) << path;
    }
    // SPM byte fallback keeps invalid bytes, but like llama.cpp cuts symbols by the lead byte
    // only, so a bad lead byte swallows the escaped space after it: "\xFE▁" -> 4 byte tokens.
    const Vocab spm = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-llama-spm.gguf"));
    const auto ids = spm.tokenize("a\xFE b", false, false);
    const std::vector<int32_t> expected = {spm.find_token("\xE2\x96\x81"
                                                          "a"),
                                           spm.find_token("<0xFE>"),
                                           spm.find_token("<0xE2>"),
                                           spm.find_token("<0x96>"),
                                           spm.find_token("<0x81>"),
                                           spm.find_token("b")};
    EXPECT_EQ(ids, expected);
}

// Not a timing test: tokenizes the 3.2 MB corpus (a slow, quadratic tokenizer would make the
// suite crawl) and checks it comes back intact.
TEST(Tokenize, WarAndPeaceRoundTrips) {
    const std::string text = test::read_text(test::shared_path("testdata/text/war-and-peace.txt"));
    ASSERT_GT(text.size(), 3000000u);

    const Vocab spm = load_vocab(test::shared_path("models/stories260K.gguf"));
    const auto spm_ids = spm.tokenize(text, false, false);
    EXPECT_GT(spm_ids.size(), text.size() / 5);
    EXPECT_TRUE(spm.detokenize(spm_ids) == text);  // not EXPECT_EQ: no 3 MB diff on failure

    const Vocab gpt2 = load_vocab(test::shared_path("testdata/tokenizer/ggml-vocab-gpt-2.gguf"));
    const auto gpt2_ids = gpt2.tokenize(text, false, false);
    EXPECT_GT(gpt2_ids.size(), text.size() / 6);
    std::string pieces;
    for (const int32_t id : gpt2_ids) pieces += gpt2.token_to_piece(id, false);
    EXPECT_TRUE(pieces == text);
}

}  // namespace
}  // namespace mw
