// Block-wise (online softmax) attention against a naive double-precision attention on random data:
// every KV cache type, odd lengths, prefill and decode, GQA ratios, several threads (which splits
// long decode steps between threads). And each SIMD kernel set against the scalar one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/attention.h"
#include "tensor/attention_kernels.h"
#include "tensor/cpu_features.h"
#include "tensor/types.h"

namespace mw {
namespace {

// Runs every "thread" of a job one after the other: the work split of n threads, deterministic.
class SequentialThreads final : public Parallel {
  public:
    explicit SequentialThreads(int n) : n_(n) {}
    int n_threads() const override { return n_; }
    void run(void (*fn)(void*, int, int), void* ctx) override {
        for (int i = 0; i < n_; ++i) fn(ctx, i, n_);
    }

  private:
    int n_;
};

struct Case {
    GgmlType type;
    int n_head, n_head_kv, head_dim_k, head_dim_v;
    uint32_t pos0, n_tokens;
    int n_threads;
    float q_scale;       // larger queries: peaked softmax, the running maximum moves between blocks
    bool sinks = false;  // a sink logit per query head (gpt-oss)
};

std::string describe(const Case& c) {
    return fmt::format("{} heads {}/{} dims {}/{} pos0 {} tokens {} threads {} q x{}{}",
                       type_traits(c.type)->name, c.n_head, c.n_head_kv, c.head_dim_k, c.head_dim_v,
                       c.pos0, c.n_tokens, c.n_threads, c.q_scale, c.sinks ? " sinks" : "");
}

// Cached rows in `type` for n_pos positions of n_head_kv heads, plus their decoded values (what
// an exact attention over this cache sees).
struct Cache {
    std::vector<uint8_t> bytes;
    std::vector<float> decoded;
    size_t stride;
};

Cache make_cache(GgmlType type, uint32_t n_pos, int n_head_kv, int head_dim, std::mt19937& rng,
                 bool grow) {
    const TypeTraits& t = *type_traits(type);
    const int64_t n = int64_t(n_head_kv) * head_dim;
    Cache c;
    c.stride = row_bytes(t, n);
    c.bytes.resize(c.stride * n_pos);
    c.decoded.resize(size_t(n) * n_pos);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(n));
    for (uint32_t p = 0; p < n_pos; ++p) {
        // `grow`: later keys are larger, so later blocks raise the running maximum.
        const float gain = grow ? 1.0f + 2.0f * float(p) / float(n_pos) : 1.0f;
        for (float& x : row) x = normal(rng) * gain;
        t.from_float(row.data(), c.bytes.data() + c.stride * p, n);
        t.to_float(c.bytes.data() + c.stride * p, c.decoded.data() + size_t(n) * p, n);
    }
    return c;
}

void check_case(const Case& c) {
    SCOPED_TRACE(describe(c));
    std::mt19937 rng(uint32_t(c.pos0 * 131 + c.n_tokens * 7 + c.head_dim_k + int(c.type)));
    const uint32_t n_pos = c.pos0 + c.n_tokens;
    const Cache k = make_cache(c.type, n_pos, c.n_head_kv, c.head_dim_k, rng, true);
    const Cache v = make_cache(c.type, n_pos, c.n_head_kv, c.head_dim_v, rng, false);
    std::normal_distribution<float> normal(0.0f, c.q_scale);
    std::vector<float> q(size_t(c.n_tokens) * c.n_head * c.head_dim_k);
    for (float& x : q) x = normal(rng);
    std::vector<float> out(size_t(c.n_tokens) * c.n_head * c.head_dim_v, NAN);
    // Sinks around the scores' own range, so that some heads give them most of the mass.
    std::vector<float> sinks(size_t(c.n_head));
    std::normal_distribution<float> sink_normal(0.0f, 3.0f);
    for (float& x : sinks) x = sink_normal(rng);

    const float scale = 1.0f / std::sqrt(float(c.head_dim_k));
    // Position-major rows holding every head (the engine's cache is head-major: both are strides).
    const TypeTraits* traits = type_traits(c.type);
    const AttentionSeq seq{
        0, c.n_tokens, c.pos0,
        KvRows{k.bytes.data(), k.stride, row_bytes(*traits, c.head_dim_k), traits},
        KvRows{v.bytes.data(), v.stride, row_bytes(*traits, c.head_dim_v), traits}};
    AttentionBatch b{};
    b.q = q.data();
    b.out = out.data();
    b.seqs = &seq;
    b.n_seqs = 1;
    b.n_head = c.n_head;
    b.n_head_kv = c.n_head_kv;
    b.head_dim_k = c.head_dim_k;
    b.head_dim_v = c.head_dim_v;
    b.scale = scale;
    b.sinks = c.sinks ? sinks.data() : nullptr;
    AttentionScratch scratch(
        {c.n_tokens, 1, c.n_head, c.n_head_kv, c.head_dim_k, c.head_dim_v, c.n_threads});
    SequentialThreads threads(c.n_threads);
    attention(threads, b, scratch);

    // Naive attention in double over the decoded cache.
    const int group = c.n_head / c.n_head_kv;
    double worst = 0.0;
    for (uint32_t t = 0; t < c.n_tokens; ++t) {
        const uint32_t n_kv = c.pos0 + t + 1;
        for (int h = 0; h < c.n_head; ++h) {
            const int kvh = h / group;
            const float* qh = q.data() + (size_t(t) * c.n_head + h) * c.head_dim_k;
            std::vector<double> s(n_kv);
            double max = -INFINITY;
            for (uint32_t j = 0; j < n_kv; ++j) {
                const float* kj = k.decoded.data() + (size_t(j) * c.n_head_kv + kvh) * c.head_dim_k;
                double dot = 0.0;
                for (int d = 0; d < c.head_dim_k; ++d) dot += double(qh[d]) * kj[d];
                s[j] = dot * scale;
                max = std::max(max, s[j]);
            }
            double sum = 0.0;
            for (double& x : s) sum += (x = std::exp(x - max));
            if (c.sinks) sum += std::exp(double(sinks[size_t(h)]) - max);
            const float* oh = out.data() + (size_t(t) * c.n_head + h) * c.head_dim_v;
            double err = 0.0, norm = 0.0;
            for (int d = 0; d < c.head_dim_v; ++d) {
                double ref = 0.0;
                for (uint32_t j = 0; j < n_kv; ++j) {
                    ref +=
                        s[j] / sum * v.decoded[(size_t(j) * c.n_head_kv + kvh) * c.head_dim_v + d];
                }
                err += (oh[d] - ref) * (oh[d] - ref);
                norm += ref * ref;
            }
            ASSERT_TRUE(std::isfinite(err)) << "token " << t << " head " << h;
            worst = std::max(worst, std::sqrt(err / std::max(norm, 1e-30)));
        }
    }
    // Float sums over up to two thousand positions (the scalar set adds strictly in order).
    EXPECT_LT(worst, 1e-5);
}

const GgmlType kKvTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                             GgmlType::Q4_0};

