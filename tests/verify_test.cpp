// memwall verify: sound files pass every check; a truncated file is reported with where it ends
// and how many bytes are missing; non-finite values and block scales are found per tensor; a
// SHA-256 is compared. (Every corrupted field of the CLI corpus is in cli_corrupt_test.cpp.)
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "memwall.h"
#include "net/sha256.h"
#include "support/test_support.h"
#include "support/tiny_model.h"

namespace mw {
namespace {

using nlohmann::json;

json verify(const std::string& path, const char* sha256 = nullptr) {
    mw_verify_params p = mw_verify_default_params();
    p.sha256 = sha256;
    p.n_threads = 2;
    char* text = mw_verify_json(path.c_str(), &p);
    if (!text) {
        ADD_FAILURE() << mw_last_error();
        return json();
    }
    json j = json::parse(text);
    mw_free_string(text);
    return j;
}

std::string status(const json& report, const std::string& check) {
    for (const json& c : report["checks"]) {
        if (c["name"] == check) return c["status"];
    }
    return "absent";
}

std::string detail(const json& report, const std::string& check) {
    for (const json& c : report["checks"]) {
        if (c["name"] == check) return c["detail"];
    }
    return "";
}

std::string write_temp(const std::vector<uint8_t>& bytes, const std::string& name) {
    static const std::string dir = test::temp_dir();
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return path;
}

TEST(Verify, SoundFilesPassEveryCheck) {
    for (const char* rel :
         {"models/stories260K.gguf", "models/llama-2-tiny-random.gguf",
          "reference/models/kq-tiny-Q4_K_M.gguf", "reference/models/kq-tiny-Q2_K.gguf",
          "reference/models/kq-tiny-BF16.gguf", "reference/models/moe-tiny-Q4_K_M.gguf"}) {
        const std::string path = test::shared_path(rel);
        const json r = verify(path);
        SCOPED_TRACE(r.dump(1));
        EXPECT_TRUE(r["ok"].get<bool>());
        for (const char* check : {"structure", "size", "tensors", "values", "model"}) {
            EXPECT_EQ(status(r, check), "pass") << check;
        }
        EXPECT_EQ(status(r, "sha256"), "skip");
        const std::vector<uint8_t> bytes = test::read_file(path);
        const gguf::GgufFile f = gguf::GgufFile::parse(bytes, path);
        uint64_t elements = 0;
        for (const gguf::TensorInfo& t : f.tensors()) elements += t.n_elements;
        EXPECT_EQ(r["values_checked"].get<uint64_t>(), elements);
        EXPECT_EQ(r["tensors_checked"].get<uint64_t>(), f.tensors().size());
        EXPECT_EQ(r["missing_bytes"].get<uint64_t>(), 0u);
    }
    const test::CommandResult cli = test::run_command(test::cli_path() + " verify " +
                                                      test::shared_path("models/stories260K.gguf"));
    EXPECT_EQ(cli.exit_code, 0) << cli.err;
    EXPECT_NE(cli.out.find("every check passed"), std::string::npos) << cli.out;
}

TEST(Verify, TruncatedFileSaysWhereAndByHowMuch) {
    const std::string src = test::shared_path("models/stories260K.gguf");
    std::vector<uint8_t> bytes = test::read_file(src);
    const gguf::GgufFile whole = gguf::GgufFile::parse(bytes, src);
    const gguf::TensorInfo* last = &whole.tensors().front();
    for (const gguf::TensorInfo& t : whole.tensors()) {
        if (t.offset > last->offset) last = &t;
    }
    const std::string last_name(last->name);
    bytes.resize(bytes.size() - 100);
    const std::string path = write_temp(bytes, "cut100.gguf");
    const json r = verify(path);
    EXPECT_FALSE(r["ok"].get<bool>());
    EXPECT_EQ(status(r, "structure"), "pass");
    EXPECT_EQ(status(r, "size"), "fail");
    EXPECT_EQ(r["missing_bytes"].get<uint64_t>(), 100u);
    EXPECT_EQ(r["tensors_cut"].get<uint64_t>(), 1u);
    EXPECT_EQ(r["first_cut_tensor"], last_name);
    EXPECT_NE(detail(r, "size").find("100 bytes missing"), std::string::npos) << detail(r, "size");
    EXPECT_EQ(status(r, "values"), "skip");

    // The CLI says it on stderr with a non-zero exit, and `run` refuses the file too.
    const test::CommandResult cli = test::run_command(test::cli_path() + " verify " + path);
    EXPECT_EQ(cli.exit_code, 1);
    EXPECT_NE(cli.err.find("truncated: 100 bytes missing"), std::string::npos) << cli.err;
    EXPECT_NE(cli.err.find("\"" + last_name + "\""), std::string::npos) << cli.err;

    // Cut in the middle of the data: every tensor from there on is counted.
    bytes.resize(whole.data_offset() + (bytes.size() - whole.data_offset()) / 2);
    const json half = verify(write_temp(bytes, "half.gguf"));
    EXPECT_EQ(half["missing_bytes"].get<uint64_t>(), whole.data_end() - bytes.size());
    EXPECT_GT(half["tensors_cut"].get<uint64_t>(), 1u);
}

// A file whose tensors hold non-finite values: F32 and F16 values, a Q8_0 scale, a Q4_K dmin.
TEST(Verify, NonFiniteValuesAndScalesAreFoundPerTensor) {
    gguf::GgufWriter w;
    w.set_string("general.architecture", "llama");
    std::vector<float> f32(64, 1.0f);
    f32[5] = std::numeric_limits<float>::quiet_NaN();
    f32[9] = std::numeric_limits<float>::infinity();
    std::vector<uint16_t> f16(64, f32_to_fp16(0.5f));
    f16[40] = 0x7c00;  // +inf
    // Q8_0: 4 blocks of (f16 d, 32 x int8); block 2's scale is inf.
    std::vector<uint8_t> q8(4 * 34, 1);
    for (int b = 0; b < 4; ++b) {
        const uint16_t d = b == 2 ? 0x7c00 : f32_to_fp16(0.01f);
        std::memcpy(q8.data() + b * 34, &d, 2);
    }
    // Q4_K: 2 blocks of (f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes); block 1's dmin NaN.
    std::vector<uint8_t> q4k(2 * 144, 0x11);
    for (int b = 0; b < 2; ++b) {
        const uint16_t d = f32_to_fp16(0.02f), dmin = b == 1 ? 0x7e00 : f32_to_fp16(0.01f);
        std::memcpy(q4k.data() + b * 144, &d, 2);
        std::memcpy(q4k.data() + b * 144 + 2, &dmin, 2);
    }
    std::vector<float> fine(32, 2.0f);
    w.add_tensor("a.f32", GgmlType::F32, {64},
                 {reinterpret_cast<const uint8_t*>(f32.data()), f32.size() * 4});
    w.add_tensor("b.f16", GgmlType::F16, {64},
                 {reinterpret_cast<const uint8_t*>(f16.data()), f16.size() * 2});
    w.add_tensor("c.q8_0", GgmlType::Q8_0, {128}, q8);
    w.add_tensor("d.q4_k", GgmlType::Q4_K, {256, 2}, q4k);
    w.add_tensor("e.fine", GgmlType::F32, {32},
                 {reinterpret_cast<const uint8_t*>(fine.data()), fine.size() * 4});
    const std::string path = write_temp(w.to_bytes(), "nonfinite.gguf");
    const json r = verify(path);
    SCOPED_TRACE(r.dump(1));
    EXPECT_FALSE(r["ok"].get<bool>());
    EXPECT_EQ(status(r, "size"), "pass");
    EXPECT_EQ(status(r, "tensors"), "pass");
    EXPECT_EQ(status(r, "values"), "fail");
    const json& bad = r["non_finite"];
    ASSERT_EQ(bad.size(), 4u);
    EXPECT_EQ(bad[0]["name"], "a.f32");
    EXPECT_EQ(bad[0]["values"], 2);
    EXPECT_EQ(bad[0]["first_element"], 5);
    EXPECT_EQ(bad[1]["name"], "b.f16");
    EXPECT_EQ(bad[1]["values"], 1);
    EXPECT_EQ(bad[1]["first_element"], 40);
    EXPECT_EQ(bad[2]["name"], "c.q8_0");
    EXPECT_EQ(bad[2]["blocks"], 1);
    EXPECT_EQ(bad[2]["values"], 32);  // every value of the block scaled by inf
    EXPECT_EQ(bad[2]["first_element"], 64);
    EXPECT_EQ(bad[3]["name"], "d.q4_k");
    EXPECT_EQ(bad[3]["blocks"], 1);
    EXPECT_EQ(bad[3]["first_element"], 256);
    const std::vector<uint8_t> bytes = test::read_file(path);  // outlives the parse
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, path);
    EXPECT_EQ(bad[2]["first_offset"].get<uint64_t>(),
              f.data_offset() + f.find_tensor("c.q8_0")->offset + 2 * 34);
    EXPECT_NE(detail(r, "values").find("4 tensors with values that are not finite"),
              std::string::npos)
        << detail(r, "values");
    // Not a model memwall can run either: that is its own check.
    EXPECT_EQ(status(r, "model"), "fail");
}

// The types of issue 38: a non-finite fp16 scale shows in the decoded values; bit patterns that
// decode to finite numbers but that no writer produces (MXFP4's NaN exponent 0xFF, a TQ2_0 code
// 3) are reported per tensor with the first block and what is wrong with it.
TEST(Verify, InvalidBlocksOfTheNewTypesAreFoundPerTensor) {
    gguf::GgufWriter w;
    w.set_string("general.architecture", "llama");
    // IQ4_XS: 2 blocks of 136 bytes (f16 d first); block 1's d is NaN.
    std::vector<uint8_t> iq4xs(2 * 136, 0x21);
    for (int b = 0; b < 2; ++b) {
        const uint16_t d = b == 1 ? 0x7e00 : f32_to_fp16(0.01f);
        std::memcpy(iq4xs.data() + b * 136, &d, 2);
    }
    // MXFP4: 4 blocks of (E8M0 e, 16 nibble bytes) with codes 0 and 1 only (finite even at
    // 2^127); block 3's exponent is 0xFF.
    std::vector<uint8_t> mxfp4(4 * 17, 0x10);
    for (int b = 0; b < 4; ++b) mxfp4[size_t(b) * 17] = b == 3 ? 0xFF : 120;
    // TQ2_0: 3 blocks of (64 code bytes, f16 d); codes 0-2 (0x24 = codes 0, 1, 2, 0) except one
    // byte of block 1 with a code 3 in its top field.
    std::vector<uint8_t> tq2(3 * 66, 0x24);
    for (int b = 0; b < 3; ++b) {
        const uint16_t d = f32_to_fp16(0.5f);
        std::memcpy(tq2.data() + b * 66 + 64, &d, 2);
    }
    tq2[66 + 17] = 0xE4;
    w.add_tensor("a.iq4_xs", GgmlType::IQ4_XS, {256, 2}, iq4xs);
    w.add_tensor("b.mxfp4", GgmlType::MXFP4, {128}, mxfp4);
    w.add_tensor("c.tq2_0", GgmlType::TQ2_0, {256, 3}, tq2);
    const std::string path = write_temp(w.to_bytes(), "invalid_blocks.gguf");
    const json r = verify(path);
    SCOPED_TRACE(r.dump(1));
    EXPECT_FALSE(r["ok"].get<bool>());
    EXPECT_EQ(status(r, "values"), "fail");
    const json& bad = r["non_finite"];
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_EQ(bad[0]["name"], "a.iq4_xs");
    EXPECT_EQ(bad[0]["blocks"], 1);
    EXPECT_EQ(bad[0]["first_element"], 256);
    const json& invalid = r["invalid_blocks"];
    ASSERT_EQ(invalid.size(), 2u);
    EXPECT_EQ(invalid[0]["name"], "b.mxfp4");
    EXPECT_EQ(invalid[0]["blocks"], 1);
    EXPECT_EQ(invalid[0]["first_block"], 3);
    EXPECT_NE(invalid[0]["problem"].get<std::string>().find("0xFF"), std::string::npos);
    EXPECT_EQ(invalid[1]["name"], "c.tq2_0");
    EXPECT_EQ(invalid[1]["first_block"], 1);
    const std::vector<uint8_t> bytes = test::read_file(path);
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, path);
    EXPECT_EQ(invalid[1]["first_offset"].get<uint64_t>(),
              f.data_offset() + f.find_tensor("c.tq2_0")->offset + 66);
    const std::string d = detail(r, "values");
    EXPECT_NE(d.find("tensor \"a.iq4_xs\" (IQ4_XS)"), std::string::npos) << d;
    EXPECT_NE(d.find("tensor \"b.mxfp4\" (MXFP4): 1 block, the first at byte"), std::string::npos)
        << d;
    EXPECT_NE(d.find("2 tensors with blocks no writer of the format produces"), std::string::npos)
        << d;
}

