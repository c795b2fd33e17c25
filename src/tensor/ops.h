// The numerical operations of a transformer forward pass, independent of any model: matrix
// products over typed weights, normalisation, rotary embeddings, activations (attention is in
// tensor/attention.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/ggml_types.h"
#include "tensor/parallel.h"
#include "tensor/types.h"

namespace mw {

// A 2-D weight: n_rows rows of n_cols elements, rows contiguous (GGUF ne[0] = n_cols).
struct WeightMatrix {
    const uint8_t* data = nullptr;
    const TypeTraits* traits = nullptr;
    int64_t n_cols = 0;
    int64_t n_rows = 0;
    size_t row_bytes = 0;

    const uint8_t* row(int64_t r) const { return data + size_t(r) * row_bytes; }
};

// Bytes of scratch matmul() needs to encode `n_tokens` activation rows for this weight.
size_t matmul_scratch_bytes(const WeightMatrix& w, int64_t n_tokens);

// y[t][r] = sum_c w[r][c] * x[t][c] for t < n_tokens, r < n_rows. x is n_tokens x n_cols floats,
// y is n_tokens x n_rows floats. The activations are first encoded in the weight type's
// vec_dot_type (8-bit blocks for quantized weights) into `scratch`.
void matmul(Parallel& par, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
            uint8_t* scratch);

// Row r of the weight decoded to floats (token embedding lookup).
void get_row(const WeightMatrix& w, int64_t r, float* out);

// y = x / rms(x) * weight over n elements (weight may be null: no scaling).
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);

// y = (x - mean(x)) / sqrt(var(x) + eps) * weight over n elements (weight may be null).
void layer_norm(const float* x, const float* weight, float* y, int64_t n, float eps);

// Rotary position embedding.
struct RopeParams {
    int n_rot;  // rotated dims per head (even)
    float freq_base;
    float freq_scale;  // 1 / linear scaling factor
    bool neox;         // rotate (i, i + n_rot/2) pairs instead of (2i, 2i+1)
    // YaRN (ext_factor 0 disables it).
    int n_ctx_orig;
    float ext_factor;
    float attn_factor;
    float beta_fast;
    float beta_slow;
    // Per-pair frequency divisors (Llama 3.1 "rope_freqs"), n_rot/2 values, or null.
    const float* freq_factors = nullptr;
};
// cos/sin for position `pos`: out[2*i] = cos, out[2*i+1] = sin for each of the n_rot/2 pairs.
void rope_cache(const RopeParams& p, float pos, float* out);
// The pure rotation by `delta` positions (no YaRN magnitude scaling), in rope_cache's layout:
// applied to a key rotated at position pos it gives the key at pos + delta, because the angles
// are linear in the position. Used to shift cached keys.
void rope_rotation(const RopeParams& p, float delta, float* out);
// Applies the cached rotation to n_heads heads of head_dim floats each (x is n_heads x head_dim).
void rope_apply(const RopeParams& p, const float* cos_sin, float* x, int n_heads, int head_dim);

// out[i] = silu(gate[i]) * up[i].
void swiglu(const float* gate, const float* up, float* out, int64_t n);
// out[i] = gelu(gate[i]) * up[i], GELU in its tanh form (gemma).
void geglu(const float* gate, const float* up, float* out, int64_t n);
void add_inplace(float* x, const float* y, int64_t n);
// x[i] += a * y[i].
void add_scaled(float* x, const float* y, float a, int64_t n);
// In-place softmax over n values; returns nothing. Uses a double-precision sum.
void softmax(float* x, int64_t n);

}  // namespace mw
