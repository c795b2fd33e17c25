// Kernel microbenchmarks at the shapes of a 1B-class llama (n_embd 2048, n_ff 8192, 128k vocab):
//   gemv/<type>/<isa>/<rows>x<cols>: one token (decode), reported as weight bytes per second. The
//     weights rotate through a pool larger than the last-level cache, so this is streaming from
//     memory as in real decoding (MEMWALL_BENCH_POOL_MB sets the pool, default 1024).
//   gemv2t/...: the same with the rows split over two threads.
//   gemvk/<type>/<isa>/4096x4096/<tokens>: the packed layouts' decode of 1..16 tokens (a
//     verification pass of speculative decoding), streaming from memory like gemv/; its time
//     against tokens = 1 is what a pass of that many tokens costs over a one-token step.
//   gemv_l2/<type>/<isa>/256x2048: one token on a matrix that stays in L2: compute throughput.
//   gemm/<type>/<isa>/<rows>x<cols>/<tokens>: prefill, reported as multiply-adds per second
//     (tokens: 512, or the comma-separated counts in MEMWALL_BENCH_GEMM_TOKENS, e.g. 8,16,24 to
//     find where a type's GEMM overtakes its decode kernels).
//   peak/<isa>: the set's int8 peak, a register-only loop of its dot product (what probe reports).
//   attn/<kernel>/<isa>: attention's inner loops (tensor/attention_kernels.h) on a block of 256
//     cached positions, head size 128, four queries (GQA): scores, value sums, the softmax's
//     exp, and decoding Q4_0 / F16 cache rows; reported as positions per second.
// Packed layouts (tensor/repack.h) appear as their own type, e.g. Q4_K/x16 (avx512), Q4_K/x8.
// Benchmarks are not tests: nothing here checks results (tests/kernels_x86_test.cpp does).
// Example: kernels_bench --benchmark_filter='gemv/Q4_0' --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensor/attention_kernels.h"
#include "tensor/kernels.h"
#include "tensor/repack.h"
#include "tensor/types.h"
#include "weights.h"

