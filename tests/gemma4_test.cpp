// Gemma 4 (issue 41) beyond its reference cases (reference_test.cpp): what the loader reads
// from gemma4-tiny and gemma4moe-tiny (per-layer head sizes and KV heads, the sliding pattern, KV
// sharing, per-layer FFN widths, per-layer embeddings), the KV cache that holds rows only for the
// layers with their own K/V, batched decoding of several sequences against separate runs, a file
// with Gemma 4's own tokenizer ("gemma4"), and files with inconsistent metadata or missing
// tensors: clear errors naming the key or tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/kv_cache.h"
#include "plan/budget_plan.h"
#include "plan/catalogue.h"
#include "plan/planner.h"
#include "plan/quant_mix.h"
#include "runtime/context.h"
#include "runtime/layer_stream.h"
#include "runtime/loaded_model.h"
#include "runtime/memory_budget.h"
#include "runtime/ple_reader.h"
#include "support/gguf_edit.h"
#include "support/hf_model.h"
#include "support/model_inputs.h"
#include "support/test_support.h"
#include "synth/synth.h"

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
        const test::PlannedFile planned = test::plan_file(test::shared_path(path), "F16", 512);
        const ModelFacts& facts = planned.facts;
        ASSERT_TRUE(facts.runnable) << facts.note;
        const MemoryPlan& plan = planned.plan;
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

// The CLI's --ple-resident (run, chat, serve, bench) keeps the table in memory: the same greedy
// text as on storage.
TEST(Gemma4, CliPleResidentGivesTheSameText) {
    const std::string run = test::cli_path() + " run -m " +
                            test::shared_path("reference/models/gemma4-tiny-Q4_K_M.gguf") +
                            " -p 'Once upon a time' -n 12 --temp 0 --ignore-eos -t 2";
    const auto stored = test::run_command(run);
    const auto resident = test::run_command(run + " --ple-resident");
    ASSERT_EQ(stored.exit_code, 0) << stored.err;
    ASSERT_EQ(resident.exit_code, 0) << resident.err;
    EXPECT_FALSE(stored.out.empty());
    EXPECT_EQ(stored.out, resident.out);
}

// gemma4-tiny with Gemma 4's own tokenizer ("gemma4") in place of its 512-token SentencePiece one:
// 512 tokens of the cut real vocabulary (tests/data/tokenizer/gemma4-mini) and the merges among
// them. Real Gemma 4 files carry that tokenizer; the model must load and run with it.
std::string with_gemma4_tokenizer() {
    const std::string vocab_path =
        std::string(MEMWALL_TESTS_DIR) + "/data/tokenizer/gemma4-mini/vocab.gguf";
    const std::vector<uint8_t> bytes = test::read_file(vocab_path);
    const gguf::GgufFile vocab = gguf::GgufFile::parse(bytes, vocab_path);
    const size_t n = 512;  // gemma4-tiny's n_vocab
    const auto* texts = vocab.get_array("tokenizer.ggml.tokens", gguf::ValueType::string);
    const auto* scores = vocab.get_array("tokenizer.ggml.scores", gguf::ValueType::f32);
    const auto* types = vocab.get_array("tokenizer.ggml.token_type", gguf::ValueType::i32);
    const auto* merges = vocab.get_array("tokenizer.ggml.merges", gguf::ValueType::string);
    EXPECT_TRUE(texts && scores && types && merges);
    if (!texts || !scores || !types || !merges || texts->count < n) return {};
    // The special and byte tokens, then the pieces of the prompt (with spaces as "▁"), then the
    // shortest texts; ids in their original order.
    const std::string prompt =
        "Once\xE2\x96\x81upon\xE2\x96\x81"
        "a\xE2\x96\x81time";
    std::vector<size_t> order(texts->count);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto rank = [&](size_t i) {
        const bool normal = types->elem_i64(i) == 1;
        const bool in_prompt = prompt.find(texts->strings[i]) != std::string::npos;
        return std::make_tuple(normal, !in_prompt, normal ? texts->strings[i].size() : 0, i);
    };
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rank(a) < rank(b); });
    order.resize(n);
    std::sort(order.begin(), order.end());
    std::vector<std::string> tokens;
    std::vector<float> token_scores;
    std::vector<int32_t> token_types;
    std::vector<int64_t> new_id(texts->count, -1);
    for (const size_t i : order) {
        new_id[i] = int64_t(tokens.size());
        tokens.emplace_back(texts->strings[i]);
        token_scores.push_back(float(scores->elem_f64(i)));
        token_types.push_back(int32_t(types->elem_i64(i)));
    }
    const std::set<std::string, std::less<>> kept(tokens.begin(), tokens.end());
    std::vector<std::string> kept_merges;
    for (const std::string_view m : merges->strings) {
        const size_t space = m.find(' ', 1);
        const std::string_view a = m.substr(0, space), b = m.substr(space + 1);
        if (kept.count(a) && kept.count(b) && kept.count(std::string(a) + std::string(b)))
            kept_merges.emplace_back(m);
    }
    EXPECT_GT(kept_merges.size(), 50u);
    return edited_copy("gemma4-tokenizer", [&](gguf::GgufWriter& w) {
        w.set_string("tokenizer.ggml.model", "gemma4");
        w.set_array_strings("tokenizer.ggml.tokens", tokens);
        w.set_array_f32("tokenizer.ggml.scores", token_scores);
        w.set_array_i32("tokenizer.ggml.token_type", token_types);
        w.set_array_strings("tokenizer.ggml.merges", kept_merges);
        for (const char* key :
             {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
              "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"}) {
            w.set_u32(key, uint32_t(new_id.at(size_t(*vocab.get_i64(key)))));
        }
        w.remove("tokenizer.ggml.seperator_token_id");
    });
}

