// The invariants of a loaded vocabulary on one text, shared by fuzz_vocab (real vocabularies,
// fuzzed text) and fuzz_vocab_gguf (fuzzed vocabularies, fixed texts).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "vocab/vocab.h"

namespace mw::fuzz {

// flags: bit 0 add_special, 1 parse_special, 2 special pieces, 3 remove_special, 4 unparse_special.
// Exceptions propagate: the caller decides which are findings.
inline void check_tokenizer(const char* target, std::string_view name, const Vocab& v,
                            std::string_view text, uint8_t flags) {
    const bool add_special = flags & 1, parse_special = flags & 2, special_pieces = flags & 4;
    const bool remove_special = flags & 8, unparse_special = flags & 16;
    const int32_t n_vocab = v.n_tokens();

    const std::vector<int32_t> ids = v.tokenize(text, add_special, parse_special);
    // Every byte yields at most 3 tokens (a space becomes "▁", an invalid byte U+FFFD: three
    // byte tokens), plus the space prefix and BOS/EOS/SEP.
    if (ids.size() > 3 * text.size() + 8) {
        violated(target, "more tokens than the text can explain",
                 fmt::format("{} tokens for {} bytes ({})", ids.size(), text.size(), name));
    }
    std::string pieces;
    for (const int32_t id : ids) {
        if (id < 0 || id >= n_vocab) {
            violated(target, "token id out of range", fmt::format("{} ({})", id, name));
        }
        pieces += v.token_to_piece(id, special_pieces);
        (void)v.token_to_piece(id, !special_pieces);
        (void)v.is_eog(id);
        (void)v.is_control(id);
    }

    TokenTextStream stream(v, special_pieces);
    std::string streamed;
    for (const int32_t id : ids) {
        const std::string out = stream.push(id);
        if (!is_valid_utf8(out))
            violated(target, "TokenTextStream::push output is not UTF-8", name);
        streamed += out;
    }
    const std::string rest = stream.finish();
    if (!is_valid_utf8(rest)) violated(target, "TokenTextStream::finish output is not UTF-8", name);
    streamed += rest;
    if (is_valid_utf8(pieces) && streamed != pieces) {
        violated(target, "TokenTextStream output differs from the pieces (valid UTF-8)", name);
    }

    (void)v.detokenize(ids, remove_special, unparse_special);
}

}  // namespace mw::fuzz
