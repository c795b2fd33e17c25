// The feed-forward blocks of the forward pass: the gated FFN (SwiGLU, GeGLU for gemma, the clamped
// SwiGLU of gpt-oss; gate and up in two matrices or fused in one for phi3) and the mixture of
// experts (softmax or sigmoid routing, router bias, optional group limit and selection bias,
// weight scale, shared experts, expert biases).
#include <algorithm>
#include <cmath>

#include "model/expert_source.h"
#include "model/forward_step.h"

namespace mw {
namespace {

// The router's probabilities for one token (softmax or sigmoid of its logits), then the top k
// experts by those probabilities plus the selection bias (ties to the lower expert id), within
// the best n_group_used groups when the experts are grouped; their weights are the unbiased
// probabilities, optionally renormalised to sum to one, times the weight scale.
void select_experts(const HParams& hp, const float* logits, const float* bias, int32_t* ids,
                    float* weights, float* probs, float* select) {
    const int n_expert = int(hp.n_expert), k = int(hp.n_expert_used);
    std::copy(logits, logits + n_expert, probs);
    if (hp.expert_gating == ExpertGating::sigmoid) {
        for (int e = 0; e < n_expert; ++e) probs[e] = 1.0f / (1.0f + std::exp(-probs[e]));
    } else {
        softmax(probs, n_expert);
    }
    for (int e = 0; e < n_expert; ++e) select[e] = probs[e] + (bias ? bias[e] : 0.0f);
    if (hp.n_expert_groups > 1) {
        // A group's score is the sum of its two best selection scores; the experts of the groups
        // not among the best n_group_used cannot be chosen.
        const int n_groups = int(hp.n_expert_groups), per = n_expert / n_groups;
        float group_score[64];
        bool keep[64] = {};
        for (int g = 0; g < n_groups && g < 64; ++g) {
            float best = -INFINITY, second = -INFINITY;
            for (int e = g * per; e < (g + 1) * per; ++e) {
                if (select[e] > best) {
                    second = best;
                    best = select[e];
                } else if (select[e] > second) {
                    second = select[e];
                }
            }
            group_score[g] = best + (per > 1 ? second : 0.0f);
        }
        for (uint32_t j = 0; j < hp.n_group_used; ++j) {
            int best = -1;
            for (int g = 0; g < n_groups && g < 64; ++g) {
                if (!keep[g] && (best < 0 || group_score[g] > group_score[best])) best = g;
            }
            keep[best] = true;
        }
        for (int e = 0; e < n_expert; ++e) {
            if (!keep[e / per]) select[e] = -INFINITY;
        }
    }
    for (int j = 0; j < k; ++j) {
        int best = -1;
        for (int e = 0; e < n_expert; ++e) {
            if (std::find(ids, ids + j, e) != ids + j) continue;
            if (best < 0 || select[e] > select[best]) best = e;
        }
        ids[j] = best;
        weights[j] = probs[best];
    }
    if (hp.expert_weights_norm) {
        float sum = 0.0f;
        for (int j = 0; j < k; ++j) sum += weights[j];
        sum = std::max(sum, 6.103515625e-5f);  // as llama.cpp: never divide by ~0
        for (int j = 0; j < k; ++j) weights[j] /= sum;
    }
    if (hp.expert_weights_scale != 1.0f) {
        for (int j = 0; j < k; ++j) weights[j] *= hp.expert_weights_scale;
    }
}

// gpt-oss's expert activation: the gate clamped from above and the up projection on both sides
// (at 7), then gate sigmoid(1.702 gate) (up + 1). `out` may be `gate`.
void swiglu_oai(const float* gate, const float* up, float* out, int64_t n) {
    constexpr float kAlpha = 1.702f, kLimit = 7.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float g = std::min(gate[i], kLimit);
        const float u = std::clamp(up[i], -kLimit, kLimit);
        out[i] = g / (1.0f + std::exp(-kAlpha * g)) * (u + 1.0f);
    }
}

// Adds `bias` (width floats) to each of `rows` rows.
void add_rows(float* x, const float* bias, uint32_t rows, int64_t width) {
    for (uint32_t t = 0; t < rows; ++t) add_inplace(x + t * width, bias, width);
}

}  // namespace

