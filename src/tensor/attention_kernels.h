// The inner loops of attention (tensor/attention.h): for a block of positions, the scores of a
// few queries, the exponentials of the online softmax and the weighted sum of the values; and
// decoding a cached K/V row to floats. The scalar set is the specification; the SIMD sets are
// written once (tensor/simd/attention.h) and compiled per ISA in tensor/x86/ and tensor/arm/.
// Internal to tensor/ and its tests.
#pragma once

#include <cstdint>

#include "tensor/types.h"

namespace mw {

// Queries and accumulators are contiguous rows (head_dim floats each); key and value rows are
// `ld` floats apart (a decoded block, or an F32 cache read in place).
struct AttentionKernels {
    const char* isa;
    // s[i * ld_s + j] = q_i . k_j for queries i < n_q and keys j < n_k.
    void (*scores)(const float* q, int n_q, const float* k, int ld_k, int n_k, int head_dim,
                   float* s, int ld_s);
    // acc_i += sum_j p[i * ld_p + j] * v_j for queries i < n_q over values j < n_v.
    void (*accumulate)(const float* p, int ld_p, int n_q, const float* v, int ld_v, int n_v,
                       int head_dim, float* acc);
    // x[j] = exp(x[j] - max) for j < n; returns their sum.
    float (*exp_sum)(float* x, int n, float max);
    void (*scale)(float a, float* y, int n);  // y *= a
    // Row decoders for the cache types worth a SIMD version; null: the type table's to_float.
    ToFloatFn f16_to_float;
    ToFloatFn bf16_to_float;
    ToFloatFn q8_0_to_float;
    ToFloatFn q4_0_to_float;
    // Linear attention's gated delta rule (qwen35's DeltaNet), one token of one head: the state
    // s (d x d, [key i][value j]) decays, takes the write beta (v - decay s^T k) along k, and
    // out = s^T q * scale with the updated s. tmp holds d floats.
    void (*delta_step)(float* s, const float* q, const float* k, const float* v, float decay,
                       float beta, float scale, float* out, float* tmp, int d);
};

// The set this CPU runs (chosen once; MEMWALL_ISA=scalar forces the scalar set).
const AttentionKernels& attention_kernels();

// Each set, for tests and benchmarks; null when this CPU (or build) cannot run it.
const AttentionKernels* attention_kernels_scalar();
const AttentionKernels* attention_kernels_avx2();
const AttentionKernels* attention_kernels_avx512();
const AttentionKernels* attention_kernels_neon();

// How a row of `traits`' type becomes floats with `kernels`.
ToFloatFn attention_row_decoder(const AttentionKernels& kernels, const TypeTraits& traits);

}  // namespace mw