TEST(Gemma4, RunsWithGemma4sOwnTokenizer) {
    const std::string path = with_gemma4_tokenizer();
    ASSERT_FALSE(path.empty());
    const auto m = LoadedModel::load(path, LoadOptions{});
    const Vocab& vocab = *m->vocab;
    EXPECT_EQ(vocab.model(), "gemma4");
    EXPECT_EQ(vocab.token_text(vocab.bos()), "<bos>");
    const auto prompt = vocab.tokenize("Once upon a time", vocab.add_bos(), true);
    // llama.cpp's ids for this file (shared/tools/refgen's refdump, add_special and
    // parse_special); its 8 greedy tokens were also memwall's: "\xFB>^nel1<channel|>".
    EXPECT_EQ(prompt,
              (std::vector<int32_t>{2, 98, 442, 317, 436, 449, 451, 279, 277, 275, 440, 367}));
    EXPECT_EQ(vocab.detokenize(prompt, true), "Once upon a time");
    // The logits depend on the ids only: the same as the SentencePiece file's for the same ids.
    const auto original = LoadedModel::load(test::shared_path(kDense), LoadOptions{});
    EXPECT_EQ(fresh(*m, prompt), fresh(*original, prompt));

    const auto r = test::run_command(test::cli_path() + " run -m " + path +
                                     " -p 'Once upon a time' -n 8 --temp 0 --ignore-eos -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(r.out.empty());
}

// llama-quantize gives the per-layer embedding table of a tied Gemma 4 the output's type (Q6_K
// in Q4_K_M), as the reference file has it; the quant mix (quantize, synth, plan) does the same.
TEST(Gemma4, PerLayerEmbeddingTableTakesTheTiedOutputsType) {
    const std::vector<uint8_t> bytes =
        test::read_file(test::shared_path("reference/models/gemma4-tiny-Q4_K_M.gguf"));
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, "gemma4-tiny", {.header_only = true});
    const gguf::TensorInfo* t = f.find_tensor("per_layer_token_embd.weight");
    ASSERT_NE(t, nullptr);
    QuantModelInfo info;
    info.arch = "gemma4";
    info.n_layer = 4;
    info.n_head = 4;
    info.n_head_kv = 1;
    info.has_output = false;
    EXPECT_EQ(
        tensor_type_for(QuantRecipe::Q4_K_M, info, t->name, 2, int64_t(t->ne[0]), GgmlType::F16),
        GgmlType(t->type));
    EXPECT_EQ(GgmlType(t->type), GgmlType::Q6_K);
}

