// One home per architecture (as llama.cpp's src/models/*.cpp split them): what its GGUF keys
// mean beyond the common ones, and which tensors its layers bind. Internal to model/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "model/binder.h"
#include "model/hparams.h"
#include "model/model.h"

namespace mw {

// Metadata readers shared by the architectures (hparams.cpp). `<arch>.<key>` as u32: scalar, or
// a per-layer array whose entries are all equal.
std::optional<uint32_t> get_arch_u32(const gguf::GgufFile& f, const std::string& arch,
                                     const std::string& key);
uint32_t require_u32(const gguf::GgufFile& f, const std::string& arch, const std::string& key);
void check_range(const gguf::GgufFile& f, const char* what, uint64_t value, uint64_t lo,
                 uint64_t hi);
// `<arch>.<key>` per layer: an array of n_layer entries, or a scalar for every layer; empty
// when absent.
std::vector<uint32_t> get_arch_u32_per_layer(const gguf::GgufFile& f, const std::string& arch,
                                             const std::string& key, uint32_t n_layer);

// qwen35, qwen35moe (arch/qwen35.cpp): hybrid gated DeltaNet + gated attention.
void read_qwen35(const gguf::GgufFile& f, HParams& hp);
// Binds layer il's mixer (DeltaNet or gated attention) and its norms; the FFN is bound by the
// common code.
void bind_qwen35_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l);

// lfm2, lfm2moe (arch/lfm2.cpp): gated short-convolution layers among GQA layers.
void read_lfm2(const gguf::GgufFile& f, HParams& hp);
void bind_lfm2_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l);

// gpt-oss (arch/gptoss.cpp): attention sinks, alternating sliding/full layers, biases
// everywhere, experts with the clamped SwiGLU.
void read_gptoss(const gguf::GgufFile& f, HParams& hp);
void bind_gptoss_layer(Binder& b, const HParams& hp, uint32_t il, Layer& l);

}  // namespace mw
