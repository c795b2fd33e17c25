// Hugging Face folder -> GGUF: config.json decides the architecture and every expected tensor
// shape; the safetensors shards provide the tensors (each checked against its expected shape,
// every one of them used or the conversion refused); the tokenizer files provide the vocabulary.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "base/error.h"
#include "convert/convert.h"
#include "convert/hf_config.h"
#include "convert/hf_vocab.h"
#include "convert/spm_model.h"
#include "convert/tensor_builder.h"
#include "format/gguf_writer.h"
#include "format/json_text.h"
#include "format/safetensors.h"
#include "sys/mapped_file.h"

namespace mw::convert {
namespace fs = std::filesystem;

namespace {

// Llama 3.1's RoPE frequency factors (rope_scaling.rope_type = "llama3"), as rope_freqs.weight.
std::vector<float> llama3_rope_factors(const HfConfig& c) {
    const RopeScalingConfig& rs = c.rope_scaling;
    const double old_ctx = rs.original_context;
    const double low_wavelen = old_ctx / rs.low_freq_factor;
    const double high_wavelen = old_ctx / rs.high_freq_factor;
    std::vector<float> factors;
    for (uint32_t i = 0; i < c.head_dim; i += 2) {
        const float freq = 1.0f / std::pow(float(c.rope_theta), float(i) / float(c.head_dim));
        const double wavelen = 2.0 * M_PI / double(freq);
        double f;
        if (wavelen < high_wavelen) {
            f = 1.0;
        } else if (wavelen > low_wavelen) {
            f = rs.factor;
        } else {
            const double smooth = (old_ctx / wavelen - rs.low_freq_factor) /
                                  (rs.high_freq_factor - rs.low_freq_factor);
            f = 1.0 / ((1.0 - smooth) / rs.factor + smooth);
        }
        factors.push_back(float(f));
    }
    return factors;
}

// Multi-head latent attention (deepseek2): kv_b_proj, per head the rows of K's non-rotated part
// then V's, is split as llama.cpp does into attn_k_b (transposed: GGUF [nope, rank, head]) and
// attn_v_b (GGUF [rank, v, head]), the forms the absorbed attention multiplies by.
void build_mla(TensorBuilder& b, const HfConfig& c, const std::string& hf, const std::string& g) {
    const uint64_t E = c.n_embd, H = c.n_head, rank = c.kv_lora_rank;
    const uint64_t nope = c.qk_nope_head_dim, rope = c.qk_rope_head_dim, vd = c.v_head_dim;
    const uint64_t n_q = H * (nope + rope);
    if (c.q_lora_rank > 0) {
        const uint64_t qr = c.q_lora_rank;
        b.add(g + "attn_q_a.weight", hf + "self_attn.q_a_proj.weight", {qr, E});
        b.add(g + "attn_q_a_norm.weight", hf + "self_attn.q_a_layernorm.weight", {qr});
        b.add(g + "attn_q_b.weight", hf + "self_attn.q_b_proj.weight", {n_q, qr});
    } else {
        b.add(g + "attn_q.weight", hf + "self_attn.q_proj.weight", {n_q, E});
    }
    b.add(g + "attn_kv_a_mqa.weight", hf + "self_attn.kv_a_proj_with_mqa.weight", {rank + rope, E});
    b.add(g + "attn_kv_a_norm.weight", hf + "self_attn.kv_a_layernorm.weight", {rank});
    const std::string kv_b = hf + "self_attn.kv_b_proj.weight";
    const std::vector<uint64_t> kv_b_shape = {H * (nope + vd), rank};
    b.add_computed(g + "attn_k_b.weight", kv_b, kv_b_shape, {H, rank, nope},
                   [H, rank, nope, vd](const SourceTensor& src, float* out) {
                       std::vector<float> row(rank);
                       for (uint64_t h = 0; h < H; ++h) {
                           for (uint64_t j = 0; j < nope; ++j) {
                               src.decode_row(h * (nope + vd) + j, row.data());
                               for (uint64_t r = 0; r < rank; ++r)
                                   out[(h * rank + r) * nope + j] = row[r];
                           }
                       }
                   });
    std::vector<uint32_t> v_rows;
    for (uint64_t h = 0; h < H; ++h) {
        for (uint64_t j = 0; j < vd; ++j) v_rows.push_back(uint32_t(h * (nope + vd) + nope + j));
    }
    b.add_rows(g + "attn_v_b.weight", kv_b, kv_b_shape, {H, vd, rank}, std::move(v_rows));
    b.add(g + "attn_output.weight", hf + "self_attn.o_proj.weight", {E, H * vd});
}

void build_attention(TensorBuilder& b, const HfConfig& c, const std::string& hf,
                     const std::string& g) {
    const uint64_t E = c.n_embd, hd = c.head_dim;
    const uint64_t n_q = uint64_t(c.n_head) * hd, n_kv = uint64_t(c.n_head_kv) * hd;
    if (c.arch == "phi3") {  // kept fused, as llama.cpp writes it and memwall binds it
        b.add(g + "attn_qkv.weight", hf + "self_attn.qkv_proj.weight", {n_q + 2 * n_kv, E});
        b.add(g + "attn_output.weight", hf + "self_attn.o_proj.weight", {E, n_q});
        return;
    }
    const std::vector<uint32_t> q_order =
        c.permute_qk ? rope_pair_row_order(n_q, c.head_dim) : std::vector<uint32_t>{};
    const std::vector<uint32_t> k_order =
        c.permute_qk ? rope_pair_row_order(n_kv, c.head_dim) : std::vector<uint32_t>{};
    b.add(g + "attn_q.weight", hf + "self_attn.q_proj.weight", {n_q, E}, q_order);
    b.add(g + "attn_k.weight", hf + "self_attn.k_proj.weight", {n_kv, E}, k_order);
    b.add(g + "attn_v.weight", hf + "self_attn.v_proj.weight", {n_kv, E});
    if (c.qkv_bias) {
        if (c.permute_qk) {
            b.add_permuted_vector(g + "attn_q.bias", hf + "self_attn.q_proj.bias", n_q, q_order);
            b.add_permuted_vector(g + "attn_k.bias", hf + "self_attn.k_proj.bias", n_kv, k_order);
        } else {
            b.add(g + "attn_q.bias", hf + "self_attn.q_proj.bias", {n_q});
            b.add(g + "attn_k.bias", hf + "self_attn.k_proj.bias", {n_kv});
        }
        b.add(g + "attn_v.bias", hf + "self_attn.v_proj.bias", {n_kv});
    }
    if (c.qk_norm) {
        b.add_norm(g + "attn_q_norm.weight", hf + "self_attn.q_norm.weight", hd, c.norm_plus_one);
        b.add_norm(g + "attn_k_norm.weight", hf + "self_attn.k_norm.weight", hd, c.norm_plus_one);
    }
    b.add(g + "attn_output.weight", hf + "self_attn.o_proj.weight", {E, n_q});
}

void build_moe(TensorBuilder& b, Checkpoint& ck, const HfConfig& c, const std::string& hf,
               const std::string& g) {
    const uint64_t E = c.n_embd, F = c.n_ff_expert;
    // Mixtral names the expert matrices w1 (gate), w3 (up) and w2 (down).
    const bool mixtral = c.model_type == "mixtral";
    const std::string moe = hf + (mixtral ? "block_sparse_moe." : "mlp.");
    auto expert_names = [&](const char* mixtral_name, const char* qwen_name) {
        std::vector<std::string> names;
        for (uint32_t e = 0; e < c.n_expert; ++e) {
            names.push_back(
                fmt::format("{}experts.{}.{}.weight", moe, e, mixtral ? mixtral_name : qwen_name));
        }
        return names;
    };
    b.add(g + "ffn_gate_inp.weight", moe + "gate.weight", {c.n_expert, E});
    if (const std::string fused = moe + "experts.gate_up_proj"; ck.has(fused)) {
        // Newer checkpoints (Qwen3.5's) stack the experts: gate_up_proj [expert][gate F | up F]
        // [E], down_proj [expert][E][F].
        std::vector<uint32_t> gate, up;
        for (uint32_t e = 0; e < c.n_expert; ++e) {
            for (uint32_t r = 0; r < F; ++r) {
                gate.push_back(uint32_t(e * 2 * F + r));
                up.push_back(uint32_t(e * 2 * F + F + r));
            }
        }
        const std::vector<uint64_t> shape = {c.n_expert, 2 * F, E}, half = {c.n_expert, F, E};
        b.add_rows(g + "ffn_gate_exps.weight", fused, shape, half, std::move(gate));
        b.add_rows(g + "ffn_up_exps.weight", fused, shape, half, std::move(up));
        b.add(g + "ffn_down_exps.weight", moe + "experts.down_proj", {c.n_expert, E, F});
    } else {
        b.add_experts(g + "ffn_gate_exps.weight", expert_names("w1", "gate_proj"), {F, E});
        b.add_experts(g + "ffn_up_exps.weight", expert_names("w3", "up_proj"), {F, E});
        b.add_experts(g + "ffn_down_exps.weight", expert_names("w2", "down_proj"), {E, F});
    }
    if (c.n_ff_shared_expert > 0) {
        const uint64_t S = c.n_ff_shared_expert;
        if (c.arch == "qwen35moe") {  // a 1-D gate vector in qwen35moe files
            b.add_rows(g + "ffn_gate_inp_shexp.weight", hf + "mlp.shared_expert_gate.weight",
                       {1, E}, {E}, {});
        } else {
            b.add(g + "ffn_gate_inp_shexp.weight", hf + "mlp.shared_expert_gate.weight", {1, E});
        }
        b.add(g + "ffn_gate_shexp.weight", hf + "mlp.shared_expert.gate_proj.weight", {S, E});
        b.add(g + "ffn_up_shexp.weight", hf + "mlp.shared_expert.up_proj.weight", {S, E});
        b.add(g + "ffn_down_shexp.weight", hf + "mlp.shared_expert.down_proj.weight", {E, S});
    }
    if (c.arch == "deepseek2") {
        // DeepSeek-V3's selection bias (noaux_tc); V2 has none.
        if (ck.has(moe + "gate.e_score_correction_bias")) {
            b.add(g + "exp_probs_b.bias", moe + "gate.e_score_correction_bias", {c.n_expert});
        }
        if (c.n_expert_shared > 0) {
            const uint64_t S = uint64_t(c.n_ff_expert) * c.n_expert_shared;
            b.add(g + "ffn_gate_shexp.weight", hf + "mlp.shared_experts.gate_proj.weight", {S, E});
            b.add(g + "ffn_up_shexp.weight", hf + "mlp.shared_experts.up_proj.weight", {S, E});
            b.add(g + "ffn_down_shexp.weight", hf + "mlp.shared_experts.down_proj.weight", {E, S});
        }
    }
}

void build_tensors(TensorBuilder& b, Checkpoint& ck, const HfConfig& c) {
    const uint64_t E = c.n_embd, V = c.vocab_size;
    const bool p1 = c.norm_plus_one;
    const std::string& m = c.tensor_prefix;
    b.add("token_embd.weight", m + "embed_tokens.weight", {V, E});
    if (c.rope_scaling.kind == RopeScalingKind::llama3) {
        b.add_values("rope_freqs.weight", llama3_rope_factors(c));
    }
    if (c.rope_scaling.kind == RopeScalingKind::longrope) {
        b.add_values("rope_factors_long.weight", c.rope_scaling.long_factor);
        b.add_values("rope_factors_short.weight", c.rope_scaling.short_factor);
    }
    const bool gemma = c.arch == "gemma2" || c.arch == "gemma3";
    const bool qwen35 = c.arch == "qwen35" || c.arch == "qwen35moe";
    if (c.arch == "lfm2" || c.arch == "lfm2moe") {
        build_lfm2(b, ck, c);
        ck.take("lm_head.weight");  // tied
        return;
    }
    if (c.arch == "gpt-oss") {
        build_gptoss(b, ck, c);
        b.add("output.weight", "lm_head.weight", {V, E});  // never tied
        return;
    }
    if (c.arch == "gemma4") {
        build_gemma4(b, c);
        if (c.tie_word_embeddings) {
            ck.take("lm_head.weight");
        } else {
            b.add("output.weight", "lm_head.weight", {V, E});
        }
        return;
    }
    for (uint32_t i = 0; i < c.n_layer; ++i) {
        const std::string hf = fmt::format("{}layers.{}.", m, i);
        const std::string g = fmt::format("blk.{}.", i);
        b.add_norm(g + "attn_norm.weight", hf + "input_layernorm.weight", E, p1);
        if (qwen35) {  // post_attention_layernorm is the pre-FFN norm, a (1 + w) one
            build_qwen35_mixer(b, c, hf, g, i);
            b.add_norm(g + "post_attention_norm.weight", hf + "post_attention_layernorm.weight", E,
                       p1);
        } else if (c.arch == "deepseek2") {
            build_mla(b, c, hf, g);
        } else {
            build_attention(b, c, hf, g);
        }
        if (gemma) {
            // Gemma normalises each sublayer's output too; its FFN input norm is "pre_".
            b.add_norm(g + "post_attention_norm.weight", hf + "post_attention_layernorm.weight", E,
                       p1);
            b.add_norm(g + "ffn_norm.weight", hf + "pre_feedforward_layernorm.weight", E, p1);
            b.add_norm(g + "post_ffw_norm.weight", hf + "post_feedforward_layernorm.weight", E, p1);
        } else if (c.arch != "command-r" && !qwen35) {  // command-r's FFN reads the attention's
            b.add(g + "ffn_norm.weight", hf + "post_attention_layernorm.weight", {E});
        }
        if (c.n_expert > 0 && i >= c.n_layer_dense_lead) {
            build_moe(b, ck, c, hf, g);
        } else if (c.arch == "phi3") {  // gate and up fused: the first half of the rows is gate
            b.add(g + "ffn_up.weight", hf + "mlp.gate_up_proj.weight", {2 * uint64_t(c.n_ff), E});
            b.add(g + "ffn_down.weight", hf + "mlp.down_proj.weight", {E, c.n_ff});
        } else {
            b.add(g + "ffn_gate.weight", hf + "mlp.gate_proj.weight", {c.n_ff, E});
            b.add(g + "ffn_up.weight", hf + "mlp.up_proj.weight", {c.n_ff, E});
            b.add(g + "ffn_down.weight", hf + "mlp.down_proj.weight", {E, c.n_ff});
        }
    }
    b.add_norm("output_norm.weight", m + "norm.weight", E, p1);
    if (c.tie_word_embeddings) {
        ck.take("lm_head.weight");  // a tied checkpoint may store the copy; it is not needed
    } else {
        b.add("output.weight", "lm_head.weight", {V, E});
    }
}

// The keys llama.cpp's converter writes for each architecture beyond the common ones.
void write_arch_hparams(gguf::GgufWriter& w, const HfConfig& c) {
    const std::string a = c.arch + ".";
    if (c.arch == "granite") {
        w.set_f32(a + "attention.scale", float(c.attention_multiplier));
        w.set_f32(a + "embedding_scale", float(c.embedding_multiplier));
        w.set_f32(a + "residual_scale", float(c.residual_multiplier));
        w.set_f32(a + "logit_scale", float(c.logits_scaling));
    } else if (c.arch == "command-r") {
        w.set_f32(a + "logit_scale", float(c.logit_scale));
    } else if (c.arch == "gemma2") {
        w.set_f32(a + "attn_logit_softcapping", float(c.attn_softcap));
        w.set_f32(a + "final_logit_softcapping", float(c.final_softcap));
    } else if (c.arch == "gemma3") {
        if (c.final_softcap > 0) w.set_f32(a + "final_logit_softcapping", float(c.final_softcap));
        w.set_f32(a + "rope.freq_base_swa", float(c.rope_local_base));
    } else if (c.arch == "phi3") {
        w.set_u32(a + "rope.scaling.original_context_length", c.original_context);
        // As llama.cpp's converter (0: none); llama.cpp and memwall attend to the whole context.
        w.set_u32(a + "attention.sliding_window", c.sliding_window);
        if (c.rope_scaling.kind == RopeScalingKind::longrope) {
            w.set_f32(a + "rope.scaling.attn_factor", float(c.rope_attn_factor));
        }
    } else if (c.arch == "deepseek2") {
        // MLA runs as MQA over the latent: one KV head of kv_lora_rank (+ the rotated part).
        w.set_u32(a + "attention.key_length", c.kv_lora_rank + c.qk_rope_head_dim);
        w.set_u32(a + "attention.value_length", c.kv_lora_rank);
        w.set_u32(a + "attention.key_length_mla", c.qk_nope_head_dim + c.qk_rope_head_dim);
        w.set_u32(a + "attention.value_length_mla", c.v_head_dim);
        if (c.q_lora_rank > 0) w.set_u32(a + "attention.q_lora_rank", c.q_lora_rank);
        w.set_u32(a + "attention.kv_lora_rank", c.kv_lora_rank);
        w.set_u32(a + "leading_dense_block_count", c.n_layer_dense_lead);
        w.set_u32(a + "expert_shared_count", c.n_expert_shared);
        w.set_f32(a + "expert_weights_scale", float(c.expert_weights_scale));
        w.set_u32(a + "expert_gating_func", c.sigmoid_gating ? 2 : 1);
        if (c.n_expert_groups > 1) {
            w.set_u32(a + "expert_group_count", c.n_expert_groups);
            w.set_u32(a + "expert_group_used_count", c.n_group_used);
        }
        if (c.rope_scaling.kind == RopeScalingKind::yarn && c.yarn_log_mul > 0) {
            w.set_f32(a + "rope.scaling.yarn_log_multiplier", float(c.yarn_log_mul));
        }
    }
    if (c.arch == "qwen35" || c.arch == "qwen35moe") {
        w.set_u32(a + "ssm.conv_kernel", c.ssm_conv_kernel);
        w.set_u32(a + "ssm.state_size", c.ssm_head_dim);
        w.set_u32(a + "ssm.group_count", c.ssm_k_heads);
        w.set_u32(a + "ssm.time_step_rank", c.ssm_v_heads);
        w.set_u32(a + "ssm.inner_size", c.ssm_v_heads * c.ssm_head_dim);
        w.set_array_bool(a + "attention.recurrent_layers", c.recurrent_layers);
        w.set_u32(a + "full_attention_interval", c.full_attn_interval);
        w.set_array_i32(a + "rope.dimension_sections", c.rope_sections);
    }
    if (c.arch == "lfm2" || c.arch == "lfm2moe") {
        w.set_u32(a + "shortconv.l_cache", c.shortconv_l_cache);
    }
    if (c.arch == "lfm2moe") {
        w.set_u32(a + "leading_dense_block_count", c.n_layer_dense_lead);
        w.set_u32(a + "expert_gating_func", 2);  // sigmoid
    }
    if (c.arch == "gemma4") {
        w.set_f32(a + "rope.freq_base_swa", float(c.rope_local_base));
        if (c.final_softcap > 0) w.set_f32(a + "final_logit_softcapping", float(c.final_softcap));
        w.set_u32(a + "attention.sliding_window", c.sliding_window);
        w.set_array_bool(a + "attention.sliding_window_pattern", c.swa_layers);
        w.set_u32(a + "attention.shared_kv_layers", c.n_kv_shared);
        w.set_u32(a + "embedding_length_per_layer_input", c.n_embd_per_layer);
        w.set_u32(a + "attention.key_length_swa", c.head_dim_swa);
        w.set_u32(a + "attention.value_length_swa", c.head_dim_swa);
        w.set_u32(a + "rope.dimension_count_swa", c.n_rot_swa);
    } else if (c.arch == "gpt-oss") {
        // Every second layer slides: llama.cpp's graph fixes the pattern; no key for it.
        w.set_u32(a + "attention.sliding_window", c.sliding_window);
        if (c.rope_scaling.kind == RopeScalingKind::yarn) {
            w.set_f32(a + "rope.scaling.yarn_beta_fast", float(c.yarn_beta_fast));
            w.set_f32(a + "rope.scaling.yarn_beta_slow", float(c.yarn_beta_slow));
        }
    } else if (c.sliding_window > 0 && c.arch != "phi3") {  // gemma2, gemma3
        w.set_u32(a + "attention.sliding_window", c.sliding_window);
        w.set_u32(a + "attention.sliding_window_pattern", c.sliding_window_pattern);
    }
}

void write_hparams(gguf::GgufWriter& w, const HfConfig& c, const std::string& name, OutType out) {
    const std::string a = c.arch + ".";
    w.set_string("general.architecture", c.arch);
    w.set_string("general.type", "model");
    w.set_string("general.name", name);
    w.set_u32(a + "vocab_size", c.vocab_size);
    w.set_u32(a + "context_length", c.n_ctx_train);
    w.set_u32(a + "embedding_length", c.n_embd);
    w.set_u32(a + "block_count", c.n_layer);
    if (!c.n_ff_per_layer.empty()) {  // gemma4's double-wide MLPs
        w.set_array_u32(a + "feed_forward_length", c.n_ff_per_layer);
    } else if (c.n_ff > 0) {
        w.set_u32(a + "feed_forward_length", c.n_ff);
    }
    w.set_u32(a + "attention.head_count", c.n_head);
    if (!c.conv_layers.empty()) {  // lfm2: 0 KV heads marks a convolution layer
        std::vector<uint32_t> kv;
        for (const bool conv : c.conv_layers) kv.push_back(conv ? 0 : c.n_head_kv);
        w.set_array_u32(a + "attention.head_count_kv", kv);
    } else if (c.arch == "gemma4" && (c.k_eq_v || c.n_head_kv_full != c.n_head_kv)) {
        // The full layers' own KV head count.
        std::vector<uint32_t> kv;
        for (const bool swa : c.swa_layers) kv.push_back(swa ? c.n_head_kv : c.n_head_kv_full);
        w.set_array_u32(a + "attention.head_count_kv", kv);
    } else {
        w.set_u32(a + "attention.head_count_kv", c.arch == "deepseek2" ? 1 : c.n_head_kv);
    }
    w.set_f32(a + "rope.freq_base", float(c.rope_theta));
    w.set_f32(
        a + (c.layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon"),
        float(c.rms_norm_eps));
    w.set_u32(a + "rope.dimension_count", c.n_rot);
    if (c.head_dim_given) {
        w.set_u32(a + "attention.key_length", c.head_dim);
        w.set_u32(a + "attention.value_length", c.head_dim);
    }
    const RopeScalingConfig& rs = c.rope_scaling;
    if (rs.kind == RopeScalingKind::linear || rs.kind == RopeScalingKind::yarn) {
        w.set_string(a + "rope.scaling.type",
                     rs.kind == RopeScalingKind::linear ? "linear" : "yarn");
        w.set_f32(a + "rope.scaling.factor", float(rs.factor));
        if (rs.kind == RopeScalingKind::yarn) {
            w.set_u32(a + "rope.scaling.original_context_length", rs.original_context);
        }
    }
    if (rs.kind == RopeScalingKind::none && c.arch == "command-r") {
        w.set_string(a + "rope.scaling.type", "none");  // as llama.cpp's converter
    }
    write_arch_hparams(w, c);
    if (c.n_expert > 0) {
        w.set_u32(a + "expert_count", c.n_expert);
        w.set_u32(a + "expert_used_count", c.n_expert_used);
        if (c.model_type != "mixtral") w.set_u32(a + "expert_feed_forward_length", c.n_ff_expert);
        if (c.n_ff_shared_expert > 0) {
            w.set_u32(a + "expert_shared_feed_forward_length", c.n_ff_shared_expert);
        }
        // qwen35moe, lfm2moe, gemma4 and gpt-oss always renormalise; llama.cpp's converter
        // writes no key.
        if (c.arch != "qwen35moe" && c.arch != "lfm2moe" && c.arch != "gemma4" &&
            c.arch != "gpt-oss") {
            w.set_bool(a + "expert_weights_norm", c.expert_weights_norm);
        }
    }
    w.set_u32("general.file_type", file_type_of(out));
    w.set_u32("general.quantization_version", 2);
}

GgufVocab load_vocab(const std::string& dir, const HfConfig& c, const ConvertOptions& options) {
    const std::string spm_path = join(dir, "tokenizer.model");
    const std::string json_path = join(dir, "tokenizer.json");
    GgufVocab v;
    std::optional<SpmModel> spm;
    if (is_file(spm_path)) {
        const MappedFile f = MappedFile::open(spm_path, {.use_mmap = false});
        spm = parse_spm_model(f.bytes(), spm_path);
        v = vocab_from_spm(*spm);
        if (const std::string added = join(dir, "added_tokens.json"); is_file(added)) {
            apply_added_tokens_json(v, MappedFile::open(added, {.use_mmap = false}).bytes(), added);
        }
    } else if (is_file(json_path)) {
        const MappedFile f = MappedFile::open(json_path, {.use_mmap = false});
        v = vocab_from_tokenizer_json(f.bytes(), json_path, options.vocab_pre);
    } else {
        fail(ErrorKind::bad_file,
             "{}: no tokenizer: expected tokenizer.model (SentencePiece) or "
             "tokenizer.json",
             dir);
    }
    if (const std::string cfg = join(dir, "tokenizer_config.json"); is_file(cfg)) {
        apply_tokenizer_config(v, MappedFile::open(cfg, {.use_mmap = false}).bytes(), cfg);
    }
    // Newer repositories (gpt-oss's, for one) keep the template in a file of its own;
    // tokenizer_config.json's wins where both exist, as in llama.cpp's converter.
    if (const std::string jinja = join(dir, "chat_template.jinja");
        v.chat_templates.empty() && is_file(jinja)) {
        const MappedFile f = MappedFile::open(jinja, {.use_mmap = false});
        const auto bytes = f.bytes();
        v.chat_templates.emplace_back("", std::string(bytes.begin(), bytes.end()));
    }
    // Ids config.json names, then SentencePiece's own, where the tokenizer files named none.
    const std::pair<const char*, std::optional<uint32_t>> config_ids[] = {
        {"bos", c.bos_token_id},
        {"eos", c.eos_token_id},
        {"padding", c.pad_token_id},
        {"unknown", c.unk_token_id}};
    for (const auto& [kind, id] : config_ids) {
        if (id && *id < c.vocab_size) v.set_special_id(kind, *id);
    }
    if (spm) {
        const std::pair<const char*, int32_t> spm_ids[] = {{"unknown", spm->unk_id},
                                                           {"bos", spm->bos_id},
                                                           {"eos", spm->eos_id},
                                                           {"padding", spm->pad_id}};
        for (const auto& [kind, id] : spm_ids) {
            if (id >= 0) v.set_special_id(kind, uint32_t(id));
        }
    }
    pad_vocab(v, c.vocab_size, dir);
    validate_vocab(v, dir);
    return v;
}

}  // namespace

ConvertResult convert_hf(const std::string& dir, const std::string& out_path,
                         const ConvertOptions& options) {
    const std::string config_path = join(dir, "config.json");
    if (!is_file(config_path)) {
        fail(ErrorKind::io, "{}: no config.json (is this a Hugging Face model folder?)", dir);
    }
    const HfConfig c = [&] {
        const MappedFile f = MappedFile::open(config_path, {.use_mmap = false});
        return parse_hf_config(f.bytes(), config_path);
    }();
    const OutType out = options.out_type.value_or(OutType::f16);
    ConvertResult result;
    result.arch = c.arch;
    result.warnings = c.warnings;

    // Tensors first: their shapes confirm config.json's sizes (vocab_size included) before the
    // vocabulary is padded to that size.
    Checkpoint ck(dir);
    TensorBuilder builder(ck, out);
    build_tensors(builder, ck, c);
    builder.finish(dir, c);
    std::vector<std::string> unused = ck.unused();
    size_t skipped = 0;
    std::erase_if(unused, [&c, &skipped](const std::string& n) {
        if (n.size() >= 21 && n.compare(n.size() - 21, 21, "rotary_emb.inv_freq") == 0) return true;
        // DeepSeek-V3's multi-token-prediction layers follow the model's: not for inference.
        unsigned layer = 0;
        if (c.n_nextn_layers > 0 && std::sscanf(n.c_str(), "model.layers.%u.", &layer) == 1 &&
            layer >= c.n_layer && layer < c.n_layer + c.n_nextn_layers) {
            return true;
        }
        // Qwen3.5's vision encoder and MTP layer, Gemma 4's vision and audio encoders: not part
        // of the language model memwall runs.
        const bool qwen35_extra = (c.arch == "qwen35" || c.arch == "qwen35moe") &&
                                  (n.starts_with("model.visual.") || n.starts_with("mtp.") ||
                                   n.starts_with("model.mtp."));
        const bool gemma4_extra =
            c.arch == "gemma4" &&
            (n.starts_with("model.vision_tower.") || n.starts_with("model.audio_tower.") ||
             n.starts_with("model.embed_vision.") || n.starts_with("model.embed_audio."));
        skipped += qwen35_extra || gemma4_extra;
        return qwen35_extra || gemma4_extra;
    });
    if (skipped > 0) {
        result.warnings.push_back(fmt::format(
            "{} tensors of the vision or audio encoders and the MTP layers are not converted",
            skipped));
    }
    if (!unused.empty()) {
        std::string list;
        for (size_t i = 0; i < unused.size() && i < 8; ++i) list += (i ? ", " : "") + unused[i];
        if (unused.size() > 8) list += fmt::format(" and {} more", unused.size() - 8);
        fail(ErrorKind::unsupported,
             "{}: {} tensor{} that a {} model does not have: {} (a different architecture or an "
             "extension memwall does not convert)",
             dir, unused.size(), unused.size() > 1 ? "s" : "", c.model_type, list);
    }

    const GgufVocab vocab = load_vocab(dir, c, options);
    result.warnings.insert(result.warnings.end(), vocab.warnings.begin(), vocab.warnings.end());

    gguf::GgufWriter w;
    std::string name = options.name;
    if (name.empty()) name = c.name;
    if (name.empty()) {
        fs::path folder = fs::absolute(dir).lexically_normal();
        if (folder.filename().empty()) folder = folder.parent_path();
        name = folder.filename().string();
    }
    write_hparams(w, c, name, out);
    write_vocab(w, vocab);
    for (const OutputTensor& t : builder.outputs()) {
        add_output_tensor(w, t);
        result.n_params += t.n_elements();
    }
    result.n_tensors = builder.outputs().size();
    result.n_vocab = uint32_t(vocab.tokens.size());
    result.file_bytes = w.total_bytes();
    const auto& outputs = builder.outputs();
    w.write_file(out_path, [&](size_t done, size_t total) {
        if (options.on_tensor) options.on_tensor(done, total, outputs[done - 1].name);
    });
    verify_written_model(out_path);
    return result;
}

}  // namespace mw::convert
