// Gemma 2 and 3: embeddings scaled by sqrt(n_embd), RMSNorm after the attention and the FFN as
// well as before, GELU FFN, sliding-window layers in a fixed pattern with their own RoPE base;
// gemma2 soft-caps attention and final logits, gemma3 normalises Q and K per head instead.
#include <cmath>

#include "base/error.h"
#include "model/arch/arch.h"

namespace mw {
namespace {

void read_gemma(const gguf::GgufFile& f, HParams& hp, bool gemma2) {
    const std::string& a = hp.arch;
    hp.embd_scale = std::sqrt(float(hp.n_embd));
    hp.post_norms = true;
    hp.ffn_act = FfnActivation::gelu;
    // The 27B models scale queries by n_embd / n_head instead of the head size.
    const bool big = (gemma2 && hp.n_layer == 46) || (!gemma2 && hp.n_layer == 62);
    if (big) hp.attn_scale = 1.0f / std::sqrt(float(hp.n_embd / hp.n_head));
    hp.n_swa = get_arch_u32(f, a, "attention.sliding_window").value_or(gemma2 ? 4096 : 0);
    if (hp.n_swa > 0) {
        hp.swa_pattern =
            get_arch_u32(f, a, "attention.sliding_window_pattern").value_or(gemma2 ? 2 : 6);
        check_range(f, "attention.sliding_window_pattern", hp.swa_pattern, 0, hp.n_layer + 1);
    }
    if (gemma2) {
        hp.attn_softcap = positive_f32(f, a + ".attn_logit_softcapping", 50.0f);
        hp.final_softcap = positive_f32(f, a + ".final_logit_softcapping", 30.0f);
        hp.rope_freq_base_swa = f.get_f32(a + ".rope.freq_base_swa").value_or(hp.rope_freq_base);
        hp.rope_freq_scale_swa = hp.rope_freq_scale;
    } else {
        if (f.find(a + ".final_logit_softcapping"))
            hp.final_softcap = positive_f32(f, a + ".final_logit_softcapping", 1.0f);
        hp.rope_freq_base_swa = f.get_f32(a + ".rope.freq_base_swa").value_or(10000.0f);
        hp.rope_freq_scale_swa = 1.0f;  // the sliding layers are not scaled
    }
    if (!(hp.rope_freq_base_swa > 1.0f)) {
        fail(ErrorKind::bad_file, "{}: rope.freq_base_swa = {} must be > 1", f.name(),
             hp.rope_freq_base_swa);
    }
}

}  // namespace

void read_gemma2(const gguf::GgufFile& f, HParams& hp) {
    read_gemma(f, hp, /*gemma2=*/true);
}

void read_gemma3(const gguf::GgufFile& f, HParams& hp) {
    read_gemma(f, hp, /*gemma2=*/false);
}

void bind_gemma3_attention(Binder& b, const HParams& hp, uint32_t il, Layer& l) {
    bind_llama_attention(b, hp, il, l, /*qk_norm=*/true);
}

}  // namespace mw
