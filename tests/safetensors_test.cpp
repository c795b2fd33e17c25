// The safetensors header reader: valid files parse to the right tensors, and every way a header
// can lie (length, JSON, dtype, shape, offsets, coverage) is an error naming what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/safetensors.h"
#include "support/hf_model.h"

namespace {

using mw::safetensors::parse_header;

std::vector<uint8_t> with_header(const std::string& json, size_t data_bytes) {
    std::vector<uint8_t> out;
    const uint64_t n = json.size();
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(n >> (8 * i)));
    for (const char c : json) out.push_back(uint8_t(c));
    out.resize(out.size() + data_bytes, 0x11);
    return out;
}

// The message of the mw::Error that parsing throws (fails the test when none is thrown).
std::string parse_error(const std::vector<uint8_t>& bytes,
                        mw::ErrorKind kind = mw::ErrorKind::bad_file) {
    try {
        parse_header(bytes, "t.safetensors");
    } catch (const mw::Error& e) {
        EXPECT_EQ(int(e.kind()), int(kind)) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

TEST(Safetensors, ParsesTensorsInDataOrder) {
    const std::vector<uint8_t> f = mw::test::safetensors_bytes({
        {"b", "F16", {2, 3}, std::vector<uint8_t>(12, 1)},
        {"a", "F32", {4}, std::vector<uint8_t>(16, 2)},
        {"scalar", "BF16", {}, std::vector<uint8_t>(2, 3)},
    });
    const mw::safetensors::Header h = parse_header(f, "t.safetensors");
    ASSERT_EQ(h.tensors.size(), 3u);
    EXPECT_EQ(h.data_offset % 8, 0u);
    const auto* b = h.find("b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dtype, mw::safetensors::Dtype::F16);
    EXPECT_EQ(b->shape, (std::vector<uint64_t>{2, 3}));
    EXPECT_EQ(b->n_elements, 6u);
    EXPECT_EQ(b->offset, h.data_offset);
    EXPECT_EQ(h.tensors[0].name, "b");
    EXPECT_EQ(h.find("a")->offset, h.data_offset + 12);
    EXPECT_EQ(f[h.find("a")->offset], 2);
    EXPECT_EQ(h.find("scalar")->n_elements, 1u);
    EXPECT_EQ(h.metadata.at("format"), "pt");
    EXPECT_EQ(h.find("missing"), nullptr);
}

TEST(Safetensors, EmptyHeaderObjectIsAFileWithoutTensors) {
    EXPECT_TRUE(parse_header(with_header("{}", 0), "t").tensors.empty());
    EXPECT_TRUE(parse_header(with_header("{}    ", 0), "t").tensors.empty());  // padding
}

TEST(Safetensors, RefusesBadLengths) {
    EXPECT_NE(parse_error({1, 2, 3}).find("too short"), std::string::npos);
    std::vector<uint8_t> f = with_header("{}", 0);
    f[0] = 200;  // header length past the end
    EXPECT_NE(parse_error(f).find("reaches past the end"), std::string::npos);
    f = with_header("{}", 0);
    f[7] = 1;  // 2^56 bytes
    EXPECT_NE(parse_error(f).find("limit"), std::string::npos);
    EXPECT_NE(parse_error(with_header("[]", 0)).find("does not start with '{'"), std::string::npos);
}

TEST(Safetensors, RefusesBadJson) {
    EXPECT_NE(parse_error(with_header("{\"a\": ", 0)).find("not valid JSON"), std::string::npos);
    EXPECT_NE(parse_error(with_header("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                                      "\"data_offsets\": [0, 4]}, \"a\": 1}",
                                      4))
                  .find("twice"),
              std::string::npos);
    const std::string deep = "{\"a\": " + std::string(100, '[') + std::string(100, ']') + "}";
    EXPECT_NE(parse_error(with_header(deep, 0)).find("deep"), std::string::npos);
    EXPECT_NE(parse_error(with_header("{\"a\": \"\xff\"}", 0)).find("not valid JSON"),
              std::string::npos);
}

TEST(Safetensors, RefusesBadTensorEntries) {
    auto entry = [](const std::string& body, size_t data) {
        return with_header("{\"w\": {" + body + "}}", data);
    };
    const std::string ok_offsets = "\"data_offsets\": [0, 8]";
    EXPECT_NE(parse_error(entry("\"dtype\": \"F99\", \"shape\": [2], " + ok_offsets, 8))
                  .find("dtype \"F99\""),
              std::string::npos);
    EXPECT_NE(parse_error(entry("\"dtype\": 3, \"shape\": [2], " + ok_offsets, 8)).find("dtype is"),
              std::string::npos);
    EXPECT_NE(parse_error(entry("\"shape\": [2], " + ok_offsets, 8)).find("no \"dtype\""),
              std::string::npos);
    EXPECT_NE(parse_error(entry("\"dtype\": \"F32\", \"shape\": [-2], " + ok_offsets, 8))
                  .find("shape[0]"),
              std::string::npos);
    EXPECT_NE(parse_error(entry("\"dtype\": \"F32\", \"shape\": [2.5], " + ok_offsets, 8))
                  .find("shape[0]"),
              std::string::npos);
    EXPECT_NE(
        parse_error(entry("\"dtype\": \"F32\", \"shape\": [3], " + ok_offsets, 8)).find("need 12"),
        std::string::npos);
    EXPECT_NE(parse_error(entry("\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]", 8))
                  .find("end before"),
              std::string::npos);
    EXPECT_NE(parse_error(entry("\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]", 8))
                  .find("[begin, end]"),
              std::string::npos);
    EXPECT_NE(parse_error(entry("\"dtype\": \"F32\", \"shape\": [2], " + ok_offsets, 4))
                  .find("reach past"),
              std::string::npos);
    EXPECT_NE(
        parse_error(entry("\"dtype\": \"F32\", \"shape\": [2], \"extra\": 1, " + ok_offsets, 8))
            .find("unknown field \"extra\""),
        std::string::npos);
    EXPECT_NE(parse_error(entry("\"dtype\": \"U8\", \"shape\": [4294967296, 4294967296, "
                                "4294967296], \"data_offsets\": [0, 8]",
                                8))
                  .find("more elements"),
              std::string::npos);
    EXPECT_NE(parse_error(with_header("{\"w\": 5}", 0)).find("expected an object"),
              std::string::npos);
    EXPECT_NE(parse_error(with_header("{\"__metadata__\": {\"k\": 1}}", 0)).find("__metadata__"),
              std::string::npos);
}

TEST(Safetensors, DataMustBeCoveredExactly) {
    const std::string a = "\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}";
    const std::string b_overlap =
        "\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}";
    const std::string b_gap =
        "\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [12, 16]}";
    EXPECT_NE(parse_error(with_header("{" + a + ", " + b_overlap + "}", 8)).find("overlap"),
              std::string::npos);
    EXPECT_NE(
        parse_error(with_header("{" + a + ", " + b_gap + "}", 16)).find("belong to no tensor"),
        std::string::npos);
    EXPECT_NE(parse_error(with_header("{" + a + "}", 12)).find("trailing"), std::string::npos);
    EXPECT_NO_THROW(parse_header(with_header("{" + a + "}", 8), "t"));
}

// Every truncation of a valid file is refused with an error, never a crash (the fuzz target
// explores the rest).
TEST(Safetensors, EveryTruncationIsAnError) {
    const std::vector<uint8_t> f = mw::test::safetensors_bytes({
        {"x", "F16", {4, 4}, std::vector<uint8_t>(32, 7)},
        {"y", "F32", {3}, std::vector<uint8_t>(12, 9)},
    });
    for (size_t n = 0; n < f.size(); ++n) {
        const std::vector<uint8_t> cut(f.begin(), f.begin() + long(n));
        EXPECT_THROW(parse_header(cut, "t"), mw::Error) << n;
    }
}

}  // namespace
