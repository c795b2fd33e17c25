// libFuzzer target: Vocab::from_gguf on fuzzed vocabulary metadata (tokenizer.ggml.*), with the
// structure-aware GGUF mutator. The seeds are vocab-only files of every tokenizer kind, cut down
// from the vocabularies in ../shared so that they stay consistent (fuzz_make_seeds).
//
// A finding is a crash, a sanitizer report, an exception other than mw::Error, an error that
// does not name the file, more heap than the file justifies while loading (HeapLimit), or, for a
// vocabulary that loads, a broken invariant of its accessors or of tokenizing a few texts
// (vocab_checks.h).
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "fuzz_util.h"
#include "gguf_mutator.h"
#include "heap_limit.h"
#include "vocab/vocab.h"
#include "vocab_checks.h"

namespace {

using namespace mw;
constexpr const char* kTarget = "fuzz_vocab_gguf";
constexpr std::string_view kName = "fuzz.gguf";

void check_vocab(const Vocab& v) {
    const int32_t n = v.n_tokens();
    if (n <= 0) fuzz::violated(kTarget, "a loaded vocabulary has no tokens");
    for (const int32_t id : {v.bos(), v.eos(), v.eot(), v.eom(), v.unk(), v.sep(), v.pad(),
                             v.mask(), v.newline(), v.fim_pre(), v.fim_suf(), v.fim_mid()}) {
        if (id != kNoToken && (id < 0 || id >= n)) {
            fuzz::violated(kTarget, "special token id out of range", std::to_string(id));
        }
    }
    if (v.add_bos() && v.bos() == kNoToken) fuzz::violated(kTarget, "add_bos without a BOS");
    if (v.add_eos() && v.eos() == kNoToken) fuzz::violated(kTarget, "add_eos without an EOS");

    // Accessors of the first, middle and last ids; ids outside the vocabulary are refused.
    std::string sample;
    for (const int32_t id : {0, n / 2, n - 1, v.bos(), v.eos(), v.unk()}) {
        if (id == kNoToken) continue;
        (void)v.token_score(id);
        (void)v.token_attr(id);
        if (v.find_token(v.token_text(id)) != id) {
            fuzz::violated(kTarget, "find_token(token_text(id)) != id", std::to_string(id));
        }
        sample += v.token_text(id).substr(0, 64);
        sample += ' ';
    }
    for (const int32_t bad : {-1, n}) {
        try {
            (void)v.token_to_piece(bad, true);
            fuzz::violated(kTarget, "token_to_piece accepted an id outside the vocabulary",
                           std::to_string(bad));
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::invalid_argument) {
                fuzz::violated(kTarget, "token_to_piece refused a bad id with the wrong kind");
            }
        }
    }

    const std::string_view texts[] = {
        "Hello world",
        " <s>hi</s> ab\n\n  a\tb",
        "\xff\xfe\x80 \xc3\xbc \xf0\x9f\xa6\x99 123 \xe2\x96\x81x",
        "<|im_end|><|endoftext|>[CLS][SEP][MASK]",
        "",
        sample,
    };
    uint8_t flags = 0;
    for (const std::string_view text : texts) {
        fuzz::check_tokenizer(kTarget, "fuzzed vocabulary", v, text, flags);
        flags = uint8_t(flags * 7 + 5);  // a different combination for each text
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Loading is bounded by the file; what tokenizing allocates afterwards is bounded by text
    // length times token length (an unknown-token piece may be as long as the file allows).
    std::optional<fuzz::HeapLimit> limit(std::in_place, fuzz::heap_limit_for(size));
    std::optional<gguf::GgufFile> file;
    try {
        file.emplace(gguf::GgufFile::parse({data, size}, std::string(kName)));
    } catch (const Error& e) {
        fuzz::check_message(kTarget, e, kName);
        return 0;
    }
    std::optional<Vocab> vocab;
    try {
        vocab.emplace(Vocab::from_gguf(*file));
    } catch (const Error& e) {
        fuzz::check_message(kTarget, e, kName);
        return 0;
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "Vocab::from_gguf threw something other than mw::Error", e.what());
    }
    limit.reset();
    try {
        check_vocab(*vocab);
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "exception from a loaded vocabulary", e.what());
    }
    return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
    return mw::fuzz::mutate_gguf(data, size, max_size, seed);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t max_out_size, unsigned int seed) {
    return mw::fuzz::cross_over_gguf(data1, size1, data2, size2, out, max_out_size, seed);
}
