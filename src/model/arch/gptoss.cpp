// gpt-oss (llama.cpp's openai-moe): GQA with biases on Q, K, V and the output, a learned sink
// logit per query head (tensor/attention.h), sliding-window attention on the even layers and full
// attention on the odd ones, YaRN RoPE (NEOX) on every layer, and in every layer a mixture of
// experts: a router with a bias, softmax weights over the chosen experts only, and experts with
// biases and the clamped SwiGLU (FfnActivation::swiglu_oai). The FFN's norm is stored as
// post_attention_norm.
#include <fmt/format.h>

#include "base/error.h"
#include "model/arch/arch.h"

namespace mw {

void read_gptoss(const gguf::GgufFile& f, HParams& hp) {
    const std::string& a = hp.arch;
    hp.n_swa = require_u32(f, a, "attention.sliding_window");
    check_range(f, "attention.sliding_window", hp.n_swa, 1, hp.n_ctx_train);
    // No key in the converter's files: llama.cpp's default, every second layer (the even ones)
    // sliding.
    hp.swa_pattern = get_arch_u32(f, a, "attention.sliding_window_pattern").value_or(2);
    check_range(f, "attention.sliding_window_pattern", hp.swa_pattern, 2, hp.n_layer + 1);
    // The sliding layers rotate as the full ones do (YaRN included).
    hp.rope_freq_base_swa = hp.rope_freq_base;
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
    hp.ffn_act = FfnActivation::swiglu_oai;
    // Softmax over the chosen experts' logits alone = the full softmax renormalised over them.
    hp.expert_gating = ExpertGating::softmax;
    hp.expert_weights_norm = true;
}

void bind_gptoss_layer(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    const int64_t n_q = int64_t(hp.n_head) * hp.head_dim_k;
    const int64_t n_k = hp.n_embd_k_gqa(), n_v = hp.n_embd_v_gqa();
    const int64_t n_out = int64_t(hp.n_head) * hp.head_dim_v;
    l.wq = b.matrix(p + "attn_q.weight", n_embd, n_q);
    l.wk = b.matrix(p + "attn_k.weight", n_embd, n_k);
    l.wv = b.matrix(p + "attn_v.weight", n_embd, n_v);
    l.wo = b.matrix(p + "attn_output.weight", n_out, n_embd);
    l.bq = b.vector(p + "attn_q.bias", n_q);
    l.bk = b.vector(p + "attn_k.bias", n_k);
    l.bv = b.vector(p + "attn_v.bias", n_v);
    l.bo = b.vector(p + "attn_output.bias", n_embd);
    l.attn_sinks = b.vector(p + "attn_sinks.weight", hp.n_head);
    l.ffn_norm = b.vector(p + "post_attention_norm.weight", n_embd);
    // The router's and experts' biases; their matrices are bound by the common MoE code.
    const int64_t ne = hp.n_expert, nf = hp.n_ff_expert;
    l.router_bias = b.vector(p + "ffn_gate_inp.bias", ne);
    l.exp_gate_bias = b.vector(p + "ffn_gate_exps.bias", ne * nf, true, {nf, ne});
    l.exp_up_bias = b.vector(p + "ffn_up_exps.bias", ne * nf, true, {nf, ne});
    l.exp_down_bias = b.vector(p + "ffn_down_exps.bias", ne * n_embd, true, {n_embd, ne});
}

}  // namespace mw
