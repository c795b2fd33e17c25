#include "tensor/ops.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/error.h"
#include "tensor/repack.h"

namespace mw {

size_t matmul_scratch_bytes(const WeightMatrix& w, int64_t n_tokens) {
    const TypeTraits* act = type_traits(w.traits->vec_dot_type);
    return row_bytes(*act, w.n_cols) * size_t(n_tokens);
}

namespace {

// Up to this many tokens (decoding), each thread encodes the activations itself: a little
// duplicated work instead of a second hand-over between the threads for every matrix.
constexpr int64_t kEncodePerThreadTokens = 4;

// A thread's own buffer for the activations it encodes (grows once, then reused).
uint8_t* thread_act_buffer(size_t bytes) {
    static thread_local std::vector<uint8_t> buffer;
    if (buffer.size() < bytes) buffer.resize(bytes);
    return buffer.data();
}

}  // namespace

void matmul(Parallel& par, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
            uint8_t* scratch) {
    const TypeTraits& wt = *w.traits;
    const TypeTraits& at = *type_traits(wt.vec_dot_type);
    const size_t act_row_bytes = row_bytes(at, w.n_cols);
    const bool encode = wt.vec_dot_type != GgmlType::F32;
    const int64_t work = w.n_rows * w.n_cols * n_tokens;

    if (encode && n_tokens <= kEncodePerThreadTokens && par.n_threads() > 1 &&
        work >= kMinParallelWork) {
        par.for_each_thread([&](int ith, int nth) {
            const Range r = split_range(w.n_rows, ith, nth);
            if (r.begin >= r.end) return;
            uint8_t* act = ith == 0 ? scratch : thread_act_buffer(act_row_bytes * size_t(n_tokens));
            for (int64_t t = 0; t < n_tokens; ++t) {
                at.from_float(x + t * w.n_cols, act + size_t(t) * act_row_bytes, w.n_cols);
            }
            wt.matmul(w.data, w.row_bytes, w.n_cols, r.begin, r.end, act, act_row_bytes, n_tokens,
                      y, w.n_rows);
        });
        return;
    }

    // 1. Encode the activations once per token, shared by every row of the weight.
    if (encode) {
        parallel_for_work(par, n_tokens * w.n_cols, [&](int ith, int nth) {
            const Range r = split_range(n_tokens, ith, nth);
            for (int64_t t = r.begin; t < r.end; ++t) {
                at.from_float(x + t * w.n_cols, scratch + size_t(t) * act_row_bytes, w.n_cols);
            }
        });
    }
    const uint8_t* act = encode ? scratch : reinterpret_cast<const uint8_t*>(x);

    // 2. Each thread computes a contiguous block of output rows for every token.
    parallel_for_work(par, work, [&](int ith, int nth) {
        const Range r = split_range(w.n_rows, ith, nth);
        if (r.begin < r.end) {
            wt.matmul(w.data, w.row_bytes, w.n_cols, r.begin, r.end, act, act_row_bytes, n_tokens,
                      y, w.n_rows);
        }
    });
}

void get_row(const WeightMatrix& w, int64_t r, float* out) {
    if (is_packed(w.traits)) {  // rows interleaved in groups (tensor/repack.h)
        packed_get_row(*w.traits, w.data, w.n_cols, r, out);
        return;
    }
    w.traits->to_float(w.row(r), out, w.n_cols);
}

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
    const float mean = float(sum / double(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    if (weight) {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
    } else {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
    }
}

void layer_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]);
    const float mean = float(sum / double(n));
    double var = 0.0;
    for (int64_t i = 0; i < n; ++i) var += double(x[i] - mean) * double(x[i] - mean);
    const float scale = 1.0f / std::sqrt(float(var / double(n)) + eps);
    for (int64_t i = 0; i < n; ++i) {
        const float v = (x[i] - mean) * scale;
        y[i] = weight ? v * weight[i] : v;
    }
}

