// The file quantizers against llama-quantize: for every tensor of llama.cpp's kq-tiny files
// (../shared/reference/models, made by llama-quantize from kq-tiny-F16 without an importance
// matrix), memwall's quantizer of the same type, fed the same F16 weights, must reconstruct them
// with an RMSE no higher than llama.cpp's, with the fast search (the default) and the thorough
// one; and the thorough search must be no worse than the fast one on the whole file. Also: the
// packed bits decode to exactly what the search fitted, the importance weighting lowers the
// weighted error, and edge-case blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/fp16.h"
#include "format/gguf.h"
#include "support/test_support.h"
#include "sys/mapped_file.h"
#include "tensor/quantize/quantize.h"
#include "tensor/quantize/search.h"
#include "tensor/types.h"

namespace mw {
namespace {

struct Parsed {
    MappedFile file;
    gguf::GgufFile gguf;
};

Parsed parse(const std::string& path) {
    Parsed p;
    p.file = MappedFile::open(path);
    p.gguf = gguf::GgufFile::parse(p.file.bytes(), path);
    return p;
}

std::vector<float> decode(const gguf::TensorInfo& t) {
    const TypeTraits* traits = type_traits(t.type);
    std::vector<float> out(t.n_elements);
    traits->to_float(t.data, out.data(), int64_t(t.n_elements));
    return out;
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += double(a[i] - b[i]) * double(a[i] - b[i]);
    return std::sqrt(sum / double(a.size()));
}

// Quantizes `x` (rows of ne0) into `type` with memwall's file quantizer and decodes it back.
std::vector<float> round_trip(GgmlType type, const std::vector<float>& x, int64_t ne0,
                              const float* importance = nullptr,
                              QuantSearch search = QuantSearch::fast) {
    const TypeTraits* traits = type_traits(type);
    const int64_t rows = int64_t(x.size()) / ne0;
    std::vector<uint8_t> q(row_bytes(*traits, ne0) * size_t(rows));
    EXPECT_EQ(quantize_rows(type, x.data(), q.data(), rows, ne0, importance, search), q.size());
    std::vector<float> y(x.size());
    traits->to_float(q.data(), y.data(), int64_t(x.size()));
    return y;
}

class QuantizeQuality : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizeQuality, EveryTensorNoWorseThanLlamaCpp) {
    const Parsed source = parse(test::shared_path("reference/models/kq-tiny-F16.gguf"));
    const Parsed theirs =
        parse(test::shared_path("reference/models/kq-tiny-" + GetParam() + ".gguf"));
    double worst_ratio = 0, sum_ours = 0, sum_theirs = 0, sum_thorough = 0;
    std::string worst_name;
    int compared = 0;
#ifdef MW_TEST_SANITIZED
    std::set<std::tuple<uint32_t, uint64_t, uint64_t>> compared_kinds;  // type, ne0, ne1
#endif
    for (const gguf::TensorInfo& t : theirs.gguf.tensors()) {
        const TypeTraits* traits = type_traits(t.type);
        ASSERT_NE(traits, nullptr) << t.name;
        if (!traits->is_quantized) continue;
#ifdef MW_TEST_SANITIZED
        // Under the sanitizers the searches are ~20x slower: the first block's tensors take
        // every code path the second's do, and a tensor of the type and shape of one compared
        // takes that one's (the release build compares them all).
        if (std::string_view(t.name).starts_with("blk.") &&
            !std::string_view(t.name).starts_with("blk.0."))
            continue;
        if (!compared_kinds.insert({t.type, t.ne[0], t.ne[1]}).second) continue;
#endif
        const gguf::TensorInfo* s = source.gguf.find_tensor(t.name);
        ASSERT_NE(s, nullptr) << t.name;
        const std::vector<float> x = decode(*s);
        const double e_theirs = rmse(x, decode(t));
        const double e_ours = rmse(x, round_trip(GgmlType(t.type), x, int64_t(t.ne[0])));
        const double e_thorough = rmse(
            x, round_trip(GgmlType(t.type), x, int64_t(t.ne[0]), nullptr, QuantSearch::thorough));
        const double ratio = e_ours / e_theirs;
        EXPECT_LE(ratio, 1.0) << t.name << " (" << traits->name << "): RMSE " << e_ours
                              << " vs llama.cpp's " << e_theirs;
        EXPECT_LE(e_thorough / e_theirs, 1.0) << t.name << " (" << traits->name << ", thorough)";
        sum_thorough += e_thorough * e_thorough;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst_name = std::string(t.name);
        }
        sum_ours += e_ours * e_ours;
        sum_theirs += e_theirs * e_theirs;
        ++compared;
    }
    EXPECT_GT(compared, 0);
    EXPECT_LE(sum_thorough, sum_ours * (1 + 1e-6)) << "the thorough search is worse than the fast";
    std::printf(
        "[ %s ] %d tensors, worst RMSE ratio %.4f (%s), mean squared error ratio %.4f "
        "(thorough %.4f)\n",
        GetParam().c_str(), compared, worst_ratio, worst_name.c_str(), sum_ours / sum_theirs,
        sum_thorough / sum_theirs);
}