// Loading leaves the table on storage unread (no scale check over it: that would map all of it);
// a row with a NaN block scale is a clear error when a token reads it, naming the tensor and row.
TEST(Gemma4, ACorruptPerLayerEmbeddingRowIsAClearErrorWhenRead) {
    const std::string src = test::shared_path("reference/models/gemma4-tiny-Q4_K_M.gguf");
    std::vector<uint8_t> bytes = test::read_file(src);
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, "gemma4-tiny", {.header_only = true});
    const gguf::TensorInfo* t = f.find_tensor("per_layer_token_embd.weight");
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(GgmlType(t->type), GgmlType::Q6_K);
    const uint64_t row_bytes = t->ne[0] / 256 * 210, token = 77;
    const uint64_t at = f.data_offset() + t->offset + token * row_bytes + 208;  // the block's d
    bytes[at] = 0x00;
    bytes[at + 1] = 0x7e;  // fp16 NaN
    const std::string path = test::temp_dir() + "/gemma4-nan-ple.gguf";
    test::write_binary_file(path, bytes);
    const auto m = LoadedModel::load(path, LoadOptions{});
    ASSERT_NE(m->ple_source, nullptr);
    Context ctx(*m, test::small_context());
    const int32_t fine = 5;
    ctx.decode(&fine, 1, false);
    const int32_t bad = int32_t(token);
    try {
        ctx.decode(&bad, 1, false);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_file);
        EXPECT_NE(std::string(e.what()).find("per_layer_token_embd.weight"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("row 77"), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
}

// memwall quantize gives both reference models llama-quantize's types tensor by tensor: attn_v's
// extra bits go by its rank among the attn_v tensors (the KV-sharing and K = V layers have none),
// not by the layer number.
TEST(Gemma4, QuantizeGivesLlamaQuantizesTypes) {
    for (const std::string model : {"gemma4-tiny", "gemma4moe-tiny"}) {
        SCOPED_TRACE(model);
        const std::string out = test::temp_dir() + "/" + model + "-Q4_K_M.gguf";
        const auto r = test::run_command(
            test::cli_path() + " quantize " +
            test::shared_path("reference/models/" + model + "-F16.gguf") + " " + out + " Q4_K_M");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const std::vector<uint8_t> got_bytes = test::read_file(out);
        const std::vector<uint8_t> ref_bytes =
            test::read_file(test::shared_path("reference/models/" + model + "-Q4_K_M.gguf"));
        const gguf::GgufFile got = gguf::GgufFile::parse(got_bytes, out, {.header_only = true});
        const gguf::GgufFile ref = gguf::GgufFile::parse(ref_bytes, model, {.header_only = true});
        ASSERT_EQ(got.tensors().size(), ref.tensors().size());
        for (const gguf::TensorInfo& t : ref.tensors()) {
            const gguf::TensorInfo* g = got.find_tensor(t.name);
            ASSERT_NE(g, nullptr) << t.name;
            EXPECT_EQ(g->type, t.type) << t.name;
        }
        std::remove(out.c_str());
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

// A Gemma 4 E2B-shape synth model made small (10 layers of 256, 4 sharing KV, a 64 Ki-token
// vocabulary: a 131 MiB per-layer embedding table, Q6_K in Q4_K_M) under a memory budget below the
// table's size: it loads (the table stays on storage, the budget counts only the reader's cached
// rows, as the planner does) and gives the unlimited run's logits and greedy tokens, bit for bit
// (both in the file's layout, as streamed layers are).
TEST(Gemma4, PerLayerEmbeddingsStayOnStorageUnderAMemoryBudget) {
#ifdef MW_TEST_SANITIZED
    GTEST_SKIP() << "writes and runs a 150 MB model: release builds only";
#endif
    ModelSpec s = *find_catalogue_model("gemma-4-e2b");
    s.n_vocab = 65536;
    s.n_embd = 256;
    s.n_layer = 10;
    s.n_head = 4;
    s.head_dim = 128;
    s.head_dim_swa = 64;
    s.n_kv_shared = 4;
    s.n_ff = 512;
    s.n_swa = 8;
    SynthOptions o;
    o.spec = s;
    o.seed = 41;
    const std::string path = test::temp_dir() + "/gemma4-e2b-small.gguf";
    write_synth_model(o, path);

    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < 20; ++i) prompt.push_back(300 + (i * 7919) % 65000);
    ContextParams cp = test::small_context();
    cp.n_ctx = 64;
    const auto greedy = [&](const LoadedModel& m) {
        Context ctx(m, cp);
        const uint32_t n_vocab = m.model.hp.n_vocab;
        ctx.decode(prompt.data(), uint32_t(prompt.size()), false);
        std::vector<float> logits;
        std::vector<int32_t> tokens;
        for (int step = 0; step < 6; ++step) {
            const float* l = ctx.logits(-1);
            logits.insert(logits.end(), l, l + n_vocab);
            tokens.push_back(int32_t(std::max_element(l, l + n_vocab) - l));
            ctx.decode(&tokens.back(), 1, false);
        }
        return std::make_pair(logits, tokens);
    };
    LoadOptions unlimited;
    unlimited.repack = false;
    const auto free_run = LoadedModel::load(path, unlimited);
    const uint64_t table = ple_table_bytes(free_run->model);
    ASSERT_EQ(table, uint64_t(65536) * 2560 * 210 / 256);  // 65536 rows of 10 x 256 at Q6_K
    ASSERT_NE(free_run->ple_source, nullptr);
    const auto want = greedy(*free_run);

    // The smallest budget that holds the resident part, one streamed layer and the context.
    LoadOptions ample;
    ample.mem_budget = uint64_t(1) << 40;
    const auto probe = LoadedModel::load(path, ample);
    ASSERT_NE(probe->budget, nullptr);
    const uint64_t resident = probe->budget->resident();
    EXPECT_LT(resident, table / 4) << "the table is not counted, only its cached rows";
    const std::vector<uint8_t> bytes = test::read_file(path);
    const gguf::GgufFile header = gguf::GgufFile::parse(bytes, path, {.header_only = true});
    const ModelFacts facts = model_facts(header, "Q4_K_M");
    RunSettings run;
    run.n_ctx = cp.n_ctx;
    run.n_threads = 2;
    const DeviceProfile dev = explicit_device(uint64_t(16) << 30, 50e9);
    // As the runtime counts it, but for the data section's final alignment padding (file_bytes
    // counts it, the file need not end with it).
    const uint64_t planned =
        plan_budget("small", "Q4_K_M", facts, dev, run, uint64_t(1) << 30, 0).resident_bytes;
    EXPECT_NEAR(double(planned), double(resident), 32.0);
    uint64_t context_bytes = 0;
    {
        const Context ctx(*probe, cp);
        context_bytes = ctx.kv_bytes() + ctx.scratch_bytes();
    }
    const uint64_t slot = probe->budget->layers()->slot_bytes();
    LoadOptions tight;
    tight.mem_budget =
        budget_leaving(resident + context_bytes + 2 * slot, free_run->model.hp.n_vocab) + slot / 2;
    ASSERT_LT(tight.mem_budget, table) << "the budget is below the table's size";
    const auto budgeted = LoadedModel::load(path, tight);
    ASSERT_NE(budgeted->ple_source, nullptr);
    const auto got = greedy(*budgeted);
    EXPECT_EQ(got.second, want.second);
    ASSERT_EQ(got.first.size(), want.first.size());
    EXPECT_EQ(std::memcmp(got.first.data(), want.first.data(), got.first.size() * 4), 0);
    EXPECT_GT(budgeted->ple_source->bytes_read(), 0u);
    std::remove(path.c_str());
}

}  // namespace
}  // namespace mw
