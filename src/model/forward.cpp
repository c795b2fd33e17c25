#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tensor/cpu_features.h"

namespace mw {
namespace {

size_t max_matmul_scratch(const Model& m, uint32_t n) {
    size_t bytes = 0;
    auto consider = [&](const WeightMatrix& w) {
        if (w.traits) bytes = std::max(bytes, matmul_scratch_bytes(w, n));
    };
    consider(m.output);
    for (const Layer& l : m.layers) {
        for (const WeightMatrix* w :
             {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.router,
              &l.shared_gate, &l.shared_up, &l.shared_down, &l.shared_router}) {
            consider(*w);
        }
        consider(l.exp_gate.first);
        consider(l.exp_up.first);
        consider(l.exp_down.first);
    }
    return bytes;
}

// Runs f(t) for every token t < n, split over the threads; `width` is the work per token.
template <typename F>
void for_each_token(Parallel& par, uint32_t n, int64_t width, F&& f) {
    parallel_for_work(par, int64_t(n) * width, [&](int ith, int nth) {
        const Range r = split_range(n, ith, nth);
        for (int64_t t = r.begin; t < r.end; ++t) f(uint32_t(t));
    });
}

// Expert selection for one token: softmax over the router logits, then the top k (ties to the
// lower expert id), optionally renormalised to sum to one.
void select_experts(const float* logits, int n_expert, int k, bool renormalise, int32_t* ids,
                    float* weights, float* probs) {
    std::copy(logits, logits + n_expert, probs);
    softmax(probs, n_expert);
    for (int j = 0; j < k; ++j) {
        int best = -1;
        for (int e = 0; e < n_expert; ++e) {
            if (std::find(ids, ids + j, e) != ids + j) continue;
            if (best < 0 || probs[e] > probs[best]) best = e;
        }
        ids[j] = best;
        weights[j] = probs[best];
    }
    if (renormalise) {
        float sum = 0.0f;
        for (int j = 0; j < k; ++j) sum += weights[j];
        for (int j = 0; j < k; ++j) weights[j] /= sum;
    }
}

}  // namespace

namespace {

// Sizes of every scratch buffer (in elements), shared by the constructor and the planner.
struct ScratchSizes {
    size_t x, xb, xb2, q, k, v, attn, gate, up, rope_cs;
    size_t router_logits, moe_in, moe_out, moe_expert, moe_weight, moe_tokens, router_probs;
    size_t tok_index;  // sequence and position of each token
    size_t act_bytes;
    size_t attn_seqs;  // AttentionSeq entries
    AttentionShape attention;

