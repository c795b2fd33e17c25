// The ARM64 kernels (tensor/arm/kernels_neon*.cpp) against the scalar reference (mw::ref), at every
// level the CPU running the test has: NEON, dotprod, i8mm. Built on ARM64 only; under qemu-user
// with `-cpu max` all three levels run, on a CPU model without dotprod / i8mm those levels are
// skipped and the NEON fallback is what the process uses (checked by Dispatch).
//
// - Activation quantizers (Q8_0, Q8_1, Q8_K, F16, BF16): bit-identical to the reference.
// - vec_dot: within float rounding of the reference (the integer sums are exact; only the order
//   of float additions differs): 1e-5 of sum |w_i x_i|.
// - matmul: every (row, token) against the reference vec_dot, for token counts 1..37 and row
//   ranges that are not multiples of the 4-row tile; outputs outside the range are untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "format/ggml_types.h"
#include "support/random_blocks.h"
#include "tensor/arm/neon.h"
#include "tensor/cpu_features.h"
#include "tensor/kernels.h"
#include "tensor/quants.h"
#include "tensor/types.h"

namespace mw {
namespace {

using neon::Level;

const char* level_name(Level level) {
    switch (level) {
        case Level::neon:
            return "neon";
        case Level::dotprod:
            return "neon-dotprod";
        case Level::i8mm:
            return "neon-i8mm";
    }
    return "?";
}

bool cpu_has(Level level) {
    const CpuFeatures& cpu = cpu_features();
    switch (level) {
        case Level::neon:
            return cpu.neon;
        case Level::dotprod:
            return cpu.dotprod;
        case Level::i8mm:
            return cpu.dotprod && cpu.i8mm;
    }
    return false;
}

TraitsArray kernels_at(Level level) {
    KernelSet set;
    set.table = reference_type_traits();
    neon::install(set, level);
    EXPECT_STREQ(set.name, level_name(level));
    return set.table;
}

const TypeTraits& row(const TraitsArray& table, GgmlType type) {
    for (const TypeTraits& t : table) {
        if (t.type == type) return t;
    }
    ADD_FAILURE() << "no row for type " << uint32_t(type);
    return table[0];
}

const TypeTraits& reference(GgmlType type) {
    return row(reference_type_traits(), type);
}

constexpr GgmlType kWeightTypes[] = {
    GgmlType::F32,   GgmlType::F16,     GgmlType::BF16,  GgmlType::Q4_0,    GgmlType::Q4_1,
    GgmlType::Q5_0,  GgmlType::Q5_1,    GgmlType::Q8_0,  GgmlType::Q2_K,    GgmlType::Q3_K,
    GgmlType::Q4_K,  GgmlType::Q5_K,    GgmlType::Q6_K,  GgmlType::IQ4_NL,  GgmlType::IQ4_XS,
    GgmlType::MXFP4, GgmlType::TQ1_0,   GgmlType::TQ2_0, GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
    GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S,   GgmlType::IQ1_M,
};

// n_tokens activation rows encoded with the reference quantizer of the weight's vec_dot_type.
std::vector<uint8_t> random_activations(const TypeTraits& w, int64_t n_tokens, int64_t n,
                                        std::mt19937& rng) {
    const TypeTraits& a = reference(w.vec_dot_type);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(size_t(n * n_tokens));
    for (float& v : x) v = normal(rng);
    std::vector<uint8_t> out(row_bytes(a, n) * size_t(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) {
        a.from_float(x.data() + t * n, out.data() + size_t(t) * row_bytes(a, n), n);
    }
    return out;
}

// sum_i |w_i x_i| over the decoded operands: the scale of a dot product's rounding error.
double abs_products(const TypeTraits& w, const uint8_t* wrow, const uint8_t* xrow, int64_t n) {
    const TypeTraits& a = reference(w.vec_dot_type);
    std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
    reference(w.type).to_float(wrow, wf.data(), n);
    a.to_float(xrow, xf.data(), n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::fabs(double(wf[size_t(i)]) * xf[size_t(i)]);
    return sum;
}

double tolerance(double abs_sum) {
    return 1e-5 * abs_sum + 1e-6;
}

std::vector<int64_t> lengths(const TypeTraits& t) {
    if (t.is_quantized) return {t.block_size, 2 * t.block_size, 3 * t.block_size, 7 * t.block_size};
    return {1, 3, 4, 5, 16, 17, 33, 100, 259};
}

// ---- Activation quantizers: bit-exact ---------------------------------------------------------

// Random normals at several scales, a zero block, and blocks of exact ties for the rounding.
std::vector<float> quantizer_input(int64_t n, std::mt19937& rng) {
    std::vector<float> x(static_cast<size_t>(n));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i)
        x[size_t(i)] = normal(rng) * std::pow(10.0f, float(i / 256 % 5) - 2);
    if (n >= 512) {
        // Super-block 0: max |x| = 127, first at x[3] = -127, so Q8_K's iscale is 1 and the
        // halves are exact ties (to even); in Q8_0 block 2 (x[64..96), amax 127, d = 1) they
        // round away from zero.
        for (int j = 0; j < 64; ++j) x[size_t(j)] = float(j % 7) * 0.25f;
        x[3] = -127.0f;
        x[9] = 127.0f;  // the same |x| later does not change the sign
        for (int j = 64; j < 96; ++j) x[size_t(j)] = float(j % 11) - 4.5f;
        x[64] = 127.0f;
        for (int j = 128; j < 256; ++j) x[size_t(j)] = float(j % 13) * 0.5f - 3.0f;
        std::fill(x.begin() + 256, x.begin() + 288, 0.0f);  // a zero 32-block
    }
    if (n >= 768) std::fill(x.begin() + 512, x.begin() + 768, 0.0f);  // a zero super-block
    return x;
}

TEST(KernelsNeon, ActivationQuantizersAreBitExact) {
    const TraitsArray table = kernels_at(Level::neon);
    std::mt19937 rng(11);
    for (GgmlType type :
         {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::F16, GgmlType::BF16}) {
        const TypeTraits& ours = row(table, type);
        const TypeTraits& ref = reference(type);
        ASSERT_NE(ours.from_float, ref.from_float) << ref.name << ": no NEON quantizer installed";
        for (int64_t blocks : {1, 2, 3, 8, 24}) {
            const int64_t n = blocks * (ref.block_size == 1 ? 259 : ref.block_size);
            const std::vector<float> x = quantizer_input(n, rng);
            std::vector<uint8_t> got(row_bytes(ref, n)), want(row_bytes(ref, n));
            ours.from_float(x.data(), got.data(), n);
            ref.from_float(x.data(), want.data(), n);
            for (size_t b = 0; b < got.size(); b += ref.type_size) {
                ASSERT_EQ(std::memcmp(got.data() + b, want.data() + b, ref.type_size), 0)
                    << ref.name << " n=" << n << " block " << b / ref.type_size;
            }
        }
    }
}

TEST(KernelsNeon, HalfEncodersMatchOnSpecialValues) {
    const TraitsArray table = kernels_at(Level::neon);
    const float inf = INFINITY;
    std::vector<float> x = {0.0f,     -0.0f,    1.0f,       65504.0f,    65519.0f,    65520.0f,
                            -70000.f, inf,      -inf,       1e-8f,       -3e-5f,      5.9604645e-8f,
                            2.98e-8f, 1.0e-40f, 3.3895e38f, 1.00390625f, 1.01171875f, NAN};
    uint32_t snan_bits = 0x7f800001u, neg_nan_bits = 0xffc12345u;
    float snan, neg_nan;
    std::memcpy(&snan, &snan_bits, 4);
    std::memcpy(&neg_nan, &neg_nan_bits, 4);
    x.push_back(snan);
    x.push_back(neg_nan);
    while (x.size() % 4 != 3) x.push_back(0.5f);  // also a scalar tail
    for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
        std::vector<uint16_t> got(x.size()), want(x.size());
        row(table, type).from_float(x.data(), got.data(), int64_t(x.size()));
        reference(type).from_float(x.data(), want.data(), int64_t(x.size()));
        for (size_t i = 0; i < x.size(); ++i) {
            EXPECT_EQ(got[i], want[i]) << reference(type).name << " x[" << i << "] = " << x[i];
        }
    }
}

// ---- vec_dot and matmul at each level ---------------------------------------------------------

class KernelsNeonLevel : public ::testing::TestWithParam<Level> {
  protected:
    void SetUp() override {
        if (!cpu_has(GetParam())) {
            GTEST_SKIP() << "this CPU lacks " << level_name(GetParam()) << " ("
                         << cpu_features_summary() << ")";
        }
    }
};

TEST_P(KernelsNeonLevel, VecDotMatchesReference) {
    const TraitsArray table = kernels_at(GetParam());
    std::mt19937 rng(23);
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& ours = row(table, type);
        const TypeTraits& ref = reference(type);
        ASSERT_NE(ours.vec_dot, ref.vec_dot) << ref.name << ": no NEON vec_dot installed";
        for (int64_t n : lengths(ref)) {
            for (int trial = 0; trial < 8; ++trial) {
                const auto w = test::random_weight_rows(ref, 1, n, rng);
                const auto x = random_activations(ref, 1, n, rng);
                const float want = ref.vec_dot(n, w.data(), x.data());
                const float got = ours.vec_dot(n, w.data(), x.data());
                EXPECT_NEAR(got, want, tolerance(abs_products(ref, w.data(), x.data(), n)))
                    << ref.name << " n=" << n << " trial " << trial;
            }
        }
    }
}

// Hand-made extremes: all-max weights against all-max activations, so any intermediate that
// could overflow (int16 products, the K-quant scale sums) does here.
TEST_P(KernelsNeonLevel, VecDotAtTheExtremes) {
    const TraitsArray table = kernels_at(GetParam());
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& ref = reference(type);
        if (!ref.is_quantized) continue;
        const int64_t n = 2 * ref.block_size;
        for (uint8_t fill : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x80), uint8_t(0x7F)}) {
            std::vector<uint8_t> w(row_bytes(ref, n), fill);
            for (size_t block = 0; block < w.size() / ref.type_size; ++block) {
                uint8_t* b = w.data() + block * ref.type_size;
                for (const auto& [offset, is_min] : test::half_fields(type)) {
                    const uint16_t h = f32_to_fp16(is_min ? 0.5f : 0.25f);
                    std::memcpy(b + offset, &h, sizeof h);
                }
                // The scales that are not fp16 fields: MXFP4's exponent byte (2^-2), IQ1_M's fp16
                // d in the top nibbles of its four scale words (0.25).
                if (type == GgmlType::MXFP4) b[offsetof(BlockMXFP4, e)] = 126;
                if (type == GgmlType::IQ1_M) {
                    uint16_t sc[4];
                    std::memcpy(sc, b + offsetof(BlockIQ1_M, scales), sizeof sc);
                    const uint16_t d = f32_to_fp16(0.25f);
                    for (int k = 0; k < 4; ++k) {
                        sc[k] = uint16_t((sc[k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12));
                    }
                    std::memcpy(b + offsetof(BlockIQ1_M, scales), sc, sizeof sc);
                }
            }
            for (float sign : {1.0f, -1.0f}) {
                std::vector<float> xf(size_t(n), sign * 3.0f);
                const TypeTraits& a = reference(ref.vec_dot_type);
                std::vector<uint8_t> x(row_bytes(a, n));
                a.from_float(xf.data(), x.data(), n);
                const float want = ref.vec_dot(n, w.data(), x.data());
                const double bound = tolerance(abs_products(ref, w.data(), x.data(), n));
                const float got = row(table, type).vec_dot(n, w.data(), x.data());
                EXPECT_NEAR(got, want, bound)
                    << ref.name << " fill " << int(fill) << " sign " << sign;
                // The prefill tiles (i8mm: SMMLA) on 4 copies of the row x 4 of the token.
                std::vector<uint8_t> w4, x4;
                for (int k = 0; k < 4; ++k) {
                    w4.insert(w4.end(), w.begin(), w.end());
                    x4.insert(x4.end(), x.begin(), x.end());
                }
                float y[16];
                row(table, type).matmul(w4.data(), w.size(), n, 0, 4, x4.data(), x.size(), 4, y, 4);
                for (int k = 0; k < 16; ++k) {
                    EXPECT_NEAR(y[k], want, bound) << ref.name << " matmul fill " << int(fill)
                                                   << " sign " << sign << " output " << k;
                }
            }
        }
    }
}

