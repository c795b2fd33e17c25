#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "base/error.h"
#include "base/fp16.h"
#include "model/arch/arch.h"
#include "model/binder.h"
#include "tensor/repack.h"

namespace mw {
namespace {

// By shape, not data: a model bound from a header-only parse (planning) has no data.
uint64_t matrix_bytes(const WeightMatrix& w) {
    return w.traits ? w.row_bytes * uint64_t(w.n_rows) : 0;
}

}  // namespace

void bind_llama_attention(Binder& b, const HParams& hp, uint32_t il, Layer& l, bool qk_norm) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    const int64_t n_q = int64_t(hp.n_head) * hp.head_dim_k;
    const int64_t n_k = hp.n_embd_k_gqa(), n_v = hp.n_embd_v_gqa();
    if (b.has(p + "attn_qkv.weight")) {
        l.wqkv = b.matrix(p + "attn_qkv.weight", n_embd, n_q + n_k + n_v);
    } else {
        l.wq = b.matrix(p + "attn_q.weight", n_embd, n_q);
        l.wk = b.matrix(p + "attn_k.weight", n_embd, n_k);
        l.wv = b.matrix(p + "attn_v.weight", n_embd, n_v);
    }
    l.wo = b.matrix(p + "attn_output.weight", int64_t(hp.n_head) * hp.head_dim_v, n_embd);
    l.bq = b.vector(p + "attn_q.bias", n_q, false);
    l.bk = b.vector(p + "attn_k.bias", n_k, false);
    l.bv = b.vector(p + "attn_v.bias", n_v, false);
    l.q_norm = b.vector(p + "attn_q_norm.weight", hp.head_dim_k, qk_norm);
    l.k_norm = b.vector(p + "attn_k_norm.weight", hp.head_dim_k, qk_norm);
    if (hp.post_norms) {
        l.post_attn_norm = b.vector(p + "post_attention_norm.weight", n_embd);
        l.post_ffn_norm = b.vector(p + "post_ffw_norm.weight", n_embd);
    }
    // A parallel block (command-r) feeds the FFN from the attention's norm: no ffn_norm.
    if (!hp.parallel_residual) l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
}

void bind_layer_ffn(Binder& b, const ArchSpec& arch, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    if (!l.moe) {
        if (arch.bind_dense_ffn) {
            arch.bind_dense_ffn(b, hp, il, l);
        } else {
            l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, hp.n_ff);
            l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, hp.n_ff);
            l.ffn_down = b.matrix(p + "ffn_down.weight", hp.n_ff, n_embd);
        }
    } else {
        const int64_t ne = hp.n_expert, nf = hp.n_ff_expert;
        l.router = b.matrix(p + "ffn_gate_inp.weight", n_embd, ne);
        if (b.has(p + "ffn_gate_up_exps.weight")) {
            // Fused (gemma4): each expert's rows 0 .. nf are the gate, nf .. 2 nf the up
            // projection; the two roles are views of the same stack.
            const ExpertWeights gu = b.experts(p + "ffn_gate_up_exps.weight", n_embd, 2 * nf, ne);
            l.exp_gate = l.exp_up = gu;
            l.exp_gate.first.n_rows = l.exp_up.first.n_rows = nf;
            if (gu.first.data) l.exp_up.first.data += size_t(nf) * gu.first.row_bytes;
        } else {
            l.exp_gate = b.experts(p + "ffn_gate_exps.weight", n_embd, nf, ne);
            l.exp_up = b.experts(p + "ffn_up_exps.weight", n_embd, nf, ne);
        }
        l.exp_down = b.experts(p + "ffn_down_exps.weight", nf, n_embd, ne);
        if (arch.bind_moe_extra) arch.bind_moe_extra(b, hp, il, l);
    }
}

