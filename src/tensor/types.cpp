#include "tensor/types.h"

#include <array>
#include <cstdlib>
#include <cstring>

#include "tensor/cpu_features.h"
#include "tensor/kernels.h"
#include "tensor/quantize/quantize.h"
#include "tensor/quants.h"

namespace mw {
namespace {

using T = GgmlType;

// The generic matrix kernel: one vec_dot per (row, token). Used for types without a tiled kernel.
template <VecDotFn vec_dot>
void matmul_by_rows(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                    const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                    int64_t ldy) {
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + size_t(r) * w_row_bytes;
        for (int64_t t = 0; t < n_tokens; ++t) {
            y[t * ldy + r] = vec_dot(n_cols, wr, act + size_t(t) * act_stride);
        }
    }
}

// Weight types pair with the activation type their dot product wants, as in ggml: the 32-element
// types with Q8_0 (symmetric) or Q8_1 (with offset, whose blocks carry d * sum), the K-quants with
// Q8_K. Activation-only types (Q8_1, Q8_K) have no vec_dot of their own.
constexpr std::array<TypeTraits, kTypeCount> kReferenceTraits = {{
    {T::F32, "F32", 1, 4, false, ref::f32_to_float, ref::f32_from_float, ref::vec_dot_f32, T::F32,
     matmul_by_rows<ref::vec_dot_f32>, "scalar", 0},
    {T::F16, "F16", 1, 2, false, ref::f16_to_float, ref::f16_from_float, ref::vec_dot_f16, T::F16,
     matmul_by_rows<ref::vec_dot_f16>, "scalar", 0},
    {T::BF16, "BF16", 1, 2, false, ref::bf16_to_float, ref::bf16_from_float, ref::vec_dot_bf16,
     T::BF16, matmul_by_rows<ref::vec_dot_bf16>, "scalar", 0},
    {T::Q4_0, "Q4_0", kQK, sizeof(BlockQ4_0), true, ref::dequantize_row_q4_0,
     ref::quantize_row_q4_0, ref::vec_dot_q4_0_q8_0, T::Q8_0,
     matmul_by_rows<ref::vec_dot_q4_0_q8_0>, "scalar", 0},
    {T::Q4_1, "Q4_1", kQK, sizeof(BlockQ4_1), true, ref::dequantize_row_q4_1,
     ref::quantize_row_q4_1, ref::vec_dot_q4_1_q8_1, T::Q8_1,
     matmul_by_rows<ref::vec_dot_q4_1_q8_1>, "scalar", 0},
    {T::Q5_0, "Q5_0", kQK, sizeof(BlockQ5_0), true, ref::dequantize_row_q5_0,
     ref::quantize_row_q5_0, ref::vec_dot_q5_0_q8_0, T::Q8_0,
     matmul_by_rows<ref::vec_dot_q5_0_q8_0>, "scalar", 0},
    {T::Q5_1, "Q5_1", kQK, sizeof(BlockQ5_1), true, ref::dequantize_row_q5_1,
     ref::quantize_row_q5_1, ref::vec_dot_q5_1_q8_1, T::Q8_1,
     matmul_by_rows<ref::vec_dot_q5_1_q8_1>, "scalar", 0},
    {T::Q8_0, "Q8_0", kQK, sizeof(BlockQ8_0), true, ref::dequantize_row_q8_0,
     ref::quantize_row_q8_0, ref::vec_dot_q8_0_q8_0, T::Q8_0,
     matmul_by_rows<ref::vec_dot_q8_0_q8_0>, "scalar", 0},
    {T::Q8_1, "Q8_1", kQK, sizeof(BlockQ8_1), true, ref::dequantize_row_q8_1,
     ref::quantize_row_q8_1, nullptr, T::Q8_1, nullptr, "scalar", 0},
    // K-quant from_float: the file quantizer's scale search without importance weights
    // (tensor/quantize/quantize.h); K-quants are never encoded on a hot path.
    {T::Q2_K, "Q2_K", kQK_K, sizeof(BlockQ2_K), true, ref::dequantize_row_q2_k, quantize_row_q2_k,
     ref::vec_dot_q2_k_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_q2_k_q8_k>, "scalar", 0},
    {T::Q3_K, "Q3_K", kQK_K, sizeof(BlockQ3_K), true, ref::dequantize_row_q3_k, quantize_row_q3_k,
     ref::vec_dot_q3_k_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_q3_k_q8_k>, "scalar", 0},
    {T::Q4_K, "Q4_K", kQK_K, sizeof(BlockQ4_K), true, ref::dequantize_row_q4_k, quantize_row_q4_k,
     ref::vec_dot_q4_k_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_q4_k_q8_k>, "scalar", 0},
    {T::Q5_K, "Q5_K", kQK_K, sizeof(BlockQ5_K), true, ref::dequantize_row_q5_k, quantize_row_q5_k,
     ref::vec_dot_q5_k_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_q5_k_q8_k>, "scalar", 0},
    {T::Q6_K, "Q6_K", kQK_K, sizeof(BlockQ6_K), true, ref::dequantize_row_q6_k, quantize_row_q6_k,
     ref::vec_dot_q6_k_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_q6_k_q8_k>, "scalar", 0},
    {T::Q8_K, "Q8_K", kQK_K, sizeof(BlockQ8_K), true, ref::dequantize_row_q8_k,
     ref::quantize_row_q8_k, nullptr, T::Q8_K, nullptr, "scalar", 0},
    // Non-linear and microscaled 4-bit types and the ternary types (issue 38); their encoders are
    // the file quantizer's (tensor/quantize/quantize.h).
    {T::IQ4_NL, "IQ4_NL", kQK, sizeof(BlockIQ4_NL), true, ref::dequantize_row_iq4_nl, nullptr,
     ref::vec_dot_iq4_nl_q8_0, T::Q8_0, matmul_by_rows<ref::vec_dot_iq4_nl_q8_0>, "scalar", 0},
    {T::IQ4_XS, "IQ4_XS", kQK_K, sizeof(BlockIQ4_XS), true, ref::dequantize_row_iq4_xs, nullptr,
     ref::vec_dot_iq4_xs_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_iq4_xs_q8_k>, "scalar", 0},
    {T::MXFP4, "MXFP4", kQK, sizeof(BlockMXFP4), true, ref::dequantize_row_mxfp4, nullptr,
     ref::vec_dot_mxfp4_q8_0, T::Q8_0, matmul_by_rows<ref::vec_dot_mxfp4_q8_0>, "scalar", 0,
     ref::check_block_mxfp4},
    {T::TQ1_0, "TQ1_0", kQK_K, sizeof(BlockTQ1_0), true, ref::dequantize_row_tq1_0, nullptr,
     ref::vec_dot_tq1_0_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_tq1_0_q8_k>, "scalar", 0},
    {T::TQ2_0, "TQ2_0", kQK_K, sizeof(BlockTQ2_0), true, ref::dequantize_row_tq2_0, nullptr,
     ref::vec_dot_tq2_0_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_tq2_0_q8_k>, "scalar", 0,
     ref::check_block_tq2_0},
    // Lattice i-quants (issue 38): decode kernels only.
    {T::IQ2_XXS, "IQ2_XXS", kQK_K, sizeof(BlockIQ2_XXS), true, ref::dequantize_row_iq2_xxs, nullptr,
     ref::vec_dot_iq2_xxs_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_iq2_xxs_q8_k>, "scalar", 0},
    {T::IQ2_XS, "IQ2_XS", kQK_K, sizeof(BlockIQ2_XS), true, ref::dequantize_row_iq2_xs, nullptr,
     ref::vec_dot_iq2_xs_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_iq2_xs_q8_k>, "scalar", 0},
    {T::IQ2_S, "IQ2_S", kQK_K, sizeof(BlockIQ2_S), true, ref::dequantize_row_iq2_s, nullptr,
     ref::vec_dot_iq2_s_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_iq2_s_q8_k>, "scalar", 0},
    {T::IQ3_XXS, "IQ3_XXS", kQK_K, sizeof(BlockIQ3_XXS), true, ref::dequantize_row_iq3_xxs, nullptr,
     ref::vec_dot_iq3_xxs_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_iq3_xxs_q8_k>, "scalar", 0},
    {T::IQ3_S, "IQ3_S", kQK_K, sizeof(BlockIQ3_S), true, ref::dequantize_row_iq3_s, nullptr,
     ref::vec_dot_iq3_s_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_iq3_s_q8_k>, "scalar", 0},
    {T::IQ1_S, "IQ1_S", kQK_K, sizeof(BlockIQ1_S), true, ref::dequantize_row_iq1_s, nullptr,
     ref::vec_dot_iq1_s_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_iq1_s_q8_k>, "scalar", 0},
    {T::IQ1_M, "IQ1_M", kQK_K, sizeof(BlockIQ1_M), true, ref::dequantize_row_iq1_m, nullptr,
     ref::vec_dot_iq1_m_q8_k, T::Q8_K, matmul_by_rows<ref::vec_dot_iq1_m_q8_k>, "scalar", 0},
}};

// Parses MEMWALL_ISA; unknown values are ignored (the best available set is used).
IsaLimit isa_limit() {
    const char* env = std::getenv("MEMWALL_ISA");
    if (!env) return IsaLimit::best;
    if (!std::strcmp(env, "scalar")) return IsaLimit::scalar;
    if (!std::strcmp(env, "avx2")) return IsaLimit::avx2;
    if (!std::strcmp(env, "avxvnni")) return IsaLimit::avxvnni;
    if (!std::strcmp(env, "avx512")) return IsaLimit::avx512;
    if (!std::strcmp(env, "neon")) return IsaLimit::neon;
    return IsaLimit::best;
}

KernelSet build_set() {
    KernelSet set;
    set.table = kReferenceTraits;
    install_kernels(set, cpu_features(), isa_limit());
    return set;
}

}  // namespace

const KernelSet& installed_kernels() {
    static const KernelSet set = build_set();
    return set;
}

const TraitsArray& reference_type_traits() {
    return kReferenceTraits;
}

const char* kernel_isa() {
    return installed_kernels().name;
}

const TypeTraits* type_traits(GgmlType type) {
    for (const TypeTraits& t : installed_kernels().table) {
        if (t.type == type) return &t;
    }
    return nullptr;
}

const TypeTraits* type_traits(uint32_t type_id) {
    return type_traits(static_cast<GgmlType>(type_id));
}

}  // namespace mw
