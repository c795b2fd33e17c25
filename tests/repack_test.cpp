// Load-time repacking (tensor/repack.h): each packed layout's kernels against the reference on
// the GGUF layout, single rows decoded back exactly, and row ranges that start and end inside a
// group of 16 rows. Skipped where no packed layout is offered (no AVX-512, or MEMWALL_ISA).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "base/fp16.h"
#include "tensor/kernels.h"
#include "tensor/quants.h"
#include "tensor/repack.h"
#include "tensor/types.h"

namespace mw {
namespace {

struct Case {
    GgmlType type;
    int64_t n_cols;
    std::vector<std::pair<size_t, bool>> halves;  // fp16 fields: offset, is a min
};

const Case kCases[] = {
    {GgmlType::Q4_0, 160, {{0, false}}},
    {GgmlType::Q4_K, 512, {{0, false}, {2, true}}},
    {GgmlType::Q6_K, 768, {{208, false}}},
};

// Random rows: every bit pattern of codes and packed scales, sane fp16 scales.
std::vector<uint8_t> random_rows(const Case& c, int64_t n_rows, std::mt19937& rng) {
    const TypeTraits& t = *type_traits(c.type);
    std::vector<uint8_t> m(row_bytes(t, c.n_cols) * size_t(n_rows));
    for (uint8_t& b : m) b = uint8_t(rng());
    std::uniform_real_distribution<float> mag(1e-3f, 1e-2f);
    for (size_t i = 0; i < m.size() / t.type_size; ++i) {
        for (auto [offset, is_min] : c.halves) {
            const uint16_t h =
                f32_to_fp16(mag(rng) * (is_min ? 8.0f : 1.0f) * (rng() & 1 ? 1.0f : -1.0f));
            std::memcpy(m.data() + i * t.type_size + offset, &h, 2);
        }
    }
    return m;
}

TEST(Repack, OnlyWholeGroupsOfRows) {
    const TypeTraits* packed = packed_traits(GgmlType::Q4_K, 32, 256);
    if (!packed) GTEST_SKIP() << "no packed layouts with the installed kernels";
    EXPECT_TRUE(is_packed(packed));
    EXPECT_FALSE(is_packed(type_traits(GgmlType::Q4_K)));
    EXPECT_EQ(packed_traits(GgmlType::Q4_K, 40, 256), nullptr);
    EXPECT_EQ(packed_traits(GgmlType::Q8_0, 32, 256), nullptr);
}

TEST(Repack, PackedMatmulMatchesReference) {
    const int64_t n_rows = 48;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const Case& c : kCases) {
        const TypeTraits* packed = packed_traits(c.type, n_rows, c.n_cols);
        if (!packed) GTEST_SKIP() << "no packed layouts with the installed kernels";
        const auto native = random_rows(c, n_rows, rng);
        std::vector<uint8_t> data(native.size());
        repack_matrix(*packed, native.data(), data.data(), n_rows, c.n_cols);
        ASSERT_NE(data, native);

        const TypeTraits& ref = *type_traits(c.type);
        const TypeTraits& act = *type_traits(ref.vec_dot_type);
        const size_t rb = row_bytes(ref, c.n_cols), stride = row_bytes(act, c.n_cols);
        for (int64_t n_tok : {1, 2, 3, 4, 5, 11, 12, 13, 37}) {
            std::vector<uint8_t> xq(stride * size_t(n_tok));
            std::vector<float> x(static_cast<size_t>(c.n_cols));
            for (int64_t t = 0; t < n_tok; ++t) {
                for (float& v : x) v = normal(rng);
                act.from_float(x.data(), xq.data() + stride * size_t(t), c.n_cols);
            }
            for (auto [r0, r1] :
                 {std::pair<int64_t, int64_t>{0, 48}, {5, 43}, {16, 32}, {17, 18}}) {
                const float sentinel = -777.0f;
                std::vector<float> y(size_t(n_rows * n_tok), sentinel);
                packed->matmul(data.data(), rb, c.n_cols, r0, r1, xq.data(), stride, n_tok,
                               y.data(), n_rows);
                for (int64_t t = 0; t < n_tok; ++t) {
                    for (int64_t r = 0; r < n_rows; ++r) {
                        const float got = y[size_t(t * n_rows + r)];
                        if (r < r0 || r >= r1) {
                            ASSERT_EQ(got, sentinel) << packed->name << " wrote row " << r;
                            continue;
                        }
                        const uint8_t* wr = native.data() + rb * size_t(r);
                        const uint8_t* xr = xq.data() + stride * size_t(t);
                        std::vector<float> wf(static_cast<size_t>(c.n_cols)),
                            xf(static_cast<size_t>(c.n_cols));
                        ref.to_float(wr, wf.data(), c.n_cols);
                        act.to_float(xr, xf.data(), c.n_cols);
                        double scale = 0.0;
                        for (size_t i = 0; i < wf.size(); ++i)
                            scale += std::fabs(double(wf[i]) * xf[i]);
                        // The reference vec_dot of the table's scalar row (not an installed
                        // kernel).
                        float want = 0.0f;
                        for (const TypeTraits& rt : reference_type_traits()) {
                            if (rt.type == c.type) want = rt.vec_dot(c.n_cols, wr, xr);
                        }
                        ASSERT_NEAR(got, want, 2e-6 * scale)
                            << packed->name << " tokens " << n_tok << " row " << r << " token " << t
                            << " range " << r0 << ".." << r1;
                    }
                }
            }
        }
    }
}

TEST(Repack, PackedRowsDecodeExactly) {
    const int64_t n_rows = 32;
    std::mt19937 rng(9);
    for (const Case& c : kCases) {
        const TypeTraits* packed = packed_traits(c.type, n_rows, c.n_cols);
        if (!packed) GTEST_SKIP() << "no packed layouts with the installed kernels";
        const auto native = random_rows(c, n_rows, rng);
        std::vector<uint8_t> data(native.size());
        repack_matrix(*packed, native.data(), data.data(), n_rows, c.n_cols);
        const TypeTraits& t = *type_traits(c.type);
        const size_t rb = row_bytes(t, c.n_cols);
        std::vector<float> got(static_cast<size_t>(c.n_cols)), want(static_cast<size_t>(c.n_cols));
        for (int64_t r = 0; r < n_rows; ++r) {
            packed_get_row(*packed, data.data(), c.n_cols, r, got.data());
            t.to_float(native.data() + rb * size_t(r), want.data(), c.n_cols);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                << packed->name << " row " << r;
        }
    }
}

}  // namespace
}  // namespace mw
