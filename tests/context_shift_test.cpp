// Context shift: dropping cached tokens and re-rotating the keys that move back must give what
// computing the kept tokens from scratch at their new positions gives. That holds exactly for
// one layer (its keys and values depend only on the token and its position); deeper layers'
// cached states also saw the dropped tokens, so for them the shift is the usual approximation.
// Hence: 1-layer cuts of real models (normal and NeoX RoPE, YaRN, frequency factors; F32, F16
// and quantized caches), plus the full stories260K, the C API's validation and the CLI.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "memwall.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "support/test_support.h"

namespace mw {
namespace {

std::unique_ptr<LoadedModel> load(const std::string& relative) {
    return LoadedModel::load(test::shared_path(relative), LoadOptions{});
}

// Keeps only the first layer: a complete model whose cached keys and values depend on nothing
// but each token and its position.
void keep_one_layer(LoadedModel& m) {
    m.model.hp.n_layer = 1;
    m.model.layers.resize(1);
}

// Tokens of War and Peace (a real text, so that the cache holds varied keys).
std::vector<int32_t> text_tokens(const LoadedModel& m, size_t n) {
    const std::string text = test::read_text(test::shared_path("testdata/text/war-and-peace.txt"))
                                 .substr(0, 4 * n + 400);
    std::vector<int32_t> tokens = m.vocab->tokenize(text, true, false);
    EXPECT_GE(tokens.size(), n);
    tokens.resize(std::min(tokens.size(), n));
    return tokens;
}

struct ShiftCase {
    uint32_t n_past;
    uint32_t n_keep;
    uint32_t n_discard;
    GgmlType type_k = GgmlType::F32;
    GgmlType type_v = GgmlType::F32;
    uint32_t n_batch = 512;  // with a sliding window: what the ring holds beyond the window
};

using Steps = std::vector<std::vector<float>>;  // logits of each decode step

ContextParams params(const ShiftCase& c, uint32_t n_next, GgmlType type_k, GgmlType type_v) {
    ContextParams p;
    p.n_ctx = c.n_past + n_next;
    p.n_threads = 2;
    p.type_k = type_k;
    p.type_v = type_v;
    p.n_batch = c.n_batch;
    return p;
}

// Decodes n_past tokens, shifts, then decodes n_next more one at a time.
Steps after_shift(const LoadedModel& m, const ShiftCase& c, uint32_t n_next) {
    const std::vector<int32_t> tokens = text_tokens(m, c.n_past + n_next);
    Context ctx(m, params(c, n_next, c.type_k, c.type_v));
    ctx.decode(tokens.data(), c.n_past, false);
    ctx.shift(c.n_keep, c.n_discard);
    EXPECT_EQ(ctx.n_past(), c.n_past - c.n_discard);
    Steps steps;
    for (uint32_t i = 0; i < n_next; ++i) {
        ctx.decode(&tokens[c.n_past + i], 1, false);
        steps.emplace_back(ctx.logits(-1), ctx.logits(-1) + m.model.hp.n_vocab);
    }
    return steps;
}

// The same from scratch: the kept tokens, then the same n_next tokens.
Steps recomputed(const LoadedModel& m, const ShiftCase& c, uint32_t n_next, GgmlType type_k,
                 GgmlType type_v) {
    const std::vector<int32_t> tokens = text_tokens(m, c.n_past + n_next);
    std::vector<int32_t> kept(tokens.begin(), tokens.begin() + c.n_keep);
    kept.insert(kept.end(), tokens.begin() + c.n_keep + c.n_discard, tokens.begin() + c.n_past);
    Context ctx(m, params(c, n_next, type_k, type_v));
    ctx.decode(kept.data(), uint32_t(kept.size()), false);
    Steps steps;
    for (uint32_t i = 0; i < n_next; ++i) {
        ctx.decode(&tokens[c.n_past + i], 1, false);
        steps.emplace_back(ctx.logits(-1), ctx.logits(-1) + m.model.hp.n_vocab);
    }
    return steps;
}

double worst_rel_rms(const Steps& a, const Steps& b) {
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, test::rel_rms(a[i].data(), b[i].data(), a[i].size()));
    }
    return worst;
}

// Logits after a shift against recomputing the kept tokens with the same cache types.
double shift_vs_recompute(const LoadedModel& m, const ShiftCase& c, uint32_t n_next = 4) {
    return worst_rel_rms(after_shift(m, c, n_next), recomputed(m, c, n_next, c.type_k, c.type_v));
}

TEST(ContextShift, OneLayerF32MatchesRecomputing) {
    auto m = load("models/stories260K.gguf");  // normal (adjacent pairs) RoPE
    keep_one_layer(*m);
    for (const ShiftCase& c : {ShiftCase{60, 5, 27}, ShiftCase{100, 0, 50}, ShiftCase{41, 40, 1},
                               ShiftCase{90, 1, 88}}) {
        const double rel = shift_vs_recompute(*m, c);
        EXPECT_LT(rel, 1e-5) << "keep " << c.n_keep << " discard " << c.n_discard;
    }
}

