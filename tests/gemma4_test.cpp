// Gemma 4 (issue 41) beyond its reference cases (reference_test.cpp): what the loader reads
// from gemma4-tiny and gemma4moe-tiny (per-layer head sizes and KV heads, the sliding pattern, KV
// sharing, per-layer FFN widths, per-layer embeddings), the KV cache that holds rows only for the
// layers with their own K/V, batched decoding of several sequences against separate runs, and
// files with inconsistent metadata or missing tensors: clear errors naming the key or tensor.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/kv_cache.h"
#include "plan/planner.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "support/gguf_edit.h"
#include "support/model_inputs.h"
#include "support/test_support.h"

namespace mw {
namespace {

const char* kDense = "reference/models/gemma4-tiny-F16.gguf";
const char* kMoe = "reference/models/gemma4moe-tiny-F16.gguf";

std::string edited_copy(const std::string& name, const std::function<void(gguf::GgufWriter&)>& edit,
                        const std::string& drop_tensor = "") {
    return test::edited_gguf_copy(test::shared_path(kDense), "gemma4-" + name, edit, drop_tensor);
}

std::vector<float> fresh(const LoadedModel& m, const std::vector<int32_t>& tokens) {
    Context ctx(m, test::small_context());
    ctx.decode(tokens.data(), uint32_t(tokens.size()), false);
    const float* l = ctx.logits(-1);
    EXPECT_NE(l, nullptr);
    return l ? std::vector<float>(l, l + m.model.hp.n_vocab) : std::vector<float>{};
}

TEST(Gemma4, ReadsTheLayoutOfItsFile) {
    const auto lm = test::load_shared(kDense);
    const HParams& hp = lm->model.hp;
    ASSERT_EQ(hp.n_layer, 4u);
    EXPECT_EQ(hp.n_swa, 32u);
    for (uint32_t il = 0; il < 4; ++il) {
        const bool swa = il % 2 == 0;  // [true, false, true, false]
        EXPECT_EQ(hp.swa_layer(il), swa) << il;
        EXPECT_EQ(hp.head_dim_k_of(il), swa ? 64u : 128u) << il;
        EXPECT_EQ(hp.n_head_kv_of(il), 1u) << il;
        EXPECT_EQ(hp.n_ff_of(il), il < 2 ? 512u : 1024u) << il;  // double-wide on shared layers
        EXPECT_EQ(hp.has_kv(il), il < 2) << il;
    }
    EXPECT_EQ(hp.kv_layer(2), 0u);  // sliding reads the last sliding layer with a cache
    EXPECT_EQ(hp.kv_layer(3), 1u);  // full reads the last full one
    EXPECT_EQ(hp.n_embd_per_layer, 64u);
    EXPECT_FLOAT_EQ(hp.attn_scale, 1.0f);
    EXPECT_FLOAT_EQ(hp.final_softcap, 0.3f);
    EXPECT_EQ(lm->model.rope.n_rot, 128);
    EXPECT_EQ(lm->model.rope_swa.n_rot, 64);
    EXPECT_NE(lm->model.rope.freq_factors, nullptr);  // proportional RoPE: full layers only
    EXPECT_EQ(lm->model.rope_swa.freq_factors, nullptr);
    EXPECT_TRUE(lm->model.ple_embd.traits);
    EXPECT_TRUE(lm->model.layers[2].ple_gate.traits);
    EXPECT_FALSE(lm->model.layers[2].wk.traits);  // a sharing layer has no K/V of its own

    const auto moe = test::load_shared(kMoe);
    const HParams& mp = moe->model.hp;
    EXPECT_EQ(mp.n_head_kv_of(0), 2u);
    EXPECT_EQ(mp.n_head_kv_of(1), 1u);
    EXPECT_EQ(mp.n_embd_per_layer, 0u);
    EXPECT_TRUE(moe->model.layers[1].moe);
    EXPECT_FALSE(moe->model.layers[1].wv.traits);  // K = V on the full layer
    EXPECT_EQ(moe->model.layers[0].exp_down_scale.size(), 4u);
}

// F16 rows: only the layers with their own K/V hold any. gemma4-tiny: layer 0 (1 head of 64)
// and layer 1 (1 head of 128), keys and values; the two sharing layers none.
// gemma4moe-tiny: layer 0 two heads of 64, layer 1 one of 128.
TEST(Gemma4, KvCacheHoldsRowsOnlyForLayersWithTheirOwnKv) {
    const auto lm = test::load_shared(kDense);
    const HParams& hp = lm->model.hp;
    EXPECT_EQ(KvCache::bytes_per_position(hp, GgmlType::F16, GgmlType::F16),
              uint64_t(64 + 128) * 2 * 2);
    const auto moe = test::load_shared(kMoe);
    EXPECT_EQ(KvCache::bytes_per_position(moe->model.hp, GgmlType::F16, GgmlType::F16),
              uint64_t(2 * 64 + 128) * 2 * 2);
    // The allocation is what the planner predicts (the sliding layer keeps a ring).
    for (uint32_t n_seq : {1u, 3u}) {
        const KvCache kv(hp, 512, n_seq, GgmlType::F16, GgmlType::F16, 64);
        EXPECT_EQ(kv.bytes(),
                  KvCache::bytes_needed(hp, 512, GgmlType::F16, GgmlType::F16, n_seq, 64));
        EXPECT_GT(kv.ring_positions(), 0u);
        // Paged full layer: 512 positions + a page per extra sequence; never the sharing layers.
        EXPECT_LT(kv.bytes(), uint64_t(512 + 64 * n_seq) * (64 + 128) * 4 + 4 * kKvPageSize * 512);
    }
}

// The planner, from the header alone, predicts the KV cache a context allocates: the sharing
// layers counted as having none.
TEST(Gemma4, PlanCountsOnlyTheLayersWithTheirOwnKv) {
    for (const char* path : {kDense, kMoe}) {
        SCOPED_TRACE(path);
        const std::vector<uint8_t> bytes = test::read_file(test::shared_path(path));
        const gguf::GgufFile header = gguf::GgufFile::parse(bytes, path, {.header_only = true});
        const ModelFacts facts = model_facts(header, "F16");
        ASSERT_TRUE(facts.runnable) << facts.note;
        RunSettings run;
        run.n_ctx = 512;
        run.n_threads = 2;
        const MemoryPlan plan = plan_memory(facts, run);
        const auto m = test::load_shared(path);
        Context ctx(*m, test::small_context());
        EXPECT_EQ(plan.kv_bytes, ctx.kv_bytes());
        // The per-layer embedding table counted on storage: 16 rows of it stay.
        const WeightMatrix& ple = facts.model.ple_embd;
        const uint64_t table = ple.traits ? ple.row_bytes * uint64_t(ple.n_rows) : 0;
        EXPECT_EQ(plan.weights_bytes,
                  facts.weights_bytes - table + (ple.traits ? 16 * ple.row_bytes : 0));
        EXPECT_EQ(table > 0, std::string(path) == kDense);
        EXPECT_EQ(KvCache::bytes_per_position(facts.hp, GgmlType::F16, GgmlType::F16),
                  KvCache::bytes_per_position(m->model.hp, GgmlType::F16, GgmlType::F16));
    }
}

// Four sequences of different lengths (past the sliding window) in one batch, then one more
// token each in one batch: each sequence's logits are those of a run of its own.
TEST(Gemma4, BatchedSequencesMatchSeparateRuns) {
    for (const char* path : {kDense, kMoe}) {
        SCOPED_TRACE(path);
        const auto m = test::load_shared(path);
        const uint32_t n_vocab = m->model.hp.n_vocab;
        std::vector<std::vector<int32_t>> prompts = {
            test::book_tokens(*m, 0, 45), test::book_tokens(*m, 2000, 20),
            test::book_tokens(*m, 4000, 37), test::book_tokens(*m, 6000, 9)};
        Context ctx(*m, test::small_context(4));
        std::vector<BatchToken> batch;
        int32_t last[4];  // each sequence's last token in the batch
        for (uint32_t s = 0; s < 4; ++s) {
            const auto& p = prompts[s];
            for (size_t i = 0; i < p.size(); ++i) batch.push_back({p[i], s, -1, i + 1 == p.size()});
            last[s] = int32_t(batch.size()) - 1;
        }
        ctx.decode(batch);
        std::vector<std::vector<float>> first;
        for (uint32_t s = 0; s < 4; ++s) {
            const float* l = ctx.logits(last[s]);
            ASSERT_NE(l, nullptr);
            first.emplace_back(l, l + n_vocab);
        }
        batch.clear();
        const int32_t next[4] = {17, 301, 42, 99};
        for (uint32_t s = 0; s < 4; ++s) batch.push_back({next[s], s, -1, true});
        ctx.decode(batch);
        for (uint32_t s = 0; s < 4; ++s) {
            const auto want = fresh(*m, prompts[s]);
            EXPECT_LT(test::rel_rms(first[s].data(), want.data(), n_vocab), 1e-3) << s;
            auto longer = prompts[s];
            longer.push_back(next[s]);
            const auto want2 = fresh(*m, longer);
            EXPECT_LT(test::rel_rms(ctx.logits(int32_t(s)), want2.data(), n_vocab), 1e-3) << s;
        }
    }
}

// The per-layer embedding table on storage (the default) gives the logits of the resident table
// bit for bit, reads one row per token (none for a token whose row is cached) and gives the
// table's pages back.
TEST(Gemma4, PerLayerEmbeddingsOnStorageGiveTheResidentLogits) {
    for (const char* path : {kDense, "reference/models/gemma4-tiny-Q4_K_M.gguf"}) {
        SCOPED_TRACE(path);
        LoadOptions resident;
        resident.ple_resident = true;
        const auto stored = LoadedModel::load(test::shared_path(path), LoadOptions{});
        const auto kept = LoadedModel::load(test::shared_path(path), resident);
        ASSERT_NE(stored->model.ple_source, nullptr);
        EXPECT_EQ(kept->model.ple_source, nullptr);
        EXPECT_GT(stored->ple_bytes_dropped, 0u);
        const auto tokens = test::book_tokens(*stored, 0, 70);
        const uint32_t n = uint32_t(tokens.size()), n_vocab = stored->model.hp.n_vocab;
        Context a(*stored, test::small_context()), b(*kept, test::small_context());
        a.decode(tokens.data(), n, true);
        b.decode(tokens.data(), n, true);
        for (uint32_t i = 0; i < n; ++i) {
            ASSERT_EQ(
                std::memcmp(a.logits(int32_t(i)), b.logits(int32_t(i)), n_vocab * sizeof(float)), 0)
                << "token " << i;
        }
        const PleSource& src = *stored->ple_source;
        const uint64_t row = stored->model.ple_embd.row_bytes;
        EXPECT_EQ(src.bytes_read() + src.cache_hits() * row, uint64_t(n) * row);
        EXPECT_GT(src.bytes_read(), 0u);
        std::printf(
            "[ %s ] per-layer embeddings: %llu bytes per token read from storage (%llu "
            "rows read, %llu from the cache)\n",
            path, static_cast<unsigned long long>(row),
            static_cast<unsigned long long>(src.bytes_read() / row),
            static_cast<unsigned long long>(src.cache_hits()));
    }
}

TEST(Gemma4, FilesWithInconsistentMetadataAreClearErrors) {
    const std::vector<uint32_t> three = {512, 512, 1024};
    test::expect_load_error(edited_copy("ffarray",
                                        [&](gguf::GgufWriter& w) {
                                            w.set_array_u32("gemma4.feed_forward_length", three);
                                        }),
                            {"gemma4.feed_forward_length", "3 entries for 4 layers"});
    test::expect_load_error(
        edited_copy(
            "pattern",
            [](gguf::GgufWriter& w) {
                w.set_array_bool("gemma4.attention.sliding_window_pattern", {true, false, true});
            }),
        {"gemma4.attention.sliding_window_pattern", "3 entries for 4 layers"});
    const std::vector<uint32_t> kv = {1, 3, 1, 1};
    test::expect_load_error(edited_copy("kvheads",
                                        [&](gguf::GgufWriter& w) {
                                            w.set_array_u32("gemma4.attention.head_count_kv", kv);
                                        }),
                            {"head_count_kv", "3"});
    test::expect_load_error(
        edited_copy("shared4",
                    [](gguf::GgufWriter& w) { w.set_u32("gemma4.attention.shared_kv_layers", 4); }),
        {"gemma4.attention.shared_kv_layers = 4", "block_count = 4"});
    // Three sharing layers: layer 1 (full) has no earlier full layer to read.
    test::expect_load_error(
        edited_copy("shared3",
                    [](gguf::GgufWriter& w) { w.set_u32("gemma4.attention.shared_kv_layers", 3); }),
        {"shared_kv_layers = 3", "layer 1", "full"});
    // A PLE width the table does not have.
    test::expect_load_error(
        edited_copy(
            "plewidth",
            [](gguf::GgufWriter& w) { w.set_u32("gemma4.embedding_length_per_layer_input", 32); }),
        {"per_layer_token_embd.weight has shape [256, 512], expected [128, 512]"});
}

TEST(Gemma4, FilesLackingATensorAreClearErrors) {
    for (const char* name : {"blk.1.attn_k.weight", "per_layer_model_proj.weight",
                             "blk.3.inp_gate.weight", "rope_freqs.weight"}) {
        SCOPED_TRACE(name);
        test::expect_load_error(edited_copy(
                                    std::string("no-") + name, [](gguf::GgufWriter&) {}, name),
                                {"missing tensor", name});
    }
}

}  // namespace
}  // namespace mw
