// Load-time repacking (tensor/repack.h): every layout's encoder and decoder for every group size
// (rows decoded back exactly), and every packed kernel of every kernel set this CPU can run
// against the reference on the GGUF layout: token counts on both sides of the decode/prefill
// switch, row ranges that start and end inside a group, rows outside the range untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/random_blocks.h"
#include "tensor/kernels.h"
#include "tensor/quants.h"
#include "tensor/repack.h"
#include "tensor/types.h"

namespace mw {
namespace {

const GgmlType kPackable[] = {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K,
                              GgmlType::Q6_K};

const TypeTraits& reference_row(GgmlType type) {
    for (const TypeTraits& t : reference_type_traits()) {
        if (t.type == type) return t;
    }
    ADD_FAILURE() << "no reference row for type " << int(type);
    return reference_type_traits()[0];
}

// Columns: 5 blocks of 32, or 3 super-blocks of 256.
int64_t test_cols(const TypeTraits& t) {
    return t.block_size == 32 ? 160 : 768;
}

TEST(Repack, EveryLayoutDecodesBackExactly) {
    std::mt19937 rng(9);
    for (GgmlType type : kPackable) {
        const TypeTraits& ref = reference_row(type);
        for (int rows : {4, 8, 16}) {
            ASSERT_TRUE(packable(type, rows)) << ref.name << " x" << rows;
            TypeTraits packed = ref;
            packed.pack_rows = rows;
            const int64_t n_cols = test_cols(ref), n_rows = 2 * rows;
            const auto native = test::random_weight_rows(ref, n_rows, n_cols, rng);
            std::vector<uint8_t> data(native.size());
            repack_matrix(packed, native.data(), data.data(), n_rows, n_cols);
            EXPECT_NE(data, native) << ref.name << " x" << rows;
            // In place gives the same bytes.
            std::vector<uint8_t> in_place = native;
            repack_in_place(packed, in_place.data(), n_rows, n_cols);
            EXPECT_EQ(in_place, data) << ref.name << " x" << rows;
            const size_t rb = row_bytes(ref, n_cols);
            std::vector<float> got(static_cast<size_t>(n_cols)), want(static_cast<size_t>(n_cols));
            for (int64_t r = 0; r < n_rows; ++r) {
                packed_get_row(packed, data.data(), n_cols, r, got.data());
                ref.to_float(native.data() + rb * size_t(r), want.data(), n_cols);
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                    << ref.name << " x" << rows << " row " << r;
            }
        }
    }
    EXPECT_FALSE(packable(GgmlType::Q4_1, 16));
    EXPECT_FALSE(packable(GgmlType::Q4_K, 12));
}

TEST(Repack, OnlyWholeGroupsOfRows) {
    const TypeTraits* packed = packed_traits(GgmlType::Q4_K, 32, 256);
    if (!packed) GTEST_SKIP() << "no packed layouts with the installed kernels";
    EXPECT_TRUE(is_packed(packed));
    EXPECT_FALSE(is_packed(type_traits(GgmlType::Q4_K)));
    EXPECT_EQ(packed_traits(GgmlType::Q4_K, 32 + packed->pack_rows / 2, 256), nullptr);
    EXPECT_EQ(packed_traits(GgmlType::Q4_K, 32, 250), nullptr);
    EXPECT_EQ(packed_traits(GgmlType::Q4_1, 32, 256), nullptr);
    EXPECT_STREQ(packed->isa, kernel_isa());
}

// Every packed kernel of every set against the reference vec_dot on the GGUF layout.
TEST(Repack, PackedMatmulMatchesReference) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    int tested = 0;
    for (const KernelSet& set : available_kernel_sets()) {
        for (int k = 0; k < set.n_packed; ++k) {
            const TypeTraits& packed = set.packed[size_t(k)];
            const TypeTraits& ref = reference_row(packed.type);
            const TypeTraits& act = reference_row(ref.vec_dot_type);
            const int R = packed.pack_rows;
            const int64_t n_cols = test_cols(ref), n_rows = 3 * R;
            const auto native = test::random_weight_rows(ref, n_rows, n_cols, rng);
            std::vector<uint8_t> data(native.size());
            repack_matrix(packed, native.data(), data.data(), n_rows, n_cols);
            ++tested;

            const size_t rb = row_bytes(ref, n_cols), stride = row_bytes(act, n_cols);
            // The reference dot products and their scale of rounding error, per row and token.
            const int64_t max_tok = 37;
            std::vector<uint8_t> xq(stride * size_t(max_tok));
            std::vector<float> x(static_cast<size_t>(n_cols));
            for (int64_t t = 0; t < max_tok; ++t) {
                for (float& v : x) v = normal(rng);
                act.from_float(x.data(), xq.data() + stride * size_t(t), n_cols);
            }
            std::vector<float> want(size_t(n_rows * max_tok)), scale(want.size());
            std::vector<float> wf(static_cast<size_t>(n_cols)), xf(static_cast<size_t>(n_cols));
            for (int64_t r = 0; r < n_rows; ++r) {
                ref.to_float(native.data() + rb * size_t(r), wf.data(), n_cols);
                for (int64_t t = 0; t < max_tok; ++t) {
                    const uint8_t* xr = xq.data() + stride * size_t(t);
                    act.to_float(xr, xf.data(), n_cols);
                    double s = 0.0;
                    for (size_t i = 0; i < wf.size(); ++i) s += std::fabs(double(wf[i]) * xf[i]);
                    want[size_t(t * n_rows + r)] =
                        ref.vec_dot(n_cols, native.data() + rb * size_t(r), xr);
                    scale[size_t(t * n_rows + r)] = float(s);
                }
            }
            // 1..8 (9 with AVX-512): one pass of the decode kernels (a verification pass of
            // speculative decoding), then two passes (a second of every length 1..9), three,
            // then the GEMM where the set switches to it (12..24 tokens by set and type), whole
            // and partial tiles.
            for (int64_t n_tok : {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                  13, 14, 15, 16, 17, 18, 19, 20, 23, 24, 25, 37}) {
                for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, n_rows},
                                      {int64_t(R / 2 + 1), n_rows - R / 2},
                                      {int64_t(R), int64_t(2 * R)},
                                      {int64_t(R + 1), int64_t(R + 2)}}) {
                    const float sentinel = -777.0f;
                    std::vector<float> y(size_t(n_rows * n_tok), sentinel);
                    packed.matmul(data.data(), rb, n_cols, r0, r1, xq.data(), stride, n_tok,
                                  y.data(), n_rows);
                    for (int64_t t = 0; t < n_tok; ++t) {
                        for (int64_t r = 0; r < n_rows; ++r) {
                            const size_t i = size_t(t * n_rows + r);
                            if (r < r0 || r >= r1) {
                                ASSERT_EQ(y[i], sentinel)
                                    << packed.name << " (" << set.name << ") wrote row " << r;
                                continue;
                            }
                            ASSERT_NEAR(y[i], want[i], 2e-6 * scale[i])
                                << packed.name << " (" << set.name << ") tokens " << n_tok
                                << " row " << r << " token " << t << " range " << r0 << ".." << r1;
                        }
                    }
                }
            }
        }
    }
    if (tested == 0) GTEST_SKIP() << "no kernel set of this CPU has packed layouts";
}

}  // namespace
}  // namespace mw
