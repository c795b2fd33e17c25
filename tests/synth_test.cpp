// memwall synth: the files must load in llama.cpp as well as in memwall. llama.cpp sizes the
// FFN tensors of the llama architecture, expert tensors included, by feed_forward_length; a
// Mixtral-style file with 0 there aborts its loader (GGML_ASSERT ne >= 1), so the header of every
// preset is checked against its tensors. One small preset is written, run, and rewritten to check
// that a seed gives the same file.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "support/test_support.h"
#include "synth/synth.h"

namespace mw {
namespace {

TEST(Synth, FeedForwardLengthMatchesTheFfnTensorsOfEveryPreset) {
    for (const SynthPreset& p : synth_presets()) {
        SCOPED_TRACE(p.id);
        const std::vector<uint8_t> header = spec_gguf_header(p.spec, QuantRecipe::Q4_K_M);
        const gguf::GgufFile f = gguf::GgufFile::parse(header, p.id, {.header_only = true});
        const std::string a = p.spec.arch + ".";
        const auto n_ff = f.get_u32(a + "feed_forward_length");
        ASSERT_TRUE(n_ff.has_value());
        if (const gguf::TensorInfo* t = f.find_tensor("blk.0.ffn_gate.weight")) {
            EXPECT_EQ(*n_ff, t->ne[1]);
        } else if (p.spec.arch == "llama") {
            const gguf::TensorInfo* e = f.find_tensor("blk.0.ffn_gate_exps.weight");
            ASSERT_NE(e, nullptr);
            EXPECT_EQ(*n_ff, e->ne[1]) << "llama.cpp sizes llama experts by feed_forward_length";
            EXPECT_EQ(f.get_u32(a + "expert_feed_forward_length"), e->ne[1]);
        }
    }
}

std::vector<char> slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Synth, SmallPresetRunsAndIsDeterministic) {
#ifdef MW_TEST_SANITIZED
    GTEST_SKIP() << "writes and runs a 0.5 B model: release builds only";
#endif
    const std::string dir = test::temp_dir();
    const std::string a = dir + "/a.gguf", b = dir + "/b.gguf";
    const std::string cli = test::cli_path();
    const auto synth = [&](const std::string& out) {
        return test::run_command(cli + " synth --preset qwen2.5-0.5b --type Q4_0 --seed 7 -o " +
                                 out);
    };
    ASSERT_EQ(synth(a).exit_code, 0);
    const test::CommandResult run =
        test::run_command(cli + " run -m " + a + " -p 'Once upon a time' -n 4 --temp 0 -c 64");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(synth(b).exit_code, 0);
    EXPECT_TRUE(slurp(a) == slurp(b)) << "the same seed must give the same file";
    std::remove(a.c_str());
    std::remove(b.c_str());
}

}  // namespace
}  // namespace mw
