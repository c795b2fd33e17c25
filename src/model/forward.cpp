#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/forward_step.h"
#include "tensor/cpu_features.h"

namespace mw {
namespace {

size_t max_matmul_scratch(const Model& m, uint32_t n) {
    size_t bytes = 0;
    auto consider = [&](const WeightMatrix& w) {
        if (w.traits) bytes = std::max(bytes, matmul_scratch_bytes(w, n));
    };
    consider(m.output);
    consider(m.ple_model_proj);
    if (m.nextn_input) consider(m.nextn_input->eh_proj);
    for (const Layer& l : m.layers) {
        for (const LayerMatrixRole& r : kLayerMatrices) consider(l.*r.member);
        for (const LayerStackRole& r : kLayerStacks) consider((l.*r.member).first);
    }
    return bytes;
}

}  // namespace

namespace {

// Sizes of every scratch buffer (in elements), shared by the constructor and the planner.
struct ScratchSizes {
    size_t x, xb, xb2, xb3, q, k, v, qkv, attn, gate, up, rope_cs, rope_cs_swa;
    size_t mla_qa, mla_q, mla_kv, head_in, head_out;
    size_t q_gated, attn_gate, dn_qkv, dn_conv, dn_z, dn_beta, dn_alpha, dn_o, dn_tmp;
    size_t router_logits, moe_in, moe_out, moe_expert, moe_weight, moe_tokens, router_probs;
    size_t ple, ple_gate, ple_tmp, g4;  // gemma4: per-layer inputs, their gate, a row each
    size_t nextn_in;                    // an MTP head's 2 n_embd inputs per token
    size_t tok_index;                   // sequence and position of each token
    size_t act_bytes;
    size_t attn_seqs;  // AttentionSeq entries
    AttentionShape attention;