namespace mw {
namespace {

// The token counts of the gemm/ benchmarks.
std::vector<int64_t> gemm_tokens() {
    std::vector<int64_t> counts;
    const char* env = std::getenv("MEMWALL_BENCH_GEMM_TOKENS");
    for (const char* p = env; p && *p;) {
        char* end = nullptr;
        const long n = std::strtol(p, &end, 10);
        if (end == p) break;
        if (n > 0) counts.push_back(n);
        p = *end == ',' ? end + 1 : end;
    }
    if (counts.empty()) counts.push_back(512);
    return counts;
}

size_t pool_bytes() {
    const char* env = std::getenv("MEMWALL_BENCH_POOL_MB");
    return size_t(env ? std::atol(env) : 1024) << 20;
}

// One pool of weights shared by all GEMV benchmarks (refilled per type).
struct Pool {
    std::vector<uint8_t> bytes;
    const TypeTraits* filled_with = nullptr;
    int64_t filled_rows = 0;  // packed layouts depend on the shape
};
Pool& pool() {
    static Pool p;
    return p;
}

void bench_gemv(benchmark::State& state, const TypeTraits* w, int64_t n_rows, int64_t n_cols,
                int64_t n_tokens) {
    const size_t matrix = row_bytes(*w, n_cols) * size_t(n_rows);
    Pool& p = pool();
    const size_t copies = std::max<size_t>(1, pool_bytes() / matrix);
    // Only the first thread fills the pool; the others wait at the start of the timed loop.
    if (state.thread_index() == 0 &&
        (p.bytes.size() < copies * matrix || p.filled_with != w || p.filled_rows != n_rows)) {
        p.bytes.resize(std::max(p.bytes.size(), copies * matrix));
        if (is_packed(w)) {
            fill_packed(*w, n_rows, n_cols, p.bytes.data(), copies * matrix);
        } else {
            fill_weights(*w, p.bytes.data(), p.bytes.size());
        }
        p.filled_with = w;
        p.filled_rows = n_rows;
    }
    const auto act = encode_activations(*w, n_cols, n_tokens);
    const size_t stride = act.size() / size_t(n_tokens);
    std::vector<float> y(size_t(n_rows * n_tokens));
    // With several threads, each takes its share of the rows (as ops.cpp's matmul does).
    const int64_t per = (n_rows + state.threads() - 1) / state.threads();
    const int64_t r0 = std::min(n_rows, per * state.thread_index());
    const int64_t r1 = std::min(n_rows, r0 + per);
    size_t next = 0;
    for (auto _ : state) {
        w->matmul(p.bytes.data() + next * matrix, row_bytes(*w, n_cols), n_cols, r0, r1, act.data(),
                  stride, n_tokens, y.data(), n_rows);
        benchmark::DoNotOptimize(y.data());
        next = (next + 1) % copies;
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(row_bytes(*w, n_cols)) *
                            (r1 - r0));
}

// The same kernel on one small matrix that stays in the L2 cache: the kernel's compute
// throughput, which decides how much of the memory bandwidth a core can use.
void bench_gemv_cached(benchmark::State& state, const TypeTraits* w, int64_t n_rows,
                       int64_t n_cols) {
    const size_t rb = row_bytes(*w, n_cols);
    std::vector<uint8_t> m(rb * size_t(n_rows));
    if (is_packed(w)) {
        fill_packed(*w, n_rows, n_cols, m.data(), m.size());
    } else {
        fill_weights(*w, m.data(), m.size());
    }
    const auto act = encode_activations(*w, n_cols, 1);
    std::vector<float> y(static_cast<size_t>(n_rows));
    for (auto _ : state) {
        w->matmul(m.data(), rb, n_cols, 0, n_rows, act.data(), act.size(), 1, y.data(), n_rows);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(m.size()));
}

void bench_gemm(benchmark::State& state, const TypeTraits* w, int64_t n_rows, int64_t n_cols,
                int64_t n_tokens) {
    const size_t rb = row_bytes(*w, n_cols);
    std::vector<uint8_t> m(rb * size_t(n_rows));
    if (is_packed(w)) {
        fill_packed(*w, n_rows, n_cols, m.data(), m.size());
    } else {
        fill_weights(*w, m.data(), m.size());
    }
    const auto act = encode_activations(*w, n_cols, n_tokens);
    const size_t stride = act.size() / size_t(n_tokens);
    std::vector<float> y(size_t(n_rows * n_tokens));
    for (auto _ : state) {
        w->matmul(m.data(), rb, n_cols, 0, n_rows, act.data(), stride, n_tokens, y.data(), n_rows);
        benchmark::DoNotOptimize(y.data());
    }
    const double macs = double(n_rows) * double(n_cols) * double(n_tokens);
    state.counters["GMAC/s"] =
        benchmark::Counter(macs * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
}

const GgmlType kTypes[] = {
    GgmlType::Q4_0,  GgmlType::Q4_1,   GgmlType::Q5_0,    GgmlType::Q5_1,   GgmlType::Q8_0,
    GgmlType::Q2_K,  GgmlType::Q3_K,   GgmlType::Q4_K,    GgmlType::Q5_K,   GgmlType::Q6_K,
    GgmlType::F16,   GgmlType::BF16,   GgmlType::F32,     GgmlType::IQ4_NL, GgmlType::IQ4_XS,
    GgmlType::MXFP4, GgmlType::TQ1_0,  GgmlType::TQ2_0,   GgmlType::IQ3_S,  GgmlType::IQ3_XXS,
    GgmlType::IQ2_S, GgmlType::IQ2_XS, GgmlType::IQ2_XXS, GgmlType::IQ1_S,  GgmlType::IQ1_M};

struct Shape {
    int64_t rows, cols;
};
// attn_q/o (2048 x 2048), ffn_up/gate (8192 x 2048), ffn_down (2048 x 8192), output (128256 x
// 2048).
const Shape kShapes[] = {{2048, 2048}, {8192, 2048}, {2048, 8192}, {128256, 2048}};

// The set's int8 peak (a register-only loop of its dot product): what gemm/ is a share of.
void bench_peak(benchmark::State& state, const KernelSet* set) {
    double best = 0;
    for (auto _ : state) best = std::max(best, set->int8_peak(0.02));
    state.counters["GMAC/s"] = best * 1e-9;
}

// Attention on one block of cached positions (in L1/L2, as attention reads one block at a time).
enum class AttnOp { scores, accumulate, exp, q4_0, f16 };
void bench_attention(benchmark::State& state, const AttentionKernels* k, AttnOp op) {
    constexpr int kHd = 128, kPos = 256, kQueries = 4;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> q(size_t(kQueries) * kHd), keys(size_t(kPos) * kHd),
        s(size_t(kQueries) * kPos), acc(q.size()), out(keys.size());
    for (float& x : q) x = normal(rng);
    for (float& x : keys) x = normal(rng);
    for (float& x : s) x = std::abs(normal(rng)) * 0.01f;
    const TypeTraits& q4 = *type_traits(GgmlType::Q4_0);
    const TypeTraits& f16 = *type_traits(GgmlType::F16);
    std::vector<uint8_t> q4_rows(row_bytes(q4, int64_t(keys.size())));
    std::vector<uint8_t> f16_rows(row_bytes(f16, int64_t(keys.size())));
    q4.from_float(keys.data(), q4_rows.data(), int64_t(keys.size()));
    f16.from_float(keys.data(), f16_rows.data(), int64_t(keys.size()));
    for (auto _ : state) {
        switch (op) {
            case AttnOp::scores:
                k->scores(q.data(), kQueries, keys.data(), kHd, kPos, kHd, s.data(), kPos);
                break;
            case AttnOp::accumulate:
                k->accumulate(s.data(), kPos, kQueries, keys.data(), kHd, kPos, kHd, acc.data());
                break;
            case AttnOp::exp:
                for (int i = 0; i < kQueries; ++i) {
                    std::fill_n(s.data() + size_t(i) * kPos, kPos, -1.0f);
                    benchmark::DoNotOptimize(k->exp_sum(s.data() + size_t(i) * kPos, kPos, 0.0f));
                }
                break;
            case AttnOp::q4_0:
                attention_row_decoder(*k, q4)(q4_rows.data(), out.data(), int64_t(out.size()));
                break;
            case AttnOp::f16:
                attention_row_decoder(*k, f16)(f16_rows.data(), out.data(), int64_t(out.size()));
                break;
        }
        benchmark::ClobberMemory();
    }
    state.counters["positions/s"] =
        benchmark::Counter(double(kPos), benchmark::Counter::kIsIterationInvariantRate);
}

void register_attention() {
    const std::pair<const char*, AttnOp> ops[] = {{"scores", AttnOp::scores},
                                                  {"accumulate", AttnOp::accumulate},
                                                  {"exp", AttnOp::exp},
                                                  {"decode_q4_0", AttnOp::q4_0},
                                                  {"decode_f16", AttnOp::f16}};
    for (const AttentionKernels* k : {attention_kernels_scalar(), attention_kernels_avx2(),
                                      attention_kernels_avx512(), attention_kernels_neon()}) {
        if (!k) continue;
        for (const auto& [name, op] : ops) {
            benchmark::RegisterBenchmark((std::string("attn/") + name + "/" + k->isa).c_str(),
                                         bench_attention, k, op)
                ->Unit(benchmark::kMicrosecond);
        }
    }
}

void register_all(std::vector<KernelSet>& sets) {
    register_attention();
    for (KernelSet& isa : sets) {
        if (isa.int8_peak) {
            benchmark::RegisterBenchmark((std::string("peak/") + isa.name).c_str(), bench_peak,
                                         &isa)
                ->Unit(benchmark::kMillisecond)
                ->Iterations(20);
        }
        std::vector<const TypeTraits*> weights;
        for (GgmlType type : kTypes) weights.push_back(&row_of(isa.table, type));
        // The set's packed layouts.
        for (int k = 0; k < isa.n_packed; ++k) weights.push_back(&isa.packed[size_t(k)]);
        for (int k = 0; k < isa.n_packed; ++k) {
            const TypeTraits* w = &isa.packed[size_t(k)];
            for (int64_t tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 20, 24, 32}) {
                benchmark::RegisterBenchmark((std::string("gemvk/") + w->name + "/" + isa.name +
                                              "/4096x4096/" + std::to_string(tokens))
                                                 .c_str(),
                                             bench_gemv, w, 4096, 4096, tokens)
                    ->Unit(benchmark::kMicrosecond);
            }
        }
        for (const TypeTraits* w : weights) {
            benchmark::RegisterBenchmark(
                (std::string("gemv_l2/") + w->name + "/" + isa.name + "/256x2048").c_str(),
                bench_gemv_cached, w, 256, 2048)
                ->Unit(benchmark::kMicrosecond);
            for (const Shape& s : kShapes) {
                const std::string shape = std::to_string(s.rows) + "x" + std::to_string(s.cols);
                const std::string base = std::string(w->name) + "/" + isa.name + "/" + shape;
                benchmark::RegisterBenchmark(("gemv/" + base).c_str(), bench_gemv, w, s.rows,
                                             s.cols, int64_t{1})
                    ->Unit(benchmark::kMicrosecond);
                // Both cores streaming (the pool is filled before the threads start).
                benchmark::RegisterBenchmark(("gemv2t/" + base).c_str(), bench_gemv, w, s.rows,
                                             s.cols, int64_t{1})
                    ->Unit(benchmark::kMicrosecond)
                    ->Threads(2)
                    ->UseRealTime();
                if (s.rows == 128256) continue;  // prefill of the output matrix: one row of logits
                for (int64_t tokens : gemm_tokens()) {
                    // The scalar reference is ~100x slower: fewer tokens keep it to seconds.
                    if (std::string(isa.name) == "scalar") tokens = std::min<int64_t>(tokens, 16);
                    benchmark::RegisterBenchmark(
                        ("gemm/" + base + "/" + std::to_string(tokens)).c_str(), bench_gemm, w,
                        s.rows, s.cols, tokens)
                        ->Unit(benchmark::kMillisecond);
                }
            }
        }
    }
}

}  // namespace
}  // namespace mw

int main(int argc, char** argv) {
    static std::vector<mw::KernelSet> sets = mw::available_kernel_sets();
    mw::register_all(sets);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
