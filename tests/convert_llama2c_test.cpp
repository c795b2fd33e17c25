// llama2.c -> GGUF: stories260K.bin + tok512.bin must give the tensors of stories260K.gguf (which
// llama.cpp's convert-llama2c-to-ggml wrote) byte for byte, and the same tokens, scores and types.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "convert/convert.h"
#include "format/gguf.h"
#include "memwall.h"
#include "support/hf_model.h"
#include "support/test_support.h"

namespace {

struct Parsed {
    std::vector<uint8_t> bytes;
    mw::gguf::GgufFile file;
};

Parsed parse(const std::string& path) {
    Parsed p;
    p.bytes = mw::test::read_file(path);
    p.file = mw::gguf::GgufFile::parse(p.bytes, path);
    return p;
}

std::string converted_stories(const std::string& dir) {
    const std::string out = dir + "/stories260K.gguf";
    mw_convert_result r;
    EXPECT_EQ(mw_convert_llama2c(mw::test::shared_path("models/llama2c/stories260K.bin").c_str(),
                                 mw::test::shared_path("models/llama2c/tok512.bin").c_str(),
                                 out.c_str(), nullptr, &r),
              MW_OK)
        << mw_last_error();
    EXPECT_EQ(std::string(r.arch), "llama");
    EXPECT_EQ(r.n_tensors, 48);
    EXPECT_EQ(r.n_vocab, 512);
    return out;
}

TEST(ConvertLlama2c, Stories260KTensorsAreByteIdentical) {
    const Parsed ref = parse(mw::test::shared_path("models/stories260K.gguf"));
    const Parsed ours = parse(converted_stories(mw::test::temp_dir()));
    ASSERT_EQ(ours.file.tensors().size(), ref.file.tensors().size());
    for (size_t i = 0; i < ref.file.tensors().size(); ++i) {
        const mw::gguf::TensorInfo& r = ref.file.tensors()[i];
        const mw::gguf::TensorInfo& o = ours.file.tensors()[i];
        EXPECT_EQ(o.name, r.name);  // same order, too
        EXPECT_EQ(o.type, r.type) << r.name;
        EXPECT_EQ(o.n_dims, r.n_dims) << r.name;
        for (int d = 0; d < 4; ++d) EXPECT_EQ(o.ne[d], r.ne[d]) << r.name;
        ASSERT_EQ(o.n_bytes, r.n_bytes) << r.name;
        EXPECT_EQ(std::memcmp(o.data, r.data, r.n_bytes), 0) << r.name << " differs";
    }
    for (const char* key : {"tokenizer.ggml.tokens"}) {
        const auto* a = ours.file.get_array(key, mw::gguf::ValueType::string);
        const auto* b = ref.file.get_array(key, mw::gguf::ValueType::string);
        ASSERT_TRUE(a && b);
        EXPECT_EQ(a->strings, b->strings);
    }
    for (const char* key : {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
        const auto* a = ours.file.find(key);
        const auto* b = ref.file.find(key);
        ASSERT_TRUE(a && b) << key;
        EXPECT_EQ(a->elem_type, b->elem_type) << key;
        ASSERT_EQ(a->count, b->count) << key;
        EXPECT_EQ(std::memcmp(a->data, b->data, a->count * 4), 0) << key << " differs bitwise";
    }
    for (const char* key :
         {"llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
          "llama.attention.head_count_kv", "llama.block_count", "llama.rope.dimension_count",
          "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
          "tokenizer.ggml.unknown_token_id"}) {
        EXPECT_EQ(ours.file.get_u32(key), ref.file.get_u32(key)) << key;
    }
    EXPECT_EQ(ours.file.get_f32("llama.attention.layer_norm_rms_epsilon"),
              ref.file.get_f32("llama.attention.layer_norm_rms_epsilon"));
    EXPECT_EQ(ours.file.get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(ours.file.get_u32("llama.context_length"), 512u);  // the checkpoint's seq_len
}

TEST(ConvertLlama2c, ConvertedModelGeneratesLikeTheOriginal) {
    const std::string out = converted_stories(mw::test::temp_dir());
    // The converted file and llama.cpp's must give identical logits (the same bytes in, the same
    // forward pass), so the greedy continuation of the reference case follows too.
    std::vector<float> logits[2];
    const std::string paths[2] = {out, mw::test::shared_path("models/stories260K.gguf")};
    for (int m = 0; m < 2; ++m) {
        mw_model* model = nullptr;
        ASSERT_EQ(mw_model_load(paths[m].c_str(), nullptr, &model), MW_OK) << mw_last_error();
        mw_context* ctx = nullptr;
        mw_context_params cp = mw_context_default_params();
        cp.n_ctx = 32;
        cp.n_threads = 1;
        ASSERT_EQ(mw_context_create(model, &cp, &ctx), MW_OK);
        const std::string prompt = "Once upon a time";
        mw_token tokens[16];
        const int32_t n =
            mw_tokenize(model, prompt.data(), int32_t(prompt.size()), tokens, 16, true, true);
        ASSERT_EQ(n, 5);
        ASSERT_EQ(mw_decode(ctx, tokens, n, false), MW_OK);
        const float* row = mw_get_logits(ctx, -1);
        logits[m].assign(row, row + 512);
        mw_context_free(ctx);
        mw_model_free(model);
    }
    EXPECT_EQ(logits[0], logits[1]);
}

TEST(ConvertLlama2c, RefusesMismatchedFiles) {
    const std::string dir = mw::test::temp_dir();
    const std::string bin = mw::test::shared_path("models/llama2c/stories260K.bin");
    const std::string tok = mw::test::shared_path("models/llama2c/tok512.bin");
    const std::vector<uint8_t> ck = mw::test::read_file(bin);
    const std::vector<uint8_t> tk = mw::test::read_file(tok);
    auto error_of = [&](const std::vector<uint8_t>& c, const std::vector<uint8_t>& t) {
        mw::test::write_binary_file(dir + "/c.bin", c);
        mw::test::write_binary_file(dir + "/t.bin", t);
        try {
            mw::convert::convert_llama2c(dir + "/c.bin", dir + "/t.bin", dir + "/o.gguf", {});
        } catch (const mw::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // Truncated checkpoint: the size says what was expected.
    std::vector<uint8_t> cut(ck.begin(), ck.end() - 4);
    EXPECT_NE(error_of(cut, tk).find("1056540"), std::string::npos) << error_of(cut, tk);
    // A header field out of range.
    std::vector<uint8_t> bad = ck;
    bad[12] = 0, bad[13] = 0, bad[14] = 0, bad[15] = 0;  // n_heads = 0
    EXPECT_NE(error_of(bad, tk).find("n_heads"), std::string::npos);
    // The newer export format.
    std::vector<uint8_t> v1 = ck;
    const uint32_t magic = 0x616b3432;
    std::memcpy(v1.data(), &magic, 4);
    EXPECT_NE(error_of(v1, tk).find("version"), std::string::npos);
    // A tokenizer with one token too few, and one with trailing bytes.
    std::vector<uint8_t> short_tok(tk.begin(), tk.end() - 3);
    EXPECT_NE(error_of(ck, short_tok).find("truncated at token 511"), std::string::npos)
        << error_of(ck, short_tok);
    std::vector<uint8_t> long_tok = tk;
    long_tok.push_back(0);
    EXPECT_NE(error_of(ck, long_tok).find("1 bytes follow"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(dir + "/o.gguf"));
}

}  // namespace