namespace {

// Dimension index at which the rotation of frequency base^(-2i/n_rot) completes n_rot * 2 pi
// turns... YaRN's correction range: the dims whose wavelength is between the two "beta" turns.
float yarn_corr_dim(int n_rot, int n_ctx_orig, float n_turns, float base) {
    return float(n_rot) * std::log(float(n_ctx_orig) / (n_turns * 2.0f * float(M_PI))) /
           (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int i0) {
    const float y = (float(i0) / 2.0f - low) / std::max(0.001f, high - low);
    return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

// cos/sin of the angles of `pos`; `scaled` multiplies them by YaRN's attention magnitude.
void rope_angles(const RopeParams& p, float pos, bool scaled, float* out) {
    const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
    float corr_low = 0.0f, corr_high = 0.0f;
    float mscale = scaled ? p.attn_factor : 1.0f;
    if (p.ext_factor != 0.0f) {
        corr_low = std::max(
            0.0f, std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base)));
        corr_high =
            std::min(float(p.n_rot - 1),
                     std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base)));
        if (scaled) mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    // theta_i = pos * base^(-2i/n_rot), built by repeated multiplication as GGUF-era engines do.
    float theta_extrap = pos;
    for (int i0 = 0; i0 < p.n_rot; i0 += 2) {
        const float base_theta =
            p.freq_factors ? theta_extrap / p.freq_factors[i0 / 2] : theta_extrap;
        const float theta_interp = p.freq_scale * base_theta;
        float theta = theta_interp;
        if (p.ext_factor != 0.0f) {
            const float mix = yarn_ramp(corr_low, corr_high, i0) * p.ext_factor;
            theta = theta_interp * (1.0f - mix) + base_theta * mix;
        }
        out[i0] = std::cos(theta) * mscale;
        out[i0 + 1] = std::sin(theta) * mscale;
        theta_extrap *= theta_scale;
    }
}

}  // namespace

void rope_cache(const RopeParams& p, float pos, float* out) {
    rope_angles(p, pos, true, out);
}

void rope_rotation(const RopeParams& p, float delta, float* out) {
    rope_angles(p, delta, false, out);
}

void rope_apply(const RopeParams& p, const float* cos_sin, float* x, int n_heads, int head_dim) {
    const int half = p.n_rot / 2;
    for (int h = 0; h < n_heads; ++h) {
        float* v = x + size_t(h) * head_dim;
        for (int i = 0; i < half; ++i) {
            const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
            // normal: pair (2i, 2i+1); neox: pair (i, i + n_rot/2).
            const int a = p.neox ? i : 2 * i;
            const int b = p.neox ? i + half : 2 * i + 1;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * c - x1 * s;
            v[b] = x0 * s + x1 * c;
        }
    }
}

namespace {

// exp(x) as plain arithmetic the compiler vectorises (Cephes' single-precision polynomial, about
// 1 ulp from expf): a libm call per element made the SiLU 6 % of a prefill.
inline float exp_poly(float x) {
    // Evaluated at x clamped so that 2^n below stays a normal float; written so that a NaN
    // becomes -87 there (never reaching the int conversion) and comes back as NaN at the end.
    float c = x > -87.0f ? x : -87.0f;
    c = c < 88.0f ? c : 88.0f;
    const float n = std::nearbyint(c * 1.44269504088896341f);
    const float r = (c - n * 0.693359375f) + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const float e = p * std::bit_cast<float>(uint32_t(int32_t(n) + 127) << 23);
    // Past 88 the true value overflows: infinity, so that silu(g) of a hugely negative g is
    // g / inf = -0 rather than g / e^88.
    return x > 88.0f ? std::numeric_limits<float>::infinity() : (x == x ? e : x);
}

}  // namespace

// One version per x86 vector width, chosen when the library loads (the rest of the binary keeps
// the baseline ISA).
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void swiglu(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        out[i] = g / (1.0f + exp_poly(-g)) * up[i];
    }
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        out[i] =
            0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * g * (1.0f + 0.044715f * g * g))) * up[i];
    }
}

void add_scaled(float* x, const float* y, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += a * y[i];
}

void add_inplace(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void softmax(float* x, int64_t n) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = float(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace mw
