// Cohere's command-r: layer norm instead of RMSNorm, attention and FFN in parallel from one norm
// (no ffn_norm), and a logit scale.
#include "model/arch/arch.h"

namespace mw {

void read_command_r(const gguf::GgufFile& f, HParams& hp) {
    hp.norm = NormKind::layer;
    hp.parallel_residual = true;
    hp.logit_scale = positive_f32(f, hp.arch + ".logit_scale", 1.0f);
}

}  // namespace mw
