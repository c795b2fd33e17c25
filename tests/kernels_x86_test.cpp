// The x86-64 SIMD kernel sets (AVX2, AVX-VNNI, AVX-512) against the scalar reference, each set
// called directly (not only the one the dispatcher picked): activation encoders byte for byte,
// vec_dot and matmul on random data with awkward sizes (one block, odd block counts, 1..37
// tokens, row ranges that start and end off the tile sizes). Sets this CPU cannot run are
// skipped. The packed layouts of each set are tested in repack_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "support/random_blocks.h"
#include "support/test_support.h"
#include "tensor/kernels.h"
#include "tensor/quants.h"
#include "tensor/types.h"

#if defined(__x86_64__)
#include "tensor/x86/set.h"
#include "tensor/x86/x86.h"

namespace mw {
namespace {

const TypeTraits& row_of(const TraitsArray& table, GgmlType type) {
    for (const TypeTraits& t : table) {
        if (t.type == type) return t;
    }
    ADD_FAILURE() << "no row for type " << int(type);
    return table[0];
}

std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    return x;
}

// Sum over i of |w_i x_i| from the decoded operands: the scale of a dot product's rounding error.
double abs_products(const TypeTraits& w, const uint8_t* wrow, const TypeTraits& a,
                    const uint8_t* xrow, int64_t n) {
    std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
    w.to_float(wrow, wf.data(), n);
    a.to_float(xrow, xf.data(), n);
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += std::fabs(double(wf[i]) * xf[i]);
    return s;
}

const GgmlType kWeightTypes[] = {
    GgmlType::F32,   GgmlType::F16,     GgmlType::BF16,  GgmlType::Q4_0,    GgmlType::Q4_1,
    GgmlType::Q5_0,  GgmlType::Q5_1,    GgmlType::Q8_0,  GgmlType::Q2_K,    GgmlType::Q3_K,
    GgmlType::Q4_K,  GgmlType::Q5_K,    GgmlType::Q6_K,  GgmlType::IQ4_NL,  GgmlType::IQ4_XS,
    GgmlType::MXFP4, GgmlType::TQ1_0,   GgmlType::TQ2_0, GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
    GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S,   GgmlType::IQ1_M};

// Float types are summed in float by the kernels and in double by the reference.
double relative_tolerance(const TypeTraits& t) {
    return t.is_quantized ? 2e-6 : 2e-5;
}

// One matmul call (`matmul`: a table's matmul or a GEMM kernel) on n_tok random tokens over rows
// [r0, r1) of the n_rows x n_cols matrix m, checked against the reference dot product. The
// activations' stride is a row plus act_pad bytes, the outputs' ldy is n_rows + y_pad, and the
// outputs of the rows outside [r0, r1) must keep their sentinel.
void check_matmul(const std::function<void(const MatmulArgs&)>& matmul, const TypeTraits& w,
                  const std::vector<uint8_t>& m, int64_t n_cols, int64_t n_rows, int64_t r0,
                  int64_t r1, int64_t n_tok, size_t act_pad, int64_t y_pad, std::mt19937& rng) {
    const TypeTraits& ref = row_of(reference_type_traits(), w.type);
    const TypeTraits& act = row_of(reference_type_traits(), w.vec_dot_type);
    const size_t rb = row_bytes(w, n_cols);
    const size_t act_stride = row_bytes(act, n_cols) + act_pad;
    std::vector<uint8_t> xq(act_stride * size_t(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) {
        const auto x = random_floats(size_t(n_cols), rng);
        act.from_float(x.data(), xq.data() + act_stride * size_t(t), n_cols);
    }
    const int64_t ldy = n_rows + y_pad;
    const float sentinel = 12345.0f;
    std::vector<float> y(size_t(ldy * n_tok), sentinel);
    matmul(MatmulArgs{m.data(), rb, n_cols, r0, r1, xq.data(), act_stride, n_tok, y.data(), ldy});
    for (int64_t t = 0; t < n_tok; ++t) {
        const uint8_t* xr = xq.data() + act_stride * size_t(t);
        for (int64_t r = 0; r < ldy; ++r) {
            const float got = y[size_t(t * ldy + r)];
            if (r < r0 || r >= r1) {
                ASSERT_EQ(got, sentinel) << w.name << " wrote row " << r;
                continue;
            }
            const uint8_t* wr = m.data() + rb * size_t(r);
            const float want = ref.vec_dot(n_cols, wr, xr);
            const double scale = abs_products(w, wr, act, xr, n_cols);
            ASSERT_NEAR(got, want, relative_tolerance(w) * scale + 1e-30)
                << w.name << " cols=" << n_cols << " tokens=" << n_tok << " row " << r << " token "
                << t;
            ASSERT_FALSE(std::isnan(got)) << w.name;
        }
    }
}

class X86Kernels : public ::testing::TestWithParam<x86::Isa> {
  protected:
    void SetUp() override {
        KernelSet set;
        if (!x86::kernel_set(GetParam(), set)) GTEST_SKIP() << "this CPU lacks the kernel set";
        table_ = set.table;
    }
    TraitsArray table_{};
};

std::string isa_name(const ::testing::TestParamInfo<x86::Isa>& info) {
    return x86::isa_name(info.param);
}

TEST_P(X86Kernels, InstallsItsOwnKernels) {
    const char* expected = x86::isa_name(GetParam());
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& t = row_of(table_, type);
        EXPECT_STREQ(t.isa, expected) << t.name;
        EXPECT_NE(t.matmul, row_of(reference_type_traits(), type).matmul) << t.name;
    }
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
        EXPECT_NE(row_of(table_, type).from_float,
                  row_of(reference_type_traits(), type).from_float);
    }
}