void ForwardStep::prefetch_experts(uint32_t il, const float* in) {
    // This layer's experts, all of them at once, so that reading the later ones overlaps the
    // products of the first; then, where an I/O thread can read ahead, the experts the next MoE
    // layer's router picks for this hidden state (a good guess: the residual stream changes
    // little from one layer to the next).
    const HParams& hp = m.hp;
    const int n_exp = int(hp.n_expert), k_used = int(hp.n_expert_used);
    ExpertSource& source = *m.expert_source;
    source.prefetch(il, {s.moe_expert.data(), size_t(n) * k_used}, false);
    if (il + 1 >= hp.n_layer || !m.layers[il + 1].moe || !source.wants_predictions()) return;
    const Layer& next = m.layers[il + 1];
    // Not through the observer: this product is a guess, not part of the computation.
    mw::matmul(par, next.router, in, n, s.router_logits.data(), s.act.data());
    if (!next.router_bias.empty())
        add_rows(s.router_logits.data(), next.router_bias.data(), n, n_exp);
    int32_t ids[64];
    float weights[64];
    if (k_used > 64) return;
    for (uint32_t t = 0; t < n; ++t) {
        select_experts(hp, s.router_logits.data() + t * n_exp,
                       next.expert_bias.empty() ? nullptr : next.expert_bias.data(), ids, weights,
                       s.router_probs.data(), s.router_probs.data() + n_exp);
        source.prefetch(il + 1, {ids, size_t(k_used)}, true);
    }
}

