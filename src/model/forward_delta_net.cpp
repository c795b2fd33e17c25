// The gated DeltaNet token mixer (qwen35's linear-attention layers), per sequence:
//   qkv = W_qkv h, z = W_z h, beta = sigmoid(W_beta h), g = ssm_a * softplus(W_alpha h + dt_bias)
//   c = SiLU(causal depthwise conv over time of qkv), the conv's last inputs kept per sequence
//   q, k L2-normalised per head; per value head v (reading q/k head v mod n_k_heads), state S:
//     S = exp(g) S;  delta = beta (v - S^T k);  S = S + k delta^T;  o = S^T q / sqrt(head_dim)
//   y = W_out (RMSNorm(o) * ssm_norm * SiLU(z)) per head.
// Prompts run the same recurrence token by token: on a CPU the state update costs a few
// head_dim^2 operations per head and token, small beside the layer's matrix products, so the
// chunked (parallel) form would buy nothing here.
#include <algorithm>
#include <cmath>

#include "model/forward_step.h"
#include "tensor/attention_kernels.h"

namespace mw {
namespace {

float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

float silu(float x) {
    return x * sigmoid(x);
}

float softplus(float x) {
    return x > 20.0f ? x : std::log1p(std::exp(x));
}

void l2_normalize(float* x, int64_t n, float eps) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
    const float inv = 1.0f / std::sqrt(sum + eps);
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace

void ForwardStep::delta_net(uint32_t il) {
    const HParams& hp = m.hp;
    const Layer& l = *layer;
    const DeltaNetShape& d = hp.delta_net;
    const int64_t hd = d.head_dim, nk = d.n_k_heads, nv = d.n_v_heads;
    const int64_t channels = d.conv_channels(), inner = d.inner();
    const int64_t taps = d.conv_kernel, hist = taps - 1;
    float* xb = s.xb.data();
    float* qkv = s.dn_qkv.data();
    float* conv = s.dn_conv.data();
    float* z = s.dn_z.data();
    float* beta = s.dn_beta.data();
    float* alpha = s.dn_alpha.data();
    float* o = s.dn_o.data();

    matmul(l.wqkv, xb, n, qkv);
    matmul(l.ssm_z, xb, n, z);
    matmul(l.ssm_beta, xb, n, beta);
    matmul(l.ssm_alpha, xb, n, alpha);

    // Causal conv over each sequence's tokens, channel by channel, continuing from the inputs
    // its state kept; the state then keeps the last `hist` inputs.
    for (uint32_t r = 0; r < b.n_seqs; ++r) {
        const ForwardSeq& fs = b.seqs[r];
        float* past = rs.conv(il, fs.seq);  // hist x channels, oldest first
        const int64_t t0 = fs.first_token, nt = fs.n_tokens;
        parallel_for_work(par, channels * nt * taps, [&](int ith, int nth) {
            const Range cr = split_range(channels, ith, nth);
            for (int64_t c = cr.begin; c < cr.end; ++c) {
                const float* w = l.ssm_conv.data() + c * taps;
                for (int64_t t = 0; t < nt; ++t) {
                    float sum = 0.0f;
                    for (int64_t j = 0; j < taps; ++j) {
                        const int64_t at = t - hist + j;  // < 0: from the state
                        const float x = at < 0 ? past[(hist + at) * channels + c]
                                               : qkv[(t0 + at) * channels + c];
                        sum += w[j] * x;
                    }
                    conv[(t0 + t) * channels + c] = silu(sum);
                }
                for (int64_t h = 0; h < hist; ++h) {
                    const int64_t at = nt - hist + h;  // the input that becomes past[h]
                    past[h * channels + c] =
                        at < 0 ? past[(hist + at) * channels + c] : qkv[(t0 + at) * channels + c];
                }
            }
        });
    }

    // Per token: q and k L2-normalised per head, beta and the decay per value head.
    for_each_token(n, channels, [&](uint32_t t) {
        float* row = conv + int64_t(t) * channels;
        for (int64_t h = 0; h < 2 * nk; ++h) l2_normalize(row + h * hd, hd, hp.norm_eps);
        for (int64_t h = 0; h < nv; ++h) {
            float& bt = beta[int64_t(t) * nv + h];
            bt = sigmoid(bt);
            float& g = alpha[int64_t(t) * nv + h];  // becomes exp(g), the decay
            g = std::exp(l.ssm_a[size_t(h)] * softplus(g + l.ssm_dt_bias[size_t(h)]));
        }
    });

    // The recurrence, one (sequence, value head) pair per task.
    const float scale = 1.0f / std::sqrt(float(hd));
    const auto step = attention_kernels().delta_step;
    const int64_t tasks = int64_t(b.n_seqs) * nv;
    parallel_for_work(par, int64_t(n) * nv * hd * hd, [&](int ith, int nth) {
        float* tmp = s.dn_tmp.data() + size_t(ith) * size_t(hd);
        const Range tr = split_range(tasks, ith, nth);
        for (int64_t task = tr.begin; task < tr.end; ++task) {
            const ForwardSeq& fs = b.seqs[task / nv];
            const int64_t h = task % nv, kh = h % nk;
            float* st = rs.state(il, fs.seq) + h * hd * hd;
            for (uint32_t i = 0; i < fs.n_tokens; ++i) {
                const int64_t t = fs.first_token + i;
                const float* row = conv + t * channels;
                step(st, row + kh * hd, row + (nk + kh) * hd, row + (2 * nk + h) * hd,
                     alpha[t * nv + h], beta[t * nv + h], scale, o + t * inner + h * hd, tmp,
                     int(hd));
            }
        }
    });

    // Gated RMSNorm per head, then the output projection.
    for_each_token(n, inner, [&](uint32_t t) {
        for (int64_t h = 0; h < nv; ++h) {
            float* y = o + int64_t(t) * inner + h * hd;
            const float* zt = z + int64_t(t) * inner + h * hd;
            rms_norm(y, l.ssm_norm.data(), y, hd, hp.norm_eps);
            for (int64_t j = 0; j < hd; ++j) y[j] *= silu(zt[j]);
        }
    });
    matmul(l.wo, o, n, s.xb2.data());
}

}  // namespace mw
