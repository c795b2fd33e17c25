// Quantizing a model file: reads a GGUF, picks each tensor's type (the recipe's per-tensor rules
// from plan/quant_mix.h, or --pure, plus --tensor-type overrides), encodes with the file
// quantizers of tensor/quantize/quantize.h (weighted by an imatrix when given) on the thread pool,
// and writes a GGUF with the same metadata (general.file_type and general.quantization_version
// updated). Tensors are produced one at a time while the file is written, so memory stays at
// about one output tensor plus the mapped input.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "format/ggml_types.h"
#include "plan/quant_mix.h"
#include "tensor/quantize/quantize.h"

namespace mw {

struct TensorTypeOverride {
    std::string pattern;  // a regular expression searched in the tensor name (ECMAScript)
    GgmlType type;
};

struct QuantizeOptions {
    QuantRecipe recipe = QuantRecipe::Q4_K_M;
    bool pure = false;              // every quantizable tensor gets the recipe's base type
    bool allow_requantize = false;  // accept already-quantized input tensors
    std::vector<TensorTypeOverride> overrides;  // the last matching pattern wins (as llama.cpp)
    std::string imatrix_path;                   // empty: no importance weighting
    int n_threads = 0;                          // 0: the runtime's default
    QuantSearch search = QuantSearch::fast;     // thorough: the exact scale searches
};

// Reported while quantizing: after each tensor is written, and for notes (fallback types).
struct QuantizeEvent {
    enum class Kind { tensor_written, note };
    Kind kind = Kind::tensor_written;
    size_t index = 0;  // tensors written so far (tensor_written)
    size_t n_tensors = 0;
    std::string_view name;
    GgmlType from = GgmlType::F32, to = GgmlType::F32;
    uint64_t bytes_done = 0;   // input tensor bytes of the tensors written so far
    uint64_t bytes_total = 0;  // input tensor bytes of the whole file
    double seconds = 0.0;
    std::string_view message;  // the note
    // A note that the row length forced a fallback type: `to` instead of `wanted`.
    bool fallback = false;
    GgmlType wanted = GgmlType::F32;
};

struct QuantizeReport {
    uint64_t in_file_bytes = 0, out_file_bytes = 0;
    uint64_t in_tensor_bytes = 0, out_tensor_bytes = 0;
    uint64_t n_elements = 0;  // all tensors
    size_t n_tensors = 0;
    size_t n_quantized = 0;     // tensors whose type changed
    size_t n_fallback = 0;      // tensors given a fallback type for their row length
    size_t n_with_imatrix = 0;  // quantized with importance weights
    double seconds = 0.0;
    double bits_per_weight_in() const {
        return n_elements ? 8.0 * in_tensor_bytes / n_elements : 0;
    }
    double bits_per_weight_out() const {
        return n_elements ? 8.0 * out_tensor_bytes / n_elements : 0;
    }
};

// Throws mw::Error with a message naming the file, tensor and type at fault: invalid_argument for
// requantizing without allow_requantize or a bad override pattern, unsupported for tensor types
// memwall cannot decode or encode, io when the output cannot be written, bad_file for a
// malformed input or imatrix.
QuantizeReport quantize_model(const std::string& in_path, const std::string& out_path,
                              const QuantizeOptions& options,
                              const std::function<void(const QuantizeEvent&)>& on_event = {});

}  // namespace mw
