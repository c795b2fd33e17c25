// Gemma 4 (gemma4): the gemma3 block (GeGLU, post-norms, Q/K norms, input x sqrt(n_embd)) with
// - sliding and full layers from a bool array, each kind with its own head size, KV heads and
//   RoPE (sliding: base freq_base_swa over rope.dimension_count_swa dims; full: rope_freqs
//   divides the angles, the converter's encoding of "proportional" RoPE);
// - V normalised per head without a weight, attention scale 1 (the Q/K norms set it);
// - per-layer FFN widths; KV sharing: the last shared_kv_layers layers have no K/V and attend to
//   the last earlier layer of their kind (HParams::kv_layer);
// - per-layer embeddings (E2B, E4B): per token a row of n_layer x n_embd_per_layer, mixed with a
//   projection of the input, gates a small residual branch after each layer's FFN;
// - a scalar per layer output, a final soft-cap;
// - MoE (26B-A4B): in every layer a dense MLP beside the experts (fused gate/up, a per-expert
//   output scale, a router reading the unweighted norm of the residual), K = V on layers
//   without attn_v.
// The forward of the parts beyond the common block is in model/forward_gemma4.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "model/arch/arch.h"

namespace mw {

void read_gemma4(const gguf::GgufFile& f, HParams& hp) {
    const std::string& a = hp.arch;
    hp.embd_scale = std::sqrt(float(hp.n_embd));
    hp.post_norms = true;
    hp.ffn_act = FfnActivation::gelu;
    hp.attn_scale = 1.0f;
    hp.v_norm = true;
    hp.final_softcap = positive_f32(f, a + ".final_logit_softcapping", 30.0f);

    // Sliding layers: the bool array says which.
    hp.n_swa = require_u32(f, a, "attention.sliding_window");
    check_range(f, "attention.sliding_window", hp.n_swa, 1, 1u << 24);
    const std::string pattern = a + ".attention.sliding_window_pattern";
    const gguf::Value* v = f.find(pattern);
    if (!v) fail(ErrorKind::bad_file, "{}: required metadata \"{}\" is missing", f.name(), pattern);
    if (v->type != gguf::ValueType::array || v->elem_type != gguf::ValueType::boolean) {
        fail(ErrorKind::bad_file, "{}: {} must be an array of booleans", f.name(), pattern);
    }
    if (v->count != hp.n_layer) {
        fail(ErrorKind::bad_file, "{}: {} has {} entries for {} layers (block_count)", f.name(),
             pattern, v->count, hp.n_layer);
    }
    hp.swa_layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) hp.swa_layers[il] = v->data[il] != 0;
    hp.rope_freq_base_swa = f.get_f32(a + ".rope.freq_base_swa").value_or(10000.0f);
    if (!(hp.rope_freq_base_swa > 1.0f)) {
        fail(ErrorKind::bad_file, "{}: rope.freq_base_swa = {} must be > 1", f.name(),
             hp.rope_freq_base_swa);
    }
    hp.rope_freq_scale_swa = 1.0f;

    // Head sizes: the common keys are the full layers', the _swa ones the sliding layers'.
    const uint32_t k_full = hp.head_dim_k, v_full = hp.head_dim_v;
    const uint32_t k_swa = require_u32(f, a, "attention.key_length_swa");
    const uint32_t v_swa = require_u32(f, a, "attention.value_length_swa");
    check_range(f, "attention.key_length_swa", k_swa, 1, 4096);
    check_range(f, "attention.value_length_swa", v_swa, 1, 4096);
    if (k_full != v_full || k_swa != v_swa) {
        fail(ErrorKind::bad_file,
             "{}: gemma4 needs key_length = value_length ({} vs {}) and key_length_swa = "
             "value_length_swa ({} vs {})",
             f.name(), k_full, v_full, k_swa, v_swa);
    }
    hp.n_rot_swa = get_arch_u32(f, a, "rope.dimension_count_swa").value_or(k_swa);
    if (hp.n_rot_swa == 0 || hp.n_rot_swa > k_swa || hp.n_rot_swa % 2 != 0) {
        fail(ErrorKind::bad_file,
             "{}: rope.dimension_count_swa = {} must be even and at most the sliding head size {}",
             f.name(), hp.n_rot_swa, k_swa);
    }
    // Per-layer KV heads and FFN widths (read_hparams keeps the largest in the scalars).
    std::vector<uint32_t> kv = get_arch_u32_per_layer(f, a, "attention.head_count_kv", hp.n_layer);
    if (kv.empty()) kv.assign(hp.n_layer, hp.n_head);
    hp.n_ff_l = get_arch_u32_per_layer(f, a, "feed_forward_length", hp.n_layer);
    if (hp.n_ff_l.empty()) {
        fail(ErrorKind::bad_file, "{}: required metadata \"{}.feed_forward_length\" is missing",
             f.name(), a);
    }
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (kv[il] == 0 || hp.n_head % kv[il] != 0) {
            fail(ErrorKind::bad_file,
                 "{}: {}.attention.head_count_kv[{}] = {} must divide attention.head_count = {}",
                 f.name(), a, il, kv[il], hp.n_head);
        }
        if (hp.n_ff_l[il] == 0 || hp.n_ff_l[il] > (1u << 20)) {
            fail(ErrorKind::bad_file, "{}: {}.feed_forward_length[{}] = {} is out of range [1, {}]",
                 f.name(), a, il, hp.n_ff_l[il], 1u << 20);
        }
        const bool swa = hp.swa_layers[il];
        hp.head_dim_k_l.push_back(swa ? k_swa : k_full);
        hp.head_dim_v_l.push_back(swa ? v_swa : v_full);
    }
    hp.n_head_kv_l = kv;
    hp.head_dim_k = std::max(k_full, k_swa);
    hp.head_dim_v = std::max(v_full, v_swa);

    // KV sharing: each sharing layer needs an earlier layer of its kind with a cache.
    hp.n_kv_shared = get_arch_u32(f, a, "attention.shared_kv_layers").value_or(0);
    if (hp.n_kv_shared >= hp.n_layer) {
        fail(ErrorKind::bad_file,
             "{}: {}.attention.shared_kv_layers = {} must be less than block_count = {} (the "
             "sharing layers read the caches of earlier layers)",
             f.name(), a, hp.n_kv_shared, hp.n_layer);
    }
    for (uint32_t il = hp.n_layer - hp.n_kv_shared; il < hp.n_layer; ++il) {
        const uint32_t src = hp.kv_layer(il);
        if (src == il || hp.head_dim_k_l[src] != hp.head_dim_k_l[il] ||
            hp.n_head_kv_l[src] != hp.n_head_kv_l[il]) {
            fail(ErrorKind::bad_file,
                 "{}: {}.attention.shared_kv_layers = {}: layer {} has no earlier {} layer with "
                 "the same KV heads and head size to share",
                 f.name(), a, hp.n_kv_shared, il, hp.swa_layers[il] ? "sliding" : "full");
        }
    }

    hp.n_embd_per_layer = get_arch_u32(f, a, "embedding_length_per_layer_input").value_or(0);
    check_range(f, "embedding_length_per_layer_input", hp.n_embd_per_layer, 0, 1u << 16);
    if (hp.n_expert > 0) {
        hp.expert_gating = ExpertGating::softmax;
        hp.expert_weights_norm = true;
        hp.moe_with_dense = true;
    }
}