// Encoders must produce the reference bytes exactly (the integer kernels depend on it).
TEST_P(X86Kernels, ActivationEncodersMatchReferenceBytes) {
    std::mt19937 rng(7);
    for (GgmlType type :
         {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::F16, GgmlType::BF16}) {
        const TypeTraits& simd = row_of(table_, type);
        const TypeTraits& ref = row_of(reference_type_traits(), type);
        const int64_t bs = simd.block_size;
        for (int64_t blocks : {1, 2, 3, 9}) {
            const int64_t n = blocks * (bs == 1 ? 37 : bs);
            for (int trial = 0; trial < 30; ++trial) {
                std::vector<float> x = random_floats(size_t(n), rng, trial % 2 ? 1.0f : 1e-3f);
                if (trial == 1) std::fill(x.begin(), x.begin() + std::min<int64_t>(n, 256), 0.0f);
                if (trial == 2) {
                    // Halfway cases for the rounding, and equal magnitudes of both signs.
                    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(int(i % 9) - 4) * 0.5f;
                    x[0] = -2.0f;
                }
                if (trial == 3) x[size_t(n / 2)] = -1e4f;
                std::vector<uint8_t> got(row_bytes(simd, n)), want(row_bytes(ref, n));
                simd.from_float(x.data(), got.data(), n);
                ref.from_float(x.data(), want.data(), n);
                ASSERT_EQ(got, want) << simd.name << " n=" << n << " trial " << trial;
            }
        }
    }
}

TEST_P(X86Kernels, VecDotMatchesReference) {
    std::mt19937 rng(11);
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& w = row_of(table_, type);
        const TypeTraits& ref = row_of(reference_type_traits(), type);
        const TypeTraits& act = row_of(reference_type_traits(), w.vec_dot_type);
        std::vector<int64_t> lengths;
        for (int64_t blocks : {1, 2, 3, 7, 8, 9, 17}) lengths.push_back(blocks * w.block_size);
        if (!w.is_quantized) lengths.insert(lengths.end(), {15, 33, 1000});
        for (int64_t n : lengths) {
            for (int trial = 0; trial < 10; ++trial) {
                const auto wrow = test::random_weight_rows(w, 1, n, rng);
                const auto x = random_floats(size_t(n), rng);
                std::vector<uint8_t> xq(row_bytes(act, n));
                act.from_float(x.data(), xq.data(), n);
                const float got = w.vec_dot(n, wrow.data(), xq.data());
                const float want = ref.vec_dot(n, wrow.data(), xq.data());
                const double scale = abs_products(w, wrow.data(), act, xq.data(), n);
                EXPECT_NEAR(got, want, relative_tolerance(w) * scale + 1e-30)
                    << w.name << " n=" << n << " trial " << trial;
            }
        }
    }
}