TEST_P(KernelsNeonLevel, MatmulMatchesReferenceForEveryTileShape) {
    const TraitsArray table = kernels_at(GetParam());
    std::mt19937 rng(37);
    constexpr int64_t kRows = 11, kMaxTokens = 37, kLdy = kRows + 2;
    constexpr float kUntouched = -12345.0f;
    // Row ranges [r0, r1): full, odd offsets, one row, less than one tile, tile + 1.
    const std::pair<int64_t, int64_t> ranges[] = {{0, 11}, {1, 8}, {5, 6}, {2, 5}, {3, 8}, {6, 11}};
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& ours = row(table, type);
        const TypeTraits& ref = reference(type);
        ASSERT_NE(ours.matmul, ref.matmul) << ref.name << ": no NEON matmul installed";
        const int64_t n = ref.is_quantized ? (ref.block_size == kQK ? 3 : 2) * ref.block_size : 37;
        const auto w = test::random_weight_rows(ref, kRows, n, rng);
        const auto act = random_activations(ref, kMaxTokens, n, rng);
        const size_t w_stride = row_bytes(ref, n);
        const size_t a_stride = row_bytes(reference(ref.vec_dot_type), n);
        std::vector<float> want(kRows * kMaxTokens);
        std::vector<double> bound(kRows * kMaxTokens);
        for (int64_t r = 0; r < kRows; ++r) {
            for (int64_t t = 0; t < kMaxTokens; ++t) {
                const uint8_t* wr = w.data() + size_t(r) * w_stride;
                const uint8_t* xt = act.data() + size_t(t) * a_stride;
                want[size_t(t * kRows + r)] = ref.vec_dot(n, wr, xt);
                bound[size_t(t * kRows + r)] = tolerance(abs_products(ref, wr, xt, n));
            }
        }
        for (int64_t n_tokens = 1; n_tokens <= kMaxTokens; ++n_tokens) {
            const auto [r0, r1] = ranges[size_t(n_tokens) % std::size(ranges)];
            std::vector<float> y(size_t(kLdy * n_tokens), kUntouched);
            ours.matmul(w.data(), w_stride, n, r0, r1, act.data(), a_stride, n_tokens, y.data(),
                        kLdy);
            for (int64_t t = 0; t < n_tokens; ++t) {
                for (int64_t r = 0; r < kLdy; ++r) {
                    const float got = y[size_t(t * kLdy + r)];
                    if (r < r0 || r >= r1) {
                        ASSERT_EQ(got, kUntouched) << ref.name << " wrote row " << r << " token "
                                                   << t << " outside [" << r0 << ", " << r1 << ")";
                        continue;
                    }
                    ASSERT_NEAR(got, want[size_t(t * kRows + r)], bound[size_t(t * kRows + r)])
                        << ref.name << " row " << r << " token " << t << " of " << n_tokens
                        << ", rows [" << r0 << ", " << r1 << ")";
                }
            }
        }
    }
}

