// Qwen2 and Qwen3 (llama attention with Q/K/V biases in qwen2, per-head Q/K norms in qwen3, NEOX
// rotation) and their MoE variants: qwen2moe adds a shared expert with a sigmoid gate and does not
// renormalise the chosen experts' weights; qwen3moe has experts only.
#include <fmt/format.h>

#include "model/arch/arch.h"

namespace mw {

void read_qwen2moe(const gguf::GgufFile& f, HParams& hp) {
    hp.expert_weights_norm = f.get_bool(hp.arch + ".expert_weights_norm").value_or(false);
}

void bind_qwen3_attention(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    bind_llama_attention(b, hp, il, l, /*qk_norm=*/true);
}

void bind_qwen_shared_expert(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    const int64_t ns = hp.n_ff_shared_expert ? hp.n_ff_shared_expert : hp.n_ff;
    l.shared_router = b.matrix(p + "ffn_gate_inp_shexp.weight", n_embd, 1);
    l.shared_gate = b.matrix(p + "ffn_gate_shexp.weight", n_embd, ns);
    l.shared_up = b.matrix(p + "ffn_up_shexp.weight", n_embd, ns);
    l.shared_down = b.matrix(p + "ffn_down_shexp.weight", ns, n_embd);
}

}  // namespace mw
