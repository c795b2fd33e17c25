// Random-weight models at real shapes: speed and memory can be measured on the exact tensor
// shapes and types of a real model without downloading it. The files are ordinary GGUF (with a
// synthetic SentencePiece vocabulary of the model's size), loadable by memwall and llama.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/model_spec.h"
#include "plan/quant_mix.h"

namespace mw {

struct SynthPreset {
    std::string id;
    std::string description;
    ModelSpec spec;
};

// Presets with a purpose of their own (the MoE speed preset and its dense equivalent), then every
// catalogue model memwall can run (llama-3.2-1b, qwen2.5-0.5b, qwen2.5-7b, ...).
std::vector<SynthPreset> synth_presets();
// By id (catalogue-style matching); throws ErrorKind::invalid_argument listing the presets.
ModelSpec synth_preset(std::string_view id);

struct SynthOptions {
    std::string preset;
    // Instead of a preset: any spec (tests write real layouts at a scaled-down size).
    std::optional<ModelSpec> spec;
    QuantRecipe recipe = QuantRecipe::Q4_K_M;
    uint64_t seed = 1;
    // MoE routers with uneven expert popularity, as real ones have (uniform random routers
    // spread tokens evenly, the worst case for an expert cache): expert rows of each layer's
    // router scaled by rank^-skew, in a random order per layer. 0: uniform.
    float router_skew = 0.0f;
};

struct SynthProgress {
    size_t tensors_done = 0;
    size_t tensors_total = 0;
    uint64_t bytes_done = 0;
    uint64_t bytes_total = 0;
};

// Writes the model (atomically: a temporary file renamed into place). Deterministic for a seed.
void write_synth_model(const SynthOptions& options, const std::string& path,
                       const std::function<void(const SynthProgress&)>& progress = {});

// Fills `n_blocks` blocks of `type` with random values of a typical weight scale (std ~0.02):
// random quants and fixed, valid scales. Exposed for tests.
void fill_random_blocks(GgmlType type, uint8_t* dst, uint64_t n_blocks, uint64_t seed);

}  // namespace mw