TEST(Verify, Sha256IsComparedWhenGiven) {
#if !MEMWALL_NET
    GTEST_SKIP() << "memwall was built with MEMWALL_NET=OFF: no SHA-256 (OpenSSL)";
#endif
    const std::string path = test::shared_path("models/stories260K.gguf");
    const std::string sha = net::sha256_file(path);
    EXPECT_EQ(sha.size(), 64u);
    const json good = verify(path, sha.c_str());
    EXPECT_TRUE(good["ok"].get<bool>());
    EXPECT_EQ(status(good, "sha256"), "pass");
    EXPECT_EQ(good["sha256"], sha);
    std::string upper = sha;
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_TRUE(verify(path, upper.c_str())["ok"].get<bool>());

    const std::string wrong(64, '0');
    const test::CommandResult cli =
        test::run_command(test::cli_path() + " verify " + path + " --sha256 " + wrong + " --json");
    EXPECT_EQ(cli.exit_code, 1);
    const json r = json::parse(cli.out);
    EXPECT_FALSE(r["ok"].get<bool>());
    EXPECT_EQ(status(r, "sha256"), "fail");
    EXPECT_EQ(status(r, "values"), "pass");
    EXPECT_NE(cli.err.find("SHA-256 mismatch"), std::string::npos) << cli.err;

    mw_verify_params p = mw_verify_default_params();
    p.sha256 = "abc";
    EXPECT_EQ(mw_verify_json(path.c_str(), &p), nullptr);
    EXPECT_NE(std::string(mw_last_error()).find("not a SHA-256"), std::string::npos);
    EXPECT_EQ(mw_verify_json("/nonexistent/x.gguf", nullptr), nullptr);
    EXPECT_NE(std::string(mw_last_error()).find("/nonexistent/x.gguf"), std::string::npos);
}

}  // namespace
}  // namespace mw