void bind_gemma4_model(Binder& b, Model& m) {
    const HParams& hp = m.hp;
    // The full layers' proportional RoPE: without rope_freqs they would rotate every pair.
    if (!b.has("rope_freqs.weight")) (void)b.vector("rope_freqs.weight", hp.n_rot / 2);
    if (hp.n_embd_per_layer == 0) return;
    const int64_t width = int64_t(hp.n_layer) * hp.n_embd_per_layer;
    m.ple_embd = b.matrix("per_layer_token_embd.weight", width, hp.n_vocab);
    m.ple_model_proj = b.matrix("per_layer_model_proj.weight", hp.n_embd, width);
    m.ple_proj_norm = b.vector("per_layer_proj_norm.weight", hp.n_embd_per_layer);
}

// Attention (a KV-sharing layer: Q only), the norms around it and around the FFN, the layer's
// output scale and its per-layer input branch.
void bind_gemma4_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    const int64_t hd_k = hp.head_dim_k_of(il), hd_v = hp.head_dim_v_of(il);
    const int64_t n_kv = hp.n_head_kv_of(il);
    l.wq = b.matrix(p + "attn_q.weight", n_embd, hp.n_head * hd_k);
    l.q_norm = b.vector(p + "attn_q_norm.weight", hd_k);
    if (hp.has_kv(il)) {
        l.wk = b.matrix(p + "attn_k.weight", n_embd, n_kv * hd_k);
        l.k_norm = b.vector(p + "attn_k_norm.weight", hd_k);
        l.wv = b.matrix(p + "attn_v.weight", n_embd, n_kv * hd_v, false);  // absent: K = V
    }
    l.wo = b.matrix(p + "attn_output.weight", hp.n_head * hd_v, n_embd);
    l.post_attn_norm = b.vector(p + "post_attention_norm.weight", n_embd);
    l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
    l.post_ffn_norm = b.vector(p + "post_ffw_norm.weight", n_embd);
    l.out_scale = b.vector(p + "layer_output_scale.weight", 1, false);
    if (hp.n_embd_per_layer > 0) {
        const int64_t w = hp.n_embd_per_layer;
        l.ple_gate = b.matrix(p + "inp_gate.weight", n_embd, w);
        l.ple_proj = b.matrix(p + "proj.weight", w, n_embd);
        l.ple_post_norm = b.vector(p + "post_norm.weight", n_embd);
    }
}

// The dense MLP, of this layer's width.
void bind_gemma4_ffn(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff_of(il);
    l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, n_ff);
    l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
    l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
}

// Beside the router and experts (the common code binds them, fused gate/up included): the
// dense MLP, the router's input scale, the norms of both branches, the experts' output scales.
void bind_gemma4_moe(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    bind_gemma4_ffn(b, hp, il, l);
    l.router_scale = b.vector(p + "ffn_gate_inp.scale", n_embd);
    l.pre_ffn_norm_2 = b.vector(p + "pre_ffw_norm_2.weight", n_embd);
    l.post_ffn_norm_1 = b.vector(p + "post_ffw_norm_1.weight", n_embd);
    l.post_ffn_norm_2 = b.vector(p + "post_ffw_norm_2.weight", n_embd);
    l.exp_down_scale = b.vector(p + "ffn_down_exps.scale", hp.n_expert, false);
}

}  // namespace mw
