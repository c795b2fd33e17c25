// One forward step in progress, shared by the parts of the forward pass (forward.cpp drives the
// layers; forward_attention.cpp and forward_ffn.cpp hold the attention and FFN blocks). Internal
// to model/.
#pragma once

#include <cstdint>

#include "model/forward.h"

namespace mw {

struct ForwardStep {
    const Model& m;
    KvCache& kv;
    RecurrentState& rs;
    ForwardScratch& s;
    Parallel& par;
    const ForwardBatch& b;
    uint32_t n;                // tokens of the batch
    const uint32_t* tok_seq;   // sequence of each token
    const uint32_t* tok_pos;   // position of each token
    const float* rope_cs;      // per token: the global layers' rotation (n_rot cos/sin pairs)
    const float* rope_cs_swa;  // the sliding layers' (== rope_cs when they share the RoPE)
    // The layer being computed: the model's own, or a copy in memory (m.layer_source).
    const Layer* layer = nullptr;

    // Every matrix product goes through here, which shows its input to the observer first
    // (imatrix collection), then runs it on the GPU when the matrix was placed there (-ngl).
    void matmul(const WeightMatrix& w, const float* in, int64_t rows, float* out) const {
        if (s.observer) s.observer->on_matmul(w, in, rows);
        if (m.offload && m.offload->holds(w)) {
            m.offload->matmul(w, in, rows, out);
            return;
        }
        mw::matmul(par, w, in, rows, out, s.act.data());
    }

    // Runs f(t) for every token t < count, split over the threads; `width` is the work per token.
    template <typename F>
    void for_each_token(uint32_t count, int64_t width, F&& f) const {
        parallel_for_work(par, int64_t(count) * width, [&](int ith, int nth) {
            const Range r = split_range(count, ith, nth);
            for (int64_t t = r.begin; t < r.end; ++t) f(uint32_t(t));
        });
    }

    // The architecture's norm (RMSNorm or LayerNorm) of n rows of `width` floats.
    void norm_rows(const float* in, const float* weight, float* out, uint32_t rows,
                   int64_t width) const;

    // Attention of layer il on the normalised input s.xb: its output projection in s.xb2.
    void attention(uint32_t il);      // forward_attention.cpp: GQA, fused QKV, windows, caps
    void attention_mla(uint32_t il);  // multi-head latent attention (deepseek2)
    void delta_net(uint32_t il);      // forward_delta_net.cpp: gated DeltaNet (qwen35)
    void short_conv(uint32_t il);     // forward_short_conv.cpp: gated short conv (lfm2)
    // FFN of layer il on `in` (n x n_embd), its output in `out`. The router reads router_in
    // when given (gemma4), else `in`.
    void ffn(uint32_t il, const float* in, float* out,
             const float* router_in = nullptr);  // forward_ffn.cpp
    // gemma4 (forward_gemma4.cpp): the per-layer inputs of the batch's tokens (from the scaled
    // input embeddings in s.x), a MoE layer's dense MLP and experts from the residual s.x (the
    // sum of both, each normalised, in `out`), and the end of a layer (per-layer input branch,
    // output scale) on s.x.
    void per_layer_inputs();
    void gemma4_moe_ffn(uint32_t il, float* out);
    void gemma4_layer_end(uint32_t il);
    // MoE under a memory budget: asks the expert source for layer il's routed experts and the
    // next layer's likely ones (forward_ffn.cpp).
    void prefetch_experts(uint32_t il, const float* in);
};

}  // namespace mw