TEST(Attention, MatchesDoublePrecisionForEveryKvType) {
    for (GgmlType type : kKvTypes) {
        // Prefill from an empty cache, prefill after a prefix, single-token decode; MHA, GQA 4:1,
        // MQA 6:1 with a value size unlike the key size; odd lengths throughout.
        check_case({type, 4, 4, 32, 32, 0, 37, 1, 1.0f});
        check_case({type, 8, 2, 64, 64, 45, 19, 3, 1.0f});
        check_case({type, 6, 1, 32, 96, 130, 1, 1, 4.0f});
        check_case({type, 8, 2, 64, 64, 301, 1, 2, 1.0f});
    }
}

TEST(Attention, SplitDecodeStepsMatch) {
    // One token at long context on more threads than KV heads: positions are split between
    // threads and the partial softmax states merged.
    for (GgmlType type : kKvTypes) {
        check_case({type, 8, 2, 64, 64, 1500, 1, 4, 3.0f});
        check_case({type, 4, 1, 128, 128, 777, 1, 8, 1.0f});
        check_case({type, 2, 2, 32, 32, 2049, 1, 3, 1.0f});
    }
}

TEST(Attention, SinksTakeTheirShareOfEachHead) {
    // Prefill (one state per query) and split decode (the sink joins the merged states once).
    for (GgmlType type : {GgmlType::F32, GgmlType::F16}) {
        check_case({type, 8, 2, 64, 64, 0, 37, 1, 1.0f, true});
        check_case({type, 8, 2, 64, 64, 45, 19, 3, 4.0f, true});
        check_case({type, 8, 2, 64, 64, 1500, 1, 4, 3.0f, true});
    }
}

TEST(Attention, ManyThreadsOnPrefill) {
    check_case({GgmlType::F16, 8, 4, 32, 32, 60, 70, 5, 2.0f});
    check_case({GgmlType::Q4_0, 16, 1, 64, 64, 0, 23, 4, 1.0f});
}

TEST(Attention, ScratchDoesNotGrowWithTheContext) {
    const AttentionShape shape{512, 4, 32, 8, 128, 128, 8};
    AttentionScratch scratch(shape);
    EXPECT_EQ(scratch.bytes(), AttentionScratch::planned_bytes(shape));
    // A few blocks of decoded keys and scores per thread, nothing per cached position.
    EXPECT_LT(scratch.bytes(), uint64_t(1) << 20);
}

// ---- SIMD kernel sets against the scalar set -------------------------------------------------

std::vector<const AttentionKernels*> simd_sets() {
    std::vector<const AttentionKernels*> sets;
    for (const AttentionKernels* k :
         {attention_kernels_avx2(), attention_kernels_avx512(), attention_kernels_neon()}) {
        if (k) sets.push_back(k);
    }
    return sets;
}