// Decode (one token) and prefill must agree closely: a token's logits should not depend much on
// whether it was evaluated alone or in a batch.
TEST_P(KernelsNeonLevel, MatmulOfOneTokenAgreesWithVecDot) {
    const TraitsArray table = kernels_at(GetParam());
    std::mt19937 rng(41);
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& k = row(table, type);
        const TypeTraits& ref = reference(type);
        const int64_t n = 4 * ref.block_size * (ref.is_quantized ? 1 : 64);
        const auto w = test::random_weight_rows(ref, 5, n, rng);
        const auto x = random_activations(ref, 3, n, rng);
        const size_t w_stride = row_bytes(ref, n);
        const size_t a_stride = row_bytes(reference(ref.vec_dot_type), n);
        float y[3 * 5];
        k.matmul(w.data(), w_stride, n, 0, 5, x.data(), a_stride, 3, y, 5);
        for (int64_t t = 0; t < 3; ++t) {
            for (int64_t r = 0; r < 5; ++r) {
                const uint8_t* wr = w.data() + size_t(r) * w_stride;
                const uint8_t* xt = x.data() + size_t(t) * a_stride;
                EXPECT_NEAR(y[t * 5 + r], k.vec_dot(n, wr, xt),
                            tolerance(abs_products(ref, wr, xt, n)))
                    << ref.name << " row " << r << " token " << t;
            }
        }
    }
}

