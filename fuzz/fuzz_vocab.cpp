// libFuzzer target: the tokenizers on arbitrary bytes. The vocabularies are loaded once: the
// real ones of ../shared (SentencePiece, byte-level BPE with several pre-tokenizers, WordPiece),
// a small GPT-2 vocabulary under every pre-tokenizer memwall knows, WordPiece without lowercasing,
// the cut Gemma 4 vocabulary of tests/data and the tiny test vocabularies. Input: byte 0 picks the
// vocabulary, byte 1 the flags, the rest is the text.
//
// A finding is a crash, a sanitizer report, any exception, a token id out of range, more tokens
// than the text can explain, a piece that cannot be produced, a TokenTextStream whose output is
// not valid UTF-8 or differs from the pieces when those are valid UTF-8.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "fuzz_util.h"
#include "support/tiny_model.h"
#include "vocab/pretokenizer.h"
#include "vocab/vocab.h"
#include "vocab_checks.h"

namespace {

using namespace mw;
constexpr const char* kTarget = "fuzz_vocab";

struct NamedVocab {
    std::string name;
    Vocab vocab;
};

std::vector<NamedVocab>& vocabs() {
    static std::vector<NamedVocab> v;
    return v;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void add_vocab(const std::string& name, const std::vector<uint8_t>& bytes) {
    try {
        const gguf::GgufFile f = gguf::GgufFile::parse(bytes, name);
        vocabs().push_back({name, Vocab::from_gguf(f)});
    } catch (const Error& e) {
        // An unsupported pre-tokenizer or model in ../shared is not a finding of this target.
        std::fprintf(stderr, "%s: skipping %s: %s\n", kTarget, name.c_str(), e.what());
    }
}

// The tokenizer keys of `f` with some replaced: a variant of a real vocabulary.
std::vector<uint8_t> vocab_variant(const gguf::GgufFile& f,
                                   const std::function<void(gguf::GgufWriter&)>& change) {
    gguf::GgufWriter w;
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (kv.key.starts_with("tokenizer.") || kv.key.starts_with("general.")) {
            if (kv.key != "general.alignment") w.set_value(kv.key, kv.value);
        }
    }
    change(w);
    return w.to_bytes();
}

void load_vocabs() {
    namespace fs = std::filesystem;
    const std::string shared = fuzz::shared_dir();
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(shared + "/testdata/tokenizer", ec)) {
        if (entry.path().extension() == ".gguf") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const char* model :
         {"/models/stories260K.gguf", "/reference/models/qwen2-tiny-F16.gguf"}) {
        if (fs::exists(shared + model)) files.push_back(shared + model);
    }
    for (const std::string& path : files)
        add_vocab(fs::path(path).filename().string(), read_bytes(path));

    // Every pre-tokenizer on qwen2-tiny's 4096-token GPT-2 vocabulary (its merges and bytes).
    const std::string gpt2_small = shared + "/reference/models/qwen2-tiny-F16.gguf";
    if (fs::exists(gpt2_small)) {
        const std::vector<uint8_t> bytes = read_bytes(gpt2_small);
        const gguf::GgufFile f = gguf::GgufFile::parse(bytes, gpt2_small);
        for (const std::string_view pre : tokenizer::known_pre_tokenizers()) {
            add_vocab("qwen2-tiny pre=" + std::string(pre),
                      vocab_variant(f, [&](auto& w) { w.set_string("tokenizer.ggml.pre", pre); }));
        }
    }
    // WordPiece keeping case and accents.
    const std::string bert = shared + "/testdata/tokenizer/ggml-vocab-bert-bge.gguf";
    if (fs::exists(bert)) {
        const std::vector<uint8_t> bytes = read_bytes(bert);
        const gguf::GgufFile f = gguf::GgufFile::parse(bytes, bert);
        add_vocab("bert-bge cased", vocab_variant(f, [](auto& w) {
                      w.set_bool("tokenizer.ggml.normalizer.lowercase", false);
                  }));
    }
    // Gemma 4's tokenizer: the cut of its real vocabulary the tests use.
    const std::string gemma4 =
        std::string(MEMWALL_TESTS_DIR) + "/data/tokenizer/gemma4-mini/vocab.gguf";
    if (fs::exists(gemma4)) add_vocab("gemma4-mini", read_bytes(gemma4));
    for (const auto vocab : {test::TinyVocab::spm, test::TinyVocab::bpe}) {
        gguf::GgufWriter w;
        w.set_string("general.architecture", "llama");
        test::add_tiny_vocab(w, vocab);
        add_vocab(vocab == test::TinyVocab::spm ? "tiny spm" : "tiny bpe", w.to_bytes());
    }
    if (vocabs().empty()) {
        std::fprintf(stderr, "%s: no vocabulary loaded (shared data at %s?)\n", kTarget,
                     shared.c_str());
        std::abort();
    }
    std::fprintf(stderr, "%s: %zu vocabularies loaded\n", kTarget, vocabs().size());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    load_vocabs();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const NamedVocab& nv = vocabs()[data[0] % vocabs().size()];
    const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
    try {
        fuzz::check_tokenizer(kTarget, nv.name, nv.vocab, text, data[1]);
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "exception", fmt::format("{} ({})", e.what(), nv.name));
    }
    return 0;
}