Model Model::bind(const gguf::GgufFile& file) {
    Model m;
    m.hp = read_hparams(file);
    HParams& hp = m.hp;
    Binder b(file);

    const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
    const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
    if (tokens && tokens->type == gguf::ValueType::array) {
        hp.n_vocab = uint32_t(std::min<uint64_t>(tokens->count, UINT32_MAX));
    } else if (embd) {
        hp.n_vocab = uint32_t(std::min<uint64_t>(embd->ne[1], UINT32_MAX));
    }
    if (hp.n_vocab == 0) {
        fail(ErrorKind::bad_file, "{}: the vocabulary is empty (tokenizer.ggml.tokens)",
             file.name());
    }

    const int64_t n_embd = hp.n_embd, n_vocab = hp.n_vocab;

    const ArchSpec& arch = *find_arch_spec(hp.arch);  // read_hparams refused any other
    m.tok_embd = b.matrix("token_embd.weight", n_embd, n_vocab);
    m.output_norm = b.vector(std::string(arch.output_norm), n_embd);
    m.output = b.has("output.weight") ? b.matrix("output.weight", n_embd, n_vocab) : m.tok_embd;
    if (b.has("rope_freqs.weight"))
        m.rope_freq_factors = b.vector("rope_freqs.weight", hp.n_rot / 2);

    const bool moe = hp.n_expert > 0;
    if (uint64_t(hp.n_layer) * arch.min_tensors_per_block > file.tensors().size()) {
        fail(ErrorKind::bad_file,
             "{}: {}.block_count = {} needs at least {} tensors, the file has {}", file.name(),
             hp.arch, hp.n_layer, uint64_t(hp.n_layer) * arch.min_tensors_per_block,
             file.tensors().size());
    }
    m.layers.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        Layer& l = m.layers[i];
        const std::string p = fmt::format("blk.{}.", i);
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        if (arch.bind_mixer) {
            arch.bind_mixer(b, hp, i, l);
        } else {
            bind_llama_attention(b, hp, i, l, /*qk_norm=*/false);
        }
        l.moe = moe && i >= hp.n_layer_dense_lead;
        bind_layer_ffn(b, arch, hp, i, l);
    }
    if (arch.bind_model_extra) arch.bind_model_extra(b, m);
    b.finish(hp);

    // RoPE parameters shared by every layer.
    m.rope.n_rot = int(hp.n_rot);
    m.rope.freq_base = hp.rope_freq_base;
    m.rope.freq_scale = hp.rope_freq_scale;
    m.rope.neox = hp.rope_style == RopeStyle::neox;
    m.rope.n_ctx_orig = int(hp.rope_n_ctx_orig);
    m.rope.ext_factor = hp.yarn_ext_factor;
    m.rope.attn_factor = hp.yarn_attn_factor;
    m.rope.beta_fast = hp.yarn_beta_fast;
    m.rope.beta_slow = hp.yarn_beta_slow;
    m.rope.freq_factors = m.rope_freq_factors.empty() ? nullptr : m.rope_freq_factors.data();
    if (!m.rope_factors_short.empty()) m.rope.freq_factors = m.rope_factors_short.data();
    if (hp.mla() && hp.rope_scaling == RopeScaling::yarn && hp.yarn_log_mul != 0.0f) {
        // deepseek2 moves YaRN's magnitude correction into the kq scale (forward_attention.cpp):
        // the rotation itself keeps unit magnitude.
        m.rope.attn_factor = 1.0f / (1.0f + 0.1f * std::log(1.0f / hp.rope_freq_scale));
    }
    m.rope_swa = m.rope;
    m.rope_swa.freq_base = hp.rope_freq_base_swa;
    m.rope_swa.freq_scale = hp.rope_freq_scale_swa;
    if (hp.n_rot_swa > 0) {
        // gemma4: the sliding layers rotate their own (smaller) heads, without rope_freqs.
        m.rope_swa.n_rot = int(hp.n_rot_swa);
        m.rope_swa.freq_factors = nullptr;
    }

    // Sizes.
    std::map<std::string, int> type_counts;
    for (const gguf::TensorInfo& t : file.tensors()) {
        m.weight_bytes += t.n_bytes;
        m.n_params += t.n_elements;
        const auto layout = ggml_layout(t.type);
        type_counts[std::string(layout ? layout->name : "?")]++;
    }
    for (const auto& [name, count] : type_counts) {
        m.type_summary += fmt::format("{}{} x{}", m.type_summary.empty() ? "" : ", ", name, count);
    }
    uint64_t per_token =
        m.tok_embd.row_bytes + matrix_bytes(m.output) + m.output_norm.size() * sizeof(float);
    per_token += m.ple_embd.row_bytes + matrix_bytes(m.ple_model_proj);  // gemma4 (0 otherwise)
    for (const Layer& l : m.layers) {
        for (const LayerMatrixRole& r : kLayerMatrices) per_token += matrix_bytes(l.*r.member);
        for (const LayerStackRole& r : kLayerStacks) {
            const uint64_t one = matrix_bytes((l.*r.member).first);
            if (!r.experts) {
                per_token += one * hp.n_head;
            } else if (l.moe) {
                per_token += one * hp.n_expert_used;
            }
        }
        for (auto v : kLayerVectors) per_token += (l.*v).size() * sizeof(float);
        // Of the experts' biases (gpt-oss), only the chosen experts' are read.
        for (auto v : {&Layer::exp_gate_bias, &Layer::exp_up_bias, &Layer::exp_down_bias}) {
            per_token -= (l.*v).size() * sizeof(float) * (hp.n_expert - hp.n_expert_used) /
                         std::max(1u, hp.n_expert);
        }
    }
    m.bytes_per_token = per_token;
    return m;
}

