// Synthetic Hugging Face checkpoints for the converter tests: random weights in the layout and
// names transformers uses, written as config.json + safetensors (optionally sharded with an
// index) + tokenizer files, and an independent double-precision forward pass over the same
// weights with transformers' semantics (rotate-half RoPE on the unpermuted Q/K rows, softmax
// routing, ...), which the converted model's logits must match.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/gguf.h"

namespace mw::test {

struct HfSpec {
    std::string model_type =
        "llama";                // llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe
    std::string dtype = "F32";  // source dtype of every tensor: F32, F16, BF16
    uint32_t vocab_size = 64;
    uint32_t n_embd = 64;
    uint32_t n_layer = 2;
    uint32_t n_head = 4;
    uint32_t n_head_kv = 2;
    uint32_t head_dim = 0;  // 0: n_embd / n_head, not written to config.json
    uint32_t n_ff = 96;
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 2;
    uint32_t n_ff_expert = 32;
    uint32_t n_ff_shared = 48;   // qwen2_moe
    bool norm_topk_prob = true;  // qwen MoE
    bool tied = false;
    double rms_norm_eps = 1e-5;
    double rope_theta = 10000.0;
    double rope_linear_factor = 0.0;  // > 0: rope_scaling {"type": "linear", "factor": ...}
    double llama3_factor = 0.0;       // > 0: rope_scaling {"rope_type": "llama3", ...} with:
    double llama3_low_freq_factor = 1.0;
    double llama3_high_freq_factor = 4.0;
    uint32_t llama3_original_context = 64;
    int shards = 1;  // > 1: model-0000i-of-0000n.safetensors + index
    uint32_t seed = 1;

    uint32_t resolved_head_dim() const { return head_dim ? head_dim : n_embd / n_head; }
    bool moe() const { return n_expert > 0; }
};

// HF tensor name -> values (row-major, as stored), already rounded to the source dtype.
using HfWeights = std::map<std::string, std::vector<double>>;

struct HfTensorShape {
    std::string name;
    std::vector<uint64_t> shape;
};

// Every tensor the spec's architecture has, with its shape, in a fixed order.
std::vector<HfTensorShape> hf_tensor_shapes(const HfSpec& spec);
HfWeights random_hf_weights(const HfSpec& spec);

// The config.json text of the spec.
std::string hf_config_json(const HfSpec& spec);

// Writes config.json, the safetensors file(s) and a small byte-level BPE tokenizer.json (plus
// tokenizer_config.json) into dir.
void write_hf_folder(const std::string& dir, const HfSpec& spec, const HfWeights& weights);
// Just the tokenizer files of write_hf_folder (5 tokens: vocab_size pads the vocabulary).
void write_hf_tokenizer(const std::string& dir);

// A safetensors file from tensors given as raw bytes of `dtype` ("F32", "F16", "BF16").
struct SafetensorsEntry {
    std::string name;
    std::string dtype;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> bytes;
};
std::vector<uint8_t> safetensors_bytes(const std::vector<SafetensorsEntry>& tensors);
// Values encoded as dtype bytes (round to nearest even), and back.
std::vector<uint8_t> encode_values(const std::vector<double>& values, const std::string& dtype);
std::vector<double> decode_values(const std::vector<uint8_t>& bytes, const std::string& dtype);

// The logits [n_tokens][vocab] of the forward pass in double precision over the weights, all
// tokens as one causal batch.
std::vector<double> hf_reference_logits(const HfSpec& spec, const HfWeights& weights,
                                        const std::vector<int32_t>& tokens);

// memwall's logits [n_tokens][vocab] for the tokens in one batch (F32 KV cache: no rounding
// beyond the weights'); test failures where the model does not load or decode.
std::vector<float> memwall_logits(const std::string& gguf_path, const std::vector<int32_t>& tokens);

void write_text_file(const std::string& path, const std::string& text);
void write_binary_file(const std::string& path, const std::vector<uint8_t>& bytes);

// --- Round trips of a reference GGUF file through a Hugging Face checkpoint -------------------
// The converter tests that write shared/reference/models/<model>-F16.gguf back as a checkpoint
// (with the inverse of the architecture's mapping, which each test states itself), convert it and
// compare with the reference:
//   std::map<std::string, HfTensor> t;  // per GGUF tensor: t[hf_name] = {hf_shape(ti), v}
//   const std::string dir = write_hf_checkpoint(model + "-hf", t, config_json);
//   convert::convert_hf(dir, dir + ".gguf", {});
//   expect_round_trip(ref_path, dir + ".gguf", arch, tolerance);
//   expect_config_refused(dir, config_json, "\"field\": 4", "\"field\": 0", "field");

// Every value of an F32 or F16 tensor.
std::vector<double> gguf_values(const gguf::TensorInfo& t);
// A GGUF tensor's shape in Hugging Face order (outermost first).
std::vector<uint64_t> hf_shape(const gguf::TensorInfo& t);
// A key's value as text (numbers, strings, numeric arrays), to compare two files.
std::string describe_value(const gguf::Value& v);

// A checkpoint tensor: shape outermost first, values row-major.
struct HfTensor {
    std::vector<uint64_t> shape;
    std::vector<double> values;
};
// Writes the tensors as one F32 model.safetensors, config.json (the text as given) and the
// tokenizer of write_hf_tokenizer into temp_dir()/name; returns that folder.
std::string write_hf_checkpoint(const std::string& name,
                                const std::map<std::string, HfTensor>& tensors,
                                const std::string& config_json);

// How close a converted file must be to the reference: 0 is bit for bit.
struct RoundTripTolerance {
    double values = 0;  // per tensor, max |a - b| / max(1, |a|)
    double logits = 0;  // rel_rms of memwall's logits over a fixed 10-token batch
};
// Test failures unless the file at got has the reference's tensors (names, types, shapes,
// values; types other than F32 and F16 byte for byte), every key under "<arch>." with the same
// value, and memwall's logits of the two agree.
void expect_round_trip(const std::string& ref_path, const std::string& got_path,
                       const std::string& arch, const RoundTripTolerance& tolerance = {});
// Writes config_json with `from` replaced by `to` into dir/config.json and expects converting dir
// to fail with an error whose text contains `word` (dir/config.json keeps the edited text).
void expect_config_refused(const std::string& dir, const std::string& config_json,
                           const std::string& from, const std::string& to, const std::string& word);

}  // namespace mw::test