    uint64_t total_bytes() const {
        const uint64_t floats = x + xb + xb2 + q + k + v + attn + gate + up + rope_cs +
                                router_logits + moe_in + moe_out + moe_weight + router_probs;
        return floats * sizeof(float) + (moe_expert + moe_tokens + tok_index) * sizeof(int32_t) +
               act_bytes + attn_seqs * sizeof(AttentionSeq) +
               AttentionScratch::planned_bytes(attention);
    }
};

ScratchSizes scratch_sizes(const Model& m, uint32_t max_batch, uint32_t max_seqs, int n_threads) {
    const HParams& hp = m.hp;
    const size_t n = max_batch;
    const size_t n_attn_out = size_t(hp.n_head) * hp.head_dim_v;
    // The FFN width of the weights, not of the metadata: a MoE file's feed_forward_length and
    // expert_shared_feed_forward_length need not match any tensor, and must not size buffers.
    // (The planner's stand-in for a model it cannot bind carries its width in ffn_down.)
    size_t n_ff = 0;
    for (const Layer& l : m.layers) {
        n_ff = std::max({n_ff, size_t(l.ffn_gate.n_rows), size_t(l.ffn_down.n_cols),
                         size_t(l.exp_gate.first.n_rows), size_t(l.exp_down.first.n_cols),
                         size_t(l.shared_gate.n_rows), size_t(l.shared_down.n_cols)});
    }
    const bool moe = hp.n_expert > 0;
    ScratchSizes z{};
    z.x = n * hp.n_embd;
    z.xb = n * std::max<size_t>(hp.n_embd, n_attn_out);
    z.xb2 = n * hp.n_embd;
    z.q = n * hp.n_head * hp.head_dim_k;
    z.k = n * hp.n_embd_k_gqa();
    z.v = n * hp.n_embd_v_gqa();
    z.attn = n * n_attn_out;
    z.gate = n * n_ff;
    z.up = n * n_ff;
    z.rope_cs = n * hp.n_rot;
    z.tok_index = 2 * n;
    z.router_logits = moe ? n * hp.n_expert : 0;
    z.moe_in = moe ? n * hp.n_embd : 0;
    z.moe_out = moe ? n * hp.n_embd : 0;
    z.moe_expert = moe ? n * hp.n_expert_used : 0;
    z.moe_weight = moe ? n * hp.n_expert_used : 0;
    z.moe_tokens = moe ? n : 0;
    z.router_probs = hp.n_expert;
    z.act_bytes = max_matmul_scratch(m, max_batch);
    z.attn_seqs = max_seqs;
    z.attention = {max_batch,          max_seqs,           int(hp.n_head),        int(hp.n_head_kv),
                   int(hp.head_dim_k), int(hp.head_dim_v), std::max(1, n_threads)};
    return z;
}

}  // namespace

uint64_t ForwardScratch::planned_bytes(const Model& model, uint32_t max_batch, uint32_t n_ctx,
                                       int n_threads, uint32_t max_seqs) {
    (void)n_ctx;  // attention works block by block: nothing here grows with the context
    return scratch_sizes(model, max_batch, std::max(1u, max_seqs), n_threads).total_bytes();
}

ForwardScratch::ForwardScratch(const Model& m, uint32_t max_batch, uint32_t n_ctx, int threads,
                               uint32_t max_seqs)
    : max_batch_(max_batch), max_seqs_(std::max(1u, max_seqs)), n_threads(std::max(1, threads)) {
    (void)n_ctx;
    const ScratchSizes z = scratch_sizes(m, max_batch, max_seqs_, threads);
    x.resize(z.x);
    xb.resize(z.xb);
    xb2.resize(z.xb2);
    q.resize(z.q);
    k.resize(z.k);
    v.resize(z.v);
    attn.resize(z.attn);
    gate.resize(z.gate);
    up.resize(z.up);
    rope_cs.resize(z.rope_cs);
    tok_seq.resize(z.tok_index / 2);
    tok_pos.resize(z.tok_index / 2);
    router_logits.resize(z.router_logits);
    moe_in.resize(z.moe_in);
    moe_out.resize(z.moe_out);
    moe_expert.resize(z.moe_expert);
    moe_weight.resize(z.moe_weight);
    moe_tokens.resize(z.moe_tokens);
    router_probs.resize(z.router_probs);
    act.resize(z.act_bytes);
    attn_seqs.resize(z.attn_seqs);
    attention = AttentionScratch(z.attention);
}

uint64_t ForwardScratch::bytes() const {
    uint64_t floats = 0;
    for (const auto* vec : {&x, &xb, &xb2, &q, &k, &v, &attn, &gate, &up, &rope_cs, &router_logits,
                            &moe_in, &moe_out, &moe_weight, &router_probs}) {
        floats += vec->size();
    }
    return floats * sizeof(float) +
           (moe_expert.size() + moe_tokens.size() + tok_seq.size() + tok_pos.size()) *
               sizeof(int32_t) +
           act.size() + attn_seqs.size() * sizeof(AttentionSeq) + attention.bytes();
}

void forward(const Model& m, KvCache& kv, ForwardScratch& s, Parallel& par, const ForwardBatch& b,
             float* logits) {
    const FlushSubnormals flush;  // pool workers flush them too (runtime/thread_pool.cpp)
    const HParams& hp = m.hp;
    const uint32_t n = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    const int hd_k = int(hp.head_dim_k), hd_v = int(hp.head_dim_v);
    const int n_head = int(hp.n_head), n_head_kv = int(hp.n_head_kv);
    const int64_t n_q = int64_t(n_head) * hd_k, n_k = hp.n_embd_k_gqa(), n_v = hp.n_embd_v_gqa();
    const float kq_scale = 1.0f / std::sqrt(float(hd_k));
    float* x = s.x.data();
    float* xb = s.xb.data();
    uint8_t* act = s.act.data();
    s.experts_read_ = 0;
    // Every matrix product below goes through this wrapper, which shows its input to the
    // observer first (imatrix collection); without one it is the plain matmul.
    const auto matmul = [&s](Parallel& p, const WeightMatrix& w, const float* in, int64_t rows,
                             float* out, uint8_t* scratch) {
        if (s.observer) s.observer->on_matmul(w, in, rows);
        mw::matmul(p, w, in, rows, out, scratch);
    };
    // The sequence and position of each token: the batch lists each sequence's tokens as one
    // run of consecutive positions.
    uint32_t* tok_seq = s.tok_seq.data();
    uint32_t* tok_pos = s.tok_pos.data();
    for (uint32_t r = 0; r < b.n_seqs; ++r) {
        const ForwardSeq& q = b.seqs[r];
        for (uint32_t i = 0; i < q.n_tokens; ++i) {
            tok_seq[q.first_token + i] = q.seq;
            tok_pos[q.first_token + i] = q.pos0 + i;
        }
    }

    // Token embeddings, and the RoPE rotation of each token's position.
    for_each_token(par, n, n_embd, [&](uint32_t t) {
        get_row(m.tok_embd, b.tokens[t], x + t * n_embd);
        rope_cache(m.rope, float(tok_pos[t]), s.rope_cs.data() + size_t(t) * hp.n_rot);
    });

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const Layer& l = m.layers[il];

        // Attention: RMSNorm, then the Q, K, V projections (+ biases for qwen2).
        for_each_token(par, n, n_embd, [&](uint32_t t) {
            rms_norm(x + t * n_embd, l.attn_norm.data(), xb + t * n_embd, n_embd, hp.norm_eps);
        });
        matmul(par, l.wq, xb, n, s.q.data(), act);
        matmul(par, l.wk, xb, n, s.k.data(), act);
        matmul(par, l.wv, xb, n, s.v.data(), act);

        for_each_token(par, n, n_embd, [&](uint32_t t) {
            float* q = s.q.data() + t * n_q;
            float* k = s.k.data() + t * n_k;
            float* v = s.v.data() + t * n_v;
            if (!l.bq.empty()) add_inplace(q, l.bq.data(), n_q);
            if (!l.bk.empty()) add_inplace(k, l.bk.data(), n_k);
            if (!l.bv.empty()) add_inplace(v, l.bv.data(), n_v);
            // qwen3: RMSNorm of each head of Q and K.
            if (!l.q_norm.empty()) {
                for (int h = 0; h < n_head; ++h)
                    rms_norm(q + h * hd_k, l.q_norm.data(), q + h * hd_k, hd_k, hp.norm_eps);
                for (int h = 0; h < n_head_kv; ++h)
                    rms_norm(k + h * hd_k, l.k_norm.data(), k + h * hd_k, hd_k, hp.norm_eps);
            }
            // Rotary position embedding of Q and K.
            const float* cs = s.rope_cs.data() + size_t(t) * hp.n_rot;
            rope_apply(m.rope, cs, q, n_head, hd_k);
            rope_apply(m.rope, cs, k, n_head_kv, hd_k);
            // Append K and V at this token's position in its sequence's cache.
            for (int h = 0; h < n_head_kv; ++h) {
                kv.k_traits().from_float(k + h * hd_k,
                                         kv.k_row(il, uint32_t(h), tok_seq[t], tok_pos[t]), hd_k);
                kv.v_traits().from_float(v + h * hd_v,
                                         kv.v_row(il, uint32_t(h), tok_seq[t], tok_pos[t]), hd_v);
            }
        });

        // Causal grouped-query attention, each sequence over its own cache: a token at position
        // p sees its sequence's positions 0 .. p.
        for (uint32_t r = 0; r < b.n_seqs; ++r) {
            const ForwardSeq& q = b.seqs[r];
            s.attn_seqs[r] = {q.first_token, q.n_tokens, q.pos0, kv.keys(il, q.seq),
                              kv.values(il, q.seq)};
        }
        AttentionBatch batch{};
        batch.q = s.q.data();
        batch.out = s.attn.data();
        batch.seqs = s.attn_seqs.data();
        batch.n_seqs = b.n_seqs;
        batch.n_head = n_head;
        batch.n_head_kv = n_head_kv;
        batch.head_dim_k = hd_k;
        batch.head_dim_v = hd_v;
        batch.scale = kq_scale;
        attention(par, batch, s.attention);

        // Output projection and residual.
        matmul(par, l.wo, s.attn.data(), n, s.xb2.data(), act);
        for_each_token(par, n, n_embd, [&](uint32_t t) {
            add_inplace(x + t * n_embd, s.xb2.data() + t * n_embd, n_embd);
        });

        // Feed-forward: RMSNorm, then SwiGLU (dense or mixture of experts), then residual.
        for_each_token(par, n, n_embd, [&](uint32_t t) {
            rms_norm(x + t * n_embd, l.ffn_norm.data(), xb + t * n_embd, n_embd, hp.norm_eps);
        });
        if (hp.n_expert == 0) {
            const int64_t n_ff = hp.n_ff;
            matmul(par, l.ffn_gate, xb, n, s.gate.data(), act);
            matmul(par, l.ffn_up, xb, n, s.up.data(), act);
            for_each_token(par, n, n_embd, [&](uint32_t t) {
                swiglu(s.gate.data() + t * n_ff, s.up.data() + t * n_ff, s.gate.data() + t * n_ff,
                       n_ff);
            });
            matmul(par, l.ffn_down, s.gate.data(), n, s.xb2.data(), act);
        } else {
            // Route each token to its top experts, then run each expert once on all the tokens
            // routed to it (its weights are read once per batch) and add the weighted outputs.
            const int n_exp = int(hp.n_expert), k_used = int(hp.n_expert_used);
            const int64_t n_ff = hp.n_ff_expert;
            matmul(par, l.router, xb, n, s.router_logits.data(), act);
            for (uint32_t t = 0; t < n; ++t) {
                select_experts(s.router_logits.data() + t * n_exp, n_exp, k_used,
                               hp.expert_weights_norm, s.moe_expert.data() + t * k_used,
                               s.moe_weight.data() + t * k_used, s.router_probs.data());
            }
            std::fill(s.xb2.begin(), s.xb2.begin() + n * n_embd, 0.0f);
            for (int e = 0; e < n_exp; ++e) {
                // Gather the tokens routed to expert e.
                uint32_t count = 0;
                for (uint32_t t = 0; t < n; ++t) {
                    for (int j = 0; j < k_used; ++j) {
                        if (s.moe_expert[t * k_used + j] == e) {
                            s.moe_tokens[count] = int32_t(t * k_used + j);
                            std::copy(xb + t * n_embd, xb + (t + 1) * n_embd,
                                      s.moe_in.data() + count * n_embd);
                            ++count;
                        }
                    }
                }
                if (count == 0) continue;
                ++s.experts_read_;
                matmul(par, l.exp_gate.expert(e), s.moe_in.data(), count, s.gate.data(), act);
                matmul(par, l.exp_up.expert(e), s.moe_in.data(), count, s.up.data(), act);
                for_each_token(par, count, n_ff, [&](uint32_t i) {
                    swiglu(s.gate.data() + i * n_ff, s.up.data() + i * n_ff,
                           s.gate.data() + i * n_ff, n_ff);
                });
                matmul(par, l.exp_down.expert(e), s.gate.data(), count, s.moe_out.data(), act);
                // Scatter: x_ffn[t] += weight * expert_out.
                for (uint32_t i = 0; i < count; ++i) {
                    const uint32_t t = uint32_t(s.moe_tokens[i]) / k_used;
                    const float w = s.moe_weight[s.moe_tokens[i]];
                    float* dst = s.xb2.data() + t * n_embd;
                    const float* src = s.moe_out.data() + i * n_embd;
                    for (int64_t d = 0; d < n_embd; ++d) dst[d] += w * src[d];
                }
            }
            if (l.shared_gate.data) {
                // qwen2moe: a shared expert for every token, scaled by sigmoid(gate . x).
                const int64_t n_sh = l.shared_gate.n_rows;
                matmul(par, l.shared_gate, xb, n, s.gate.data(), act);
                matmul(par, l.shared_up, xb, n, s.up.data(), act);
                for_each_token(par, n, n_embd, [&](uint32_t t) {
                    swiglu(s.gate.data() + t * n_sh, s.up.data() + t * n_sh,
                           s.gate.data() + t * n_sh, n_sh);
                });
                matmul(par, l.shared_down, s.gate.data(), n, s.moe_out.data(), act);
                matmul(par, l.shared_router, xb, n, s.router_logits.data(), act);
                for (uint32_t t = 0; t < n; ++t) {
                    const float g = 1.0f / (1.0f + std::exp(-s.router_logits[t]));
                    float* dst = s.xb2.data() + t * n_embd;
                    const float* src = s.moe_out.data() + t * n_embd;
                    for (int64_t d = 0; d < n_embd; ++d) dst[d] += g * src[d];
                }
            }
        }
        for_each_token(par, n, n_embd, [&](uint32_t t) {
            add_inplace(x + t * n_embd, s.xb2.data() + t * n_embd, n_embd);
        });
    }
    if (!logits || b.n_outputs == 0) return;

    // Final RMSNorm and the language-model head, for the tokens the caller wants.
    for_each_token(par, b.n_outputs, n_embd, [&](uint32_t i) {
        rms_norm(x + b.outputs[i] * n_embd, m.output_norm.data(), xb + i * n_embd, n_embd,
                 hp.norm_eps);
    });
    matmul(par, m.output, xb, b.n_outputs, logits, act);
}

}  // namespace mw