Model nextn_model(const Model& t, uint32_t index) {
    if (index >= t.nextn.size()) {
        fail(ErrorKind::invalid_argument, "the model has {} MTP head(s), not {}", t.nextn.size(),
             index + 1);
    }
    const NextnHead& h = t.nextn[index];
    Model m;
    m.hp = t.hp;
    m.hp.n_layer = 1;
    m.hp.n_nextn_layers = 0;
    m.hp.n_layer_dense_lead = 0;
    m.hp.layer_kinds.clear();  // one full-attention layer
    m.tok_embd = h.embed.traits ? h.embed : t.tok_embd;
    m.output = h.head.traits ? h.head : t.output;
    m.output_norm = h.head_norm.empty() ? t.output_norm : h.head_norm;
    m.layers = {h.block};
    m.rope_freq_factors = t.rope_freq_factors;
    m.rope = t.rope;
    m.rope.freq_factors = m.rope_freq_factors.empty() ? nullptr : m.rope_freq_factors.data();
    m.rope_swa = m.rope;
    m.nextn_input = &h;
    m.offload = t.offload;  // a shared head placed on the GPU runs there
    uint64_t bytes = matrix_bytes(m.output) + m.tok_embd.row_bytes + matrix_bytes(h.eh_proj);
    for (const LayerMatrixRole& r : kLayerMatrices) bytes += matrix_bytes(h.block.*r.member);
    for (const LayerStackRole& r : kLayerStacks) {
        if (r.experts && h.block.moe)
            bytes += matrix_bytes((h.block.*r.member).first) * t.hp.n_expert_used;
    }
    m.bytes_per_token = bytes;
    return m;
}

namespace {

// Calls f(matrix, count, stride, expert) for every weight matrix: `count` equally-shaped matrices
// `stride` bytes apart (a layer's experts, `expert` true; or MLA's per-head matrices), or one.
template <class ModelT, class F>
void for_each_matrix(ModelT& m, F&& f) {
    f(m.tok_embd, int64_t(1), size_t(0), false);
    f(m.output, int64_t(1), size_t(0), false);
    for (auto& l : m.layers) {
        for (const LayerMatrixRole& r : kLayerMatrices)
            f(l.*r.member, int64_t(1), size_t(0), false);
        for (const LayerStackRole& r : kLayerStacks) {
            auto& x = l.*r.member;
            f(x.first, int64_t(r.experts ? m.hp.n_expert : m.hp.n_head), x.expert_stride,
              r.experts);
        }
    }
}

const TypeTraits* faster_layout(const WeightMatrix& w) {
    return w.data && w.traits ? packed_traits(w.traits->type, w.n_rows, w.n_cols) : nullptr;
}

}  // namespace

bool has_faster_layouts(const Model& m) {
    bool any = false;
    for_each_matrix(m, [&](const WeightMatrix& w, int64_t, size_t, bool) {
        any = any || (faster_layout(w) && !(m.offload && m.offload->holds(w)));
    });
    return any;
}

uint64_t repack_weights(Model& m, std::span<const uint8_t> bound, std::span<uint8_t> writable,
                        Parallel& par, bool experts,
                        const std::function<bool(const uint8_t*)>& streamed) {
    if (writable.size() != bound.size()) {
        fail(ErrorKind::invalid_argument,
             "repack_weights: {} writable bytes for a model bound to {}", writable.size(),
             bound.size());
    }
    // Which matrices, then their groups of rows shared out between the threads.
    struct Job {
        const TypeTraits* packed;
        uint8_t* data;
        int64_t n_cols;
        int64_t groups;
        size_t group_bytes;
    };
    std::vector<Job> jobs;
    std::map<const uint8_t*, const TypeTraits*> done;  // data -> its packed traits
    uint64_t bytes = 0;
    int64_t total_groups = 0;
    for_each_matrix(m, [&](WeightMatrix& w, int64_t count, size_t stride, bool expert) {
        if (expert && !experts) return;
        if (m.offload && m.offload->holds(w)) return;  // the shaders read the file's layout
        if (const auto it = done.find(w.data); w.data && it != done.end()) {
            w.traits = it->second;  // the same tensor in a second role (a tied output)
            return;
        }
        const TypeTraits* packed = faster_layout(w);
        if (!packed) return;
        done[w.data] = packed;
        w.traits = packed;
        if (streamed && streamed(w.data)) return;
        const size_t offset = size_t(w.data - bound.data());
        for (int64_t e = 0; e < count; ++e) {
            jobs.push_back({packed, writable.data() + offset + size_t(e) * stride, w.n_cols,
                            w.n_rows / packed->pack_rows, w.row_bytes * packed->pack_rows});
            total_groups += w.n_rows / packed->pack_rows;
            bytes += w.row_bytes * uint64_t(w.n_rows);
        }
    });
    par.for_each_thread([&](int ith, int nth) {
        const Range mine = split_range(total_groups, ith, nth);
        int64_t first = 0;  // the job's first group in the numbering of all groups
        for (const Job& j : jobs) {
            const int64_t g0 = std::max(mine.begin, first) - first;
            const int64_t g1 = std::min(mine.end, first + j.groups) - first;
            if (g0 < g1) {
                repack_in_place(*j.packed, j.data + size_t(g0) * j.group_bytes,
                                (g1 - g0) * j.packed->pack_rows, j.n_cols);
            }
            first += j.groups;
        }
    });
    return bytes;
}

}  // namespace mw