INSTANTIATE_TEST_SUITE_P(Kq, QuantizeQuality,
                         ::testing::Values("Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q4_0",
                                           "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL", "IQ4_XS",
                                           "MXFP4", "TQ1_0", "TQ2_0", "IQ3_S", "IQ3_XXS", "IQ2_XXS",
                                           "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M"));

// ---- The search itself ----------------------------------------------------------------------

// The symmetric search is exact: no inverse scale on a fine grid (both signs) finds a lower error.
TEST(QuantizeSearch, SymmetricFitMatchesBruteForce) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    struct Range {
        int n, qmin, qmax;
    };
    for (const Range r :
         {Range{16, -4, 3}, Range{32, -8, 7}, Range{32, -16, 15}, Range{16, -32, 31}}) {
        for (int trial = 0; trial < 20; ++trial) {
            float x[32], w[32];
            int q[32];
            for (int i = 0; i < r.n; ++i) {
                x[i] = normal(rng);
                w[i] = 1.0f;
            }
            float amax = 0;
            for (int i = 0; i < r.n; ++i) amax = std::max(amax, std::fabs(x[i]));
            double brute = 1e30;
            for (int k = -4000; k <= 4000; ++k) {
                const float s = float(k) / 4000.0f * 2.0f * float(r.qmax - r.qmin) / amax;
                double xq = 0, qq = 0, xx = 0;
                for (int i = 0; i < r.n; ++i) {
                    const int v = std::clamp(int(std::lrint(s * x[i])), r.qmin, r.qmax);
                    xq += double(x[i]) * v;
                    qq += double(v) * v;
                    xx += double(x[i]) * x[i];
                }
                if (qq > 0) brute = std::min(brute, xx - xq * xq / qq);
            }
            const qsearch::Fit f = qsearch::fit_scale(r.n, x, w, r.qmin, r.qmax, true, q);
            EXPECT_LE(f.error, brute * (1 + 1e-6)) << "range " << r.qmin << ".." << r.qmax;
            // The reported error is the error of the quants and scale returned.
            double e = 0;
            for (int i = 0; i < r.n; ++i) {
                EXPECT_GE(q[i], r.qmin);
                EXPECT_LE(q[i], r.qmax);
                e += double(x[i] - f.scale * q[i]) * double(x[i] - f.scale * q[i]);
            }
            EXPECT_NEAR(e, f.error, 1e-4 * e + 1e-9);
        }
    }
}

std::vector<GgmlType> file_types() {
    return {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
            GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
}

double weighted_error(const std::vector<float>& x, const std::vector<float>& y,
                      const std::vector<float>& importance) {
    double e = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        e += importance[i % importance.size()] * double(x[i] - y[i]) * double(x[i] - y[i]);
    }
    return e;
}

// Weighting by column importance trades error on unimportant columns for less on important
// ones: the weighted error drops, for every type.
TEST(QuantizeSearch, ImportanceLowersTheWeightedError) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    std::lognormal_distribution<float> spread(0.0f, 1.5f);
    const int64_t n_cols = 512, n_rows = 16;
    std::vector<float> x(static_cast<size_t>(n_cols * n_rows));
    std::vector<float> importance(static_cast<size_t>(n_cols));
    for (float& v : x) v = normal(rng);
    for (float& v : importance) v = spread(rng);
    for (QuantSearch search : {QuantSearch::fast, QuantSearch::thorough}) {
        for (GgmlType type : file_types()) {
            const double plain =
                weighted_error(x, round_trip(type, x, n_cols, nullptr, search), importance);
            const double weighted = weighted_error(
                x, round_trip(type, x, n_cols, importance.data(), search), importance);
            // Q8_0's fast search only refits llama.cpp's encoding (which ignores the importance);
            // the other 32-element types try trial scales by the weighted error.
            const double gain = search == QuantSearch::fast && type == GgmlType::Q8_0 ? 0.99 : 0.95;
            EXPECT_LT(weighted, gain * plain)
                << type_traits(type)->name << (search == QuantSearch::fast ? "" : " thorough");
        }
    }
}

