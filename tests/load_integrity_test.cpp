// Files that go bad under or before a run (issue 39): a mapping truncated while a --no-repack run
// reads it is a clear error instead of a silent SIGBUS, and block scales that are inf or NaN are
// refused at load, with the scale fields' places checked against the decoders themselves.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/block_scales.h"
#include "format/ggml_types.h"
#include "format/gguf.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "support/test_support.h"
#include "tensor/types.h"

namespace mw {
namespace {

constexpr uint16_t kHalfNaN = 0x7e00, kHalfInf = 0x7c00;

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// Every fp16 field first_nonfinite_scale reads must be one the type's decoder scales its block
// by: NaN written there (and nowhere it does not read) makes the decoded block non-finite.
TEST(BlockScales, TheFieldsCheckedAreTheScalesTheDecodersUse) {
    const char* files[] = {"Q4_0",   "Q4_1",    "Q5_0",  "Q5_1",   "Q8_0",   "Q2_K",    "Q3_K_M",
                           "Q4_K_M", "Q5_K_M",  "Q6_K",  "IQ4_NL", "IQ4_XS", "IQ2_XXS", "IQ2_XS",
                           "IQ2_S",  "IQ3_XXS", "IQ3_S", "IQ1_S",  "TQ1_0",  "TQ2_0"};
    std::vector<uint32_t> seen;
    for (const char* f : files) {
        const std::string path =
            test::shared_path("reference/models/kq-tiny-" + std::string(f) + ".gguf");
        const std::vector<uint8_t> bytes = test::read_file(path);
        const gguf::GgufFile g = gguf::GgufFile::parse(bytes, path);
        for (const gguf::TensorInfo& t : g.tensors()) {
            EXPECT_EQ(
                first_nonfinite_scale(t.type, t.data, t.n_bytes / ggml_layout(t.type)->type_size),
                std::nullopt)
                << path << " " << t.name;  // a real file: no false alarm
            if (!has_fp16_block_scales(t.type) ||
                std::find(seen.begin(), seen.end(), t.type) != seen.end())
                continue;
            const TypeTraits* traits = type_traits(t.type);
            if (!traits || !traits->to_float) continue;
            seen.push_back(t.type);
            const uint32_t size = traits->type_size, n = traits->block_size;
            std::vector<float> out(n);
            traits->to_float(t.data, out.data(), n);
            for (float v : out) ASSERT_TRUE(std::isfinite(v)) << path;
            int flagged = 0;
            for (uint32_t at = 0; at + 2 <= size; at += 2) {
                std::vector<uint8_t> block(t.data, t.data + size);
                std::memcpy(&block[at], &kHalfNaN, 2);
                if (!first_nonfinite_scale(t.type, block.data(), 1)) continue;
                ++flagged;
                traits->to_float(block.data(), out.data(), n);
                EXPECT_TRUE(
                    std::any_of(out.begin(), out.end(), [](float v) { return !std::isfinite(v); }))
                    << ggml_layout(t.type)->name << ": byte " << at
                    << " is checked but not a scale";
            }
            EXPECT_GE(flagged, 1) << ggml_layout(t.type)->name;
        }
    }
    EXPECT_GE(seen.size(), 10u);
}

TEST(BlockScales, AFileWithANonFiniteScaleIsRefusedAtLoad) {
    const std::string src = test::shared_path("reference/models/kq-tiny-Q4_K_M.gguf");
    std::vector<uint8_t> bytes = test::read_file(src);
    const gguf::GgufFile g = gguf::GgufFile::parse(bytes, src);
    const gguf::TensorInfo* target = nullptr;
    for (const gguf::TensorInfo& t : g.tensors()) {
        if (t.type == uint32_t(GgmlType::Q4_K) && t.n_bytes >= 3 * 144) target = &t;
    }
    ASSERT_NE(target, nullptr);
    const std::string name(target->name);
    // The dmin of the third block: inf.
    const size_t at = size_t(target->data - bytes.data()) + 2 * 144 + 2;
    std::memcpy(&bytes[at], &kHalfInf, 2);
    const std::string path = test::temp_dir() + "/bad-scale.gguf";
    write_file(path, bytes);
    for (const bool repack : {true, false}) {
        LoadOptions o;
        o.repack = repack;
        try {
            LoadedModel::load(path, o);
            ADD_FAILURE() << "a NaN scale was loaded (repack " << repack << ")";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::bad_file);
            const std::string why = e.what();
            EXPECT_NE(why.find(path), std::string::npos) << why;
            EXPECT_NE(why.find("'" + name + "'"), std::string::npos) << why;
            EXPECT_NE(why.find("in block 2 of"), std::string::npos) << why;
            EXPECT_NE(why.find("not finite"), std::string::npos) << why;
        }
    }
}

// A --no-repack run reads its weights from the mapping while it runs; the file cut short under
// it made the next read SIGBUS with no message.
TEST(MappingGuardDeathTest, AFileTruncatedUnderANoRepackRunIsAClearError) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const std::string path = test::temp_dir() + "/truncated-under-run.gguf";
    std::filesystem::copy_file(test::shared_path("models/stories260K.gguf"), path);
    EXPECT_EXIT(
        {
            LoadOptions o;
            o.repack = false;
            const auto m = LoadedModel::load(path, o);
            ContextParams cp;
            cp.n_ctx = 64;
            cp.n_threads = 1;
            Context ctx(*m, cp);
            const int32_t token = 1;
            ctx.decode(&token, 1, false);
            if (::truncate(path.c_str(), 4096) != 0) std::exit(3);
            for (int i = 0; i < 8; ++i) ctx.decode(&token, 1, false);
            std::exit(0);
        },
        ::testing::ExitedWithCode(1),
        "truncated-under-run.gguf: the model file was truncated or replaced while in use: reading "
        "byte [0-9]+ of the [0-9]+ mapped failed");
}

}  // namespace
}  // namespace mw
