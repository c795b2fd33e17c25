// Plausible weights and activations for the kernel benchmarks (kernels_bench.cpp,
// kernels_insn.cpp): random codes with sane fp16 scales, in the GGUF or a packed layout.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "tensor/kernels.h"
#include "tensor/repack.h"
#include "tensor/types.h"

namespace mw {

inline const TypeTraits& row_of(const TraitsArray& table, GgmlType type) {
    for (const TypeTraits& t : table) {
        if (t.type == type) return t;
    }
    std::abort();
}

// Offsets of the fp16 scale fields in a block, which random bytes must not fill (NaNs and
// denormals would measure the FPU's slow paths).
inline std::vector<size_t> half_fields(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
            return {0};
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
            return {0, 2};
        case GgmlType::Q2_K:
            return {80, 82};
        case GgmlType::Q3_K:
            return {108};
        case GgmlType::Q6_K:
            return {208};
        case GgmlType::IQ4_NL:
        case GgmlType::IQ4_XS:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
        case GgmlType::IQ1_S:
            return {0};
        case GgmlType::TQ1_0:
            return {52};
        case GgmlType::TQ2_0:
            return {64};
        default:
            return {};
    }
}

// `bytes` of plausible weights of type t: a random 1 MiB pattern repeated.
inline void fill_weights(const TypeTraits& t, uint8_t* dst, size_t bytes) {
    std::mt19937 rng(1);
    const size_t pattern = size_t(1 << 20) / t.type_size * t.type_size;
    std::vector<uint8_t> p(pattern);
    if (t.is_quantized) {
        for (uint8_t& b : p) b = uint8_t(rng());
        for (size_t block = 0; block < pattern / t.type_size; ++block) {
            for (size_t off : half_fields(t.type)) {
                const uint16_t h = f32_to_fp16(0.001f * float(1 + rng() % 16));
                std::memcpy(p.data() + block * t.type_size + off, &h, 2);
            }
            // MXFP4's E8M0 exponent: 2^-10 .. 2^-3 (random bytes would give subnormal scales).
            if (t.type == GgmlType::MXFP4) p[block * t.type_size] = uint8_t(118 + rng() % 8);
        }
    } else {
        std::normal_distribution<float> normal(0.0f, 0.1f);
        std::vector<float> x(pattern / t.type_size);
        for (float& v : x) v = normal(rng);
        row_of(reference_type_traits(), t.type).from_float(x.data(), p.data(), int64_t(x.size()));
    }
    for (size_t off = 0; off < bytes; off += pattern) {
        std::memcpy(dst + off, p.data(), std::min(pattern, bytes - off));
    }
}

// A packed layout (tensor/repack.h): n_rows x n_cols of plausible weights packed into dst, then
// that matrix repeated over `bytes`.
inline void fill_packed(const TypeTraits& t, int64_t n_rows, int64_t n_cols, uint8_t* dst,
                        size_t bytes) {
    const size_t matrix = row_bytes(t, n_cols) * size_t(n_rows);
    std::vector<uint8_t> native(matrix);
    fill_weights(*type_traits(t.type), native.data(), matrix);
    repack_matrix(t, native.data(), dst, n_rows, n_cols);
    for (size_t off = matrix; off + matrix <= bytes; off += matrix)
        std::memcpy(dst + off, dst, matrix);
}

inline std::vector<uint8_t> encode_activations(const TypeTraits& w, int64_t n_cols,
                                               int64_t n_tokens) {
    const TypeTraits& a = row_of(reference_type_traits(), w.vec_dot_type);
    std::mt19937 rng(2);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n_cols));
    const size_t stride = row_bytes(a, n_cols);
    std::vector<uint8_t> out(stride * size_t(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (float& v : x) v = normal(rng);
        a.from_float(x.data(), out.data() + stride * size_t(t), n_cols);
    }
    return out;
}

}  // namespace mw