// Awkward lengths (1, 2, 3 and 7 blocks) for every tile shape the drivers pick (the i8mm level:
// 4-token and 2-token SMMLA tiles, a lone token on SDOT), from a row range that starts mid-tile.
TEST_P(KernelsNeonLevel, MatmulMatchesReferenceAtEveryLength) {
    const TraitsArray table = kernels_at(GetParam());
    std::mt19937 rng(43);
    constexpr int64_t kRows = 7, kTokens = 11;
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& ref = reference(type);
        if (!ref.is_quantized) continue;
        for (int64_t n : lengths(ref)) {
            const auto w = test::random_weight_rows(ref, kRows, n, rng);
            const auto x = random_activations(ref, kTokens, n, rng);
            const size_t w_stride = row_bytes(ref, n);
            const size_t a_stride = row_bytes(reference(ref.vec_dot_type), n);
            for (int64_t n_tokens : {2, 3, 4, 5, 7, 11}) {
                std::vector<float> y(size_t(kRows * n_tokens));
                row(table, type)
                    .matmul(w.data(), w_stride, n, 1, kRows, x.data(), a_stride, n_tokens, y.data(),
                            kRows);
                for (int64_t t = 0; t < n_tokens; ++t) {
                    for (int64_t r = 1; r < kRows; ++r) {
                        const uint8_t* wr = w.data() + size_t(r) * w_stride;
                        const uint8_t* xt = x.data() + size_t(t) * a_stride;
                        ASSERT_NEAR(y[size_t(t * kRows + r)], ref.vec_dot(n, wr, xt),
                                    tolerance(abs_products(ref, wr, xt, n)))
                            << ref.name << " n=" << n << " row " << r << " token " << t << " of "
                            << n_tokens;
                    }
                }
            }
        }
    }
}

