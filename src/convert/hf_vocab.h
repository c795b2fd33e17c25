// Tokenizers of Hugging Face model folders as GGUF tokenizer.ggml.* metadata, written the way
// llama.cpp's converter writes them:
//  - tokenizer.model (SentencePiece)        -> "llama": pieces, scores, piece types;
//  - tokenizer.json, byte-level BPE         -> "gpt2": tokens, merges, and tokenizer.ggml.pre
//    named after the pre-tokenizer's split expression;
//  - tokenizer.json, BPE with byte fallback -> "llama", scores from the merge ranks;
// then tokenizer_config.json (added tokens, special tokens, add_bos/eos, chat template) and the
// ids in config.json, and padding to the model's vocab_size with "[PAD<id>]" tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "convert/spm_model.h"

namespace mw::gguf {
class GgufWriter;
}

namespace mw::convert {

// tokenizer.ggml.token_type values.
enum TokenType : int32_t {
    token_normal = 1,
    token_unknown = 2,
    token_control = 3,
    token_user_defined = 4,
    token_unused = 5,
    token_byte = 6,
};

struct GgufVocab {
    std::string model;  // tokenizer.ggml.model: "llama" or "gpt2"
    std::string pre;    // tokenizer.ggml.pre
    std::vector<std::string> tokens;
    std::vector<float> scores;  // "llama" only
    std::vector<int32_t> types;
    std::vector<std::string> merges;  // "gpt2" only, "left right"
    // Special token ids by GGUF key part ("bos" -> tokenizer.ggml.bos_token_id, "unknown",
    // "padding", "seperator" [sic], ...). The first value set for a kind wins.
    std::vector<std::pair<std::string, uint32_t>> special_ids;
    std::vector<std::pair<std::string, bool>> add_special;  // "bos" -> add_bos_token
    std::optional<bool> add_space_prefix;
    std::vector<std::pair<std::string, std::string>> chat_templates;  // name ("" = default), text
    std::vector<std::string> warnings;

    void set_special_id(const std::string& kind, uint32_t id);
    std::optional<uint32_t> special_id(const std::string& kind) const;
    // The id of the token spelled `text`, if any.
    std::optional<uint32_t> find(const std::string& text) const;
};

GgufVocab vocab_from_spm(const SpmModel& model);

// Parses tokenizer.json bytes (BPE only). `pre_override` names the tokenizer.ggml.pre to write
// instead of detecting it from the pre-tokenizer (for expressions memwall does not recognise).
GgufVocab vocab_from_tokenizer_json(std::span<const uint8_t> bytes, const std::string& name,
                                    const std::string& pre_override = "");

// Applies tokenizer_config.json: added_tokens_decoder (SentencePiece vocabs), the special
// tokens named by text, add_bos_token / add_eos_token, add_prefix_space and chat_template.
void apply_tokenizer_config(GgufVocab& vocab, std::span<const uint8_t> bytes,
                            const std::string& name);

// Applies added_tokens.json (SentencePiece vocabs): {"text": id} entries become user-defined.
void apply_added_tokens_json(GgufVocab& vocab, std::span<const uint8_t> bytes,
                             const std::string& name);

// Pads the vocabulary with "[PAD<id>]" unused tokens up to n_vocab (the embedding's rows).
// Throws when it already has more tokens than that.
void pad_vocab(GgufVocab& vocab, uint32_t n_vocab, const std::string& source);

// Checks what GGUF readers will check (unique tokens, merges of known tokens, ids in range)
// so that a bad tokenizer fails the conversion, not the first load. `source` names the files.
void validate_vocab(const GgufVocab& vocab, const std::string& source);

void write_vocab(gguf::GgufWriter& w, const GgufVocab& vocab);

}  // namespace mw::convert
