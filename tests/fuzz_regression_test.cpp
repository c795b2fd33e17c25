// Regression tests for what the fuzz targets (fuzz/) found beyond the GGUF parser (those are in
// gguf_corrupt_test.cpp): each input is rebuilt here with GgufWriter, smallest form. The
// undefined behaviour among them only fails under the asan preset (UBSan aborts); the messages
// and sizes fail in every build.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/fp16.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/forward.h"
#include "plan/model_spec.h"
#include "plan/planner.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "support/tiny_model.h"
#include "tensor/types.h"
#include "vocab/vocab.h"

namespace mw {
namespace {

constexpr const char* kName = "finding.gguf";

std::unique_ptr<LoadedModel> load(const std::vector<uint8_t>& bytes) {
    return LoadedModel::load_from_bytes(bytes, kName);
}

// The error loading `bytes` gives (fails the test when it loads).
std::string load_error(const std::vector<uint8_t>& bytes) {
    try {
        load(bytes);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_file) << e.what();
        const std::string message = e.what();
        EXPECT_EQ(message.rfind(std::string(kName) + ": ", 0), 0u) << message;
        return message;
    }
    ADD_FAILURE() << "the model loaded";
    return "";
}

// Runs a short prompt and one decoding step.
void decode_a_little(const LoadedModel& m, uint32_t n_batch = 4) {
    ContextParams params;
    params.n_ctx = 8;
    params.n_batch = n_batch;
    params.n_threads = 1;
    Context ctx(m, params);
    std::vector<int32_t> prompt = m.vocab->tokenize("hi ab", true, false);
    ASSERT_FALSE(prompt.empty());
    ctx.decode(prompt.data(), uint32_t(prompt.size()), true);
    const int32_t next = 0;
    ctx.decode(&next, 1, false);
    EXPECT_EQ(ctx.n_past(), prompt.size() + 1);
}

// fuzz_model: a model whose activations become NaN (or inf) made the activation quantizer
// convert NaN to int8 (quantize_row_q8_0: undefined behaviour, reported by UBSan). The
// quantizers now map NaN to 0 and saturate out-of-range values.
TEST(FuzzFinding, QuantizersAreDefinedOnNonFiniteValues) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (const GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                GgmlType::Q8_0, GgmlType::Q8_1}) {
        const TypeTraits* traits = type_traits(type);
        ASSERT_NE(traits, nullptr);
        SCOPED_TRACE(traits->name);
        // Block 0: one NaN among ordinary values; block 1: infinities; block 2: the extremes of
        // float, whose differences overflow.
        std::vector<float> x(3 * 32);
        for (int i = 0; i < 32; ++i) x[size_t(i)] = float(i - 16) / 8.0f;
        x[5] = nan;
        for (int i = 32; i < 64; ++i) x[size_t(i)] = i % 2 ? inf : -inf;
        for (int i = 64; i < 96; ++i) x[size_t(i)] = i % 2 ? 3e38f : -3e38f;
        std::vector<uint8_t> q(3 * traits->type_size);
        traits->from_float(x.data(), q.data(), int64_t(x.size()));
        std::vector<float> back(x.size());
        traits->to_float(q.data(), back.data(), int64_t(x.size()));
        // The ordinary values of block 0 survive the NaN beside them.
        for (int i = 0; i < 32; ++i) {
            if (i == 5) continue;
            EXPECT_NEAR(back[size_t(i)], x[size_t(i)], 0.2f) << i;
        }
    }
}

// Since issue 39 such a file is refused at load, naming the tensor and block, before a kernel
// sees a NaN activation (the fuzzer's finding was a crash in the activation quantizer).
TEST(FuzzFinding, ModelWithNanWeightsIsRefusedAtLoad) {
    // A Q8_0 model whose token embedding has a NaN scale: every activation of the prompt's
    // first token would be NaN and reach the Q8_0 activation quantizer.
    std::vector<uint8_t> bytes = test::tiny_model_bytes({.type = GgmlType::Q8_0});
    const uint16_t nan_fp16 = 0x7E00;
    for (size_t block = 0; block < 16; ++block) {
        // Every row (32 elements, one 34-byte block) of token_embd: its scale is NaN.
        const gguf::GgufFile f = gguf::GgufFile::parse(bytes, kName);
        const gguf::TensorInfo* t = f.find_tensor("token_embd.weight");
        ASSERT_NE(t, nullptr);
        std::memcpy(bytes.data() + f.data_offset() + t->offset + block * 34, &nan_fp16, 2);
    }
    try {
        load(bytes);
        ADD_FAILURE() << "a NaN block scale was not refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("token_embd.weight"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
    }
}