// Every quantized type's matrix kernel belongs to the level: none is left on a lower one (the
// i8mm level installs its SMMLA prefill for each; vec_dot stays the SDOT one).
TEST_P(KernelsNeonLevel, EveryQuantizedTypeHasTheLevelsMatmul) {
    const TraitsArray table = kernels_at(GetParam());
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& t = row(table, type);
        if (!t.is_quantized) continue;
        EXPECT_STREQ(t.isa, level_name(GetParam())) << t.name;
    }
}

// dotprod and i8mm offer the packed layouts (groups of 4 rows; their kernels are tested in
// repack_test.cpp for every set), the ARMv8.0 fallback none: its widening multiplies gain
// nothing from them.
TEST_P(KernelsNeonLevel, OffersThePackedLayouts) {
    KernelSet set;
    set.table = reference_type_traits();
    neon::install(set, GetParam());
    if (GetParam() == Level::neon) {
        EXPECT_EQ(set.n_packed, 0);
        return;
    }
    ASSERT_EQ(set.n_packed, 5);
    for (int k = 0; k < set.n_packed; ++k) {
        const TypeTraits& p = set.packed[size_t(k)];
        EXPECT_EQ(p.pack_rows, 4) << p.name;
        EXPECT_STREQ(p.isa, level_name(GetParam())) << p.name;
        EXPECT_NE(p.matmul, nullptr) << p.name;
    }
}