TEST(ContextShift, NeoxRopeMatchesRecomputing) {
    // F32 weights with NeoX (half-split) rotation: as tight as the normal style.
    auto m = load("models/stories260K.gguf");
    keep_one_layer(*m);
    m->model.rope.neox = true;
    EXPECT_LT(shift_vs_recompute(*m, {70, 3, 30}), 1e-5);

    // A real NeoX model (base 1e6, Q/K/V biases). Its F16 weights round the activations to F16
    // before every product, which turns float noise into half-precision steps: looser.
    auto qwen2 = load("reference/models/qwen2-tiny-F16.gguf");
    keep_one_layer(*qwen2);
    EXPECT_LT(shift_vs_recompute(*qwen2, {120, 3, 57}), 2e-3);
}

TEST(ContextShift, YarnAndFrequencyFactorsMatchRecomputing) {
    // The same weights with YaRN scaling (whose attention factor scales the rotated keys once:
    // a shift must rotate without scaling again) and per-pair frequency divisors.
    auto m = load("models/stories260K.gguf");
    keep_one_layer(*m);
    RopeParams& rope = m->model.rope;
    rope.freq_scale = 0.25f;
    rope.ext_factor = 1.0f;
    rope.attn_factor = 1.0f;
    rope.n_ctx_orig = 64;
    m->model.rope_freq_factors = {1.0f, 2.0f, 4.0f, 8.0f};
    rope.freq_factors = m->model.rope_freq_factors.data();
    EXPECT_LT(shift_vs_recompute(*m, {80, 4, 30}), 1e-5);
}

TEST(ContextShift, F16AndQuantizedCachesAddOneRounding) {
    // F16 and quantized keys are decoded, rotated and encoded again: one more rounding of each
    // moved key. So a shift may differ from recomputing by about the cache type's own error
    // (recomputed with that type against an F32 cache), not more.
    auto m = load("reference/models/kq-tiny-F16.gguf");  // head size 32: Q8_0/Q4_0 apply
    keep_one_layer(*m);
    const ShiftCase base{100, 4, 40};
    const Steps exact = recomputed(*m, base, 4, GgmlType::F32, GgmlType::F32);
    for (GgmlType type : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
        ShiftCase c = base;
        c.type_k = type;
        const double own = worst_rel_rms(recomputed(*m, c, 4, type, GgmlType::F32), exact);
        const double shift = shift_vs_recompute(*m, c);
        std::printf("[ %s keys ] shift vs recompute %.3g; the type's own error %.3g\n",
                    type_traits(type)->name, shift, own);
        EXPECT_LT(shift, 2.0 * own) << type_traits(type)->name;
    }
}

TEST(ContextShift, FullModelStaysCoherent) {
    // Five layers: the kept tokens' deeper states still carry the dropped ones, so the result
    // differs from recomputing, but stays close to it.
    auto m = load("models/stories260K.gguf");
    const double rel = shift_vs_recompute(*m, {100, 1, 40}, 8);
    std::printf("[ stories260K, 5 layers ] shift vs recompute: rel_rms %.3g\n", rel);
    EXPECT_LT(rel, 0.2);
}

// Sliding-window layers keep a ring of the last window + batch positions (rounded up to pages):
// a window of 16 and batches of 16 make a ring of one 32-position page, which 150 tokens wrap
// several times. The shift moves what the ring holds, with the window layers' own RoPE base.
void shrink_window(LoadedModel& m) {
    ASSERT_TRUE(m.model.hp.swa_layer(0)) << "the first layer is a sliding-window one";
    m.model.hp.n_swa = 16;
}

// smollm3's NoPE layers cache keys without RoPE: a shift must move them without rotating them.
// Every layer made NoPE here, so a rotation anywhere would show.
TEST(ContextShift, NopeLayersAreMovedNotRotated) {
    auto m = load("reference/models/smollm3-tiny-F16.gguf");
    keep_one_layer(*m);
    m->model.hp.nope_interval = 1;
    EXPECT_FALSE(m->model.hp.rope_layer(0));
    EXPECT_LT(shift_vs_recompute(*m, {120, 3, 57, GgmlType::F32, GgmlType::F32}), 2e-3);
}

TEST(ContextShift, SlidingWindowLayersMatchRecomputing) {
    for (const char* name :
         {"reference/models/gemma2-tiny-F16.gguf", "reference/models/gemma3-tiny-F16.gguf"}) {
        auto m = load(name);
        keep_one_layer(*m);
        shrink_window(*m);
        // The kept prefix older than the window; positions the ring held moving back across
        // its wrap; a kept prefix reaching into the window.
        for (const ShiftCase& c : {ShiftCase{150, 4, 60, GgmlType::F32, GgmlType::F32, 16},
                                   ShiftCase{150, 100, 20, GgmlType::F32, GgmlType::F32, 16},
                                   ShiftCase{100, 70, 12, GgmlType::F32, GgmlType::F32, 16}}) {
            // F16 weights round activations to half precision before each product (as qwen2's).
            EXPECT_LT(shift_vs_recompute(*m, c), 2e-3)
                << name << ": keep " << c.n_keep << " discard " << c.n_discard;
        }
    }
}