void ForwardStep::ffn(uint32_t il, const float* in, float* out, const float* router_in) {
    const HParams& hp = m.hp;
    const Layer& l = *layer;
    const int64_t n_embd = hp.n_embd;
    const bool gelu = hp.ffn_act == FfnActivation::gelu;
    const bool oai = hp.ffn_act == FfnActivation::swiglu_oai;
    // gate[i] = act(gate[i]) * up[i] over rows of `width` (gate and up `stride` apart per token).
    const auto glu = [&](float* gate, const float* up, int64_t width, int64_t stride,
                         uint32_t rows) {
        for_each_token(rows, width, [&](uint32_t t) {
            float* g = gate + t * stride;
            const float* u = up + t * stride;
            if (gelu) {
                geglu(g, u, gate + t * width, width);
            } else if (oai) {
                swiglu_oai(g, u, gate + t * width, width);
            } else {
                swiglu(g, u, gate + t * width, width);
            }
        });
    };
    // A dense gated FFN of in (n rows) into dst.
    const auto dense = [&](const WeightMatrix& w_gate, const WeightMatrix& w_up,
                           const WeightMatrix& w_down, float* dst) {
        const int64_t n_ff = w_down.n_cols;
        if (!w_gate.data) {
            // phi3: one matrix gives [gate, up] per token; compacted in place, row by row (in
            // order, so no row is overwritten before it is read).
            matmul(w_up, in, n, s.gate.data());
            for (uint32_t t = 0; t < n; ++t) {
                float* row = s.gate.data() + t * 2 * n_ff;
                float* o = s.gate.data() + t * n_ff;
                if (gelu) {
                    geglu(row, row + n_ff, o, n_ff);
                } else {
                    swiglu(row, row + n_ff, o, n_ff);
                }
            }
        } else {
            matmul(w_gate, in, n, s.gate.data());
            matmul(w_up, in, n, s.up.data());
            glu(s.gate.data(), s.up.data(), n_ff, n_ff, n);
        }
        matmul(w_down, s.gate.data(), n, dst);
    };

    if (!l.moe) {
        dense(l.ffn_gate, l.ffn_up, l.ffn_down, out);
        return;
    }

    // Route each token to its top experts, then run each expert once on all the tokens routed
    // to it (its weights are read once per batch) and add the weighted outputs.
    const int n_exp = int(hp.n_expert), k_used = int(hp.n_expert_used);
    const int64_t n_ff = hp.n_ff_expert;
    matmul(l.router, router_in ? router_in : in, n, s.router_logits.data());
    if (!l.router_bias.empty()) add_rows(s.router_logits.data(), l.router_bias.data(), n, n_exp);
    for (uint32_t t = 0; t < n; ++t) {
        select_experts(hp, s.router_logits.data() + t * n_exp,
                       l.expert_bias.empty() ? nullptr : l.expert_bias.data(),
                       s.moe_expert.data() + t * k_used, s.moe_weight.data() + t * k_used,
                       s.router_probs.data(), s.router_probs.data() + n_exp);
    }
    ExpertSource* source = m.expert_source;
    if (source) prefetch_experts(il, in);
    std::fill(out, out + n * n_embd, 0.0f);
    for (int e = 0; e < n_exp; ++e) {
        // Gather the tokens routed to expert e.
        uint32_t count = 0;
        for (uint32_t t = 0; t < n; ++t) {
            for (int j = 0; j < k_used; ++j) {
                if (s.moe_expert[t * k_used + j] == e) {
                    s.moe_tokens[count] = int32_t(t * k_used + j);
                    std::copy(in + t * n_embd, in + (t + 1) * n_embd,
                              s.moe_in.data() + count * n_embd);
                    ++count;
                }
            }
        }
        if (count == 0) continue;
        ++s.experts_read_;
        const ExpertSlices w =
            source ? source->acquire(il, e)
                   : ExpertSlices{l.exp_gate.expert(e), l.exp_up.expert(e), l.exp_down.expert(e)};
        matmul(w.gate, s.moe_in.data(), count, s.gate.data());
        matmul(w.up, s.moe_in.data(), count, s.up.data());
        if (!l.exp_gate_bias.empty()) {  // gpt-oss: every expert product has a bias
            add_rows(s.gate.data(), l.exp_gate_bias.data() + e * n_ff, count, n_ff);
            add_rows(s.up.data(), l.exp_up_bias.data() + e * n_ff, count, n_ff);
        }
        glu(s.gate.data(), s.up.data(), n_ff, n_ff, count);
        matmul(w.down, s.gate.data(), count, s.moe_out.data());
        if (!l.exp_down_bias.empty())
            add_rows(s.moe_out.data(), l.exp_down_bias.data() + e * n_embd, count, n_embd);
        if (source) source->release(il, e);
        // Scatter: out[t] += weight * expert_out (gemma4: times the expert's output scale).
        const float scale = l.exp_down_scale.empty() ? 1.0f : l.exp_down_scale[size_t(e)];
        for (uint32_t i = 0; i < count; ++i) {
            const uint32_t t = uint32_t(s.moe_tokens[i]) / k_used;
            add_scaled(out + t * n_embd, s.moe_out.data() + i * n_embd,
                       s.moe_weight[s.moe_tokens[i]] * scale, n_embd);
        }
    }
    if (l.shared_gate.data) {
        // Shared experts for every token: qwen2moe scales them by sigmoid(gate . x), deepseek2
        // adds them as they are.
        dense(l.shared_gate, l.shared_up, l.shared_down, s.moe_out.data());
        if (l.shared_router.data) matmul(l.shared_router, in, n, s.router_logits.data());
        for (uint32_t t = 0; t < n; ++t) {
            const float g =
                l.shared_router.data ? 1.0f / (1.0f + std::exp(-s.router_logits[t])) : 1.0f;
            add_scaled(out + t * n_embd, s.moe_out.data() + t * n_embd, g, n_embd);
        }
    }
}

}  // namespace mw
