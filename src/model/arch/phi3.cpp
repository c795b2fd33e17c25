// Phi-3: fused QKV (bound by the common attention when attn_qkv is present) and fused gate/up
// (the first half of ffn_up's rows is the gate), LongRoPE with long and short frequency factors
// and a magnitude correction.
#include <fmt/format.h>

#include "model/arch/arch.h"

namespace mw {

void read_phi3(const gguf::GgufFile& f, HParams& hp) {
    // LongRoPE's magnitude correction (written by converters of the 128k models).
    hp.yarn_attn_factor = f.get_f32(hp.arch + ".rope.scaling.attn_factor").value_or(1.0f);
}

void bind_phi3_ffn(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    const std::string p = fmt::format("blk.{}.", il);
    const int64_t n_embd = hp.n_embd;
    if (!b.has(p + "ffn_gate.weight") && b.has(p + "ffn_up.weight")) {
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, 2 * int64_t(hp.n_ff));
    } else {
        l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, hp.n_ff);
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, hp.n_ff);
    }
    l.ffn_down = b.matrix(p + "ffn_down.weight", hp.n_ff, n_embd);
}

void bind_phi3_model(Binder& b, Model& m) {
    if (!b.has("rope_factors_long.weight")) return;
    m.rope_factors_long = b.vector("rope_factors_long.weight", m.hp.n_rot / 2);
    m.rope_factors_short = b.vector("rope_factors_short.weight", m.hp.n_rot / 2);
}

}  // namespace mw
