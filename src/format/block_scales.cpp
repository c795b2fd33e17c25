#include "format/block_scales.h"

#include <cstring>

#include "format/ggml_types.h"

namespace mw {
namespace {

// Byte offsets of a block's fp16 scales, from ggml's block structs (-1: none). The block size
// beside them is checked against the layout table, so a row that disagrees with it is unused.
struct ScaleFields {
    GgmlType type;
    uint32_t type_size;
    int16_t first, second;
};

constexpr ScaleFields kScales[] = {
    {GgmlType::Q4_0, 18, 0, -1},    {GgmlType::Q4_1, 20, 0, 2},      // d; d, m
    {GgmlType::Q5_0, 22, 0, -1},    {GgmlType::Q5_1, 24, 0, 2},      // d; d, m
    {GgmlType::Q8_0, 34, 0, -1},    {GgmlType::Q2_K, 84, 80, 82},    // d; (scales, qs) d, dmin
    {GgmlType::Q3_K, 110, 108, -1}, {GgmlType::Q4_K, 144, 0, 2},     // (hmask, qs, scales) d
    {GgmlType::Q5_K, 176, 0, 2},    {GgmlType::Q6_K, 210, 208, -1},  // d, dmin; (ql, qh, sc) d
    {GgmlType::IQ2_XXS, 66, 0, -1}, {GgmlType::IQ2_XS, 74, 0, -1},  {GgmlType::IQ3_XXS, 98, 0, -1},
    {GgmlType::IQ1_S, 50, 0, -1},   {GgmlType::IQ4_NL, 18, 0, -1},  {GgmlType::IQ3_S, 110, 0, -1},
    {GgmlType::IQ2_S, 82, 0, -1},   {GgmlType::IQ4_XS, 136, 0, -1}, {GgmlType::TQ1_0, 54, 52, -1},
    {GgmlType::TQ2_0, 66, 64, -1},  // (qs, qh) d; (qs) d
};

const ScaleFields* fields_of(uint32_t type_id) {
    for (const ScaleFields& f : kScales) {
        if (uint32_t(f.type) != type_id) continue;
        const auto layout = ggml_layout(type_id);
        return layout && layout->type_size == f.type_size ? &f : nullptr;
    }
    return nullptr;
}

bool nonfinite_fp16(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return (h & 0x7c00u) == 0x7c00u;  // exponent all ones: inf or NaN
}

}  // namespace

bool has_fp16_block_scales(uint32_t type_id) {
    return fields_of(type_id) != nullptr;
}

std::optional<uint64_t> first_nonfinite_scale(uint32_t type_id, const uint8_t* data,
                                              uint64_t n_blocks) {
    const ScaleFields* f = fields_of(type_id);
    if (!f || !data) return std::nullopt;
    for (uint64_t i = 0; i < n_blocks; ++i) {
        const uint8_t* block = data + i * f->type_size;
        if (nonfinite_fp16(block + f->first) ||
            (f->second >= 0 && nonfinite_fp16(block + f->second))) {
            return i;
        }
    }
    return std::nullopt;
}

}  // namespace mw