TEST(ContextShift, SlidingWindowRefusesWhatTheRingNoLongerHolds) {
    auto m = load("reference/models/gemma2-tiny-F16.gguf");
    keep_one_layer(*m);
    shrink_window(*m);
    // 150 cached: the ring holds positions 118-149. Keeping 120 and dropping 20 puts the next
    // token at 130, whose window (115-130) needs positions 115-117 of the kept prefix: gone.
    const ShiftCase c{150, 120, 20, GgmlType::F32, GgmlType::F32, 16};
    const std::vector<int32_t> tokens = text_tokens(*m, c.n_past);
    Context ctx(*m, params(c, 4, c.type_k, c.type_v));
    ctx.decode(tokens.data(), c.n_past, false);
    try {
        ctx.shift(c.n_keep, c.n_discard);
        ADD_FAILURE() << "the shift was not refused";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("sliding-window layers, which keep only the last 32"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(ctx.n_past(), c.n_past);  // nothing changed
    // Dropping 10 puts the next token at 140: its window (125-140) is in the ring.
    ctx.shift(c.n_keep, 10);
    EXPECT_EQ(ctx.n_past(), c.n_past - 10);
}

TEST(ContextShift, LatentAttentionMatchesRecomputing) {
    // DeepSeek-V2's MLA caches a compressed latent and a decoupled RoPE part per position: the
    // shift re-rotates only the RoPE part.
    auto m = load("reference/models/deepseek2-tiny-F16.gguf");
    keep_one_layer(*m);
    for (const ShiftCase& c : {ShiftCase{120, 3, 57}, ShiftCase{90, 40, 10}}) {
        EXPECT_LT(shift_vs_recompute(*m, c), 2e-3)
            << "keep " << c.n_keep << " discard " << c.n_discard;
    }
}

// ---- C API and CLI -----------------------------------------------------------------------

TEST(ContextShift, ApiValidatesTheRange) {
    mw_model* model = nullptr;
    const std::string path = test::shared_path("models/stories260K.gguf");
    ASSERT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 32;
    mw_context* ctx = nullptr;
    ASSERT_EQ(mw_context_create(model, &cp, &ctx), MW_OK) << mw_last_error();
    std::vector<int32_t> tokens(32, 5);
    tokens[0] = 1;
    ASSERT_EQ(mw_decode(ctx, tokens.data(), 20, false), MW_OK);

    EXPECT_EQ(mw_context_shift(ctx, 10, 11), MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("only 20 are cached"), std::string::npos)
        << mw_last_error();
    EXPECT_EQ(mw_context_shift(ctx, UINT32_MAX, 2), MW_ERR_INVALID_ARGUMENT);  // no wrap-around
    EXPECT_EQ(mw_context_shift(ctx, 2, UINT32_MAX), MW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(mw_context_shift(nullptr, 0, 1), MW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(mw_context_n_past(ctx), 20u);  // unchanged by the refused calls

    EXPECT_EQ(mw_context_shift(ctx, 4, 0), MW_OK);  // nothing to drop
    EXPECT_EQ(mw_context_n_past(ctx), 20u);
    EXPECT_EQ(mw_context_shift(ctx, 4, 16), MW_OK);  // everything after the kept tokens
    EXPECT_EQ(mw_context_n_past(ctx), 4u);
    EXPECT_EQ(mw_decode(ctx, tokens.data(), 28, false), MW_OK);  // the freed room is usable
    EXPECT_EQ(mw_context_n_past(ctx), 32u);
    mw_context_free(ctx);
    mw_model_free(model);
}

TEST(ContextShift, CliContinuesPastAFullContext) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    const std::string run = test::cli_path() + " run -m " + model +
                            " -p 'Once upon a time' -n 120 --temp 0 --ignore-eos -t 1";
    const std::string base = run + " -c 48";
    // Without --context-shift: a clear stop at the full context.
    const auto stop = test::run_command(base);
    ASSERT_EQ(stop.exit_code, 0) << stop.err;
    EXPECT_NE(stop.err.find("a full context (48 tokens"), std::string::npos) << stop.err;
    EXPECT_NE(stop.err.find("--context-shift"), std::string::npos) << stop.err;

    // With it: all 120 tokens, after a few shifts that keep BOS and the first prompt token.
    const auto shifted = test::run_command(base + " --context-shift --keep 1");
    ASSERT_EQ(shifted.exit_code, 0) << shifted.err;
    EXPECT_NE(shifted.err.find("stopped after 120 tokens"), std::string::npos) << shifted.err;
    EXPECT_NE(shifted.err.find("context shifts: "), std::string::npos) << shifted.err;
    EXPECT_NE(shifted.err.find("each kept 2 tokens and dropped 23"), std::string::npos)
        << shifted.err;
    // The text before the first shift is the same as without shifting.
    EXPECT_EQ(shifted.out.substr(0, 40), stop.out.substr(0, 40));

    // A --keep that leaves nothing to discard is refused up front.
    const auto refused = test::run_command(run + " -c 6 --context-shift --keep -1");
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("leaves nothing to discard"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace mw
