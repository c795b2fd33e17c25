// Model conversion to GGUF, natively (no Python): Hugging Face folders (config.json, safetensors
// shards, tokenizer files) for llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe,
// granite, cohere, gemma2, gemma3_text, phi3 and deepseek_v2/v3, and llama.c checkpoints. The
// output has the metadata keys and tensor names llama.cpp's converters write, so llama.cpp and
// memwall read it alike.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "convert/tensor_plan.h"

namespace mw::convert {

struct ConvertOptions {
    // Type of the large matrices; default f16 for Hugging Face folders (as llama.cpp) and f32
    // for llama2.c checkpoints (their weights are f32, so the tensors stay byte-identical).
    std::optional<OutType> out_type;
    std::string vocab_pre;  // tokenizer.ggml.pre to write instead of the detected one
    std::string name;       // general.name (default: from config.json or the folder name)
    // Called after each tensor is written: (tensors done, total, name of the last one).
    std::function<void(size_t, size_t, const std::string&)> on_tensor;
};

struct ConvertResult {
    std::string arch;
    size_t n_tensors = 0;
    uint64_t n_params = 0;
    uint64_t file_bytes = 0;
    uint32_t n_vocab = 0;
    std::vector<std::string> warnings;
};

// Converts a Hugging Face model folder. Throws mw::Error naming the file, field and value at
// fault: bad_file for malformed inputs, unsupported for models memwall cannot convert, io when
// the files cannot be read or written.
ConvertResult convert_hf(const std::string& hf_dir, const std::string& out_path,
                         const ConvertOptions& options);

// Converts a llama2.c checkpoint (the legacy version-0 export: a header of seven int32, then the
// float32 weights) and its tokenizer.bin (max_token_length, then per token: f32 score, i32
// length, bytes).
ConvertResult convert_llama2c(const std::string& checkpoint, const std::string& tokenizer,
                              const std::string& out_path, const ConvertOptions& options);

// Checks a written file the way loading it would (metadata, tensor shapes, vocabulary), from its
// header only. Throws what loading would throw.
void verify_written_model(const std::string& path);

}  // namespace mw::convert
