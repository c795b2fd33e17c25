#include "convert/tensor_plan.h"

#include <cstring>
#include <memory>

#include "base/error.h"
#include "base/fp16.h"
#include "format/gguf_writer.h"
#include "tensor/quantize/quantize.h"
#include "tensor/types.h"

namespace mw::convert {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// True when a source row can be copied as bytes: same element encoding as the output type.
bool same_encoding(SourceDtype src, GgmlType dst) {
    return (src == SourceDtype::F32 && dst == GgmlType::F32) ||
           (src == SourceDtype::F16 && dst == GgmlType::F16) ||
           (src == SourceDtype::BF16 && dst == GgmlType::BF16);
}

}  // namespace

std::optional<OutType> out_type_from_name(std::string_view name) {
    if (name == "f32") return OutType::f32;
    if (name == "f16") return OutType::f16;
    if (name == "bf16") return OutType::bf16;
    if (name == "q8_0") return OutType::q8_0;
    return std::nullopt;
}

const char* out_type_name(OutType t) {
    switch (t) {
        case OutType::f32:
            return "f32";
        case OutType::f16:
            return "f16";
        case OutType::bf16:
            return "bf16";
        case OutType::q8_0:
            return "q8_0";
    }
    return "?";
}

GgmlType ggml_type_of(OutType t) {
    switch (t) {
        case OutType::f32:
            return GgmlType::F32;
        case OutType::f16:
            return GgmlType::F16;
        case OutType::bf16:
            return GgmlType::BF16;
        case OutType::q8_0:
            return GgmlType::Q8_0;
    }
    return GgmlType::F32;
}

uint32_t file_type_of(OutType t) {
    switch (t) {
        case OutType::f32:
            return 0;  // LLAMA_FTYPE_ALL_F32
        case OutType::f16:
            return 1;  // LLAMA_FTYPE_MOSTLY_F16
        case OutType::bf16:
            return 32;  // LLAMA_FTYPE_MOSTLY_BF16
        case OutType::q8_0:
            return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
    }
    return 0;
}

size_t source_dtype_size(SourceDtype d) {
    switch (d) {
        case SourceDtype::F32:
            return 4;
        case SourceDtype::F16:
            return 2;
        case SourceDtype::BF16:
            return 2;
        case SourceDtype::F64:
            return 8;
        case SourceDtype::U8:
            return 1;
    }
    return 4;
}

const char* source_dtype_name(SourceDtype d) {
    switch (d) {
        case SourceDtype::F32:
            return "F32";
        case SourceDtype::F16:
            return "F16";
        case SourceDtype::BF16:
            return "BF16";
        case SourceDtype::F64:
            return "F64";
        case SourceDtype::U8:
            return "U8";
    }
    return "?";
}

uint64_t SourceTensor::n_rows() const {
    uint64_t n = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
    return n;
}

void SourceTensor::decode_row(uint64_t r, float* out) const {
    const uint64_t n = row_length();
    const uint8_t* p = data + r * n * source_dtype_size(dtype);
    // Source data has no alignment guarantee (safetensors offsets are byte offsets): memcpy.
    switch (dtype) {
        case SourceDtype::F32:
            std::memcpy(out, p, n * 4);
            break;
        case SourceDtype::F16:
            for (uint64_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, p + 2 * i, 2);
                out[i] = fp16_to_f32(h);
            }
            break;
        case SourceDtype::BF16:
            for (uint64_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, p + 2 * i, 2);
                out[i] = bf16_to_f32(h);
            }
            break;
        case SourceDtype::F64:
            for (uint64_t i = 0; i < n; ++i) {
                double d;
                std::memcpy(&d, p + 8 * i, 8);
                out[i] = float(d);
            }
            break;
        case SourceDtype::U8:  // TensorBuilder lets packed data reach raw writers only
            fail(ErrorKind::unsupported, "{}: tensor {} is U8 (packed data), not numbers", file,
                 name);
    }
}

uint64_t OutputTensor::n_elements() const {
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;
    return n;
}

GgmlType choose_type(OutType out, const std::string& name, size_t n_dims, uint64_t row_length) {
    // As llama.cpp's converter: most code that reads vectors and norms expects F32, the MoE
    // router stays F32 because expert selection is sensitive to its rounding, and so do
    // Qwen3.5's and LFM2's small conv kernels.
    if (n_dims <= 1 || ends_with(name, "_norm.weight") || !ends_with(name, ".weight") ||
        ends_with(name, "ffn_gate_inp.weight") || name == "rope_freqs.weight" ||
        ends_with(name, "ssm_conv1d.weight") || ends_with(name, "shortconv.conv.weight")) {
        return GgmlType::F32;
    }
    const GgmlType type = ggml_type_of(out);
    if (type == GgmlType::Q8_0 && row_length % 32 != 0) return GgmlType::F16;
    return type;
}

void add_output_tensor(gguf::GgufWriter& w, const OutputTensor& t) {
    if (t.raw) {
        w.add_tensor(t.name, t.type, t.ne, t.raw);
        return;
    }
    const TypeTraits* traits = type_traits(t.type);
    const QuantizeRowFn encode = file_quantizer(t.type);
    if (!traits || !encode) {
        fail(ErrorKind::unsupported, "tensor {}: memwall cannot write type {}", t.name,
             ggml_layout(uint32_t(t.type))->name);
    }
    const uint64_t row_length = t.ne[0];
    const size_t out_row_bytes = row_bytes(*traits, int64_t(row_length));
    auto plan = std::make_shared<OutputTensor>(t);
    w.add_tensor(t.name, t.type, t.ne, [plan, encode, row_length, out_row_bytes](uint8_t* dst) {
        if (plan->compute || !plan->values.empty()) {
            std::vector<float> computed;
            if (plan->compute) {
                computed.resize(plan->n_elements());
                plan->compute(computed.data());
            }
            const std::vector<float>& v = plan->compute ? computed : plan->values;
            const uint64_t rows = v.size() / row_length;
            for (uint64_t r = 0; r < rows; ++r) {
                encode(v.data() + r * row_length, dst + r * out_row_bytes, int64_t(row_length),
                       nullptr);
            }
            return;
        }
        std::vector<float> row(row_length);
        for (const SourceTensor& part : plan->parts) {
            const uint64_t rows = plan->row_order.empty() ? part.n_rows() : plan->row_order.size();
            const size_t src_row_bytes = row_length * source_dtype_size(part.dtype);
            const bool copy = same_encoding(part.dtype, plan->type);
            for (uint64_t r = 0; r < rows; ++r) {
                const uint64_t from = plan->row_order.empty() ? r : plan->row_order[r];
                if (copy) {
                    std::memcpy(dst, part.data + from * src_row_bytes, out_row_bytes);
                } else {
                    part.decode_row(from, row.data());
                    encode(row.data(), dst, int64_t(row_length), nullptr);
                }
                dst += out_row_bytes;
            }
        }
    });
}

std::vector<uint32_t> rope_pair_row_order(uint64_t n_rows, uint32_t head_dim) {
    std::vector<uint32_t> order(n_rows);
    const uint32_t half = head_dim / 2;
    for (uint64_t row = 0; row < n_rows; ++row) {
        const uint64_t head = row / head_dim, within = row % head_dim;
        // GGUF row 2j + i of a head holds HF row i * half + j (i = 0, 1: the pair's elements).
        const uint64_t j = within / 2, i = within % 2;
        order[row] = uint32_t(head * head_dim + i * half + j);
    }
    return order;
}

}  // namespace mw::convert
