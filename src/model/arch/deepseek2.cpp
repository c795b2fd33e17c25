// DeepSeek-V2/V3 (deepseek2): multi-head latent attention (queries optionally through a low-rank
// A/B pair, keys and values from one compressed latent with per-head k_b/v_b up-projections, a
// shared rotary part), leading dense layers, then experts with softmax or sigmoid scores,
// optional expert groups, a weight scale, a selection bias and shared experts.
#include <fmt/format.h>

#include <cmath>

#include "base/error.h"
#include "model/arch/arch.h"

namespace mw {
namespace {

void read_routing(const gguf::GgufFile& f, HParams& hp) {
    const std::string& a = hp.arch;
    hp.expert_weights_norm = f.get_bool(a + ".expert_weights_norm").value_or(false);
    hp.expert_weights_scale = f.get_f32(a + ".expert_weights_scale").value_or(1.0f);
    if (!(hp.expert_weights_scale > 0.0f && std::isfinite(hp.expert_weights_scale))) {
        fail(ErrorKind::bad_file, "{}: expert_weights_scale = {} must be > 0", f.name(),
             hp.expert_weights_scale);
    }
    const uint32_t gating = get_arch_u32(f, a, "expert_gating_func").value_or(1);
    if (gating == 0 || gating == 1) {
        hp.expert_gating = ExpertGating::softmax;
    } else if (gating == 2) {
        hp.expert_gating = ExpertGating::sigmoid;
    } else {
        fail(ErrorKind::unsupported,
             "{}: expert_gating_func = {} is not supported (1 softmax, 2 sigmoid)", f.name(),
             gating);
    }
    hp.n_expert_shared = get_arch_u32(f, a, "expert_shared_count").value_or(0);
    check_range(f, "expert_shared_count", hp.n_expert_shared, 0, 64);
    hp.n_expert_groups = get_arch_u32(f, a, "expert_group_count").value_or(0);
    hp.n_group_used = get_arch_u32(f, a, "expert_group_used_count").value_or(0);
    if (hp.n_expert_groups > 1) {
        if (hp.n_expert % hp.n_expert_groups != 0 || hp.n_group_used == 0 ||
            hp.n_group_used > hp.n_expert_groups ||
            uint64_t(hp.n_group_used) * (hp.n_expert / hp.n_expert_groups) < hp.n_expert_used) {
            fail(ErrorKind::bad_file,
                 "{}: expert_group_count = {} / expert_group_used_count = {} do not fit {} "
                 "experts with {} used",
                 f.name(), hp.n_expert_groups, hp.n_group_used, hp.n_expert, hp.n_expert_used);
        }
    }
}

}  // namespace

void read_deepseek2(const gguf::GgufFile& f, HParams& hp) {
    const std::string& a = hp.arch;
    hp.q_lora_rank = get_arch_u32(f, a, "attention.q_lora_rank").value_or(0);
    hp.kv_lora_rank = require_u32(f, a, "attention.kv_lora_rank");
    check_range(f, "attention.q_lora_rank", hp.q_lora_rank, 0, 1u << 16);
    check_range(f, "attention.kv_lora_rank", hp.kv_lora_rank, 1, 1u << 16);
    const auto k_mla = get_arch_u32(f, a, "attention.key_length_mla");
    const auto v_mla = get_arch_u32(f, a, "attention.value_length_mla");
    if (!k_mla || !v_mla) {
        fail(ErrorKind::unsupported,
             "{}: deepseek2 without attention.key_length_mla / value_length_mla is the old "
             "layout with a joint attn_kv_b tensor; convert the model again (memwall convert "
             "or llama.cpp's convert_hf_to_gguf.py) to get attn_k_b and attn_v_b",
             f.name());
    }
    hp.head_dim_k_mla = *k_mla;
    hp.head_dim_v_mla = *v_mla;
    check_range(f, "attention.key_length_mla", hp.head_dim_k_mla, hp.n_rot + 1, 4096);
    check_range(f, "attention.value_length_mla", hp.head_dim_v_mla, 1, 4096);
    if (hp.n_head_kv != 1 || hp.head_dim_k != hp.kv_lora_rank + hp.n_rot ||
        hp.head_dim_v != hp.kv_lora_rank) {
        fail(ErrorKind::bad_file,
             "{}: deepseek2 MLA needs head_count_kv = 1, key_length = kv_lora_rank + "
             "rope.dimension_count = {} and value_length = kv_lora_rank = {} (the file has "
             "{}, {}, {})",
             f.name(), hp.kv_lora_rank + hp.n_rot, hp.kv_lora_rank, hp.n_head_kv, hp.head_dim_k,
             hp.head_dim_v);
    }
    hp.n_layer_dense_lead = get_arch_u32(f, a, "leading_dense_block_count").value_or(0);
    check_range(f, "leading_dense_block_count", hp.n_layer_dense_lead, 0, hp.n_layer);
    if (const auto m = f.get_f32(a + ".rope.scaling.yarn_log_multiplier")) {
        hp.yarn_log_mul = *m / 0.1f;  // the converter stores 0.1 x mscale_all_dim
    }
    if (hp.n_expert > 0) read_routing(f, hp);
}

void bind_deepseek2_mixer(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd, n_head = hp.n_head;
    const int64_t rank_kv = hp.kv_lora_rank, n_rot = hp.n_rot;
    const int64_t n_q = n_head * hp.head_dim_k_mla;
    const int64_t nope = int64_t(hp.head_dim_k_mla) - n_rot;
    if (hp.q_lora_rank > 0) {
        l.wq_a = b.matrix(p + "attn_q_a.weight", n_embd, hp.q_lora_rank);
        l.q_a_norm = b.vector(p + "attn_q_a_norm.weight", hp.q_lora_rank);
        l.wq_b = b.matrix(p + "attn_q_b.weight", hp.q_lora_rank, n_q);
    } else {
        l.wq = b.matrix(p + "attn_q.weight", n_embd, n_q);
    }
    l.wkv_a = b.matrix(p + "attn_kv_a_mqa.weight", n_embd, rank_kv + n_rot);
    l.kv_a_norm = b.vector(p + "attn_kv_a_norm.weight", rank_kv);
    l.wk_b = b.experts(p + "attn_k_b.weight", nope, rank_kv, n_head);
    l.wv_b = b.experts(p + "attn_v_b.weight", rank_kv, hp.head_dim_v_mla, n_head);
    l.wo = b.matrix(p + "attn_output.weight", n_head * hp.head_dim_v_mla, n_embd);
    l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
}

void bind_deepseek2_moe(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    l.expert_bias = b.vector(p + "exp_probs_b.bias", hp.n_expert, false);
    if (hp.n_expert_shared > 0) {
        const int64_t ns = int64_t(hp.n_ff_expert) * hp.n_expert_shared;
        l.shared_gate = b.matrix(p + "ffn_gate_shexp.weight", n_embd, ns);
        l.shared_up = b.matrix(p + "ffn_up_shexp.weight", n_embd, ns);
        l.shared_down = b.matrix(p + "ffn_down_shexp.weight", ns, n_embd);
    }
}

}  // namespace mw