// fuzz_model: general.alignment = 1 (a power of two, so the GGUF reader accepts it) placed F16
// weights at odd addresses; vec_dot_f16 then read misaligned uint16_t (undefined behaviour). The
// binder now refuses weights that are not 4-byte aligned, naming tensor, offset and alignment.
TEST(FuzzFinding, MisalignedWeightsAreRefused) {
    for (const uint32_t alignment : {1u, 2u}) {
        SCOPED_TRACE(alignment);
        // Pad the header with a key until the data section starts at an odd / 2 mod 4 offset.
        std::vector<uint8_t> bytes;
        for (size_t pad = 0; pad < 8; ++pad) {
            gguf::GgufWriter w =
                test::tiny_model_writer({.type = GgmlType::F16, .alignment = alignment});
            w.set_string("x.pad", std::string(pad, 'p'));
            bytes = w.to_bytes();
            if (gguf::GgufFile::parse(bytes, kName).data_offset() % 4 != 0) break;
        }
        const std::string message = load_error(bytes);
        EXPECT_NE(message.find("token_embd.weight data (offset 0 of the data section, "
                               "general.alignment = " +
                               std::to_string(alignment) + ") is not aligned to 4 bytes"),
                  std::string::npos)
            << message;
    }
    // With the default alignment the same model loads and runs.
    decode_a_little(*load(test::tiny_model_bytes({.type = GgmlType::F16})));
}

// fuzz_vocab_gguf: tokenizer.ggml.token_type as an array of f32 (get_array accepts any numeric
// element type) made elem_i64 throw "array element 0 is not an integer": no file, no key.
TEST(FuzzFinding, FloatTokenTypesNameFileAndKey) {
    gguf::GgufWriter w = test::tiny_model_writer({});
    std::vector<float> types(test::tiny_vocab_size(test::TinyVocab::spm), 1.5f);
    w.set_array_f32("tokenizer.ggml.token_type", types);
    const std::string message = load_error(w.to_bytes());
    EXPECT_NE(message.find("metadata \"tokenizer.ggml.token_type\" [0]: array element 0 is not "
                           "an integer"),
              std::string::npos)
        << message;
}

// The same in the per-layer arrays of the hyper-parameters: a float, and a u64 beyond i64.
TEST(FuzzFinding, BadPerLayerArrayNamesFileAndKey) {
    gguf::GgufWriter w = test::tiny_model_writer({});
    w.set_array_f32("llama.feed_forward_length", std::vector<float>{24.0f});
    std::string message = load_error(w.to_bytes());
    EXPECT_NE(message.find("llama.feed_forward_length[0]: array element 0 is not an integer"),
              std::string::npos)
        << message;

    const uint64_t huge = uint64_t(1) << 63;
    gguf::Value v;
    v.type = gguf::ValueType::array;
    v.elem_type = gguf::ValueType::u64;
    v.count = 1;
    v.data = reinterpret_cast<const uint8_t*>(&huge);
    w.set_value("llama.feed_forward_length", v);
    message = load_error(w.to_bytes());
    EXPECT_NE(message.find("llama.feed_forward_length[0]: integer value 9223372036854775808 does "
                           "not fit in i64"),
              std::string::npos)
        << message;
}

// Review (the heap limit of fuzz_model): the forward scratch of a MoE model was sized by
// feed_forward_length and expert_shared_feed_forward_length, which no tensor of a qwen3moe or
// Mixtral file checks: 4e9 made a context try to allocate terabytes (n_batch x width floats).
// The scratch is now sized by the bound FFN matrices.
TEST(FuzzFinding, MoeScratchIsSizedByTheWeights) {
    gguf::GgufWriter w = test::tiny_model_writer({.arch = "qwen3moe", .n_expert = 4});
    w.set_u32("qwen3moe.feed_forward_length", 1u << 20);
    w.set_u32("qwen3moe.expert_shared_feed_forward_length", 0xF0000000u);
    const std::vector<uint8_t> bytes = w.to_bytes();
    const auto m = load(bytes);
    EXPECT_EQ(m->model.hp.n_ff_shared_expert, 0xF0000000u);  // read, but sizes nothing
    EXPECT_LT(ForwardScratch::planned_bytes(m->model, 512, 64, 1), uint64_t(1) << 20);
    decode_a_little(*m, 512);

    // Without the bogus keys the plan is the same.
    const auto plain = load(test::tiny_model_bytes({.arch = "qwen3moe", .n_expert = 4}));
    EXPECT_EQ(ForwardScratch::planned_bytes(m->model, 512, 64, 1),
              ForwardScratch::planned_bytes(plain->model, 512, 64, 1));
}