    uint64_t total_bytes() const {
        const uint64_t floats = x + xb + xb2 + xb3 + q + k + v + qkv + attn + gate + up + rope_cs +
                                rope_cs_swa + mla_qa + mla_q + mla_kv + head_in + head_out +
                                q_gated + attn_gate + dn_qkv + dn_conv + dn_z + dn_beta + dn_alpha +
                                dn_tmp + dn_o + router_logits + moe_in + moe_out + moe_weight +
                                router_probs + ple + ple_gate + ple_tmp + g4 + nextn_in;
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
    bool fused_qkv = false;
    for (const Layer& l : m.layers) {
        n_ff = std::max({n_ff, size_t(l.ffn_gate.n_rows), size_t(l.ffn_up.n_rows),
                         size_t(l.ffn_down.n_cols), size_t(l.exp_gate.first.n_rows),
                         size_t(l.exp_down.first.n_cols), size_t(l.shared_gate.n_rows),
                         size_t(l.shared_down.n_cols)});
        fused_qkv = fused_qkv || l.wqkv.n_rows > 0;
    }
    const bool moe = hp.n_expert > 0;
    const bool own_swa_rope =
        hp.n_swa > 0 && (hp.rope_freq_base_swa != hp.rope_freq_base ||
                         hp.rope_freq_scale_swa != hp.rope_freq_scale || hp.n_rot_swa > 0);
    ScratchSizes z{};
    z.x = n * hp.n_embd;
    z.xb = n * std::max<size_t>(hp.n_embd, n_attn_out);
    z.xb2 = n * hp.n_embd;
    z.xb3 = n * hp.n_embd;
    z.q = n * hp.n_head * hp.head_dim_k;
    z.k = n * hp.n_embd_k_gqa();
    z.v = n * hp.n_embd_v_gqa();
    z.qkv = fused_qkv ? z.q + z.k + z.v : 0;
    z.attn = n * n_attn_out;
    z.gate = n * n_ff;
    z.up = n * n_ff;
    z.rope_cs = n * hp.n_rot;
    z.rope_cs_swa = own_swa_rope ? n * hp.n_rot : 0;
    if (hp.mla()) {
        const size_t nope = hp.head_dim_k_mla - hp.n_rot;
        z.mla_qa = n * hp.q_lora_rank;
        z.mla_q = n * hp.n_head * hp.head_dim_k_mla;
        z.mla_kv = n * (hp.kv_lora_rank + hp.n_rot);
        z.head_in = n * std::max<size_t>(nope, hp.kv_lora_rank);
        z.head_out = n * std::max<size_t>(hp.kv_lora_rank, hp.head_dim_v_mla);
    }
    if (hp.attn_output_gate) {
        z.q_gated = 2 * z.q;
        z.attn_gate = z.attn;
    }
    if (hp.shortconv_l_cache > 0) {
        z.dn_qkv = n * 3 * hp.n_embd;
        z.dn_conv = n * hp.n_embd;
    } else if (hp.n_recurrent_layers() > 0) {
        const DeltaNetShape& d = hp.delta_net;
        z.dn_qkv = z.dn_conv = n * d.conv_channels();
        z.dn_z = z.dn_o = n * d.inner();
        z.dn_beta = z.dn_alpha = n * d.n_v_heads;
        z.dn_tmp = size_t(std::max(1, n_threads)) * d.head_dim;
    }
    if (hp.n_embd_per_layer > 0) {
        const size_t width = size_t(hp.n_layer) * hp.n_embd_per_layer;
        z.ple = n * width;
        z.ple_gate = n * hp.n_embd_per_layer;
        z.ple_tmp = size_t(std::max(1, n_threads)) * width;
    }
    if (hp.n_embd_per_layer > 0 || hp.moe_with_dense) z.g4 = n * hp.n_embd;
    if (m.nextn_input) z.nextn_in = n * 2 * hp.n_embd;
    z.tok_index = 2 * n;
    z.router_logits = moe ? n * hp.n_expert : 0;
    z.moe_in = moe ? n * hp.n_embd : 0;
    z.moe_out = moe ? n * hp.n_embd : 0;
    z.moe_expert = moe ? n * hp.n_expert_used : 0;
    z.moe_weight = moe ? n * hp.n_expert_used : 0;
    z.moe_tokens = moe ? n : 0;
    z.router_probs = 2 * size_t(hp.n_expert);  // probabilities and selection scores
    z.act_bytes = max_matmul_scratch(m, max_batch);
    z.attn_seqs = max_seqs;
    z.attention = {max_batch,          max_seqs,           int(hp.n_head),        int(hp.n_head_kv),
                   int(hp.head_dim_k), int(hp.head_dim_v), std::max(1, n_threads)};
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const int kv = int(hp.n_head_kv_of(il));
        if (z.attention.min_head_kv == 0 || kv < z.attention.min_head_kv)
            z.attention.min_head_kv = kv;
    }
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
    : max_batch_(max_batch),
      max_seqs_(std::max(1u, max_seqs)),
      n_ctx_(n_ctx),
      n_threads(std::max(1, threads)) {
    const ScratchSizes z = scratch_sizes(m, max_batch, max_seqs_, threads);
    x.resize(z.x);
    xb.resize(z.xb);
    xb2.resize(z.xb2);
    xb3.resize(z.xb3);
    q.resize(z.q);
    k.resize(z.k);
    v.resize(z.v);
    qkv.resize(z.qkv);
    attn.resize(z.attn);
    gate.resize(z.gate);
    up.resize(z.up);
    rope_cs.resize(z.rope_cs);
    rope_cs_swa.resize(z.rope_cs_swa);
    mla_qa.resize(z.mla_qa);
    mla_q.resize(z.mla_q);
    mla_kv.resize(z.mla_kv);
    head_in.resize(z.head_in);
    head_out.resize(z.head_out);
    q_gated.resize(z.q_gated);
    attn_gate.resize(z.attn_gate);
    dn_qkv.resize(z.dn_qkv);
    dn_conv.resize(z.dn_conv);
    dn_z.resize(z.dn_z);
    dn_beta.resize(z.dn_beta);
    dn_alpha.resize(z.dn_alpha);
    dn_o.resize(z.dn_o);
    dn_tmp.resize(z.dn_tmp);
    ple.resize(z.ple);
    ple_gate.resize(z.ple_gate);
    ple_tmp.resize(z.ple_tmp);
    g4.resize(z.g4);
    nextn_in.resize(z.nextn_in);
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
    for (const auto* vec : {&x,       &xb,         &xb2,          &xb3,           &q,
                            &k,       &v,          &qkv,          &attn,          &gate,
                            &up,      &rope_cs,    &rope_cs_swa,  &mla_qa,        &mla_q,
                            &mla_kv,  &head_in,    &head_out,     &router_logits, &moe_in,
                            &moe_out, &moe_weight, &router_probs, &q_gated,       &attn_gate,
                            &dn_qkv,  &dn_conv,    &dn_z,         &dn_beta,       &dn_alpha,
                            &dn_o,    &dn_tmp,     &ple,          &ple_gate,      &ple_tmp,
                            &g4,      &nextn_in}) {
        floats += vec->size();
    }
    return floats * sizeof(float) +
           (moe_expert.size() + moe_tokens.size() + tok_seq.size() + tok_pos.size()) *
               sizeof(int32_t) +
           act.size() + attn_seqs.size() * sizeof(AttentionSeq) + attention.bytes();
}

void ForwardStep::norm_rows(const float* in, const float* weight, float* out, uint32_t rows,
                            int64_t width) const {
    const HParams& hp = m.hp;
    for_each_token(rows, width, [&](uint32_t t) {
        if (hp.norm == NormKind::layer) {
            layer_norm(in + t * width, weight, out + t * width, width, hp.norm_eps);
        } else {
            rms_norm(in + t * width, weight, out + t * width, width, hp.norm_eps);
        }
    });
}

void forward(const Model& m, SeqMemory& mem, ForwardScratch& s, Parallel& par,
             const ForwardBatch& b, float* logits, float* hidden) {
    const FlushSubnormals flush;  // pool workers flush them too (runtime/thread_pool.cpp)
    const HParams& hp = m.hp;
    const uint32_t n = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    float* x = s.x.data();
    float* xb = s.xb.data();
    s.experts_read_ = 0;
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
    // phi3 LongRoPE: the long factors once the context outgrows the original one.
    RopeParams rope = m.rope;
    if (!m.rope_factors_long.empty() && s.n_ctx_ > hp.rope_n_ctx_orig)
        rope.freq_factors = m.rope_factors_long.data();
    const bool own_swa_rope = !s.rope_cs_swa.empty();
    ForwardStep step{m,
                     mem.kv(),
                     mem.recurrent(),
                     s,
                     par,
                     b,
                     n,
                     tok_seq,
                     tok_pos,
                     s.rope_cs.data(),
                     own_swa_rope ? s.rope_cs_swa.data() : s.rope_cs.data(),
                     nullptr};

    // Token embeddings (scaled: gemma, granite), and the RoPE rotation of each token's position.
    step.for_each_token(n, n_embd, [&](uint32_t t) {
        get_row(m.tok_embd, b.tokens[t], x + t * n_embd);
        if (hp.embd_scale != 1.0f) {
            for (int64_t d = 0; d < n_embd; ++d) x[t * n_embd + d] *= hp.embd_scale;
        }
        rope_cache(rope, float(tok_pos[t]), s.rope_cs.data() + size_t(t) * hp.n_rot);
        if (own_swa_rope)
            rope_cache(m.rope_swa, float(tok_pos[t]), s.rope_cs_swa.data() + size_t(t) * hp.n_rot);
    });
    if (hp.n_embd_per_layer > 0) step.per_layer_inputs();
    if (const NextnHead* h = m.nextn_input) {
        // An MTP head: x = eh_proj [enorm(embedding); hnorm(h)] (the embedding first, as
        // llama.cpp concatenates them).
        float* in = s.nextn_in.data();
        step.for_each_token(n, n_embd, [&](uint32_t t) {
            float* row = in + size_t(t) * 2 * n_embd;
            rms_norm(x + t * n_embd, h->enorm.data(), row, n_embd, hp.norm_eps);
            if (b.embd_h) {
                rms_norm(b.embd_h + size_t(t) * n_embd, h->hnorm.data(), row + n_embd, n_embd,
                         hp.norm_eps);
            } else {
                std::fill(row + n_embd, row + 2 * n_embd, 0.0f);
            }
        });
        step.matmul(h->eh_proj, in, n, x);
    }

    float* attn_out = s.xb2.data();
    float* ffn_out = s.xb3.data();
    const float rs = hp.residual_scale;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerHold hold(m.layer_source, m.layers[il], il);
        const Layer& l = hold.layer();
        step.layer = &l;
        step.norm_rows(x, l.attn_norm.data(), xb, n, n_embd);
        if (hp.kind(il) == LayerKind::delta_net) {
            step.delta_net(il);
        } else if (hp.kind(il) == LayerKind::short_conv) {
            step.short_conv(il);
        } else if (hp.mla()) {
            step.attention_mla(il);
        } else {
            step.attention(il);
        }
        if (hp.parallel_residual) {
            // command-r: the FFN reads the attention's input norm; both outputs join the stream.
            step.ffn(il, xb, ffn_out);
            step.for_each_token(n, n_embd, [&](uint32_t t) {
                add_inplace(x + t * n_embd, attn_out + t * n_embd, n_embd);
                add_inplace(x + t * n_embd, ffn_out + t * n_embd, n_embd);
            });
            continue;
        }
        if (hp.post_norms) step.norm_rows(attn_out, l.post_attn_norm.data(), attn_out, n, n_embd);
        step.for_each_token(n, n_embd, [&](uint32_t t) {
            add_scaled(x + t * n_embd, attn_out + t * n_embd, rs, n_embd);
        });
        if (hp.moe_with_dense && l.moe) {
            step.gemma4_moe_ffn(il, ffn_out);
        } else {
            step.norm_rows(x, l.ffn_norm.data(), xb, n, n_embd);
            step.ffn(il, xb, ffn_out);
        }
        if (hp.post_norms) step.norm_rows(ffn_out, l.post_ffn_norm.data(), ffn_out, n, n_embd);
        step.for_each_token(n, n_embd, [&](uint32_t t) {
            add_scaled(x + t * n_embd, ffn_out + t * n_embd, rs, n_embd);
        });
        if (l.ple_gate.traits || !l.out_scale.empty()) step.gemma4_layer_end(il);
    }
    if (hidden) step.norm_rows(x, m.output_norm.data(), hidden, n, n_embd);
    if (!logits || b.n_outputs == 0) return;

