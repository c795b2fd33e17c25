// Gemma 4, Hugging Face -> GGUF, as llama.cpp's converter maps it. Norm weights are used as
// stored (Gemma 4's RMSNorm multiplies by w, not 1 + w). A sharing layer (the last
// num_kv_shared_layers) has no k_proj, k_norm or v_proj; a full layer with attention_k_eq_v has
// no v_proj. The per-layer embeddings: embed_tokens_per_layer, per_layer_model_projection and
// per_layer_projection_norm, then per layer per_layer_input_gate, per_layer_projection and
// post_per_layer_input_norm. The MoE block beside the dense MLP: router.proj (ffn_gate_inp),
// router.scale (its input scale, ffn_gate_inp.scale), router.per_expert_scale (ffn_down_exps
// .scale), the stacked experts (gate_up_proj kept fused, down_proj) and the norms
// post_feedforward_layernorm_1 / pre_feedforward_layernorm_2 / post_feedforward_layernorm_2.
// The full layers' partial ("proportional") RoPE is written as rope_freqs: factor 1 on the
// rotated pairs and 1e30 (no rotation) on the rest.
#include "convert/tensor_builder.h"

namespace mw::convert {

void build_gemma4(TensorBuilder& b, const HfConfig& c) {
    const uint64_t E = c.n_embd, V = c.vocab_size, P = c.n_embd_per_layer, H = c.n_head;
    const std::string& m = c.tensor_prefix;
    std::vector<float> freqs(c.head_dim / 2, 1e30f);
    std::fill_n(freqs.begin(), c.n_rot_full_pairs, 1.0f);
    b.add_values("rope_freqs.weight", std::move(freqs));
    if (P > 0) {
        const uint64_t LP = uint64_t(c.n_layer) * P;
        b.add("per_layer_token_embd.weight", m + "embed_tokens_per_layer.weight", {V, LP});
        b.add("per_layer_model_proj.weight", m + "per_layer_model_projection.weight", {LP, E});
        b.add("per_layer_proj_norm.weight", m + "per_layer_projection_norm.weight", {P});
    }
    b.add("output_norm.weight", m + "norm.weight", {E});
    const uint32_t first_shared = c.n_layer - c.n_kv_shared;
    for (uint32_t i = 0; i < c.n_layer; ++i) {
        const std::string hf = fmt::format("{}layers.{}.", m, i);
        const std::string g = fmt::format("blk.{}.", i);
        const bool swa = c.swa_layers[i];
        const uint64_t hd = swa ? c.head_dim_swa : c.head_dim;
        const uint64_t n_kv = (swa ? c.n_head_kv : c.n_head_kv_full) * hd;
        b.add(g + "attn_norm.weight", hf + "input_layernorm.weight", {E});
        b.add(g + "attn_q.weight", hf + "self_attn.q_proj.weight", {H * hd, E});
        b.add(g + "attn_q_norm.weight", hf + "self_attn.q_norm.weight", {hd});
        if (i < first_shared) {
            b.add(g + "attn_k.weight", hf + "self_attn.k_proj.weight", {n_kv, E});
            b.add(g + "attn_k_norm.weight", hf + "self_attn.k_norm.weight", {hd});
            if (swa || !c.k_eq_v) {
                b.add(g + "attn_v.weight", hf + "self_attn.v_proj.weight", {n_kv, E});
            }
        }
        b.add(g + "attn_output.weight", hf + "self_attn.o_proj.weight", {E, H * hd});
        b.add(g + "post_attention_norm.weight", hf + "post_attention_layernorm.weight", {E});
        b.add(g + "ffn_norm.weight", hf + "pre_feedforward_layernorm.weight", {E});
        const uint64_t F = c.n_ff_per_layer.empty() ? c.n_ff : c.n_ff_per_layer[i];
        b.add(g + "ffn_gate.weight", hf + "mlp.gate_proj.weight", {F, E});
        b.add(g + "ffn_up.weight", hf + "mlp.up_proj.weight", {F, E});
        b.add(g + "ffn_down.weight", hf + "mlp.down_proj.weight", {E, F});
        if (c.n_expert > 0) {
            const uint64_t X = c.n_expert, FX = c.n_ff_expert;
            b.add(g + "post_ffw_norm_1.weight", hf + "post_feedforward_layernorm_1.weight", {E});
            b.add(g + "pre_ffw_norm_2.weight", hf + "pre_feedforward_layernorm_2.weight", {E});
            b.add(g + "post_ffw_norm_2.weight", hf + "post_feedforward_layernorm_2.weight", {E});
            b.add(g + "ffn_gate_inp.weight", hf + "router.proj.weight", {X, E});
            b.add(g + "ffn_gate_inp.scale", hf + "router.scale", {E});
            b.add(g + "ffn_gate_up_exps.weight", hf + "experts.gate_up_proj", {X, 2 * FX, E});
            b.add(g + "ffn_down_exps.weight", hf + "experts.down_proj", {X, E, FX});
            b.add(g + "ffn_down_exps.scale", hf + "router.per_expert_scale", {X});
        }
        b.add(g + "post_ffw_norm.weight", hf + "post_feedforward_layernorm.weight", {E});
        if (P > 0) {
            b.add(g + "inp_gate.weight", hf + "per_layer_input_gate.weight", {P, E});
            b.add(g + "proj.weight", hf + "per_layer_projection.weight", {E, P});
            b.add(g + "post_norm.weight", hf + "post_per_layer_input_norm.weight", {E});
        }
        b.add(g + "layer_output_scale.weight", hf + "layer_scalar", {1});
    }
}

}  // namespace mw::convert
