// LFM2 and LFM2-MoE, Hugging Face -> GGUF, as llama.cpp's converter maps them: operator_norm
// before the mixer; a convolution layer's in_proj (B, C, X), depthwise kernel [channels, 1, L]
// squeezed to [L, channels] (F32) and out_proj; an attention layer's q/k/v, out_proj and per-head
// q/k layernorms (no permutation: NeoX RoPE); the FFN's w1 (gate), w3 (up), w2 (down), or in
// lfm2moe's layers after the leading dense ones the router (gate), the selection bias
// (expert_bias) and the experts stacked; the final norm is embedding_norm, written as
// token_embd_norm. token_embd was added by the caller; the output is tied.
#include "convert/tensor_builder.h"

namespace mw::convert {

void build_lfm2(TensorBuilder& b, Checkpoint& ck, const HfConfig& c) {
    const uint64_t E = c.n_embd, hd = c.head_dim, L = c.shortconv_l_cache;
    const uint64_t n_q = uint64_t(c.n_head) * hd, n_kv = uint64_t(c.n_head_kv) * hd;
    for (uint32_t i = 0; i < c.n_layer; ++i) {
        const std::string hf = fmt::format("{}layers.{}.", c.tensor_prefix, i);
        const std::string g = fmt::format("blk.{}.", i);
        b.add(g + "attn_norm.weight", hf + "operator_norm.weight", {E});
        if (c.conv_layers[i]) {
            b.add(g + "shortconv.in_proj.weight", hf + "conv.in_proj.weight", {3 * E, E});
            b.add_rows(g + "shortconv.conv.weight", hf + "conv.conv.weight", {E, 1, L}, {E, L}, {});
            b.add(g + "shortconv.out_proj.weight", hf + "conv.out_proj.weight", {E, E});
        } else {
            b.add(g + "attn_q.weight", hf + "self_attn.q_proj.weight", {n_q, E});
            b.add(g + "attn_k.weight", hf + "self_attn.k_proj.weight", {n_kv, E});
            b.add(g + "attn_v.weight", hf + "self_attn.v_proj.weight", {n_kv, E});
            b.add(g + "attn_q_norm.weight", hf + "self_attn.q_layernorm.weight", {hd});
            b.add(g + "attn_k_norm.weight", hf + "self_attn.k_layernorm.weight", {hd});
            b.add(g + "attn_output.weight", hf + "self_attn.out_proj.weight", {E, n_q});
        }
        b.add(g + "ffn_norm.weight", hf + "ffn_norm.weight", {E});
        const std::string ff = hf + "feed_forward.";
        if (c.n_expert == 0 || i < c.n_layer_dense_lead) {
            b.add(g + "ffn_gate.weight", ff + "w1.weight", {c.n_ff, E});
            b.add(g + "ffn_up.weight", ff + "w3.weight", {c.n_ff, E});
            b.add(g + "ffn_down.weight", ff + "w2.weight", {E, c.n_ff});
            continue;
        }
        const uint64_t F = c.n_ff_expert, X = c.n_expert;
        b.add(g + "ffn_gate_inp.weight", ff + "gate.weight", {X, E});
        b.add(g + "exp_probs_b.bias", ff + "expert_bias", {X});
        if (ck.has(ff + "experts.gate_up_proj")) {
            // transformers' fused layout: gate_up_proj [expert][gate F | up F][E].
            std::vector<uint32_t> gate, up;
            for (uint32_t e = 0; e < X; ++e) {
                for (uint32_t r = 0; r < F; ++r) {
                    gate.push_back(uint32_t(e * 2 * F + r));
                    up.push_back(uint32_t(e * 2 * F + F + r));
                }
            }
            const std::string fused = ff + "experts.gate_up_proj";
            b.add_rows(g + "ffn_gate_exps.weight", fused, {X, 2 * F, E}, {X, F, E},
                       std::move(gate));
            b.add_rows(g + "ffn_up_exps.weight", fused, {X, 2 * F, E}, {X, F, E}, std::move(up));
            b.add(g + "ffn_down_exps.weight", ff + "experts.down_proj", {X, E, F});
            continue;
        }
        // The published checkpoints: one w1 (gate), w3 (up), w2 (down) per expert.
        const auto names = [&](const char* w) {
            std::vector<std::string> out;
            for (uint32_t e = 0; e < X; ++e)
                out.push_back(fmt::format("{}experts.{}.{}.weight", ff, e, w));
            return out;
        };
        b.add_experts(g + "ffn_gate_exps.weight", names("w1"), {F, E});
        b.add_experts(g + "ffn_up_exps.weight", names("w3"), {F, E});
        b.add_experts(g + "ffn_down_exps.weight", names("w2"), {E, F});
    }
    b.add("token_embd_norm.weight", c.tensor_prefix + "embedding_norm.weight", {E});
}

}  // namespace mw::convert