    // Final norm and the language-model head, for the tokens the caller wants; then the logit
    // scale (command-r, granite) and soft-cap (gemma2).
    if (hidden) {
        step.for_each_token(b.n_outputs, n_embd, [&](uint32_t i) {
            std::copy(hidden + b.outputs[i] * n_embd, hidden + (b.outputs[i] + 1) * n_embd,
                      xb + i * n_embd);
        });
    } else {
        step.for_each_token(b.n_outputs, n_embd, [&](uint32_t i) {
            std::copy(x + b.outputs[i] * n_embd, x + (b.outputs[i] + 1) * n_embd,
                      s.xb2.data() + i * n_embd);
        });
        step.norm_rows(s.xb2.data(), m.output_norm.data(), xb, b.n_outputs, n_embd);
    }
    step.matmul(m.output, xb, b.n_outputs, logits);
    const int64_t n_vocab = hp.n_vocab;
    if (hp.logit_scale != 1.0f || hp.final_softcap > 0.0f) {
        step.for_each_token(b.n_outputs, n_vocab, [&](uint32_t i) {
            float* row = logits + i * n_vocab;
            if (hp.logit_scale != 1.0f) {
                for (int64_t v = 0; v < n_vocab; ++v) row[v] *= hp.logit_scale;
            }
            if (hp.final_softcap > 0.0f) {
                const float cap = hp.final_softcap, inv = 1.0f / hp.final_softcap;
                for (int64_t v = 0; v < n_vocab; ++v) row[v] = cap * std::tanh(row[v] * inv);
            }
        });
    }
}

}  // namespace mw
