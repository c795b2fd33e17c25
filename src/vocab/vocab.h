// The tokenizer of a model, built from its GGUF metadata (tokenizer.ggml.*), giving the same
// token ids as llama.cpp: SentencePiece-style BPE ("llama"), byte-level BPE ("gpt2", with the
// pre-tokenizer named by tokenizer.ggml.pre), Gemma 4's BPE over "▁"-escaped UTF-8 ("gemma4")
// and WordPiece ("bert").
//
// A Vocab is immutable after loading; tokenize() and token_to_piece() may be called from many
// threads at once. Copies share the loaded data.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mw {

namespace gguf {
class GgufFile;
}

enum class VocabType {
    spm,  // tokenizer.ggml.model = "llama"
    bpe,  // "gpt2", "gemma4"
    wpm,  // "bert"
};

// Token attributes, as llama.cpp derives them from tokenizer.ggml.token_type.
enum TokenAttr : uint32_t {
    token_attr_undefined = 0,
    token_attr_unknown = 1u << 0,
    token_attr_unused = 1u << 1,
    token_attr_normal = 1u << 2,
    token_attr_control = 1u << 3,
    token_attr_user_defined = 1u << 4,
    token_attr_byte = 1u << 5,
    token_attr_lstrip = 1u << 7,  // eat whitespace before the token when splitting specials out
    token_attr_rstrip = 1u << 8,  // eat whitespace after it
};

inline constexpr int32_t kNoToken = -1;

class Vocab {
  public:
    // Throws mw::Error (bad_file) naming the file and key when the metadata is missing or
    // inconsistent, (unsupported) for tokenizer models or pre-tokenizers memwall lacks.
    static Vocab from_gguf(const gguf::GgufFile& file);

    // Text to token ids. add_special: BOS/EOS (CLS/SEP for WordPiece) as the vocab asks.
    // parse_special: text spelling a control token ("<s>", "<|im_end|>") becomes that token;
    // user-defined tokens are always split out. Invalid UTF-8 never throws.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special,
                                  bool parse_special) const;

    // The text of one token, like llama_token_to_piece(lstrip = 0): SPM "▁" -> " ", byte tokens
    // -> the raw byte, byte-level BPE characters -> their bytes, control and unknown tokens ->
    // "" unless `special`. Pieces may be partial UTF-8. Throws invalid_argument for a bad id.
    std::string token_to_piece(int32_t id, bool special) const;

    // Tokens to text, like llama_detokenize: drops the space the SPM tokenizer put in front
    // of the text, applies the vocab's clean-up of spaces before punctuation (most BPE vocabs),
    // and with remove_special drops a leading BOS and trailing EOS the vocab adds.
    std::string detokenize(std::span<const int32_t> ids, bool remove_special = false,
                           bool unparse_special = false) const;

    VocabType type() const;
    std::string_view model() const;  // tokenizer.ggml.model
    std::string_view pre() const;    // tokenizer.ggml.pre ("" if absent)
    int32_t n_tokens() const;
    std::string_view token_text(int32_t id) const;  // raw vocabulary entry
    float token_score(int32_t id) const;
    uint32_t token_attr(int32_t id) const;  // TokenAttr bits
    // The id of the vocabulary entry spelled exactly `text`, or kNoToken.
    int32_t find_token(std::string_view text) const;

    // Special tokens (kNoToken when the vocab has none).
    int32_t bos() const;
    int32_t eos() const;
    int32_t eot() const;
    int32_t eom() const;
    int32_t unk() const;
    int32_t sep() const;
    int32_t pad() const;
    int32_t mask() const;
    int32_t newline() const;
    int32_t fim_pre() const;
    int32_t fim_suf() const;
    int32_t fim_mid() const;
    bool add_bos() const;
    bool add_eos() const;
    bool add_space_prefix() const;
    // End of generation: EOS, EOT, EOM and the tokens llama.cpp recognises by their text.
    bool is_eog(int32_t id) const;
    bool is_control(int32_t id) const;

    struct Impl;

  private:
    explicit Vocab(std::shared_ptr<const Impl> impl);
    std::shared_ptr<const Impl> impl_;
};

// Turns a stream of tokens into text without ever splitting a UTF-8 character: a piece that
// ends inside a character is held back until the rest arrives. Bytes that cannot become valid
// UTF-8 come out as U+FFFD, so the output is always valid UTF-8. The concatenation of push()
// and finish() results equals the concatenation of token_to_piece() of the tokens when that is
// valid UTF-8.
class TokenTextStream {
  public:
    explicit TokenTextStream(const Vocab& vocab, bool special = false);

    // The text that is complete after adding `id` (possibly empty).
    std::string push(int32_t id);
    // Whatever is held back, with an unfinished character as U+FFFD; the stream starts afresh.
    std::string finish();

  private:
    Vocab vocab_;
    bool special_;
    std::string pending_;  // bytes of an unfinished UTF-8 character
};

}  // namespace mw
