// Installing an x86 kernel set into the type table: which kernel each type uses, the switch from
// the decode kernels to the prefill GEMM as the number of tokens grows, and the packed layouts
// the set offers. Compiled with the baseline flags: it only takes the sets' addresses.
#include "tensor/x86/x86.h"

#include "tensor/repack.h"
#include "tensor/x86/set.h"

#if defined(__x86_64__)

namespace mw::x86 {
namespace {

using KernelFn = void (*)(const MatmulArgs&);

template <KernelFn gemv, KernelFn gemm, int64_t kGemmMinTokens>
void matmul(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
            const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    const MatmulArgs a{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy};
    if (n_tokens < kGemmMinTokens) {
        gemv(a);
    } else {
        gemm(a);
    }
}

template <KernelFn fn>
void matmul_one(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    fn(MatmulArgs{w, w_row_bytes, n_cols, r0, r1, act, act_stride, n_tokens, y, ldy});
}

// One row times one token through a matrix kernel.
template <KernelFn fn>
float vec_dot(int64_t n, const void* w, const void* x) {
    float y = 0.0f;
    fn(MatmulArgs{static_cast<const uint8_t*>(w), 0, n, 0, 1, static_cast<const uint8_t*>(x), 0, 1,
                  &y, 1});
    return y;
}

TypeTraits& row_of(KernelSet& set, GgmlType type) {
    for (TypeTraits& t : set.table) {
        if (t.type == type) return t;
    }
    __builtin_trap();  // every type installed here is in the table
}

// The set's int8 peak: its register-only dot-product loop (set_<isa>.cpp), timed.
template <Isa I>
double int8_peak(double seconds) {
    return time_peak_loop(Set<I>::int8_peak_loop, seconds);
}

template <Isa I>
void install_set(KernelSet& set, const CpuFeatures& cpu) {
    using S = Set<I>;
    // The float kernels and encoders do not use VNNI: avxvnni runs avx2's.
    using SF = Set<I == Isa::avxvnni ? Isa::avx2 : I>;
    constexpr int64_t kMin = S::kGemmMinTokens;
    set.name = isa_name(I);
    set.int8_peak = int8_peak<I>;
    auto quant = [&](GgmlType type, MatmulFn matmul_fn, VecDotFn dot) {
        TypeTraits& t = row_of(set, type);
        t.matmul = matmul_fn;
        t.vec_dot = dot;
    };
    quant(GgmlType::Q4_0, matmul<S::gemv_q4_0, S::gemm_q4_0, kMin>, vec_dot<S::gemv_q4_0>);
    quant(GgmlType::Q4_1, matmul<S::gemv_q4_1, S::gemm_q4_1, kMin>, vec_dot<S::gemv_q4_1>);
    quant(GgmlType::Q5_0, matmul<S::gemv_q5_0, S::gemm_q5_0, kMin>, vec_dot<S::gemv_q5_0>);
    quant(GgmlType::Q5_1, matmul<S::gemv_q5_1, S::gemm_q5_1, kMin>, vec_dot<S::gemv_q5_1>);
    quant(GgmlType::Q8_0, matmul<S::gemv_q8_0, S::gemm_q8_0, kMin>, vec_dot<S::gemv_q8_0>);
    quant(GgmlType::Q2_K, matmul<S::gemv_q2_k, S::gemm_q2_k, kMin>, vec_dot<S::gemv_q2_k>);
    quant(GgmlType::Q3_K, matmul<S::gemv_q3_k, S::gemm_q3_k, kMin>, vec_dot<S::gemv_q3_k>);
    quant(GgmlType::Q4_K, matmul<S::gemv_q4_k, S::gemm_q4_k, kMin>, vec_dot<S::gemv_q4_k>);
    quant(GgmlType::Q5_K, matmul<S::gemv_q5_k, S::gemm_q5_k, kMin>, vec_dot<S::gemv_q5_k>);
    quant(GgmlType::Q6_K, matmul<S::gemv_q6_k, S::gemm_q6_k, kMin>, vec_dot<S::gemv_q6_k>);
    // AVX2's decode kernels of IQ4_NL and MXFP4 fall behind their panels sooner than Q4_0's do:
    // at 8-16 tokens the GEMM ran 1.2-2.0x faster (kernels_bench, 2048x2048, one thread).
    constexpr int64_t kMinTable = I == Isa::avx2 ? 12 : kMin;
    quant(GgmlType::IQ4_NL, matmul<S::gemv_iq4_nl, S::gemm_iq4_nl, kMinTable>,
          vec_dot<S::gemv_iq4_nl>);
    quant(GgmlType::IQ4_XS, matmul<S::gemv_iq4_xs, S::gemm_iq4_xs, kMin>, vec_dot<S::gemv_iq4_xs>);
    quant(GgmlType::MXFP4, matmul<S::gemv_mxfp4, S::gemm_mxfp4, kMinTable>, vec_dot<S::gemv_mxfp4>);
    // The lattice and ternary types: rows decoded once per call into panels (panels_iquants.h)
    // from 8 tokens on, where their decoding (grid gathers) costs most: the GEMM ran 1.2-1.4x
    // faster than the decode kernels at 8 tokens and about as fast at 4 on AVX2 and AVX-512
    // (kernels_bench, MEMWALL_BENCH_GEMM_TOKENS, 2048x2048, one thread; IQ3_S, IQ2_XXS, IQ1_S,
    // TQ2_0).
    constexpr int64_t kMinSigned = 8;
    quant(GgmlType::TQ1_0, matmul<S::gemv_tq1_0, S::gemm_tq1_0, kMinSigned>,
          vec_dot<S::gemv_tq1_0>);
    quant(GgmlType::TQ2_0, matmul<S::gemv_tq2_0, S::gemm_tq2_0, kMinSigned>,
          vec_dot<S::gemv_tq2_0>);
    quant(GgmlType::IQ2_XXS, matmul<S::gemv_iq2_xxs, S::gemm_iq2_xxs, kMinSigned>,
          vec_dot<S::gemv_iq2_xxs>);
    quant(GgmlType::IQ2_XS, matmul<S::gemv_iq2_xs, S::gemm_iq2_xs, kMinSigned>,
          vec_dot<S::gemv_iq2_xs>);
    quant(GgmlType::IQ2_S, matmul<S::gemv_iq2_s, S::gemm_iq2_s, kMinSigned>,
          vec_dot<S::gemv_iq2_s>);
    quant(GgmlType::IQ3_XXS, matmul<S::gemv_iq3_xxs, S::gemm_iq3_xxs, kMinSigned>,
          vec_dot<S::gemv_iq3_xxs>);
    quant(GgmlType::IQ3_S, matmul<S::gemv_iq3_s, S::gemm_iq3_s, kMinSigned>,
          vec_dot<S::gemv_iq3_s>);
    quant(GgmlType::IQ1_S, matmul<S::gemv_iq1_s, S::gemm_iq1_s, kMinSigned>,
          vec_dot<S::gemv_iq1_s>);
    quant(GgmlType::IQ1_M, matmul<S::gemv_iq1_m, S::gemm_iq1_m, kMinSigned>,
          vec_dot<S::gemv_iq1_m>);

    TypeTraits& f32 = row_of(set, GgmlType::F32);
    f32.matmul = matmul_one<SF::matmul_f32>;
    f32.vec_dot = vec_dot<SF::matmul_f32>;
    TypeTraits& f16 = row_of(set, GgmlType::F16);
    f16.matmul = matmul_one<SF::matmul_f16>;
    f16.vec_dot = vec_dot<SF::matmul_f16>;
    f16.from_float = SF::f16_from_float;
    TypeTraits& bf16 = row_of(set, GgmlType::BF16);
    if (I == Isa::avx512 && cpu.avx512bf16) {
        bf16.matmul = matmul_one<SF::matmul_bf16_dp>;
        bf16.vec_dot = vec_dot<SF::matmul_bf16_dp>;
    } else {
        bf16.matmul = matmul_one<SF::matmul_bf16>;
        bf16.vec_dot = vec_dot<SF::matmul_bf16>;
    }
    bf16.from_float = SF::bf16_from_float;
    // Activation encoders (these types are only ever activations, or weights too).
    row_of(set, GgmlType::Q8_0).from_float = SF::quantize_row_q8_0;
    row_of(set, GgmlType::Q8_1).from_float = SF::quantize_row_q8_1;
    row_of(set, GgmlType::Q8_K).from_float = SF::quantize_row_q8_k;
    for (TypeTraits& t : set.table) {
        if (t.vec_dot) t.isa = set.name;
    }

    constexpr int R = S::kPackRows;
    constexpr auto pmin = S::packed_gemm_min_tokens;
    set.add_packed(GgmlType::Q4_0, R,
                   matmul<S::packed_gemv_q4_0, S::packed_gemm_q4_0, pmin(GgmlType::Q4_0)>);
    set.add_packed(GgmlType::Q8_0, R,
                   matmul<S::packed_gemv_q8_0, S::packed_gemm_q8_0, pmin(GgmlType::Q8_0)>);
    set.add_packed(GgmlType::Q4_K, R,
                   matmul<S::packed_gemv_q4_k, S::packed_gemm_q4_k, pmin(GgmlType::Q4_K)>);
    set.add_packed(GgmlType::Q5_K, R,
                   matmul<S::packed_gemv_q5_k, S::packed_gemm_q5_k, pmin(GgmlType::Q5_K)>);
    set.add_packed(GgmlType::Q6_K, R,
                   matmul<S::packed_gemv_q6_k, S::packed_gemm_q6_k, pmin(GgmlType::Q6_K)>);
}

}  // namespace

bool supported(Isa isa, const CpuFeatures& cpu) {
    const bool avx2 = cpu.avx2 && cpu.fma && cpu.f16c;
    switch (isa) {
        case Isa::avx2:
            return avx2;
        case Isa::avxvnni:
            return avx2 && cpu.avx_vnni;
        case Isa::avx512:
            // VNNI (vpdpbusd) and VBMI (byte permutes) are what this set is built on: Ice Lake,
            // Sapphire Rapids and Zen 4 onwards. Older AVX-512 CPUs (Skylake-X) run avx2.
            return avx2 && cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq &&
                   cpu.avx512vnni && cpu.avx512vbmi;
    }
    return false;
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::avx2:
            return "avx2";
        case Isa::avxvnni:
            return "avxvnni";
        case Isa::avx512:
            return "avx512";
    }
    return "?";
}

void install(Isa isa, KernelSet& set, const CpuFeatures& cpu) {
    switch (isa) {
        case Isa::avx2:
            install_set<Isa::avx2>(set, cpu);
            break;
        case Isa::avxvnni:
            install_set<Isa::avxvnni>(set, cpu);
            break;
        case Isa::avx512:
            install_set<Isa::avx512>(set, cpu);
            break;
    }
}

bool kernel_set(Isa isa, KernelSet& out) {
    const CpuFeatures& cpu = cpu_features();
    out = KernelSet{};
    out.table = reference_type_traits();
    if (!supported(isa, cpu)) return false;
    install(isa, out, cpu);
    return true;
}

}  // namespace mw::x86

#endif
