// The attention blocks of the forward pass: grouped-query attention (with the features some
// families add: fused QKV, biases, per-head Q/K norms, sliding windows with their own RoPE,
// soft-capped scores, a given score scale, sinks) and DeepSeek's multi-head latent attention.
#include <algorithm>
#include <cmath>

#include "model/forward_step.h"

namespace mw {
namespace {

// deepseek2 under YaRN scales q . k by mscale^2 (its mscale_all_dim correction).
float mla_kq_scale(const HParams& hp) {
    float scale = 1.0f / std::sqrt(float(hp.head_dim_k_mla));
    if (hp.rope_scaling == RopeScaling::yarn && hp.yarn_log_mul != 0.0f) {
        const float mscale = 1.0f + 0.1f * hp.yarn_log_mul * std::log(1.0f / hp.rope_freq_scale);
        scale *= mscale * mscale;
    }
    return scale;
}

}  // namespace

void ForwardStep::attention(uint32_t il) {
    const HParams& hp = m.hp;
    const Layer& l = *layer;
    // Per layer (gemma4's sliding and full layers differ): the buffers hold the largest.
    const int hd_k = int(hp.head_dim_k_of(il)), hd_v = int(hp.head_dim_v_of(il));
    const int n_head = int(hp.n_head), n_head_kv = int(hp.n_head_kv_of(il));
    const int64_t n_q = int64_t(n_head) * hd_k, n_k = int64_t(n_head_kv) * hd_k,
                  n_v = int64_t(n_head_kv) * hd_v;
    // gemma4's KV-sharing layers compute only Q and read an earlier layer's cache.
    const bool own_kv = hp.has_kv(il);
    const bool swa = hp.swa_layer(il);
    const RopeParams& rope = m.rope_of(il);
    const float* cs_all = swa ? rope_cs_swa : rope_cs;
    float* xb = s.xb.data();

    // Q, K and V projections: three matrices, or one fused (phi3) split per token below.
    // qwen35: attn_q gives per head its query, then its output gate.
    const bool gated = hp.attn_output_gate;
    if (l.wqkv.data) {
        matmul(l.wqkv, xb, n, s.qkv.data());
    } else {
        matmul(l.wq, xb, n, gated ? s.q_gated.data() : s.q.data());
        if (own_kv) {
            matmul(l.wk, xb, n, s.k.data());
            if (l.wv.data) {
                matmul(l.wv, xb, n, s.v.data());
            } else {  // gemma4 without attn_v: V is K's projection (before its norm and RoPE)
                std::copy(s.k.data(), s.k.data() + size_t(n) * n_k, s.v.data());
            }
        }
    }
    for_each_token(n, hp.n_embd, [&](uint32_t t) {
        float* q = s.q.data() + t * n_q;
        float* k = s.k.data() + t * n_k;
        float* v = s.v.data() + t * n_v;
        if (l.wqkv.data) {
            const float* row = s.qkv.data() + t * (n_q + n_k + n_v);
            std::copy(row, row + n_q, q);
            std::copy(row + n_q, row + n_q + n_k, k);
            std::copy(row + n_q + n_k, row + n_q + n_k + n_v, v);
        }
        if (gated) {
            const float* row = s.q_gated.data() + t * 2 * n_q;
            float* gate = s.attn_gate.data() + t * n_q;
            for (int h = 0; h < n_head; ++h) {
                std::copy(row + 2 * h * hd_k, row + (2 * h + 1) * hd_k, q + h * hd_k);
                std::copy(row + (2 * h + 1) * hd_k, row + (2 * h + 2) * hd_k, gate + h * hd_k);
            }
        }
        if (!l.bq.empty()) add_inplace(q, l.bq.data(), n_q);
        if (!l.bk.empty()) add_inplace(k, l.bk.data(), n_k);
        if (!l.bv.empty()) add_inplace(v, l.bv.data(), n_v);
        // qwen3, gemma3: a norm of each head of Q and K before the rotation.
        if (!l.q_norm.empty()) {
            for (int h = 0; h < n_head; ++h)
                rms_norm(q + h * hd_k, l.q_norm.data(), q + h * hd_k, hd_k, hp.norm_eps);
            for (int h = 0; own_kv && h < n_head_kv; ++h)
                rms_norm(k + h * hd_k, l.k_norm.data(), k + h * hd_k, hd_k, hp.norm_eps);
        }
        if (hp.v_norm && own_kv) {  // gemma4: each V head normalised, without a weight
            for (int h = 0; h < n_head_kv; ++h)
                rms_norm(v + h * hd_v, nullptr, v + h * hd_v, hd_v, hp.norm_eps);
        }
        // Rotary position embedding of Q and K (the sliding layers' own, if they have one).
        const float* cs = cs_all + size_t(t) * hp.n_rot;
        if (hp.rope_layer(il)) {  // smollm3: not on its NoPE layers
            rope_apply(rope, cs, q, n_head, hd_k);
            if (own_kv) rope_apply(rope, cs, k, n_head_kv, hd_k);
        }
        if (!own_kv) return;
        // Append K and V at this token's position in its sequence's cache.
        for (int h = 0; h < n_head_kv; ++h) {
            kv.k_traits().from_float(k + h * hd_k,
                                     kv.k_row(il, uint32_t(h), tok_seq[t], tok_pos[t]), hd_k);
            kv.v_traits().from_float(v + h * hd_v,
                                     kv.v_row(il, uint32_t(h), tok_seq[t], tok_pos[t]), hd_v);
        }
    });

    // Causal grouped-query attention, each sequence over its own cache: a token at position p
    // sees its sequence's positions 0 .. p (sliding layers: the last n_swa of them).
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
    batch.scale = hp.attn_scale > 0.0f ? hp.attn_scale : 1.0f / std::sqrt(float(hd_k));
    batch.window = swa ? hp.n_swa : 0;
    batch.softcap = hp.attn_softcap;
    batch.sinks = l.attn_sinks.empty() ? nullptr : l.attn_sinks.data();
    mw::attention(par, batch, s.attention);

    if (gated) {
        const int64_t n_out = int64_t(n_head) * hd_v;  // == n_q: the loader checks hd_k == hd_v
        for_each_token(n, n_out, [&](uint32_t t) {
            float* out = s.attn.data() + t * n_out;
            const float* gate = s.attn_gate.data() + t * n_out;
            for (int64_t i = 0; i < n_out; ++i) out[i] /= 1.0f + std::exp(-gate[i]);
        });
    }
    matmul(l.wo, s.attn.data(), n, s.xb2.data());
    if (!l.bo.empty()) {
        for_each_token(n, hp.n_embd, [&](uint32_t t) {
            add_inplace(s.xb2.data() + t * hp.n_embd, l.bo.data(), hp.n_embd);
        });
    }
}

// Multi-head latent attention in its absorbed form: the cache holds one row per position, the
// normalised KV latent c (kv_lora_rank) and the rotated shared key k_pe (n_rot). Each query head
// h turns its non-rotated part into latent space through k_b[h] (q_nope . k_nope = (k_b[h]^T
// q_nope) . c), keeps its rotated part for k_pe, and attends as one MQA group over the cache;
// its output, a mix of latents, becomes the head's value through v_b[h].
void ForwardStep::attention_mla(uint32_t il) {
    const HParams& hp = m.hp;
    const Layer& l = *layer;
    const int n_head = int(hp.n_head);
    const int64_t rank = hp.kv_lora_rank, n_rot = hp.n_rot;
    const int64_t hd_q = hp.head_dim_k_mla, nope = hd_q - n_rot, hd_v = hp.head_dim_v_mla;
    const int64_t hd_k = rank + n_rot;  // the cached row, and each absorbed query
    float* xb = s.xb.data();
    float* mq = s.mla_q.data();
    float* mkv = s.mla_kv.data();
    float* q = s.q.data();  // n x n_head x hd_k: the absorbed queries

    // Queries through the low-rank bottleneck (or one matrix), the latent and the rope key.
    if (l.wq_a.data) {
        matmul(l.wq_a, xb, n, s.mla_qa.data());
        const int64_t rq = hp.q_lora_rank;
        for_each_token(n, rq, [&](uint32_t t) {
            rms_norm(s.mla_qa.data() + t * rq, l.q_a_norm.data(), s.mla_qa.data() + t * rq, rq,
                     hp.norm_eps);
        });
        matmul(l.wq_b, s.mla_qa.data(), n, mq);
    } else {
        matmul(l.wq, xb, n, mq);
    }
    matmul(l.wkv_a, xb, n, mkv);
    for_each_token(n, hp.n_embd, [&](uint32_t t) {
        const float* cs = rope_cs + size_t(t) * n_rot;
        float* qt = mq + t * n_head * hd_q;
        float* kvt = mkv + t * hd_k;
        rope_apply(m.rope, cs, qt + nope, n_head, int(hd_q));  // the last n_rot dims of each head
        rms_norm(kvt, l.kv_a_norm.data(), kvt, rank, hp.norm_eps);
        rope_apply(m.rope, cs, kvt + rank, 1, int(n_rot));
        kv.k_traits().from_float(kvt, kv.k_row(il, 0, tok_seq[t], tok_pos[t]), hd_k);
        for (int h = 0; h < n_head; ++h) {
            std::copy(qt + h * hd_q + nope, qt + (h + 1) * hd_q,
                      q + (t * n_head + h) * hd_k + rank);
        }
    });
    // Absorb k_b into each head's query: q[h][0 .. rank) = k_b[h] q_nope[h].
    float* in = s.head_in.data();
    float* out = s.head_out.data();
    for (int h = 0; h < n_head; ++h) {
        for (uint32_t t = 0; t < n; ++t) {
            const float* src = mq + (size_t(t) * n_head + h) * hd_q;
            std::copy(src, src + nope, in + t * nope);
        }
        matmul(l.wk_b.expert(h), in, n, out);
        for (uint32_t t = 0; t < n; ++t) {
            std::copy(out + t * rank, out + (t + 1) * rank, q + (size_t(t) * n_head + h) * hd_k);
        }
    }

    for (uint32_t r = 0; r < b.n_seqs; ++r) {
        const ForwardSeq& fs = b.seqs[r];
        s.attn_seqs[r] = {fs.first_token, fs.n_tokens, fs.pos0, kv.keys(il, fs.seq),
                          kv.values(il, fs.seq)};
    }
    AttentionBatch batch{};
    batch.q = q;
    batch.out = s.attn.data();  // n x n_head x rank
    batch.seqs = s.attn_seqs.data();
    batch.n_seqs = b.n_seqs;
    batch.n_head = n_head;
    batch.n_head_kv = 1;
    batch.head_dim_k = int(hd_k);
    batch.head_dim_v = int(rank);
    batch.scale = mla_kq_scale(hp);
    mw::attention(par, batch, s.attention);

    // Each head's latent output through v_b[h], side by side for the output projection.
    for (int h = 0; h < n_head; ++h) {
        for (uint32_t t = 0; t < n; ++t) {
            const float* src = s.attn.data() + (size_t(t) * n_head + h) * rank;
            std::copy(src, src + rank, in + t * rank);
        }
        matmul(l.wv_b.expert(h), in, n, out);
        for (uint32_t t = 0; t < n; ++t) {
            std::copy(out + t * hd_v, out + (t + 1) * hd_v, xb + (size_t(t) * n_head + h) * hd_v);
        }
    }
    matmul(l.wo, xb, n, s.xb2.data());
}

}  // namespace mw
