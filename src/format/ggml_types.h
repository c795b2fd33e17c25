// The storage layout of every ggml tensor type id that can appear in a GGUF file: block size and
// bytes per block. This is part of the file format (needed to validate tensor sizes); what memwall
// can compute with each type lives in tensor/types.h, keyed by the same ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mw {

enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

inline constexpr uint32_t kGgmlTypeIdLimit = 40;  // ids are < this

struct GgmlLayout {
    std::string_view name;  // as llama.cpp prints it ("Q4_K")
    uint32_t block_size;    // elements per block
    uint32_t type_size;     // bytes per block
};

// nullopt for ids that no ggml version defines (or that were removed from the format).
std::optional<GgmlLayout> ggml_layout(uint32_t type_id);
// Inverse lookup by name ("q4_k" or "Q4_K"); nullopt when unknown.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

}  // namespace mw
