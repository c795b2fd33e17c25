// The built-in catalogue: real hyper-parameters of the models people ask about, so that
// `memwall plan --model NAME` answers before anything is downloaded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/model_spec.h"

namespace mw {

const std::vector<ModelSpec>& model_catalogue();
// By id or name, ignoring case, spaces, dots, dashes and underscores ("Qwen2.5 7B",
// "qwen2.5-7b", "qwen25_7b"). Null when unknown.
const ModelSpec* find_catalogue_model(std::string_view name);

// Where a GGUF file of a catalogue model is published on Hugging Face (a well-known conversion),
// for a quantization name ("Q4_K_M", "F16"); empty when the catalogue knows none.
struct HfFile {
    std::string repo;  // "bartowski/Qwen2.5-0.5B-Instruct-GGUF"
    std::string file;  // "Qwen2.5-0.5B-Instruct-Q8_0.gguf"
};
HfFile hf_file_for(std::string_view catalogue_id, std::string_view quant, uint64_t file_bytes);

// The models `memwall plan` shows without arguments: a 35B dense model and a 30B MoE.
std::vector<const ModelSpec*> seed_models();

}  // namespace mw
