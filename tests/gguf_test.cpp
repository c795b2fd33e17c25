#include "format/gguf.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"

namespace mw::gguf {
namespace {

TEST(Gguf, ParsesStories260K) {
    const auto bytes = test::read_file(test::shared_path("models/stories260K.gguf"));
    const GgufFile f = GgufFile::parse(bytes, "stories260K.gguf");
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.tensors().size(), 48u);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_u32("llama.block_count"), 5u);
    EXPECT_EQ(f.get_u32("llama.embedding_length"), 64u);
    const Value* tokens = f.get_array("tokenizer.ggml.tokens", ValueType::string);
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->count, 512u);
    EXPECT_EQ(f.data_end(), bytes.size());
    const TensorInfo* emb = f.find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->ne[0], 64u);
    EXPECT_EQ(emb->ne[1], 512u);
    EXPECT_EQ(emb->n_bytes, 64u * 512u * 4u);
}

TEST(Gguf, WriterRoundTripsEveryValueType) {
    GgufWriter w;
    w.set_u8("a.u8", 200);
    w.set_i8("a.i8", -100);
    w.set_u16("a.u16", 60000);
    w.set_i16("a.i16", -30000);
    w.set_u32("a.u32", 4000000000u);
    w.set_i32("a.i32", -2000000000);
    w.set_u64("a.u64", 1ull << 63);
    w.set_i64("a.i64", -(1ll << 62));
    w.set_f32("a.f32", 1.5f);
    w.set_f64("a.f64", -2.25);
    w.set_bool("a.bool", true);
    w.set_string("a.str", "héllo");
    w.set_array_strings("a.strs", {"x", "", "zz"});
    const int32_t ints[] = {1, -2, 3};
    w.set_array_i32("a.ints", ints);
    const float floats[] = {0.5f, -1.0f};
    w.set_array_f32("a.floats", floats);
    const uint8_t data[8 * 4] = {};
    w.add_tensor("t", GgmlType::F32, {8}, data);
    const auto bytes = w.to_bytes();
    const GgufFile f = GgufFile::parse(bytes, "mem");
    EXPECT_EQ(f.find("a.u8")->as_u64(), 200u);
    EXPECT_EQ(f.find("a.i8")->as_i64(), -100);
    EXPECT_EQ(f.find("a.u16")->as_u64(), 60000u);
    EXPECT_EQ(f.find("a.i16")->as_i64(), -30000);
    EXPECT_EQ(f.get_u32("a.u32"), 4000000000u);
    EXPECT_EQ(f.find("a.i32")->as_i64(), -2000000000);
    EXPECT_EQ(f.get_u64("a.u64"), 1ull << 63);
    EXPECT_EQ(f.get_i64("a.i64"), -(1ll << 62));
    EXPECT_EQ(f.get_f32("a.f32"), 1.5f);
    EXPECT_EQ(f.find("a.f64")->as_f64(), -2.25);
    EXPECT_EQ(f.get_bool("a.bool"), true);
    EXPECT_EQ(f.get_string("a.str"), "héllo");
    const Value* strs = f.get_array("a.strs", ValueType::string);
    ASSERT_EQ(strs->count, 3u);
    EXPECT_EQ(strs->strings[2], "zz");
    const Value* iv = f.get_array("a.ints", ValueType::i32);
    EXPECT_EQ(iv->elem_i64(1), -2);
    EXPECT_EQ(f.get_array("a.floats", ValueType::f32)->elem_f64(0), 0.5);
    ASSERT_EQ(f.tensors().size(), 1u);
    EXPECT_EQ(f.tensors()[0].n_bytes, 32u);
    // Wrong-type requests are errors, not garbage.
    EXPECT_THROW(f.get_string("a.u32"), Error);
    EXPECT_THROW(f.get_u32("a.u64"), Error);
}

// The writer's name indexes (replacing a key keeps its place, removing one keeps the others'
// order, a duplicate tensor is refused, a refused tensor leaves no trace) and the reader's.
TEST(Gguf, WriterAndReaderLookUpByName) {
    GgufWriter w;
    w.set_u32("k.a", 1);
    w.set_u32("k.b", 2);
    w.set_u32("k.c", 3);
    w.set_u32("k.a", 10);  // replaced in place
    w.remove("k.b");
    EXPECT_FALSE(w.has("k.b"));
    EXPECT_TRUE(w.has("k.c"));
    w.set_u32("k.b", 20);  // appended again, after k.c
    const uint8_t data[8 * 4] = {};
    w.add_tensor("t0", GgmlType::F32, {8}, data);
    EXPECT_THROW(w.add_tensor("t0", GgmlType::F32, {8}, data), Error);
    EXPECT_THROW(w.add_tensor("t1", GgmlType::F32, {8}, std::span<const uint8_t>(data, 4)), Error);
    w.add_tensor("t1", GgmlType::F32, {8}, data);  // the refused one left nothing behind
    const auto bytes = w.to_bytes();
    EXPECT_EQ(bytes.size(), w.total_bytes());
    const GgufFile f = GgufFile::parse(bytes, "mem");
    ASSERT_EQ(f.metadata().size(), 3u);
    EXPECT_EQ(f.metadata()[0].key, "k.a");
    EXPECT_EQ(f.metadata()[1].key, "k.c");
    EXPECT_EQ(f.metadata()[2].key, "k.b");
    EXPECT_EQ(f.get_u32("k.a"), 10u);
    EXPECT_EQ(f.get_u32("k.b"), 20u);
    EXPECT_EQ(f.find("k.z"), nullptr);
    ASSERT_EQ(f.tensors().size(), 2u);
    EXPECT_EQ(f.find_tensor("t1"), &f.tensors()[1]);
    EXPECT_EQ(f.find_tensor("t1")->offset, 32u);  // right after t0: no gap from the refused one
    EXPECT_EQ(f.find_tensor("t2"), nullptr);
}

}  // namespace
}  // namespace mw::gguf