// Review: block_count = 4096 in a file of a few tensors sized 4096 layers and listed 36864
// missing tensors before failing. It is now refused against the tensor count first.
TEST(FuzzFinding, BlockCountBeyondTheTensorsIsRefused) {
    gguf::GgufWriter w = test::tiny_model_writer({});
    w.set_u32("llama.block_count", 4096);
    const std::string message = load_error(w.to_bytes());
    EXPECT_NE(message.find("llama.block_count = 4096 needs at least 36864 tensors, the file has "),
              std::string::npos)
        << message;
}

// cli_corrupt_test: `memwall run` and `memwall plan` died of SIGFPE on a file with
// head_count_kv = 3 > head_count = 2. The reader refuses it, so the planner fell back to its
// approximate hyper-parameters, which were not checked, and the attention layout divided by
// head_count / head_count_kv = 0. The approximation now applies the reader's bounds, and when it
// cannot be made the reader's own reason is reported.
TEST(FuzzFinding, PlanningABadKvHeadCountIsAnError) {
    gguf::GgufWriter w = test::tiny_model_writer({});
    w.set_u32("llama.attention.head_count_kv", 3);
    const std::vector<uint8_t> bytes = w.to_bytes();
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, kName, {.header_only = true});
    try {
        const ModelFacts facts = model_facts(f, "");
        ADD_FAILURE() << "planned: " << facts.note;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("attention.head_count_kv = 3 is out of range [1, 2]"),
                  std::string::npos)
            << e.what();
    }
    // An architecture memwall cannot run is still planned from its metadata, within bounds.
    w.set_u32("llama.attention.head_count_kv", 1);
    w.set_string("general.architecture", "gemma2");
    for (const char* key : {"context_length", "embedding_length", "block_count",
                            "feed_forward_length", "attention.head_count"}) {
        w.set_u32(std::string("gemma2.") + key, 16);
    }
    w.set_u32("gemma2.attention.head_count_kv", 3);
    const std::vector<uint8_t> gemma = w.to_bytes();
    EXPECT_THROW(model_facts(gguf::GgufFile::parse(gemma, kName, {.header_only = true}), ""),
                 Error);
    w.set_u32("gemma2.attention.head_count_kv", 4);
    const std::vector<uint8_t> ok = w.to_bytes();
    const ModelFacts facts =
        model_facts(gguf::GgufFile::parse(ok, kName, {.header_only = true}), "");
    EXPECT_FALSE(facts.runnable);
    EXPECT_GT(plan_memory(facts, RunSettings{.n_ctx = 64}).total_bytes(), 0u);
}

// fuzz_hf_config: a config.json with a non-string "model_type" (or rope_scaling.rope_type)
// escaped as nlohmann's type_error ("internal error" in the C API), and one claiming two billion
// layers made the planner list their tensors (gigabytes). Both are now refused with the field.
TEST(FuzzFinding, HostileConfigJsonIsRefusedWithTheField) {
    const std::string base =
        R"("hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "vocab_size": 512)";
    const std::pair<std::string, std::string> cases[] = {
        {R"({"model_type": 5, "num_hidden_layers": 2, )" + base + "}",
         "config.json: \"model_type\" = 5 is not a string"},
        {R"({"model_type": "llama", "num_hidden_layers": 2000000000, )" + base + "}",
         "config.json: \"num_hidden_layers\" = 2000000000 is out of range (at most 4096)"},
        {R"({"model_type": "mixtral", "num_hidden_layers": 2, "num_local_experts": 8,
            "num_experts_per_tok": 9, )" +
             base + "}",
         "config.json: \"num_experts_per_tok\" = 9 is out of range (at most 8)"},
    };
    for (const auto& [json, message] : cases) {
        try {
            spec_from_hf_config(json, "config.json");
            ADD_FAILURE() << "accepted: " << json;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
            EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
        }
    }
    // A rope_type that is not a string is not llama3, and not an error.
    const ModelSpec spec = spec_from_hf_config(
        R"({"model_type": "llama", "num_hidden_layers": 2, "rope_scaling": {"rope_type": 3}, )" +
            base + "}",
        "config.json");
    EXPECT_FALSE(spec.rope_freqs);
    EXPECT_EQ(spec.n_layer, 2u);
}