// matmul over row ranges and token counts that cross every tile boundary and both paths (decode
// kernels for few tokens, prefill panels from 12 tokens with AVX-512, 16 with AVX-VNNI, 24 with
// AVX2 (12 for IQ4_NL and MXFP4, 8 for the lattice and ternary types)); rows outside [r0, r1)
// must stay untouched.
TEST_P(X86Kernels, MatmulMatchesReference) {
    std::mt19937 rng(13);
    struct Shape {
        int64_t blocks, n_rows, r0, r1;
    };
#ifdef MW_TEST_SANITIZED
    // Under the sanitizers (~4x slower) a third of the work: the row ranges off the tiles, one,
    // two and three blocks (many blocks: MatmulLongRows), both paths, and with 29 tokens whole
    // panels and a part on every set.
    const Shape shapes[] = {{1, 5, 0, 5}, {3, 40, 3, 38}, {2, 70, 5, 67}};
    const int64_t token_counts[] = {1, 2, 3, 4, 5, 7, 9, 12, 13, 16, 24, 29};
#else
    const Shape shapes[] = {{1, 5, 0, 5}, {3, 40, 3, 38}, {9, 35, 1, 35}, {2, 70, 5, 67}};
    const int64_t token_counts[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 23, 24, 29, 37};
#endif
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& w = row_of(table_, type);
        const auto matmul = [&w](const MatmulArgs& a) {
            w.matmul(a.w, a.w_row_bytes, a.n_cols, a.r0, a.r1, a.act, a.act_stride, a.n_tokens, a.y,
                     a.ldy);
        };
        for (const Shape& s : shapes) {
            const int64_t n_cols = s.blocks * (w.is_quantized ? w.block_size : 37);
            const auto m = test::random_weight_rows(w, s.n_rows, n_cols, rng);
            // Activations with a stride larger than a row, outputs with ldy > n_rows.
            for (int64_t n_tok : token_counts) {
                ASSERT_NO_FATAL_FAILURE(
                    check_matmul(matmul, w, m, n_cols, s.n_rows, s.r0, s.r1, n_tok, 64, 3, rng));
            }
        }
    }
}

// Larger shapes, one check per output: long rows (many blocks of integer sums) and enough rows
// for several 32-row panels on both paths.
TEST_P(X86Kernels, MatmulLongRows) {
    std::mt19937 rng(17);
    for (GgmlType type : kWeightTypes) {
        const TypeTraits& w = row_of(table_, type);
        const TypeTraits& ref = row_of(reference_type_traits(), type);
        const TypeTraits& act = row_of(reference_type_traits(), w.vec_dot_type);
        const int64_t n_cols = 2048, n_rows = 97;
        const auto m = test::random_weight_rows(w, n_rows, n_cols, rng);
        const size_t rb = row_bytes(w, n_cols);
        for (int64_t n_tok : {1, 24}) {
            const size_t stride = row_bytes(act, n_cols);
            std::vector<uint8_t> xq(stride * size_t(n_tok));
            for (int64_t t = 0; t < n_tok; ++t) {
                const auto x = random_floats(size_t(n_cols), rng);
                act.from_float(x.data(), xq.data() + stride * size_t(t), n_cols);
            }
            std::vector<float> y(size_t(n_rows * n_tok));
            w.matmul(m.data(), rb, n_cols, 0, n_rows, xq.data(), stride, n_tok, y.data(), n_rows);
            for (int64_t t = 0; t < n_tok; ++t) {
                for (int64_t r = 0; r < n_rows; ++r) {
                    const uint8_t* wr = m.data() + rb * size_t(r);
                    const uint8_t* xr = xq.data() + stride * size_t(t);
                    const double scale = abs_products(w, wr, act, xr, n_cols);
                    ASSERT_NEAR(y[size_t(t * n_rows + r)], ref.vec_dot(n_cols, wr, xr),
                                relative_tolerance(w) * scale)
                        << w.name << " tokens=" << n_tok << " row " << r << " token " << t;
                }
            }
        }
    }
}

