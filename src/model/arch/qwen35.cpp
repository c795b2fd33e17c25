// Qwen3.5 (qwen35, and qwen35moe with its MoE FFN): three of every four layers are gated
// DeltaNet linear attention (a recurrent state per sequence instead of a KV cache), the fourth
// gated full attention (Q with a sigmoid output gate, per-head Q/K RMSNorm, partial NEOX RoPE).
// The layer's pre-FFN norm is `post_attention_norm`. The DeltaNet forward is in
// model/forward_delta_net.cpp.
#include <fmt/format.h>

#include "base/error.h"
#include "model/arch/arch.h"

namespace mw {

void read_qwen35(const gguf::GgufFile& f, HParams& hp) {
    const std::string& a = hp.arch;
    DeltaNetShape& d = hp.delta_net;
    d.conv_kernel = require_u32(f, a, "ssm.conv_kernel");
    d.head_dim = require_u32(f, a, "ssm.state_size");
    d.n_k_heads = require_u32(f, a, "ssm.group_count");
    d.n_v_heads = require_u32(f, a, "ssm.time_step_rank");
    check_range(f, "ssm.conv_kernel", d.conv_kernel, 1, 64);
    check_range(f, "ssm.state_size", d.head_dim, 1, 1024);
    check_range(f, "ssm.group_count", d.n_k_heads, 1, 1024);
    check_range(f, "ssm.time_step_rank", d.n_v_heads, 1, 1024);
    if (d.n_v_heads % d.n_k_heads != 0) {
        fail(ErrorKind::bad_file,
             "{}: {}.ssm.time_step_rank = {} (value heads) is not a multiple of ssm.group_count "
             "= {} (key heads)",
             f.name(), a, d.n_v_heads, d.n_k_heads);
    }
    if (const auto inner = get_arch_u32(f, a, "ssm.inner_size"); inner && *inner != d.inner()) {
        fail(ErrorKind::bad_file,
             "{}: {}.ssm.inner_size = {} but time_step_rank x state_size = {} x {} = {}", f.name(),
             a, *inner, d.n_v_heads, d.head_dim, d.inner());
    }

    // MTP (next-n) blocks come after the ones that run, counted in block_count: bound as heads
    // (bind_qwen35_nextn), never run by the model's own pass.
    hp.n_nextn_layers = get_arch_u32(f, a, "nextn_predict_layers").value_or(0);
    check_range(f, "nextn_predict_layers", hp.n_nextn_layers, 0, hp.n_layer - 1);
    const uint32_t n_blocks = hp.n_layer;
    hp.n_layer -= hp.n_nextn_layers;

    // Which layers are recurrent: the converter's bool array, else every full_attention_interval-th
    // layer is attention.
    hp.layer_kinds.assign(hp.n_layer, LayerKind::attention);
    const std::string key = a + ".attention.recurrent_layers";
    if (const gguf::Value* v = f.find(key)) {
        if (v->type != gguf::ValueType::array || v->elem_type != gguf::ValueType::boolean) {
            fail(ErrorKind::bad_file, "{}: {} must be an array of booleans", f.name(), key);
        }
        if (v->count != n_blocks && v->count != hp.n_layer) {
            fail(ErrorKind::bad_file, "{}: {} has {} entries for {} layers (block_count)", f.name(),
                 key, v->count, n_blocks);
        }
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            if (v->data[il] != 0) hp.layer_kinds[il] = LayerKind::delta_net;
        }
    } else {
        const uint32_t interval = get_arch_u32(f, a, "full_attention_interval").value_or(4);
        check_range(f, "full_attention_interval", interval, 1, hp.n_layer);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            if ((il + 1) % interval != 0) hp.layer_kinds[il] = LayerKind::delta_net;
        }
    }
    hp.attn_output_gate = true;
    if (hp.head_dim_k != hp.head_dim_v) {
        fail(ErrorKind::bad_file,
             "{}: {}.attention.key_length = {} and value_length = {} differ; the output gate "
             "of the attention layers needs them equal",
             f.name(), a, hp.head_dim_k, hp.head_dim_v);
    }
    hp.rope_style = RopeStyle::neox;

    // M-RoPE sections: text tokens carry one position in the first three sections and 0 in the
    // fourth, so with an empty fourth section the rotation is plain NEOX over n_rot dims.
    if (const gguf::Value* v = f.find(a + ".rope.dimension_sections")) {
        const gguf::Value* s = f.get_array(a + ".rope.dimension_sections", gguf::ValueType::i32);
        uint64_t pairs = 0;
        for (uint64_t i = 0; i < s->count && i < 3; ++i) pairs += uint64_t(s->elem_i64(i));
        const int64_t fourth = s->count > 3 ? s->elem_i64(3) : 0;
        if (fourth != 0 || pairs != hp.n_rot / 2) {
            fail(ErrorKind::unsupported,
                 "{}: {}.rope.dimension_sections puts {} rotation pairs in the first three "
                 "sections and {} in the fourth; memwall runs text-only M-RoPE, which needs "
                 "rope.dimension_count / 2 = {} and 0",
                 f.name(), a, pairs, fourth, hp.n_rot / 2);
        }
        (void)v;
    }
}