// fuzz_hf_config, in a run five times CI's length: a qwen2_moe config.json of 4096 layers (the
// most the reader accepts; ~70 000 tensors) took 58 s in `memwall plan --config`: the GGUF writer
// compared each tensor name with every one before it, and binding the model looked each tensor
// up by a linear search. Both are hashed now: the release build plans it in a fraction of a
// second. The bound is loose (a loaded machine, the sanitizers); the quadratic code took minutes.
TEST(FuzzFinding, ConfigOfManyLayersPlansInLinearTime) {
    const std::string json = R"({"model_type": "qwen2_moe", "num_hidden_layers": 4096,
        "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 512, "num_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64})";
    const auto start = std::chrono::steady_clock::now();
    const ModelSpec spec = spec_from_hf_config(json, "config.json");
    const std::vector<uint8_t> header = spec_gguf_header(spec, QuantRecipe::Q4_K_M);
    const gguf::GgufFile f = gguf::GgufFile::parse(header, "config.json", {.header_only = true});
    EXPECT_GT(f.tensors().size(), size_t(4096) * 10);
    const ModelFacts facts = model_facts(f, "Q4_K_M");
    EXPECT_EQ(facts.hp.n_layer, 4096u);
    EXPECT_GT(plan_memory(facts, RunSettings{.n_ctx = 4096, .n_batch = 512, .n_threads = 1})
                  .total_bytes(),
              0u);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 30.0) << "planning " << f.tensors().size() << " tensors";
}

// fuzz_hf_config: a config.json of 623 layers 67,777 wide planned with a heap of 338 MB (over
// the target's limit): binding the header-only model decoded every norm weight into a vector of
// zeros. A header binds no weight vectors now; the plan is the same.
TEST(FuzzFinding, PlanningAConfigHoldsNoWeightVectors) {
    const std::string json = R"({"model_type": "llama", "hidden_size": 67777,
        "intermediate_size": 4864, "num_hidden_layers": 623, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "rope_theta": 1000000.0})";
    try {
        const ModelSpec spec = spec_from_hf_config(json, "config.json");
        const std::vector<uint8_t> header = spec_gguf_header(spec, QuantRecipe::Q4_K_M);
        const gguf::GgufFile f =
            gguf::GgufFile::parse(header, "config.json", {.header_only = true});
        const ModelFacts facts = model_facts(f, "Q4_K_M");
        ASSERT_EQ(facts.model.layers.size(), 623u);
        for (const Layer& l : facts.model.layers) {
            EXPECT_EQ(l.attn_norm.capacity(), 0u);
            EXPECT_EQ(l.ffn_norm.capacity(), 0u);
        }
        EXPECT_GT(facts.file_bytes, uint64_t(1) << 40);  // what the plan is about: ~34 T params
    } catch (const Error& e) {
        // Refusing such a config outright would do too, with the file's name.
        EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
    }
}

// fuzz_vocab_gguf: a byte-level BPE vocabulary with a 9 KB token of characters outside GPT-2's
// byte map. llama.cpp's spelling of such a character echoes the whole token, so the piece grew
// with the square of the token's length: 27 MB, over a second under the sanitizers. Tokens up to
// 256 bytes are still spelled exactly as llama.cpp does; longer ones print in linear space.
TEST(FuzzFinding, ALongTokenOfUnknownCharactersPrintsInLinearSpace) {
    std::string long_token;
    for (int i = 0; i < 3000; ++i) long_token += "\xE4\xB8\x80";  // U+4E00, 3 bytes
    gguf::GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_array_strings("tokenizer.ggml.tokens", {"a", "b", "x\xE4\xB8\x80y", long_token, "ab"});
    w.set_array_strings("tokenizer.ggml.merges", {"a b"});
    const std::vector<uint8_t> bytes = w.to_bytes();
    const Vocab v = Vocab::from_gguf(gguf::GgufFile::parse(bytes, "vocab.gguf"));
    EXPECT_EQ(v.token_to_piece(2, false), "x[UNK_BYTE_0xe4b880x\xE4\xB8\x80y]y");
    const std::string piece = v.token_to_piece(3, false);
    std::string want;
    for (int i = 0; i < 3000; ++i) want += "[UNK_BYTE_0xe4b880]";
    EXPECT_EQ(piece, want);
}

}  // namespace
}  // namespace mw