using GemmFn = void (*)(const MatmulArgs&);
struct GemmKernel {
    GgmlType type;
    GemmFn fn;
};

// The lattice and ternary types' prefill GEMMs of a set.
template <class S>
void add_signed(std::vector<GemmKernel>& kernels, S) {
    kernels.insert(kernels.end(), {{GgmlType::TQ1_0, S::gemm_tq1_0},
                                   {GgmlType::TQ2_0, S::gemm_tq2_0},
                                   {GgmlType::IQ2_XXS, S::gemm_iq2_xxs},
                                   {GgmlType::IQ2_XS, S::gemm_iq2_xs},
                                   {GgmlType::IQ2_S, S::gemm_iq2_s},
                                   {GgmlType::IQ3_XXS, S::gemm_iq3_xxs},
                                   {GgmlType::IQ3_S, S::gemm_iq3_s},
                                   {GgmlType::IQ1_S, S::gemm_iq1_s},
                                   {GgmlType::IQ1_M, S::gemm_iq1_m}});
}

// The prefill GEMM of the table, lattice and ternary types called directly (matmul only takes
// it from 12..24 tokens on): every token count 1..17 (partial token tiles), row ranges off the
// panel and tile sizes, E8M0 exponents over the whole range, against the reference dot product.
TEST_P(X86Kernels, SignedTypesPrefillMatchesReference) {
    using Kernel = GemmKernel;
    std::vector<Kernel> kernels;
    switch (GetParam()) {
        case x86::Isa::avx2:
            kernels = {{GgmlType::IQ4_NL, x86::Set<x86::Isa::avx2>::gemm_iq4_nl},
                       {GgmlType::IQ4_XS, x86::Set<x86::Isa::avx2>::gemm_iq4_xs},
                       {GgmlType::MXFP4, x86::Set<x86::Isa::avx2>::gemm_mxfp4}};
            add_signed(kernels, x86::Set<x86::Isa::avx2>{});
            break;
        case x86::Isa::avxvnni:
            kernels = {{GgmlType::IQ4_NL, x86::Set<x86::Isa::avxvnni>::gemm_iq4_nl},
                       {GgmlType::IQ4_XS, x86::Set<x86::Isa::avxvnni>::gemm_iq4_xs},
                       {GgmlType::MXFP4, x86::Set<x86::Isa::avxvnni>::gemm_mxfp4}};
            add_signed(kernels, x86::Set<x86::Isa::avxvnni>{});
            break;
        case x86::Isa::avx512:
            kernels = {{GgmlType::IQ4_NL, x86::Set<x86::Isa::avx512>::gemm_iq4_nl},
                       {GgmlType::IQ4_XS, x86::Set<x86::Isa::avx512>::gemm_iq4_xs},
                       {GgmlType::MXFP4, x86::Set<x86::Isa::avx512>::gemm_mxfp4}};
            add_signed(kernels, x86::Set<x86::Isa::avx512>{});
            break;
    }
    std::mt19937 rng(23);
    struct Shape {
        int64_t blocks, n_rows, r0, r1;
    };
    const Shape shapes[] = {
        {1, 1, 0, 1}, {3, 7, 0, 7}, {2, 17, 1, 17}, {9, 41, 3, 40}, {4, 70, 5, 67}};
    for (const Kernel& k : kernels) {
        const TypeTraits& w = row_of(table_, k.type);
        for (const Shape& s : shapes) {
            const int64_t n_cols = s.blocks * w.block_size;
            auto m = test::random_weight_rows(w, s.n_rows, n_cols, rng);
            if (k.type == GgmlType::MXFP4) {
                // Exponents 0..149 (2^-128 subnormal to 2^21; larger ones overflow the float
                // products of the reference as well), 0 and 1 in every row.
                for (size_t b = 0; b < m.size() / sizeof(BlockMXFP4); ++b)
                    m[b * sizeof(BlockMXFP4)] = uint8_t(b % 4 < 2 ? b % 4 : b * 37 % 150);
            }
            for (int64_t n_tok = 1; n_tok <= 17; ++n_tok) {
                ASSERT_NO_FATAL_FAILURE(
                    check_matmul(k.fn, w, m, n_cols, s.n_rows, s.r0, s.r1, n_tok, 32, 1, rng));
            }
        }
    }
}