namespace {

// The gated full attention of a layer (or MTP block) with tensor prefix p: attn_q gives per head
// its query, then its output gate.
void bind_gated_attention(Binder& b, const HParams& hp, const std::string& p, Layer& l) {
    const int64_t n_embd = hp.n_embd;
    const int64_t n_q = int64_t(hp.n_head) * hp.head_dim_k;
    l.wq = b.matrix(p + "attn_q.weight", n_embd, 2 * n_q);
    l.wk = b.matrix(p + "attn_k.weight", n_embd, hp.n_embd_k_gqa());
    l.wv = b.matrix(p + "attn_v.weight", n_embd, hp.n_embd_v_gqa());
    l.q_norm = b.vector(p + "attn_q_norm.weight", hp.head_dim_k);
    l.k_norm = b.vector(p + "attn_k_norm.weight", hp.head_dim_k);
    l.wo = b.matrix(p + "attn_output.weight", int64_t(hp.n_head) * hp.head_dim_v, n_embd);
}

}  // namespace

void bind_qwen35_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    l.ffn_norm = b.vector(p + "post_attention_norm.weight", n_embd);
    if (hp.kind(il) == LayerKind::delta_net) {
        const DeltaNetShape& d = hp.delta_net;
        const int64_t channels = d.conv_channels(), inner = d.inner(), nv = d.n_v_heads;
        l.wqkv = b.matrix(p + "attn_qkv.weight", n_embd, channels);
        l.ssm_z = b.matrix(p + "attn_gate.weight", n_embd, inner);
        l.ssm_beta = b.matrix(p + "ssm_beta.weight", n_embd, nv);
        l.ssm_alpha = b.matrix(p + "ssm_alpha.weight", n_embd, nv);
        l.ssm_conv = b.vector(p + "ssm_conv1d.weight", int64_t(d.conv_kernel) * channels, true,
                              {int64_t(d.conv_kernel), channels});
        l.ssm_dt_bias = b.vector(p + "ssm_dt.bias", nv);
        l.ssm_a = b.vector(p + "ssm_a", nv);
        l.ssm_norm = b.vector(p + "ssm_norm.weight", d.head_dim);
        l.wo = b.matrix(p + "ssm_out.weight", inner, n_embd);
        return;
    }
    bind_gated_attention(b, hp, p, l);
}

void bind_qwen35_nextn(Binder& model_binder, Model& m) {
    const HParams& hp = m.hp;
    if (hp.n_nextn_layers == 0) return;
    // The heads bind apart from the model: a file whose MTP tensors are incomplete still runs,
    // and --spec-type mtp reports what is missing (m.nextn_error).
    const gguf::GgufFile& f = model_binder.file();
    Binder b(f);
    const ArchSpec& arch = *find_arch_spec(hp.arch);
    const int64_t n_embd = hp.n_embd, n_vocab = hp.n_vocab;
    std::vector<NextnHead> heads(hp.n_nextn_layers);
    for (uint32_t j = 0; j < hp.n_nextn_layers; ++j) {
        const uint32_t il = hp.n_layer + j;
        const std::string p = fmt::format("blk.{}.", il);
        NextnHead& h = heads[j];
        Layer& l = h.block;
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        l.ffn_norm = b.vector(p + "post_attention_norm.weight", n_embd);
        bind_gated_attention(b, hp, p, l);
        l.moe = hp.n_expert > 0;
        bind_layer_ffn(b, arch, hp, il, l);
        h.eh_proj = b.matrix(p + "nextn.eh_proj.weight", 2 * n_embd, n_embd);
        h.enorm = b.vector(p + "nextn.enorm.weight", n_embd);
        h.hnorm = b.vector(p + "nextn.hnorm.weight", n_embd);
        h.embed = b.matrix(p + "nextn.embed_tokens.weight", n_embd, n_vocab, false);
        h.head = b.matrix(p + "nextn.shared_head_head.weight", n_embd, n_vocab, false);
        h.head_norm = b.vector(p + "nextn.shared_head_norm.weight", n_embd, false);
    }
    try {
        b.finish(hp);
        m.nextn = std::move(heads);
    } catch (const Error& e) {
        m.nextn_error = e.what();
    }
}

}  // namespace mw
