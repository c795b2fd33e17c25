// A SentencePiece tokenizer.model (a serialized sentencepiece.ModelProto), read with a minimal
// protobuf reader: the pieces with their scores and types, the special ids of the trainer spec
// and the normalizer flags that matter for llama.cpp's "llama" tokenizer. Other fields are
// skipped after their wire format is checked.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mw::convert {

// SentencePiece piece types; the numbers are GGUF's tokenizer.ggml.token_type values too.
enum SpmPieceType : int32_t {
    spm_normal = 1,
    spm_unknown = 2,
    spm_control = 3,
    spm_user_defined = 4,
    spm_unused = 5,
    spm_byte = 6,
};

struct SpmModel {
    struct Piece {
        std::string text;
        float score = 0.0f;
        int32_t type = spm_normal;
    };
    std::vector<Piece> pieces;
    int32_t model_type = 1;  // 1 unigram, 2 BPE, 3 word, 4 char
    // Trainer spec ids (-1: none), with SentencePiece's defaults.
    int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
    bool byte_fallback = false;
    bool add_dummy_prefix = true;
    bool remove_extra_whitespaces = true;
};

// Parses tokenizer.model bytes. `name` (normally the path) is used in error messages, which say
// which field at which offset is malformed. Throws ErrorKind::bad_file.
SpmModel parse_spm_model(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace mw::convert
