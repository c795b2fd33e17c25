// Tiny but complete models written with GgufWriter: every tensor an architecture needs, at a few
// kilobytes, with a 16-token vocabulary. For tests that need a model with one thing changed, the
// CLI's corrupted-file test and the fuzz seeds (fuzz/ links this file too; no GoogleTest here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/ggml_types.h"
#include "format/gguf_writer.h"

namespace mw::test {

enum class TinyVocab {
    spm,  // "llama": <unk> <s> </s>, byte tokens for \n and 0xFF, a few pieces
    bpe,  // "gpt2" (pre "gpt-2"): a few byte characters, merges and <|endoftext|>
};

struct TinyModel {
    std::string arch = "llama";  // llama, mistral, qwen2, qwen3, qwen2moe, qwen3moe
    // The type of every matrix whose rows hold whole blocks of it (n_embd is raised to the block
    // size); matrices whose rows do not (attn_output, ffn_down of narrow models) are F16. Norms,
    // biases and the MoE router are F32.
    GgmlType type = GgmlType::F32;
    uint32_t n_embd = 16;
    uint32_t n_layer = 1;
    uint32_t n_head = 2;
    uint32_t n_head_kv = 1;
    uint32_t head_dim = 8;  // written as attention.key_length/value_length
    uint32_t n_ff = 24;     // dense FFN, per expert for MoE and the qwen2moe shared expert
    uint32_t n_expert = 0;  // > 0: mixture of experts (needed by qwen2moe and qwen3moe)
    uint32_t n_expert_used = 2;
    bool tied_output = false;  // no output.weight: the token embedding is the output
    TinyVocab vocab = TinyVocab::spm;
    uint32_t alignment = 32;
    uint32_t seed = 1;  // of the weight bytes
};

// The number of tokens of the tiny vocabularies (rows of token_embd.weight).
uint32_t tiny_vocab_size(TinyVocab vocab);

// The model's writer, so a test can change keys or tensors before writing. Weight bytes are drawn
// from [0, 0x3C) so that every fp16/bf16/f32 scale and weight a decoder reads is finite.
gguf::GgufWriter tiny_model_writer(const TinyModel& spec);
std::vector<uint8_t> tiny_model_bytes(const TinyModel& spec);
// Adds the tokenizer.ggml.* keys of a tiny vocabulary to `w`.
void add_tiny_vocab(gguf::GgufWriter& w, TinyVocab vocab);

}  // namespace mw::test
