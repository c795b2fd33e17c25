// The reference code on llama.cpp's own output: shared/reference/models/kq-tiny-*.gguf hold the
// same N(0, 0.1) F16 weights quantized by llama-quantize to each type (see reference/README.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "format/gguf.h"
#include "support/test_support.h"
#include "tensor/types.h"

namespace mw {
namespace {

struct LoadedGguf {
    std::vector<uint8_t> bytes;
    gguf::GgufFile file;
};

std::unique_ptr<LoadedGguf> load(const std::string& name) {
    auto bytes = test::read_file(test::shared_path("reference/models/" + name));
    auto file = gguf::GgufFile::parse(bytes, name);  // points into `bytes`, whose buffer we keep
    return std::make_unique<LoadedGguf>(LoadedGguf{std::move(bytes), std::move(file)});
}

std::vector<float> decode_tensor(const gguf::TensorInfo& t) {
    const TypeTraits* traits = type_traits(t.type);
    EXPECT_NE(traits, nullptr) << t.name << " type " << t.type;
    std::vector<float> out(t.n_elements);
    traits->to_float(t.data, out.data(), int64_t(t.n_elements));
    return out;
}

struct FileSpec {
    const char* file;
    std::map<GgmlType, int> tensor_counts;  // from reference/README.md
};

const std::vector<FileSpec>& quantized_files() {
    using T = GgmlType;
    static const std::vector<FileSpec> files = {
        {"kq-tiny-BF16.gguf", {{T::F32, 5}, {T::BF16, 16}}},
        {"kq-tiny-Q8_0.gguf", {{T::F32, 5}, {T::Q8_0, 16}}},
        {"kq-tiny-Q6_K.gguf", {{T::F32, 5}, {T::Q6_K, 16}}},
        {"kq-tiny-Q5_K_M.gguf", {{T::F32, 5}, {T::Q5_K, 13}, {T::Q6_K, 3}}},
        {"kq-tiny-Q5_1.gguf", {{T::F32, 5}, {T::Q5_1, 15}, {T::Q6_K, 1}}},
        {"kq-tiny-Q5_0.gguf", {{T::F32, 5}, {T::Q5_0, 15}, {T::Q6_K, 1}}},
        {"kq-tiny-Q4_K_M.gguf", {{T::F32, 5}, {T::Q4_K, 13}, {T::Q6_K, 3}}},
        {"kq-tiny-Q4_1.gguf", {{T::F32, 5}, {T::Q4_1, 15}, {T::Q6_K, 1}}},
        {"kq-tiny-Q4_0.gguf", {{T::F32, 5}, {T::Q4_0, 15}, {T::Q6_K, 1}}},
        {"kq-tiny-Q3_K_M.gguf",
         {{T::F32, 5}, {T::Q3_K, 9}, {T::Q4_K, 4}, {T::Q5_K, 2}, {T::Q6_K, 1}}},
        {"kq-tiny-Q2_K.gguf",
         {{T::F32, 5}, {T::Q2_K, 9}, {T::Q3_K, 4}, {T::Q4_K, 2}, {T::Q6_K, 1}}},
    };
    return files;
}

// Relative RMS error of each type's dequantized weights against the F16 originals, over every
// tensor of that type in every file. Bounds: about 15 % above what llama.cpp's quantizers give on
// this data (printed by the test).
TEST(QuantRealData, DequantizedWeightsMatchTheF16Originals) {
    const auto f16 = load("kq-tiny-F16.gguf");
    struct Error {
        double err2 = 0, ref2 = 0;
        int tensors = 0;
    };
    std::map<GgmlType, Error> by_type;
    for (const FileSpec& spec : quantized_files()) {
        SCOPED_TRACE(spec.file);
        const auto q = load(spec.file);
        ASSERT_EQ(q->file.tensors().size(), f16->file.tensors().size());
        std::map<GgmlType, int> counts;
        for (const gguf::TensorInfo& t : q->file.tensors()) {
            ++counts[GgmlType(t.type)];
            const gguf::TensorInfo* orig = f16->file.find_tensor(t.name);
            ASSERT_NE(orig, nullptr) << t.name;
            ASSERT_EQ(orig->n_elements, t.n_elements) << t.name;
            const auto a = decode_tensor(t);
            const auto b = decode_tensor(*orig);
            if (GgmlType(t.type) == GgmlType::F32) {
                // Norm weights are F32 everywhere and copied unchanged.
                EXPECT_EQ(GgmlType(orig->type), GgmlType::F32) << t.name;
                EXPECT_EQ(a, b) << t.name;
                continue;
            }
            EXPECT_EQ(GgmlType(orig->type), GgmlType::F16) << t.name;
            Error& e = by_type[GgmlType(t.type)];
            for (size_t i = 0; i < a.size(); ++i) {
                e.err2 += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
                e.ref2 += double(b[i]) * b[i];
            }
            ++e.tensors;
        }
        EXPECT_EQ(counts, spec.tensor_counts);
    }

    std::map<GgmlType, double> rel_rms;
    for (const auto& [type, e] : by_type) {
        rel_rms[type] = std::sqrt(e.err2 / e.ref2);
        std::printf("[ measured ] %-5s relative RMS error %.5f %% over %d tensors\n",
                    type_traits(type)->name, 100 * rel_rms[type], e.tensors);
    }
    // Measured (relative RMS): BF16 0.168 %, Q8_0 0.535 %, Q6_K 1.77 %, Q5_K 3.61 %, Q5_1 3.78 %,
    // Q5_0 4.27 %, Q4_K 7.13 %, Q4_1 7.82 %, Q4_0 8.58 %, Q3_K 15.1 %, Q2_K 29.7 %. These are what
    // block quantization of Gaussian data predicts (e.g. Q8_0: step amax/127 with amax ~ 2.1
    // sigma over 32 values, error step/sqrt(12) ~ 0.5 %); a wrong bit layout gives ~100 %.
    using T = GgmlType;
    const std::map<T, double> bounds = {
        {T::BF16, 0.0020}, {T::Q8_0, 0.0062}, {T::Q6_K, 0.021}, {T::Q5_K, 0.042},
        {T::Q5_1, 0.044},  {T::Q5_0, 0.049},  {T::Q4_K, 0.082}, {T::Q4_1, 0.090},
        {T::Q4_0, 0.099},  {T::Q3_K, 0.175},  {T::Q2_K, 0.34},
    };
    ASSERT_EQ(rel_rms.size(), bounds.size());
    for (const auto& [type, bound] : bounds) {
        EXPECT_LT(rel_rms[type], bound) << type_traits(type)->name;
        // The files never change: far less error than measured means we compare the wrong thing.
        EXPECT_GT(rel_rms[type], bound / 2) << type_traits(type)->name << ": suspiciously exact";
    }
    // Fewer bits, more error.
    const T order[] = {T::Q8_0, T::Q6_K, T::Q5_K, T::Q4_K, T::Q3_K, T::Q2_K};
    for (size_t i = 0; i + 1 < std::size(order); ++i) {
        EXPECT_LT(rel_rms[order[i]], rel_rms[order[i + 1]])
            << type_traits(order[i])->name << " vs " << type_traits(order[i + 1])->name;
    }
    EXPECT_LT(rel_rms[T::Q5_0], rel_rms[T::Q4_0]);
    EXPECT_LT(rel_rms[T::Q5_1], rel_rms[T::Q4_1]);
}

// Without an imatrix llama-quantize writes Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 with the plain
// round-to-nearest reference quantizers, so ours must reproduce its bytes exactly.
TEST(QuantRealData, ReferenceQuantizersReproduceLlamaQuantizeBytes) {
    const auto f16 = load("kq-tiny-F16.gguf");
    const std::pair<const char*, GgmlType> files[] = {
        {"kq-tiny-Q8_0.gguf", GgmlType::Q8_0}, {"kq-tiny-Q4_0.gguf", GgmlType::Q4_0},
        {"kq-tiny-Q4_1.gguf", GgmlType::Q4_1}, {"kq-tiny-Q5_0.gguf", GgmlType::Q5_0},
        {"kq-tiny-Q5_1.gguf", GgmlType::Q5_1},
    };
    for (const auto& [name, type] : files) {
        SCOPED_TRACE(name);
        const auto q = load(name);
        const TypeTraits* traits = type_traits(type);
        int checked = 0;
        for (const gguf::TensorInfo& t : q->file.tensors()) {
            if (GgmlType(t.type) != type) continue;
            const auto source = decode_tensor(*f16->file.find_tensor(t.name));
            std::vector<uint8_t> ours(t.n_bytes);
            ASSERT_EQ(row_bytes(*traits, int64_t(t.n_elements)), t.n_bytes);
            traits->from_float(source.data(), ours.data(), int64_t(t.n_elements));
            size_t differing_blocks = 0, first = SIZE_MAX;
            for (size_t b = 0; b < t.n_bytes / traits->type_size; ++b) {
                const size_t at = b * traits->type_size;
                if (std::memcmp(ours.data() + at, t.data + at, traits->type_size) != 0) {
                    ++differing_blocks;
                    if (first == SIZE_MAX) first = b;
                }
            }
            EXPECT_EQ(differing_blocks, 0u) << t.name << ": first differing block " << first;
            ++checked;
        }
        EXPECT_EQ(checked, type == GgmlType::Q8_0 ? 16 : 15);
    }
}

// vec_dot on rows llama.cpp wrote (every weight type in the files), against double precision.
TEST(QuantRealData, VecDotOnLlamaQuantizedRows) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::map<GgmlType, int> rows_checked;
    for (const FileSpec& spec : quantized_files()) {
        SCOPED_TRACE(spec.file);
        const auto q = load(spec.file);
        for (const gguf::TensorInfo& t : q->file.tensors()) {
            const TypeTraits* w = type_traits(t.type);
            ASSERT_NE(w, nullptr);
            if (t.n_dims < 2 || !w->is_quantized) continue;
            const TypeTraits* a = type_traits(w->vec_dot_type);
            const int64_t n = int64_t(t.ne[0]);
            const size_t wbytes = row_bytes(*w, n);
            std::vector<float> x(static_cast<size_t>(n)), wf(static_cast<size_t>(n)),
                xf(static_cast<size_t>(n));
            std::vector<uint8_t> xq(row_bytes(*a, n));
            for (uint64_t r = 0; r < t.ne[1]; r += t.ne[1] / 3) {  // first, middle-ish rows
                const uint8_t* wrow = t.data + r * wbytes;
                for (float& v : x) v = normal(rng);
                a->from_float(x.data(), xq.data(), n);
                w->to_float(wrow, wf.data(), n);
                a->to_float(xq.data(), xf.data(), n);
                double expected = 0.0, abs_products = 0.0;
                for (int64_t i = 0; i < n; ++i) {
                    expected += double(wf[i]) * xf[i];
                    abs_products += std::fabs(double(wf[i]) * xf[i]);
                }
                // Q4_1/Q5_1: m * s carries the fp16 rounding of s = d * sum(q), about 2^-10 of
                // m * d * sum(q) per block (see quants_vec_dot_test.cpp).
                double allowance = 0.0;
                if (w->vec_dot_type == GgmlType::Q8_1) {
                    for (int64_t b = 0; b < n / 32; ++b) {
                        uint16_t m;  // the block's offset, after its fp16 d
                        std::memcpy(&m, wrow + size_t(b) * w->type_size + 2, sizeof m);
                        double sum = 0.0;
                        for (int j = 0; j < 32; ++j) sum += xf[32 * b + j];
                        allowance += std::fabs(fp16_to_f32(m) * sum) / 1024 * 1.01;
                    }
                }
                const double tolerance = 1e-5 * abs_products + allowance;
                EXPECT_NEAR(w->vec_dot(n, wrow, xq.data()), expected, tolerance)
                    << t.name << " row " << r;
                ++rows_checked[GgmlType(t.type)];
            }
        }
    }
    // Q8_0, Q6_K, Q5_K, Q5_1, Q5_0, Q4_K, Q4_1, Q4_0, Q3_K, Q2_K.
    EXPECT_EQ(rows_checked.size(), 10u);
}

}  // namespace
}  // namespace mw
