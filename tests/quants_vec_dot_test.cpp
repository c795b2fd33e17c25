// vec_dot of every weight type against its activation type, on random blocks, compared with a
// double-precision dot product of the decoded operands.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "support/random_blocks.h"
#include "tensor/quants.h"
#include "tensor/types.h"

namespace mw {
namespace {

// Q4_1/Q5_1 against Q8_1 use s = fp16(d_float * sum(q)) where decoding x gives fp16(d) * q: the
// offset term m * s may differ from m * sum(decoded x) by about 2^-10 of it. This returns that
// allowance, summed over the blocks.
double q8_1_offset_allowance(const TypeTraits& w, const uint8_t* wrow, const uint8_t* xrow,
                             int64_t n) {
    if (w.vec_dot_type != GgmlType::Q8_1) return 0.0;
    double allowance = 0.0;
    for (int64_t i = 0; i < n / kQK; ++i) {
        uint16_t m;
        std::memcpy(&m, wrow + size_t(i) * w.type_size + 2, sizeof m);
        BlockQ8_1 x;
        std::memcpy(&x, xrow + size_t(i) * sizeof x, sizeof x);
        int sum = 0;
        for (int j = 0; j < kQK; ++j) sum += x.qs[j];
        allowance += std::fabs(double(fp16_to_f32(m)) * fp16_to_f32(x.d) * sum) / 1024 * 1.01;
    }
    return allowance;
}

struct DotCheck {
    float got;
    double expected;
    double abs_products;  // sum of |w_i x_i|
    double allowance;
};

DotCheck check_dot(const TypeTraits& w, const uint8_t* wrow, const std::vector<float>& x) {
    const int64_t n = int64_t(x.size());
    const TypeTraits* a = type_traits(w.vec_dot_type);
    std::vector<uint8_t> xrow(row_bytes(*a, n));
    a->from_float(x.data(), xrow.data(), n);
    std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
    w.to_float(wrow, wf.data(), n);
    a->to_float(xrow.data(), xf.data(), n);
    DotCheck c{w.vec_dot(n, wrow, xrow.data()), 0.0, 0.0, 0.0};
    for (int64_t i = 0; i < n; ++i) {
        c.expected += double(wf[i]) * double(xf[i]);
        c.abs_products += std::fabs(double(wf[i]) * double(xf[i]));
    }
    c.allowance = q8_1_offset_allowance(w, wrow, xrow.data(), n);
    return c;
}

TEST(QuantVecDot, EveryWeightTypeMatchesDoublePrecision) {
    const GgmlType weights[] = {
        GgmlType::F32,   GgmlType::F16,     GgmlType::BF16,  GgmlType::Q4_0,    GgmlType::Q4_1,
        GgmlType::Q5_0,  GgmlType::Q5_1,    GgmlType::Q8_0,  GgmlType::Q2_K,    GgmlType::Q3_K,
        GgmlType::Q4_K,  GgmlType::Q5_K,    GgmlType::Q6_K,  GgmlType::IQ4_NL,  GgmlType::IQ4_XS,
        GgmlType::MXFP4, GgmlType::TQ1_0,   GgmlType::TQ2_0, GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
        GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S,   GgmlType::IQ1_M};
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (GgmlType type : weights) {
        const TypeTraits* w = type_traits(type);
        ASSERT_NE(w, nullptr);
        ASSERT_NE(w->vec_dot, nullptr) << w->name;
        // 1, 2 and 7 blocks; the plain types also get a long row.
        std::vector<int64_t> lengths = {1 * w->block_size, 2 * w->block_size, 7 * w->block_size};
        if (!w->is_quantized) lengths.push_back(1000);
        for (int64_t n : lengths) {
            for (int trial = 0; trial < 20; ++trial) {
                const auto wrow = test::random_weight_rows(*w, 1, n, rng);
                std::vector<float> x(static_cast<size_t>(n));
                for (float& v : x) v = normal(rng);
                const DotCheck c = check_dot(*w, wrow.data(), x);
                const double tolerance = 1e-5 * c.abs_products + c.allowance + 1e-30;
                EXPECT_NEAR(c.got, c.expected, tolerance)
                    << w->name << " n=" << n << " trial " << trial;
            }
        }
    }
}

// Hand cases whose integer sums and scales are exact in float: the result is isum * d_w * d_x.
TEST(QuantVecDot, HandBuiltQ8_0AndQ4_0) {
    BlockQ8_0 w;
    w.d = f32_to_fp16(0.5f);
    BlockQ8_0 x;
    x.d = f32_to_fp16(0.25f);
    int isum = 0;
    for (int j = 0; j < 32; ++j) {
        w.qs[j] = int8_t(j - 16);
        x.qs[j] = int8_t(3 - j % 7);
        isum += (j - 16) * (3 - j % 7);
    }
    EXPECT_EQ(ref::vec_dot_q8_0_q8_0(32, &w, &x), float(isum) * 0.125f);
    BlockQ4_0 w4;
    w4.d = f32_to_fp16(2.0f);
    int isum4 = 0;
    for (int j = 0; j < 16; ++j) {
        w4.qs[j] = uint8_t(j | (15 - j) << 4);
        isum4 += (j - 8) * x.qs[j] + (7 - j) * x.qs[j + 16];
    }
    EXPECT_EQ(ref::vec_dot_q4_0_q8_0(32, &w4, &x), float(isum4) * 0.5f);
}

// Q8_K mins path: a Q4_K block whose codes are all 0 has value -dmin * m_j everywhere, so its
// dot product only goes through the bsums.
TEST(QuantVecDot, Q4_KMinsUseTheBsums) {
    BlockQ4_K w;
    std::memset(&w, 0, sizeof w);
    w.d = f32_to_fp16(1.0f);
    w.dmin = f32_to_fp16(0.5f);
    for (int j = 0; j < 4; ++j) w.scales[4 + j] = uint8_t(j + 1);  // mins 1..4 of sub-blocks 0..3
    std::vector<float> x(256);
    for (int i = 0; i < 256; ++i) x[i] = float(i % 5) - 2.0f;
    std::vector<uint8_t> xq(sizeof(BlockQ8_K));
    ref::quantize_row_q8_k(x.data(), xq.data(), 256);
    const auto& xb = *reinterpret_cast<const BlockQ8_K*>(xq.data());
    double expected = 0.0;
    for (int i = 0; i < 128; ++i) expected += -0.5 * (i / 32 + 1) * xb.d * xb.qs[i];
    EXPECT_NEAR(ref::vec_dot_q4_k_q8_k(256, &w, xq.data()), expected, 1e-5 * std::fabs(expected));
}

}  // namespace
}  // namespace mw