INSTANTIATE_TEST_SUITE_P(Levels, KernelsNeonLevel,
                         ::testing::Values(Level::neon, Level::dotprod, Level::i8mm),
                         [](const ::testing::TestParamInfo<Level>& param) {
                             std::string name = level_name(param.param);
                             for (char& c : name) {
                                 if (c == '-') c = '_';
                             }
                             return name;
                         });

// ---- Dispatch ---------------------------------------------------------------------------------

// The process table uses the best level this CPU has. MEMWALL_EXPECT_ISA (set by
// scripts/test-aarch64 per emulated CPU) pins which one that must be, so a CPU model that
// silently lost a feature fails here instead of skipping tests.
TEST(KernelsNeon, DispatchPicksTheBestLevelTheCpuHas) {
    const char* limit = std::getenv("MEMWALL_ISA");
    if (limit && std::string(limit) == "scalar") {
        EXPECT_STREQ(kernel_isa(), "scalar");
        return;
    }
    const Level best = neon::best_level(cpu_features());
    EXPECT_STREQ(kernel_isa(), level_name(best)) << cpu_features_summary();
    EXPECT_STREQ(type_traits(GgmlType::Q4_K)->isa, level_name(best));
    EXPECT_STREQ(type_traits(GgmlType::F16)->isa, "neon");
    if (const char* expected = std::getenv("MEMWALL_EXPECT_ISA")) {
        EXPECT_STREQ(kernel_isa(), expected) << cpu_features_summary();
    }
    KernelSet scalar;
    scalar.table = reference_type_traits();
    install_kernels(scalar, cpu_features(), IsaLimit::scalar);
    EXPECT_STREQ(scalar.name, "scalar");
    EXPECT_EQ(scalar.table[3].matmul, reference_type_traits()[3].matmul);
}

// ---- Instruction counts under qemu --------------------------------------------------------------

// Not a test: the driver of scripts/neon-instructions, which counts the instructions qemu executes
// (-d in_asm,exec,nochain) for MEMWALL_DOT_REPS dot products of one 4096-column row of
// MEMWALL_DOT_TYPE at level MEMWALL_DOT_LEVEL (neon, neon-dotprod, neon-i8mm, or scalar for the
// reference), minus a run with no repetitions.
TEST(KernelsNeonInstructions, DISABLED_DotLoop) {
    const char* type_name = std::getenv("MEMWALL_DOT_TYPE");
    const char* level = std::getenv("MEMWALL_DOT_LEVEL");
    const char* reps_text = std::getenv("MEMWALL_DOT_REPS");
    ASSERT_TRUE(type_name && level && reps_text) << "set MEMWALL_DOT_TYPE, _LEVEL and _REPS";
    const auto type = ggml_type_from_name(type_name);
    ASSERT_TRUE(type.has_value()) << type_name;
    TraitsArray table = reference_type_traits();
    for (Level l : {Level::neon, Level::dotprod, Level::i8mm}) {
        if (std::string(level) == level_name(l)) table = kernels_at(l);
    }
    const TypeTraits& k = row(table, *type);
    constexpr int64_t n = 4096;
    std::mt19937 rng(5);
    const auto w = test::random_weight_rows(reference(*type), 1, n, rng);
    const auto x = random_activations(reference(*type), 1, n, rng);
    // One dot first, so one-time set-up (the lattice grids) is in the baseline run too.
    volatile float sink = k.vec_dot(n, w.data(), x.data());
    for (int r = 0; r < std::atoi(reps_text); ++r) sink = sink + k.vec_dot(n, w.data(), x.data());
    std::printf("weight bytes per dot: %zu\n", w.size());
}

}  // namespace
}  // namespace mw
