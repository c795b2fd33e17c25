// LFM2 (lfm2, and lfm2moe with its sigmoid-routed experts after leading dense layers): most layers
// are gated short convolutions (in_proj gives B, C, X; y = out_proj(C * conv(B * X)) over the
// last l_cache inputs, kept per sequence), the rest GQA with per-head Q/K norms. The per-layer
// head_count_kv array says which: 0 marks a convolution layer. The final norm is stored as
// token_embd_norm. The convolution's forward is in model/forward_short_conv.cpp.
#include <fmt/format.h>

#include "base/error.h"
#include "model/arch/arch.h"

namespace mw {

void read_lfm2(const gguf::GgufFile& f, HParams& hp) {
    const std::string& a = hp.arch;
    hp.shortconv_l_cache = require_u32(f, a, "shortconv.l_cache");
    check_range(f, "shortconv.l_cache", hp.shortconv_l_cache, 1, 64);
    const std::vector<uint32_t> kv =
        get_arch_u32_per_layer(f, a, "attention.head_count_kv", hp.n_layer);
    hp.layer_kinds.assign(hp.n_layer, LayerKind::attention);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const uint32_t n = kv.empty() ? hp.n_head_kv : kv[il];
        if (n == 0) {
            hp.layer_kinds[il] = LayerKind::short_conv;
        } else if (n != hp.n_head_kv) {
            fail(ErrorKind::unsupported,
                 "{}: {}.attention.head_count_kv differs between attention layers ({} at layer "
                 "{}, {} elsewhere)",
                 f.name(), a, n, il, hp.n_head_kv);
        }
    }
    if (hp.n_expert > 0) {
        hp.n_layer_dense_lead = get_arch_u32(f, a, "leading_dense_block_count").value_or(0);
        check_range(f, "leading_dense_block_count", hp.n_layer_dense_lead, 0, hp.n_layer);
        const uint32_t gating = get_arch_u32(f, a, "expert_gating_func").value_or(2);
        if (gating != 1 && gating != 2) {
            fail(ErrorKind::unsupported,
                 "{}: {}.expert_gating_func = {} is not supported (1 softmax, 2 sigmoid)", f.name(),
                 a, gating);
        }
        hp.expert_gating = gating == 2 ? ExpertGating::sigmoid : ExpertGating::softmax;
    }
}

void bind_lfm2_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
    if (hp.kind(il) == LayerKind::short_conv) {
        l.wqkv = b.matrix(p + "shortconv.in_proj.weight", n_embd, 3 * n_embd);  // B, C, X
        l.ssm_conv = b.vector(p + "shortconv.conv.weight", int64_t(hp.shortconv_l_cache) * n_embd,
                              true, {int64_t(hp.shortconv_l_cache), n_embd});
        l.wo = b.matrix(p + "shortconv.out_proj.weight", n_embd, n_embd);
        return;
    }
    const int64_t n_q = int64_t(hp.n_head) * hp.head_dim_k;
    l.wq = b.matrix(p + "attn_q.weight", n_embd, n_q);
    l.wk = b.matrix(p + "attn_k.weight", n_embd, hp.n_embd_k_gqa());
    l.wv = b.matrix(p + "attn_v.weight", n_embd, hp.n_embd_v_gqa());
    l.q_norm = b.vector(p + "attn_q_norm.weight", hp.head_dim_k);
    l.k_norm = b.vector(p + "attn_k_norm.weight", hp.head_dim_k);
    l.wo = b.matrix(p + "attn_output.weight", int64_t(hp.n_head) * hp.head_dim_v, n_embd);
}

void bind_lfm2moe_extra(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    l.expert_bias = b.vector(fmt::format("blk.{}.exp_probs_b.bias", il), hp.n_expert);
}

}  // namespace mw
