// The word splitter in front of byte-level BPE, selected by `tokenizer.ggml.pre`.
//
// It reproduces llama.cpp's unicode_regex_split exactly, quirks included, because the token
// ids depend on where words break:
//  - the GPT-2 and Llama-3 expressions run as hand-written scanners (as llama.cpp does), which
//    treat `\s+(?!\S)` and unassigned codepoints the way llama.cpp's scanners do;
//  - every other expression that uses \p{..} runs on a "collapsed" copy of the text in which each
//    codepoint is one byte: ASCII stays, non-ASCII whitespace becomes \v, other codepoints
//    become a byte per category (letter, number, ...), and \p{..} in the expression becomes a
//    class of that byte plus its ASCII members. So categories come from our Unicode tables, and
//    \p{S} does not match '~' (llama.cpp's ASCII symbol list lacks it);
//  - expressions without \p{..} run on the real codepoints, with non-ASCII whitespace as \v.
// Each expression splits every piece the previous one produced; text between matches stays a
// piece of its own. Expressions run through PCRE2 with ECMAScript-like options ($ = end only).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mw::tokenizer {

// The expressions llama.cpp uses for a `tokenizer.ggml.pre` value (empty = "default"), plus
// whether that pre-tokenizer takes whole words that are tokens without merging (ignore_merges)
// and whether it adds BOS by default. Returns false for an unknown name.
struct PreTokenizerConfig {
    std::vector<std::string> regexes;
    bool ignore_merges = false;
    bool add_bos = false;
    bool clean_spaces = true;   // detokenize removes spaces before punctuation (BPE default)
    bool bos_disabled = false;  // the pre-tokenizer has no BOS (chatglm)
    // SentencePiece-style BPE (Gemma 4): spaces become U+2581 before splitting, words stay raw
    // UTF-8 (no GPT-2 byte characters), missing characters fall back to <0xXX> tokens, a word
    // made only of newlines is taken whole when it is a token, and BOS is added even when the
    // file says not to (llama.cpp overrides it).
    bool spm_style = false;
};
bool pre_tokenizer_config(std::string_view pre, PreTokenizerConfig& config);
// Every `tokenizer.ggml.pre` value pre_tokenizer_config() knows.
std::vector<std::string_view> known_pre_tokenizers();

class PreTokenizer {
  public:
    // Compiles the expressions; throws mw::Error (unsupported) if PCRE2 rejects one.
    // byte_encode = false leaves the words in UTF-8 instead of GPT-2 byte characters.
    explicit PreTokenizer(const std::vector<std::string>& regexes, bool byte_encode = true);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // Splits `text` into words and writes each in GPT-2 byte characters (every byte of its
    // UTF-8, after invalid bytes became U+FFFD, mapped by unicode::byte_to_bpe_char), or, without
    // byte_encode, in that UTF-8.
    void split(std::string_view text, std::vector<std::string>& words) const;

  private:
    struct Rule;
    std::vector<std::unique_ptr<Rule>> rules_;
    bool need_collapsed_ = false;
    bool need_utf_ = false;
    bool byte_encode_ = true;
};

}  // namespace mw::tokenizer