// llama.cpp's weighted searches of the 32-element types (make_qx_quants for Q4_0/Q5_0: 19 trial
// inverse scales around the largest magnitude's; make_qkx3_quants for Q4_1/Q5_1: 37 from
// (qmax - 0.9) / (max - min)), each trial's quants with their weighted least-squares scale (and
// offset), the best kept with its quants and its scale rounded to fp16, as llama.cpp stores it.
// Run on the same weights, memwall's fast search must do at least as well (the target:
// no more error than llama-quantize with the same importance matrix).
std::vector<float> trial_search_reference(const float* x, const float* w, int qmin, int qmax,
                                          bool offset) {
    constexpr int n = 32;
    float lo = x[0], hi = x[0], ext = x[0];
    for (int i = 0; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
        if (std::fabs(x[i]) > std::fabs(ext)) ext = x[i];
    }
    double best = std::numeric_limits<double>::infinity();
    float best_d = 0, best_m = 0;
    std::vector<int> best_q(n, 0), q(n);
    const int trials = offset ? 37 : 19;
    for (int k = 0; k < trials && (offset ? hi > lo : ext != 0.0f); ++k) {
        const float iscale = offset ? (float(qmax) - 0.9f + 0.05f * float(k)) / (hi - lo)
                                    : (float(qmin) + 0.1f * float(k - 9)) / ext;
        double sw = 0, sx = 0, sxx = 0, sq = 0, sqq = 0, sxq = 0;
        for (int i = 0; i < n; ++i) {
            q[i] = std::clamp(int(std::nearbyint((x[i] - (offset ? lo : 0.0f)) * iscale)),
                              offset ? 0 : qmin, qmax);
            sw += w[i], sx += w[i] * x[i], sxx += w[i] * x[i] * x[i];
            sq += w[i] * q[i], sqq += w[i] * q[i] * q[i], sxq += w[i] * x[i] * q[i];
        }
        double d = 0, m = 0;
        if (offset) {
            const double det = sw * sqq - sq * sq;
            if (!(det > 0)) continue;
            d = (sw * sxq - sq * sx) / det;
            m = (sqq * sx - sq * sxq) / det;
        } else {
            if (!(sqq > 0)) continue;
            d = sxq / sqq;
        }
        const double e = sxx + d * d * sqq + m * m * sw - 2 * d * sxq - 2 * m * sx + 2 * d * m * sq;
        if (e < best) {
            best = e, best_d = float(d), best_m = float(m), best_q = q;
        }
    }
    const float d16 = fp16_to_f32(f32_to_fp16(best_d)), m16 = fp16_to_f32(f32_to_fp16(best_m));
    std::vector<float> y(n);
    for (int i = 0; i < n; ++i) y[i] = d16 * float(best_q[i]) + m16;
    return y;
}

