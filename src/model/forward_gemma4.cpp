// The parts of Gemma 4's forward pass beyond the common block (model/arch/gemma4.cpp describes
// the architecture): per-layer inputs, the MoE layers' dense MLP beside the experts, and the end
// of each layer (per-layer input branch, output scale).
#include <algorithm>
#include <cmath>

#include "model/forward_step.h"

namespace mw {

// P = RMSNorm(per_layer_model_proj x / sqrt(n_embd)) per layer slice x per_layer_proj_norm,
// ple = (P + per_layer_token_embd[token] x sqrt(n_embd_per_layer)) / sqrt(2), with x the scaled
// input embedding.
void ForwardStep::per_layer_inputs() {
    const HParams& hp = m.hp;
    const int64_t w = hp.n_embd_per_layer, width = int64_t(hp.n_layer) * w;
    float* ple = s.ple.data();
    matmul(m.ple_model_proj, s.x.data(), n, ple);
    const float proj_scale = 1.0f / std::sqrt(float(hp.n_embd));
    const float row_scale = std::sqrt(float(w)), mix = 1.0f / std::sqrt(2.0f);
    parallel_for_work(par, int64_t(n) * width, [&](int ith, int nth) {
        float* row = s.ple_tmp.data() + size_t(ith) * width;
        const Range r = split_range(n, ith, nth);
        for (int64_t t = r.begin; t < r.end; ++t) {
            if (m.ple_source) {
                m.ple_source->row(b.tokens[t], row);
            } else {
                get_row(m.ple_embd, b.tokens[t], row);
            }
            float* p = ple + t * width;
            for (int64_t i = 0; i < width; ++i) p[i] *= proj_scale;
            for (uint32_t il = 0; il < hp.n_layer; ++il)
                rms_norm(p + il * w, m.ple_proj_norm.data(), p + il * w, w, hp.norm_eps);
            for (int64_t i = 0; i < width; ++i) p[i] = (p[i] + row[i] * row_scale) * mix;
        }
    });
}

// out = RMSNorm(MLP(RMSNorm(x) ffn_norm)) post_ffw_norm_1 + RMSNorm(experts(RMSNorm(x)
// pre_ffw_norm_2)) post_ffw_norm_2, the router reading RMSNorm(x) / sqrt(n_embd) x router_scale.
void ForwardStep::gemma4_moe_ffn(uint32_t il, float* out) {
    const HParams& hp = m.hp;
    const Layer& l = *layer;
    const int64_t n_embd = hp.n_embd, n_ff = l.ffn_down.n_cols;
    const float* x = s.x.data();
    float* xb = s.xb.data();
    float* router_in = s.xb2.data();  // the attention's output is already in the residual
    float* experts = s.g4.data();
    // The dense MLP.
    norm_rows(x, l.ffn_norm.data(), xb, n, n_embd);
    matmul(l.ffn_gate, xb, n, s.gate.data());
    matmul(l.ffn_up, xb, n, s.up.data());
    for_each_token(n, n_ff, [&](uint32_t t) {
        geglu(s.gate.data() + t * n_ff, s.up.data() + t * n_ff, s.gate.data() + t * n_ff, n_ff);
    });
    matmul(l.ffn_down, s.gate.data(), n, out);
    norm_rows(out, l.post_ffn_norm_1.data(), out, n, n_embd);
    // The experts.
    const float inv = 1.0f / std::sqrt(float(n_embd));
    for_each_token(n, n_embd, [&](uint32_t t) {
        float* r = router_in + t * n_embd;
        rms_norm(x + t * n_embd, nullptr, r, n_embd, hp.norm_eps);
        for (int64_t i = 0; i < n_embd; ++i) r[i] *= inv * l.router_scale[size_t(i)];
    });
    norm_rows(x, l.pre_ffn_norm_2.data(), xb, n, n_embd);
    ffn(il, xb, experts, router_in);
    norm_rows(experts, l.post_ffn_norm_2.data(), experts, n, n_embd);
    for_each_token(n, n_embd, [&](uint32_t t) {
        add_inplace(out + t * n_embd, experts + t * n_embd, n_embd);
    });
}

// x += RMSNorm(proj (gelu(inp_gate x) * ple_il)) post_norm; then x *= layer_output_scale.
void ForwardStep::gemma4_layer_end(uint32_t il) {
    const HParams& hp = m.hp;
    const Layer& l = *layer;
    const int64_t n_embd = hp.n_embd, w = hp.n_embd_per_layer;
    float* x = s.x.data();
    if (l.ple_gate.traits) {
        const int64_t width = int64_t(hp.n_layer) * w;
        float* gate = s.ple_gate.data();
        float* branch = s.g4.data();
        matmul(l.ple_gate, x, n, gate);
        for_each_token(n, w, [&](uint32_t t) {
            geglu(gate + t * w, s.ple.data() + t * width + il * w, gate + t * w, w);
        });
        matmul(l.ple_proj, gate, n, branch);
        norm_rows(branch, l.ple_post_norm.data(), branch, n, n_embd);
        for_each_token(n, n_embd, [&](uint32_t t) {
            add_inplace(x + t * n_embd, branch + t * n_embd, n_embd);
        });
    }
    if (!l.out_scale.empty()) {
        const float scale = l.out_scale[0];
        for_each_token(n, n_embd, [&](uint32_t t) {
            for (int64_t i = 0; i < n_embd; ++i) x[t * n_embd + i] *= scale;
        });
    }
}

}  // namespace mw
