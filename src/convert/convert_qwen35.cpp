// Qwen3.5's mixers, Hugging Face -> GGUF, as llama.cpp's converter transforms them: RMSNorm
// weights + 1 (HF stores w of a (1 + w) norm) except the DeltaNet output norm, A = -exp(A_log),
// the depthwise conv kernel [channels, 1, kernel] squeezed to GGUF [kernel, channels] (F32), and
// the value heads of the DeltaNet layers reordered from HF's grouped order (the value heads of
// key head 0, then of key head 1, ...) to the tiled order (value head h reads key head
// h % n_k_heads), which memwall and llama.cpp compute with.
#include <cmath>

#include "convert/tensor_builder.h"

namespace mw::convert {
namespace {

// Output row r (in heads of `block` rows) <- source row: tiled head j * n_k + k is grouped head
// k * (n_v / n_k) + j. Empty (identity) when there is one value head per key head.
std::vector<uint32_t> tiled_rows(const HfConfig& c, uint32_t block, uint32_t offset = 0) {
    const uint32_t nk = c.ssm_k_heads, nv = c.ssm_v_heads, r = nv / nk;
    if (r == 1) return {};
    std::vector<uint32_t> order(offset);
    for (uint32_t i = 0; i < offset; ++i) order[i] = i;
    for (uint32_t h = 0; h < nv; ++h) {
        const uint32_t src = (h % nk) * r + h / nk;
        for (uint32_t i = 0; i < block; ++i) order.push_back(offset + src * block + i);
    }
    return order;
}

// A per-value-head vector, reordered to the tiled order and transformed.
void add_head_vector(TensorBuilder& b, const HfConfig& c, const std::string& gguf_name,
                     const std::string& hf_name, float (*fn)(float)) {
    const uint64_t nv = c.ssm_v_heads;
    const std::vector<uint32_t> order = tiled_rows(c, 1);
    b.add_computed(gguf_name, hf_name, {nv}, {nv},
                   [order, fn, nv](const SourceTensor& s, float* out) {
                       std::vector<float> v(nv);
                       s.decode_row(0, v.data());
                       for (uint64_t h = 0; h < nv; ++h)
                           out[h] = fn(v[order.empty() ? h : order[h]]);
                   });
}

}  // namespace

void build_qwen35_mixer(TensorBuilder& b, const HfConfig& c, const std::string& hf,
                        const std::string& g, uint32_t layer) {
    const uint64_t E = c.n_embd;
    if (!c.recurrent_layers[layer]) {
        const uint64_t hd = c.head_dim, n_q = uint64_t(c.n_head) * hd;
        const uint64_t n_kv = uint64_t(c.n_head_kv) * hd;
        // q_proj: per head hd query rows, then hd output-gate rows, as GGUF keeps them.
        b.add(g + "attn_q.weight", hf + "self_attn.q_proj.weight", {2 * n_q, E});
        b.add(g + "attn_k.weight", hf + "self_attn.k_proj.weight", {n_kv, E});
        b.add(g + "attn_v.weight", hf + "self_attn.v_proj.weight", {n_kv, E});
        b.add_norm(g + "attn_q_norm.weight", hf + "self_attn.q_norm.weight", hd, true);
        b.add_norm(g + "attn_k_norm.weight", hf + "self_attn.k_norm.weight", hd, true);
        b.add(g + "attn_output.weight", hf + "self_attn.o_proj.weight", {E, n_q});
        return;
    }
    const std::string la = hf + "linear_attn.";
    const uint32_t S = c.ssm_head_dim;
    const uint64_t nv = c.ssm_v_heads, key = uint64_t(c.ssm_k_heads) * S, value = nv * S;
    const uint64_t channels = 2 * key + value, K = c.ssm_conv_kernel;
    b.add(g + "attn_qkv.weight", la + "in_proj_qkv.weight", {channels, E},
          tiled_rows(c, S, uint32_t(2 * key)));
    b.add(g + "attn_gate.weight", la + "in_proj_z.weight", {value, E}, tiled_rows(c, S));
    b.add_rows(g + "ssm_conv1d.weight", la + "conv1d.weight", {channels, 1, K}, {channels, K},
               tiled_rows(c, S, uint32_t(2 * key)));
    add_head_vector(b, c, g + "ssm_dt.bias", la + "dt_bias", [](float x) { return x; });
    add_head_vector(b, c, g + "ssm_a", la + "A_log", [](float x) { return -std::exp(x); });
    b.add(g + "ssm_beta.weight", la + "in_proj_b.weight", {nv, E}, tiled_rows(c, 1));
    b.add(g + "ssm_alpha.weight", la + "in_proj_a.weight", {nv, E}, tiled_rows(c, 1));
    b.add(g + "ssm_norm.weight", la + "norm.weight", {S});  // used as is
    // out_proj's columns are the value channels: reordered within each row.
    const std::vector<uint32_t> cols = tiled_rows(c, S);
    b.add_computed(g + "ssm_out.weight", la + "out_proj.weight", {E, value}, {E, value},
                   [cols, E, value](const SourceTensor& s, float* out) {
                       std::vector<float> row(value);
                       for (uint64_t e = 0; e < E; ++e) {
                           s.decode_row(e, row.data());
                           for (uint64_t i = 0; i < value; ++i) {
                               out[e * value + i] = row[cols.empty() ? i : cols[i]];
                           }
                       }
                   });
}

}  // namespace mw::convert