TEST(QuantizeSearch, WeightedBlockTypesMatchLlamaCppsTrialSearch) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    std::lognormal_distribution<float> spread(0.0f, 1.5f);
    const int64_t n_cols = 256, n_rows = 64;
    std::vector<float> x(static_cast<size_t>(n_cols * n_rows));
    std::vector<float> importance(static_cast<size_t>(n_cols));
    for (float& v : x) v = normal(rng) + (rng() % 97 == 0 ? 0.5f : 0.0f);  // a few outliers
    for (float& v : importance) v = spread(rng);
    struct Case {
        GgmlType type;
        int qmin, qmax;
        bool offset;
    };
    for (const Case c : {Case{GgmlType::Q4_0, -8, 7, false}, Case{GgmlType::Q5_0, -16, 15, false},
                         Case{GgmlType::Q4_1, 0, 15, true}, Case{GgmlType::Q5_1, 0, 31, true}}) {
        const std::vector<float> ours = round_trip(c.type, x, n_cols, importance.data());
        // memwall weighs each column by its importance (and 1 % of the row's mean importance).
        double mean = 0;
        for (float v : importance) mean += v;
        mean /= double(importance.size());
        std::vector<float> w(importance.size());
        for (size_t i = 0; i < w.size(); ++i) w[i] = float(importance[i] + 0.01 * mean);
        double e_ours = 0, e_ref = 0;
        int worse = 0;
        for (int64_t b = 0; b < n_cols * n_rows / 32; ++b) {
            const float* xb = x.data() + b * 32;
            const float* wb = w.data() + (b * 32) % n_cols;
            const std::vector<float> ref = trial_search_reference(xb, wb, c.qmin, c.qmax, c.offset);
            double eo = 0, er = 0;
            for (int i = 0; i < 32; ++i) {
                eo += wb[i] * double(xb[i] - ours[size_t(b * 32 + i)]) *
                      double(xb[i] - ours[size_t(b * 32 + i)]);
                er += wb[i] * double(xb[i] - ref[size_t(i)]) * double(xb[i] - ref[size_t(i)]);
            }
            worse += eo > er * (1 + 1e-5);
            e_ours += eo;
            e_ref += er;
        }
        EXPECT_LE(e_ours, e_ref) << type_traits(c.type)->name;
        EXPECT_LE(worse, n_cols * n_rows / 32 / 50)
            << type_traits(c.type)->name << ": blocks worse than the trial search";
    }
}

// The type table's from_float of a K-quant is the file quantizer without importance.
TEST(QuantizeSearch, KQuantFromFloatIsTheFileQuantizer) {
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(1024);
    for (float& v : x) v = normal(rng);
    for (GgmlType type :
         {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        const TypeTraits* t = type_traits(type);
        ASSERT_NE(t->from_float, nullptr) << t->name;
        std::vector<uint8_t> a(row_bytes(*t, 1024)), b(a.size());
        t->from_float(x.data(), a.data(), 1024);
        file_quantizer(type)(x.data(), b.data(), 1024, nullptr);
        EXPECT_EQ(a, b) << t->name;
    }
}

// Zero blocks, constant blocks, a lone outlier, tiny and huge scales, and non-finite values:
// finite output, exact zeros, the outlier kept; no crash (the model quantizer rejects NaN/inf
// tensors, but from_float is public).
TEST(QuantizeSearch, EdgeCaseBlocks) {
    for (QuantSearch search : {QuantSearch::fast, QuantSearch::thorough}) {
        auto round_trip = [search](GgmlType type, const std::vector<float>& x, int64_t ne0) {
            return mw::round_trip(type, x, ne0, nullptr, search);
        };
        for (GgmlType type : file_types()) {
            const TypeTraits* t = type_traits(type);
            SCOPED_TRACE(std::string(t->name) + (search == QuantSearch::fast ? "" : " thorough"));
            const int64_t n = 256;
            std::vector<float> zeros(n, 0.0f);
            for (float v : round_trip(type, zeros, n)) EXPECT_EQ(v, 0.0f);
            std::vector<float> outlier(n, 0.001f);
            outlier[77] = 50.0f;
            const std::vector<float> y = round_trip(type, outlier, n);
            EXPECT_NEAR(y[77], 50.0f, 50.0f * 0.1f);
            for (float scale : {1e-3f, 1e3f}) {  // fp16 super-block scales: not much smaller
                std::vector<float> s(n);
                for (int64_t i = 0; i < n; ++i) s[size_t(i)] = scale * float((i * 37) % 19 - 9);
                const std::vector<float> back = round_trip(type, s, n);
                EXPECT_LT(rmse(s, back), 0.3 * scale * 9) << "scale " << scale;
            }
            std::vector<float> bad(n, 0.5f);
            bad[3] = std::numeric_limits<float>::quiet_NaN();
            bad[100] = std::numeric_limits<float>::infinity();
            bad[200] = -std::numeric_limits<float>::infinity();
            std::vector<uint8_t> q(row_bytes(*t, n));
            file_quantizer(type, search)(bad.data(), q.data(), n, nullptr);  // defined, no hang
        }
    }
}

}  // namespace
}  // namespace mw
