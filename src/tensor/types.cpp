#include "tensor/types.h"

#include <array>

#include "tensor/quants.h"

namespace mw {
namespace {

using T = GgmlType;

// Weight types pair with the activation type their dot product wants, as in ggml: the 32-element
// types with Q8_0 (symmetric) or Q8_1 (with offset, whose blocks carry d * sum), the K-quants with
// Q8_K. Activation-only types (Q8_1, Q8_K) have no vec_dot of their own.
constexpr std::array<TypeTraits, 15> kTraits = {{
    {T::F32, "F32", 1, 4, false, ref::f32_to_float, ref::f32_from_float, ref::vec_dot_f32, T::F32},
    {T::F16, "F16", 1, 2, false, ref::f16_to_float, ref::f16_from_float, ref::vec_dot_f16, T::F16},
    {T::BF16, "BF16", 1, 2, false, ref::bf16_to_float, ref::bf16_from_float, ref::vec_dot_bf16,
     T::BF16},
    {T::Q4_0, "Q4_0", kQK, sizeof(BlockQ4_0), true, ref::dequantize_row_q4_0,
     ref::quantize_row_q4_0, ref::vec_dot_q4_0_q8_0, T::Q8_0},
    {T::Q4_1, "Q4_1", kQK, sizeof(BlockQ4_1), true, ref::dequantize_row_q4_1,
     ref::quantize_row_q4_1, ref::vec_dot_q4_1_q8_1, T::Q8_1},
    {T::Q5_0, "Q5_0", kQK, sizeof(BlockQ5_0), true, ref::dequantize_row_q5_0,
     ref::quantize_row_q5_0, ref::vec_dot_q5_0_q8_0, T::Q8_0},
    {T::Q5_1, "Q5_1", kQK, sizeof(BlockQ5_1), true, ref::dequantize_row_q5_1,
     ref::quantize_row_q5_1, ref::vec_dot_q5_1_q8_1, T::Q8_1},
    {T::Q8_0, "Q8_0", kQK, sizeof(BlockQ8_0), true, ref::dequantize_row_q8_0,
     ref::quantize_row_q8_0, ref::vec_dot_q8_0_q8_0, T::Q8_0},
    {T::Q8_1, "Q8_1", kQK, sizeof(BlockQ8_1), true, ref::dequantize_row_q8_1,
     ref::quantize_row_q8_1, nullptr, T::Q8_1},
    // K-quant quantizers (importance-weighted search) are not written yet: from_float is null.
    {T::Q2_K, "Q2_K", kQK_K, sizeof(BlockQ2_K), true, ref::dequantize_row_q2_k, nullptr,
     ref::vec_dot_q2_k_q8_k, T::Q8_K},
    {T::Q3_K, "Q3_K", kQK_K, sizeof(BlockQ3_K), true, ref::dequantize_row_q3_k, nullptr,
     ref::vec_dot_q3_k_q8_k, T::Q8_K},
    {T::Q4_K, "Q4_K", kQK_K, sizeof(BlockQ4_K), true, ref::dequantize_row_q4_k, nullptr,
     ref::vec_dot_q4_k_q8_k, T::Q8_K},
    {T::Q5_K, "Q5_K", kQK_K, sizeof(BlockQ5_K), true, ref::dequantize_row_q5_k, nullptr,
     ref::vec_dot_q5_k_q8_k, T::Q8_K},
    {T::Q6_K, "Q6_K", kQK_K, sizeof(BlockQ6_K), true, ref::dequantize_row_q6_k, nullptr,
     ref::vec_dot_q6_k_q8_k, T::Q8_K},
    {T::Q8_K, "Q8_K", kQK_K, sizeof(BlockQ8_K), true, ref::dequantize_row_q8_k,
     ref::quantize_row_q8_k, nullptr, T::Q8_K},
}};

}  // namespace

const TypeTraits* type_traits(GgmlType type) {
    for (const TypeTraits& t : kTraits) {
        if (t.type == type) return &t;
    }
    return nullptr;
}

const TypeTraits* type_traits(uint32_t type_id) {
    return type_traits(static_cast<GgmlType>(type_id));
}

}  // namespace mw
