#include "tensor/quantize/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "tensor/quantize/lattice.h"
#include "tensor/quants.h"
#include "tensor/types.h"

namespace mw {
namespace {

// The plain types convert; there is no error to weigh.
void quantize_f32(const float* src, void* dst, int64_t n, const float*) {
    ref::f32_from_float(src, dst, n);
}
void quantize_f16(const float* src, void* dst, int64_t n, const float*) {
    ref::f16_from_float(src, dst, n);
}
void quantize_bf16(const float* src, void* dst, int64_t n, const float*) {
    ref::bf16_from_float(src, dst, n);
}

}  // namespace

namespace qdetail {

float mean_importance(const float* importance, int64_t n) {
    if (!importance || n <= 0) return 0.0f;
    // Called once per row: eight independent sums, not one serial chain (the float result is
    // the same but for a one-ulp tie of the double sums).
    double lane[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int j = 0; j < 8; ++j) lane[j] += importance[i + j];
    }
    for (; i < n; ++i) lane[0] += importance[i];
    double sum = 0;
    for (double v : lane) sum += v;
    return float(sum / double(n));
}

void block_weights(const float* importance, float mean_importance, int count, float* w) {
    if (!importance) {
        for (int i = 0; i < count; ++i) w[i] = 1.0f;
        return;
    }
    const float floor = 0.01f * mean_importance;
    for (int i = 0; i < count; ++i) w[i] = importance[i] + floor;
}

void finite_copy(const float* x, int count, float* out) {
    for (int i = 0; i < count; ++i) {
        const float v = x[i];
        out[i] = std::isnan(v) ? 0.0f : std::clamp(v, -FLT_MAX, FLT_MAX);
    }
}

}  // namespace qdetail

QuantizeRowFn file_quantizer(GgmlType type, QuantSearch search) {
    const bool fast = search == QuantSearch::fast;
    switch (type) {
        case GgmlType::F32:
            return quantize_f32;
        case GgmlType::F16:
            return quantize_f16;
        case GgmlType::BF16:
            return quantize_bf16;
        case GgmlType::Q4_0:
            return fast ? quantize_q4_0 : quantize_q4_0_thorough;
        case GgmlType::Q4_1:
            return fast ? quantize_q4_1 : quantize_q4_1_thorough;
        case GgmlType::Q5_0:
            return fast ? quantize_q5_0 : quantize_q5_0_thorough;
        case GgmlType::Q5_1:
            return fast ? quantize_q5_1 : quantize_q5_1_thorough;
        case GgmlType::Q8_0:
            return fast ? quantize_q8_0 : quantize_q8_0_thorough;
        case GgmlType::Q2_K:
            return fast ? quantize_q2_k : quantize_q2_k_thorough;
        case GgmlType::Q3_K:
            return fast ? quantize_q3_k : quantize_q3_k_thorough;
        case GgmlType::Q4_K:
            return fast ? quantize_q4_k : quantize_q4_k_thorough;
        case GgmlType::Q5_K:
            return fast ? quantize_q5_k : quantize_q5_k_thorough;
        case GgmlType::Q6_K:
            return fast ? quantize_q6_k : quantize_q6_k_thorough;
        case GgmlType::IQ4_NL:
            return quantize_iq4_nl;
        case GgmlType::IQ4_XS:
            return quantize_iq4_xs;
        case GgmlType::MXFP4:
            return quantize_mxfp4;
        case GgmlType::TQ1_0:
            return quantize_tq1_0;
        case GgmlType::TQ2_0:
            return quantize_tq2_0;
        case GgmlType::IQ3_S:
            return quantize_iq3_s;
        case GgmlType::IQ3_XXS:
            return quantize_iq3_xxs;
        case GgmlType::IQ2_XXS:
            return quantize_iq2_xxs;
        case GgmlType::IQ2_XS:
            return quantize_iq2_xs;
        case GgmlType::IQ2_S:
            return quantize_iq2_s;
        case GgmlType::IQ1_S:
            return quantize_iq1_s;
        case GgmlType::IQ1_M:
            return quantize_iq1_m;
        default:
            return nullptr;
    }
}

size_t quantize_rows(GgmlType type, const float* src, void* dst, int64_t n_rows, int64_t n_cols,
                     const float* importance, QuantSearch search) {
    const QuantizeRowFn quantize = file_quantizer(type, search);
    const TypeTraits* traits = type_traits(type);
    if (!quantize || !traits) return 0;
    const size_t bytes = row_bytes(*traits, n_cols);
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t r = 0; r < n_rows; ++r) {
        quantize(src + r * n_cols, out + size_t(r) * bytes, n_cols, importance);
    }
    return size_t(n_rows) * bytes;
}

}  // namespace mw
