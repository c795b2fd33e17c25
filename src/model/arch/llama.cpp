// The llama family without quirks of its own (llama, mistral: the common keys and the attention
// of model.cpp say all) and two variants of it: granite (embedding, residual, attention and logit
// multipliers) and smollm3 (no rotation on every fourth layer).
#include "model/arch/arch.h"

namespace mw {

void read_granite(const gguf::GgufFile& f, HParams& hp) {
    const std::string& a = hp.arch;
    hp.embd_scale = positive_f32(f, a + ".embedding_scale", 1.0f);
    hp.residual_scale = positive_f32(f, a + ".residual_scale", 1.0f);
    if (f.find(a + ".attention.scale"))
        hp.attn_scale = positive_f32(f, a + ".attention.scale", 1.0f);
    hp.logit_scale = 1.0f / positive_f32(f, a + ".logit_scale", 1.0f);
}

void read_smollm3(const gguf::GgufFile&, HParams& hp) {
    hp.nope_interval = 4;  // llama.cpp's fixed interval: no GGUF key
}

}  // namespace mw
