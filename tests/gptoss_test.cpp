// gpt-oss (issue 41) beyond its reference cases: what the loader reads from gpt-oss-tiny (the
// sliding/full pattern without a key, YaRN on both kinds of layer, sinks and biases), and files
// that lack what it needs: clear errors naming the tensor or key.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "runtime/loaded_model.h"
#include "support/gguf_edit.h"
#include "support/test_support.h"
#include "support/tiny_model.h"

namespace mw {
namespace {

const char* kF16 = "reference/models/gpt-oss-tiny-F16.gguf";

// A copy of the model with `edit` applied (test::edited_gguf_copy).
std::string edited_copy(const std::string& name, const std::function<void(gguf::GgufWriter&)>& edit,
                        const std::string& drop_tensor = "") {
    return test::edited_gguf_copy(test::shared_path(kF16), "gptoss-" + name, edit, drop_tensor);
}

TEST(GptOss, ReadsTheLayoutOfItsFile) {
    const auto lm = LoadedModel::load(test::shared_path(kF16), LoadOptions{});
    const Model& m = lm->model;
    const HParams& hp = m.hp;
    EXPECT_EQ(hp.n_swa, 32u);
    EXPECT_TRUE(hp.swa_layer(0));  // llama.cpp's default pattern: even layers slide
    EXPECT_FALSE(hp.swa_layer(1));
    EXPECT_EQ(hp.rope_scaling, RopeScaling::yarn);
    EXPECT_TRUE(m.rope.neox);
    EXPECT_FLOAT_EQ(m.rope.freq_scale, 1.0f / 32.0f);
    // The sliding layers rotate as the full ones do.
    EXPECT_EQ(m.rope_swa.freq_base, m.rope.freq_base);
    EXPECT_EQ(m.rope_swa.freq_scale, m.rope.freq_scale);
    EXPECT_EQ(m.rope_swa.ext_factor, 1.0f);
    EXPECT_EQ(hp.ffn_act, FfnActivation::swiglu_oai);
    for (const Layer& l : m.layers) {
        EXPECT_TRUE(l.moe);
        EXPECT_EQ(l.attn_sinks.size(), 8u);
        EXPECT_EQ(l.bo.size(), 256u);
        EXPECT_EQ(l.router_bias.size(), 4u);
        EXPECT_EQ(l.exp_gate_bias.size(), 4u * 256u);
        EXPECT_EQ(l.exp_down_bias.size(), 4u * 256u);
    }
}

TEST(GptOss, FilesLackingWhatItNeedsAreClearErrors) {
    test::expect_load_error(edited_copy(
                                "nosink", [](gguf::GgufWriter&) {}, "blk.1.attn_sinks.weight"),
                            {"missing tensor", "blk.1.attn_sinks.weight"});
    test::expect_load_error(edited_copy(
                                "nobias", [](gguf::GgufWriter&) {}, "blk.0.ffn_down_exps.bias"),
                            {"missing tensor", "blk.0.ffn_down_exps.bias"});
    test::expect_load_error(
        edited_copy("noswa",
                    [](gguf::GgufWriter& w) { w.remove("gpt-oss.attention.sliding_window"); }),
        {"gpt-oss.attention.sliding_window", "missing"});
    test::expect_load_error(
        edited_copy("sinkshape",
                    [](gguf::GgufWriter& w) { w.set_u32("gpt-oss.attention.head_count", 4); }),
        {"attn_sinks.weight has shape [8], expected [4]"});
}

}  // namespace
}  // namespace mw
