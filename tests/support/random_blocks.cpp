#include "support/random_blocks.h"

#include <cstring>
#include <stdexcept>

#include "base/fp16.h"
#include "tensor/kernels.h"
#include "tensor/quants.h"

namespace mw::test {

std::vector<HalfField> half_fields(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
            return {{0, false}};
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
            return {{0, false}, {2, true}};
        case GgmlType::Q2_K:
            return {{offsetof(BlockQ2_K, d), false}, {offsetof(BlockQ2_K, dmin), true}};
        case GgmlType::Q3_K:
            return {{offsetof(BlockQ3_K, d), false}};
        case GgmlType::Q6_K:
            return {{offsetof(BlockQ6_K, d), false}};
        case GgmlType::IQ4_NL:
        case GgmlType::IQ4_XS:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
        case GgmlType::IQ1_S:
            return {{0, false}};
        case GgmlType::TQ1_0:
            return {{offsetof(BlockTQ1_0, d), false}};
        case GgmlType::TQ2_0:
            return {{offsetof(BlockTQ2_0, d), false}};
        default:
            return {};
    }
}

std::vector<uint8_t> random_weight_rows(const TypeTraits& t, int64_t n_rows, int64_t n_cols,
                                        std::mt19937& rng, float sigma) {
    const size_t rb = row_bytes(t, n_cols);
    std::vector<uint8_t> m(rb * size_t(n_rows));
    if (!t.is_quantized) {
        const TypeTraits* reference = nullptr;
        for (const TypeTraits& r : reference_type_traits()) {
            if (r.type == t.type) reference = &r;
        }
        if (!reference || !reference->from_float)
            throw std::invalid_argument("random_weight_rows: no encoder");
        std::normal_distribution<float> normal(0.0f, sigma);
        std::vector<float> x(static_cast<size_t>(n_cols));
        for (int64_t r = 0; r < n_rows; ++r) {
            for (float& v : x) v = normal(rng);
            reference->from_float(x.data(), m.data() + rb * size_t(r), n_cols);
        }
        return m;
    }
    for (uint8_t& byte : m) byte = uint8_t(rng());
    std::uniform_real_distribution<float> magnitude(1e-3f, 1e-2f);
    for (size_t block = 0; block < m.size() / t.type_size; ++block) {
        for (const HalfField& field : half_fields(t.type)) {
            float value = magnitude(rng) * ((rng() & 1) ? 1.0f : -1.0f);
            if (field.is_min) value *= 8;
            const uint16_t h = f32_to_fp16(value);
            std::memcpy(m.data() + block * t.type_size + field.offset, &h, sizeof h);
        }
        // MXFP4's E8M0 exponent: scales 2^-12 .. 2^-5, as the fp16 scales above.
        if (t.type == GgmlType::MXFP4) m[block * t.type_size] = uint8_t(115 + rng() % 8);
        // IQ1_M's fp16 d is the top nibbles of its four scale words (bytes 48..55).
        if (t.type == GgmlType::IQ1_M) {
            const uint16_t h = f32_to_fp16(magnitude(rng) * ((rng() & 1) ? 1.0f : -1.0f));
            uint8_t* words = m.data() + block * t.type_size + 48;
            for (int k = 0; k < 4; ++k) {
                words[2 * k + 1] =
                    uint8_t((words[2 * k + 1] & 0x0F) | (((h >> (4 * k)) & 0xF) << 4));
            }
        }
    }
    return m;
}

}  // namespace mw::test