// MXFP4's E8M0 scales at the ends of the range (subnormal 2^-128 and 2^-127, huge 2^72): the
// kernels decode them exactly as the reference does.
TEST_P(X86Kernels, Mxfp4ExtremeExponents) {
    const TypeTraits& w = row_of(table_, GgmlType::MXFP4);
    const TypeTraits& ref = row_of(reference_type_traits(), GgmlType::MXFP4);
    const TypeTraits& act = row_of(reference_type_traits(), GgmlType::Q8_0);
    std::mt19937 rng(19);
    const uint8_t exponents[] = {0, 1, 2, 3, 100, 127, 130, 200, 0, 1, 2};
    const int64_t nb = int64_t(std::size(exponents)), n = 32 * nb;
    std::vector<uint8_t> row(size_t(nb) * sizeof(BlockMXFP4));
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* block = row.data() + b * int64_t(sizeof(BlockMXFP4));
        block[0] = exponents[b];
        for (int j = 1; j < 17; ++j) block[j] = uint8_t(rng());
    }
    std::vector<uint8_t> xq(row_bytes(act, n));
    for (int trial = 0; trial < 10; ++trial) {
        const auto x = random_floats(size_t(n), rng);
        act.from_float(x.data(), xq.data(), n);
        // Each block alone, so that no block's product hides another's.
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* wb = row.data() + b * int64_t(sizeof(BlockMXFP4));
            const uint8_t* xb = xq.data() + b * int64_t(sizeof(BlockQ8_0));
            const float got = w.vec_dot(32, wb, xb), want = ref.vec_dot(32, wb, xb);
            const double scale = abs_products(w, wb, act, xb, 32);
            EXPECT_NEAR(got, want, 2e-6 * scale) << "e = " << int(exponents[b]);
            EXPECT_FALSE(std::isnan(got)) << "e = " << int(exponents[b]);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Sets, X86Kernels,
                         ::testing::Values(x86::Isa::avx2, x86::Isa::avxvnni, x86::Isa::avx512),
                         isa_name);

const char* install_with(IsaLimit limit) {
    static KernelSet set;  // the name is a static string; the table is not needed after
    set = KernelSet{};
    set.table = reference_type_traits();
    install_kernels(set, cpu_features(), limit);
    return set.name;
}

// The dispatcher picks the best set this CPU has, unless MEMWALL_ISA caps it.
TEST(X86Dispatch, PicksTheBestSetWithinTheLimit) {
    const CpuFeatures& cpu = cpu_features();
    const bool has512 = x86::supported(x86::Isa::avx512, cpu);
    const bool has_vnni = x86::supported(x86::Isa::avxvnni, cpu);
    const bool has2 = x86::supported(x86::Isa::avx2, cpu);
    EXPECT_STREQ(install_with(IsaLimit::best), has512     ? "avx512"
                                               : has_vnni ? "avxvnni"
                                               : has2     ? "avx2"
                                                          : "scalar");
    EXPECT_STREQ(install_with(IsaLimit::avxvnni), has_vnni ? "avxvnni" : has2 ? "avx2" : "scalar");
    EXPECT_STREQ(install_with(IsaLimit::avx2), has2 ? "avx2" : "scalar");
    EXPECT_STREQ(install_with(IsaLimit::scalar), "scalar");
    KernelSet scalar;
    scalar.table = reference_type_traits();
    install_kernels(scalar, cpu, IsaLimit::scalar);
    EXPECT_EQ(row_of(scalar.table, GgmlType::Q4_0).matmul,
              row_of(reference_type_traits(), GgmlType::Q4_0).matmul);
    EXPECT_EQ(scalar.n_packed, 0);
}

}  // namespace
}  // namespace mw

#endif  // __x86_64__