TEST(AttentionKernels, EachCpuGetsItsSimdSet) {
    const CpuFeatures& cpu = cpu_features();
#if defined(__x86_64__)
    EXPECT_EQ(attention_kernels_avx2() != nullptr, cpu.avx2 && cpu.fma && cpu.f16c);
    EXPECT_EQ(attention_kernels_neon(), nullptr);
#elif defined(__aarch64__)
    EXPECT_EQ(attention_kernels_neon() != nullptr, cpu.dotprod);
    if (cpu.dotprod) {
        EXPECT_STREQ(attention_kernels_neon()->isa, "neon");
    }
#endif
    const char* env = std::getenv("MEMWALL_ISA");
    if (!env && !simd_sets().empty()) {
        EXPECT_STRNE(attention_kernels().isa, "scalar");
    }
}

TEST(AttentionKernels, ScoresValuesAndExpMatchScalar) {
    const AttentionKernels& ref = *attention_kernels_scalar();
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const AttentionKernels* k : simd_sets()) {
        SCOPED_TRACE(k->isa);
        for (int hd : {8, 24, 32, 40, 64, 80, 100, 128, 256}) {
            for (int n_q : {1, 3, 4, 5, 9}) {
                for (int n_k : {1, 7, 16, 31, 32}) {
                    const int ld = hd + 3;  // rows apart by more than their length
                    std::vector<float> q(size_t(n_q) * hd), keys(size_t(n_k) * ld);
                    for (float& x : q) x = normal(rng);
                    for (float& x : keys) x = normal(rng);
                    std::vector<float> s1(size_t(n_q) * 32, -1.0f), s2 = s1;
                    k->scores(q.data(), n_q, keys.data(), ld, n_k, hd, s1.data(), 32);
                    ref.scores(q.data(), n_q, keys.data(), ld, n_k, hd, s2.data(), 32);
                    for (size_t i = 0; i < s1.size(); ++i) {
                        ASSERT_NEAR(s1[i], s2[i], 2e-5f * std::sqrt(float(hd)))
                            << "scores hd " << hd << " n_q " << n_q << " n_k " << n_k << " at "
                            << i;
                    }

                    std::vector<float> p(size_t(n_q) * 32);
                    for (float& x : p) x = std::abs(normal(rng));
                    std::vector<float> a1(size_t(n_q) * hd), a2;
                    for (float& x : a1) x = normal(rng);
                    a2 = a1;
                    k->accumulate(p.data(), 32, n_q, keys.data(), ld, n_k, hd, a1.data());
                    ref.accumulate(p.data(), 32, n_q, keys.data(), ld, n_k, hd, a2.data());
                    for (size_t i = 0; i < a1.size(); ++i) {
                        ASSERT_NEAR(a1[i], a2[i],
                                    2e-5f * std::sqrt(float(n_k)) * (1 + std::abs(a2[i])))
                            << "accumulate hd " << hd << " n_q " << n_q << " n_k " << n_k;
                    }
                }
            }
        }
        for (int n : {1, 5, 8, 15, 16, 17, 31, 32}) {
            std::vector<float> x(static_cast<size_t>(n)), y;
            for (float& a : x) a = normal(rng) * 20.0f;
            x[0] = -200.0f;  // far below the maximum: underflows (to about 1e-38)
            y = x;
            const float m = *std::max_element(x.begin(), x.end());
            const float s1 = k->exp_sum(x.data(), n, m), s2 = ref.exp_sum(y.data(), n, m);
            EXPECT_NEAR(s1, s2, 1e-6f * s2) << "n " << n;
            for (int i = 0; i < n; ++i)
                EXPECT_NEAR(x[size_t(i)], y[size_t(i)], 2e-7f * y[size_t(i)] + 1e-37f);
            k->scale(-1.5f, x.data(), n);
            ref.scale(-1.5f, y.data(), n);
            for (int i = 0; i < n; ++i)
                EXPECT_NEAR(x[size_t(i)], y[size_t(i)], 2e-7f * std::abs(y[size_t(i)]) + 1e-37f);
        }
    }
}

TEST(AttentionKernels, RowDecodersAreBitExact) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (const AttentionKernels* k : simd_sets()) {
        SCOPED_TRACE(k->isa);
        for (GgmlType type : kKvTypes) {
            const TypeTraits& t = *type_traits(type);
            for (int64_t n : {32, 64, 96, 128, 160, 256}) {
                if (t.block_size == 1) n += 7;  // odd lengths where the type allows them
                std::vector<float> src(static_cast<size_t>(n)), a(src.size()), b(src.size());
                for (float& x : src) x = normal(rng);
                src[0] = -0.0f;
                std::vector<uint8_t> row(row_bytes(t, n));
                t.from_float(src.data(), row.data(), n);
                attention_row_decoder(*k, t)(row.data(), a.data(), n);
                t.to_float(row.data(), b.data(), n);
                EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
                    << t.name << " n " << n;
            }
        }
    }
}

}  // namespace
}  // namespace mw
