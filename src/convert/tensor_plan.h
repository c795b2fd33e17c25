// The tensors of a model being converted: where each GGUF tensor's elements come from (byte
// ranges of mapped source files, possibly several stacked, possibly with rows reordered) and the
// type it is written in. Elements are decoded and encoded row by row while the file is written,
// so converting needs memory for one tensor at a time, not the whole model.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/ggml_types.h"

namespace mw::gguf {
class GgufWriter;
}

namespace mw::convert {

// The --outtype of a conversion: what the large matrices become.
enum class OutType { f32, f16, bf16, q8_0 };

std::optional<OutType> out_type_from_name(std::string_view name);
const char* out_type_name(OutType type);
GgmlType ggml_type_of(OutType type);
// general.file_type (llama_ftype) of a file whose matrices are `type`.
uint32_t file_type_of(OutType type);

// Element types the converter reads. U8: packed data (gpt-oss's MXFP4 blocks and scales), which
// only a raw writer reads.
enum class SourceDtype { F32, F16, BF16, F64, U8 };
size_t source_dtype_size(SourceDtype dtype);
const char* source_dtype_name(SourceDtype dtype);

// One tensor of a source file, viewed as rows of its innermost dimension.
struct SourceTensor {
    std::string name;  // in the source (for messages)
    std::string file;
    const uint8_t* data = nullptr;
    SourceDtype dtype = SourceDtype::F32;
    std::vector<uint64_t> shape;  // outermost first

    uint64_t row_length() const { return shape.empty() ? 1 : shape.back(); }
    uint64_t n_rows() const;
    // Decodes row r into n = row_length() floats.
    void decode_row(uint64_t r, float* out) const;
};

struct OutputTensor {
    std::string name;               // GGUF name
    GgmlType type = GgmlType::F32;  // written type
    std::vector<uint64_t> ne;       // GGUF dimensions, innermost first
    // Either source parts, whose rows are written in order (several parts stack experts) ...
    std::vector<SourceTensor> parts;
    // Output row r comes from row row_order[r] of the (single) part: a permutation, or a subset.
    std::vector<uint32_t> row_order;
    // ... or values computed by the converter (small tensors: permuted biases, rope_freqs) ...
    std::vector<float> values;
    // ... or computed while the file is written (large transforms: a transpose), into
    // n_elements() floats, so that only one such tensor is in memory at a time ...
    std::function<void(float*)> compute;
    // ... or its bytes in `type` written directly (packed data repacked, not re-encoded).
    std::function<void(uint8_t*)> raw;

    uint64_t n_elements() const;
};

// The type llama.cpp's converter gives a tensor: F32 for vectors, norms, biases and the MoE
// router; otherwise `out`, falling back to F16 when rows do not hold whole Q8_0 blocks.
GgmlType choose_type(OutType out, const std::string& gguf_name, size_t n_dims, uint64_t row_length);

// Adds the tensor to the writer; its bytes are produced when the file is written. The sources'
// bytes must stay mapped until then.
void add_output_tensor(gguf::GgufWriter& w, const OutputTensor& t);

// The row order that turns Hugging Face's rotate-half Q/K rows (per head: the first halves of
// the rotated pairs, then the second halves) into GGUF's adjacent pairs, for n_rows rows in
// heads of head_dim rows.
std::vector<uint32_t> rope_pair_row_order(uint64_t n_rows, uint32_t head_dim);

}  // namespace mw::convert
