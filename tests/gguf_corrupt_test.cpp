// Hostile and broken GGUF files: every one must give an mw::Error that names the file, the field
// and the offending value, never a crash or a huge allocation. Files the writer refuses to produce
// are assembled byte by byte with RawFile below. Every case is also run through a real temporary
// file and mw::MappedFile, so the path appears in the message exactly as a user would see it.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "sys/mapped_file.h"

namespace mw::gguf {
namespace {

constexpr std::string_view kName = "corrupt.gguf";
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_str(std::vector<uint8_t>& out, std::string_view s) {
    put_u64(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

uint32_t type_id(ValueType t) {
    return static_cast<uint32_t>(t);
}

// A GGUF file spelled out field by field, including fields no valid file would have.
struct RawKv {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> payload;  // the encoded value after the type tag
};

struct RawTensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type = static_cast<uint32_t>(GgmlType::F32);
    uint64_t offset = 0;
};

struct RawFile {
    uint32_t magic = kMagic;
    uint32_t version = 3;
    std::optional<uint64_t> tensor_count;  // overrides tensors.size()
    std::optional<uint64_t> kv_count;      // overrides kvs.size()
    std::vector<RawKv> kvs;
    std::vector<RawTensor> tensors;
    uint32_t padding_alignment = kDefaultAlignment;  // where the data section starts
    uint64_t data_size = 0;

    std::vector<uint8_t> build() const {
        std::vector<uint8_t> out;
        put_u32(out, magic);
        put_u32(out, version);
        put_u64(out, tensor_count.value_or(tensors.size()));
        put_u64(out, kv_count.value_or(kvs.size()));
        for (const RawKv& kv : kvs) {
            put_str(out, kv.key);
            put_u32(out, kv.type);
            out.insert(out.end(), kv.payload.begin(), kv.payload.end());
        }
        for (const RawTensor& t : tensors) {
            put_str(out, t.name);
            put_u32(out, uint32_t(t.ne.size()));
            for (uint64_t d : t.ne) put_u64(out, d);
            put_u32(out, t.type);
            put_u64(out, t.offset);
        }
        while (out.size() % padding_alignment != 0) out.push_back(0);
        out.resize(out.size() + data_size, 0x5a);
        return out;
    }
};

std::vector<uint8_t> u32_payload(uint32_t v) {
    std::vector<uint8_t> p;
    put_u32(p, v);
    return p;
}
std::vector<uint8_t> string_payload(std::string_view s) {
    std::vector<uint8_t> p;
    put_str(p, s);
    return p;
}
// Array header (element type, count) followed by `elements` as given.
std::vector<uint8_t> array_payload(uint32_t elem, uint64_t count,
                                   const std::vector<uint8_t>& elements = {}) {
    std::vector<uint8_t> p;
    put_u32(p, elem);
    put_u64(p, count);
    p.insert(p.end(), elements.begin(), elements.end());
    return p;
}

// A small valid file: two F32 tensors of 32 and 64 bytes, laid out back to back.
RawFile valid_raw() {
    RawFile f;
    f.kvs.push_back({"general.architecture", type_id(ValueType::string), string_payload("llama")});
    f.kvs.push_back({"llama.block_count", type_id(ValueType::u32), u32_payload(2)});
    f.tensors.push_back({"a", {8}, 0, 0});
    f.tensors.push_back({"b", {8, 2}, 0, 32});
    f.data_size = 96;
    return f;
}

// A writer-made file with every kind of field, whose last tensor ends exactly at the end of the
// file (so that cutting off any byte must be noticed).
std::vector<uint8_t> valid_written() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 2);
    w.set_bool("a.flag", true);
    w.set_array_strings("tokenizer.ggml.tokens", {"a", "bc", ""});
    const float scores[] = {0.5f, -1.0f, 2.0f};
    w.set_array_f32("tokenizer.ggml.scores", scores);
    std::vector<uint8_t> f32(8 * 4, 1), q8(34, 2), out(16 * 4, 3);
    w.add_tensor("tok", GgmlType::F32, {8}, f32);
    w.add_tensor("q", GgmlType::Q8_0, {32, 1}, q8);
    w.add_tensor("out", GgmlType::F32, {8, 2}, out);
    return w.to_bytes();
}

std::string temp_path() {
    static const std::string dir = test::temp_dir();
    static int counter = 0;
    return dir + "/case" + std::to_string(counter++) + ".gguf";
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// The message of the mw::Error that parsing throws; fails the test when parsing succeeds.
std::optional<Error> parse_error(const std::vector<uint8_t>& bytes, std::string_view name,
                                 const ParseOptions& options = {}) {
    try {
        GgufFile::parse(bytes, std::string(name), options);
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "parsing succeeded, expected an error";
    return std::nullopt;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
        s.replace(at, from.size(), to);
    }
    return s;
}

// Parses from memory and from a real mapped file; both must fail with the same message, which
// starts with the file's name and mentions every part (field names and values).
void expect_error(const std::vector<uint8_t>& bytes, std::initializer_list<std::string_view> parts,
                  ErrorKind kind = ErrorKind::bad_file) {
    const std::optional<Error> e = parse_error(bytes, kName);
    if (!e) return;
    const std::string message = e->what();
    EXPECT_EQ(e->kind(), kind) << message;
    EXPECT_EQ(message.rfind(std::string(kName) + ": ", 0), 0u)
        << "message does not start with the file name: " << message;
    for (std::string_view part : parts) {
        EXPECT_NE(message.find(part), std::string::npos)
            << "message lacks \"" << part << "\": " << message;
    }

    const std::string path = temp_path();
    write_bytes(path, bytes);
    const MappedFile mapped = MappedFile::open(path);
    ASSERT_EQ(mapped.bytes().size(), bytes.size());
    try {
        GgufFile::parse(mapped.bytes(), path);
        ADD_FAILURE() << "parsing the mapped file " << path << " succeeded";
    } catch (const Error& from_file) {
        EXPECT_EQ(std::string(from_file.what()), replace_all(message, kName, path));
    }
}

#define EXPECT_GGUF_ERROR(bytes, ...)       \
    do {                                    \
        SCOPED_TRACE("EXPECT_GGUF_ERROR");  \
        expect_error((bytes), __VA_ARGS__); \
    } while (0)

TEST(GgufCorrupt, ValidBaseFilesParse) {
    // The corrupt cases below are one change away from these; they must be valid themselves.
    const auto raw = valid_raw().build();
    const GgufFile f = GgufFile::parse(raw, std::string(kName));
    ASSERT_EQ(f.tensors().size(), 2u);
    EXPECT_EQ(f.data_end(), raw.size());
    EXPECT_EQ(f.tensors()[1].data, raw.data() + f.data_offset() + 32);

    const auto written = valid_written();
    const GgufFile w = GgufFile::parse(written, std::string(kName));
    EXPECT_EQ(w.data_end(), written.size());
    EXPECT_EQ(w.tensors().size(), 3u);
}

TEST(GgufCorrupt, VocabOnlyFileNeedsNoPadding) {
    // llama.cpp's vocab-only files end right after the header, not at the next multiple of 32.
    const auto bytes =
        test::read_file(test::shared_path("testdata/tokenizer/ggml-vocab-llama-spm.gguf"));
    ASSERT_NE(bytes.size() % kDefaultAlignment, 0u);
    const GgufFile f = GgufFile::parse(bytes, "ggml-vocab-llama-spm.gguf");
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_EQ(f.data_end(), bytes.size());
    EXPECT_GT(f.data_offset(), bytes.size());
}

TEST(GgufCorrupt, BadMagic) {
    RawFile f = valid_raw();
    f.magic = 0x12345678;
    EXPECT_GGUF_ERROR(f.build(), {"not a GGUF file", "header.magic", "0x12345678"});
    f.magic = 0x46554746;  // "FGUF"
    EXPECT_GGUF_ERROR(f.build(), {"header.magic", "\"FGUF\""});
}

TEST(GgufCorrupt, LegacyGgmlMagic) {
    RawFile f = valid_raw();
    f.magic = 0x67676d6c;  // 'ggml' written as a little-endian u32
    EXPECT_GGUF_ERROR(f.build(), {"legacy GGML/GGJT", "magic \"lmgg\""});
    f.magic = 0x67676a74;  // 'ggjt'
    EXPECT_GGUF_ERROR(f.build(), {"legacy GGML/GGJT", "magic \"tjgg\""});
    f.magic = 0x67676d66;  // 'ggmf'
    EXPECT_GGUF_ERROR(f.build(), {"legacy GGML/GGJT", "magic \"fmgg\""});
}

TEST(GgufCorrupt, VersionOneIsRejectedClearly) {
    RawFile f = valid_raw();
    f.version = 1;
    EXPECT_GGUF_ERROR(f.build(), {"header.version = 1", "v1 is not supported"},
                      ErrorKind::unsupported);
}

TEST(GgufCorrupt, VersionFour) {
    RawFile f = valid_raw();
    f.version = 4;
    EXPECT_GGUF_ERROR(f.build(), {"header.version = 4", "unsupported GGUF version"},
                      ErrorKind::unsupported);
    f.version = 0;
    EXPECT_GGUF_ERROR(f.build(), {"header.version = 0"}, ErrorKind::unsupported);
}

TEST(GgufCorrupt, BigEndian) {
    RawFile f = valid_raw();
    f.version = 0x03000000;  // version 3 written big-endian
    EXPECT_GGUF_ERROR(f.build(), {"header.version = 0x03000000", "big-endian"},
                      ErrorKind::unsupported);
    f.version = 0x02000000;
    EXPECT_GGUF_ERROR(f.build(), {"header.version = 0x02000000", "big-endian"},
                      ErrorKind::unsupported);
}

TEST(GgufCorrupt, EveryTruncationFails) {
    const auto bytes = valid_written();
    for (size_t size = 0; size < bytes.size(); ++size) {
        SCOPED_TRACE("prefix of " + std::to_string(size) + " bytes");
        const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + size);
        const std::optional<Error> e = parse_error(prefix, kName);
        if (!e) continue;
        const std::string message = e->what();
        EXPECT_EQ(message.rfind(std::string(kName) + ": ", 0), 0u) << message;
        const bool explains =
            message.find("truncated") != std::string::npos ||
            message.find("outside the file") != std::string::npos ||
            message.find("bytes left in the file") != std::string::npos ||
            message.find("can hold") != std::string::npos ||
            message.find("only " + std::to_string(size) + " bytes") != std::string::npos;
        EXPECT_TRUE(explains) << message;
    }
    // One prefix through a real file as well (empty files map to an empty span).
    expect_error({}, {"only 0 bytes long"});
    expect_error(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 40),
                 {"header.metadata_kv_count = 5", "the 16 bytes after the header"});
}

TEST(GgufCorrupt, TruncatedMessageNamesFieldAndOffset) {
    const auto bytes = valid_raw().build();
    EXPECT_GGUF_ERROR(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 6),
                      {"header.version needs 4 bytes at offset 4", "only 6 bytes"});
    EXPECT_GGUF_ERROR(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20),
                      {"header.metadata_kv_count needs 8 bytes at offset 16"});
}

TEST(GgufCorrupt, KvCountLargerThanFile) {
    for (uint64_t count : {uint64_t(1000), uint64_t(1) << 32, uint64_t(1) << 63, kU64Max}) {
        RawFile f = valid_raw();
        f.kv_count = count;
        EXPECT_GGUF_ERROR(f.build(),
                          {"header.metadata_kv_count = " + std::to_string(count), "impossible"});
    }
    // Within the bound but more pairs than there are: the parser runs into the tensor infos and
    // then the end of the file.
    RawFile f = valid_raw();
    f.kv_count = 3;
    EXPECT_GGUF_ERROR(f.build(), {});
}

TEST(GgufCorrupt, TensorCountLargerThanFile) {
    for (uint64_t count : {uint64_t(100), uint64_t(1) << 40, uint64_t(1) << 63, kU64Max}) {
        RawFile f = valid_raw();
        f.tensor_count = count;
        EXPECT_GGUF_ERROR(f.build(),
                          {"header.tensor_count = " + std::to_string(count), "impossible"});
    }
}

TEST(GgufCorrupt, KeyLengthLargerThanFile) {
    for (uint64_t length : {uint64_t(1000), uint64_t(1) << 32, kU64Max}) {
        std::vector<uint8_t> bytes = valid_raw().build();
        // The first key's length field is right after the 24-byte header.
        for (int i = 0; i < 8; ++i) bytes[24 + i] = uint8_t(length >> (8 * i));
        EXPECT_GGUF_ERROR(bytes, {"metadata[0].key has length " + std::to_string(length),
                                  "bytes left in the file"});
    }
}

TEST(GgufCorrupt, EmptyKey) {
    RawFile f = valid_raw();
    f.kvs[0].key = "";
    EXPECT_GGUF_ERROR(f.build(), {"metadata[0].key has invalid length 0"});
}

TEST(GgufCorrupt, StringValueLengthLargerThanFile) {
    RawFile f = valid_raw();
    std::vector<uint8_t> payload;
    put_u64(payload, 1ull << 40);
    put_str(payload, "rest");
    f.kvs[0].payload = payload;
    EXPECT_GGUF_ERROR(f.build(), {"metadata \"general.architecture\" has length 1099511627776",
                                  "bytes left in the file"});
}

TEST(GgufCorrupt, StringArrayElementLengthLargerThanFile) {
    RawFile f = valid_raw();
    std::vector<uint8_t> elements;
    put_str(elements, "ok");
    put_u64(elements, kU64Max);
    f.kvs.push_back({"tokenizer.ggml.tokens", type_id(ValueType::array),
                     array_payload(type_id(ValueType::string), 2, elements)});
    EXPECT_GGUF_ERROR(
        f.build(), {"metadata \"tokenizer.ggml.tokens\"[1] has length " + std::to_string(kU64Max)});
}

TEST(GgufCorrupt, TensorNameLengthLargerThanFile) {
    RawFile f = valid_raw();
    std::vector<uint8_t> bytes = f.build();
    // Find the first tensor info: the header, then both key-value pairs.
    size_t at = 24;
    for (const RawKv& kv : f.kvs) at += 8 + kv.key.size() + 4 + kv.payload.size();
    ASSERT_EQ(bytes[at], 1u);  // length of "a"
    bytes[at] = 0xff;
    bytes[at + 1] = 0xff;
    bytes[at + 5] = 0x01;
    EXPECT_GGUF_ERROR(bytes, {"tensor[0].name has length 1099511693311", "bytes left"});
}

TEST(GgufCorrupt, TensorNameEmptyOrTooLong) {
    RawFile f = valid_raw();
    f.tensors[0].name = "";
    EXPECT_GGUF_ERROR(f.build(), {"tensor[0].name has invalid length 0"});
    f.tensors[0].name = std::string(300, 'x');
    EXPECT_GGUF_ERROR(f.build(), {"tensor[0].name has invalid length 300"});
}

TEST(GgufCorrupt, ArrayCountLargerThanFileForEachElementType) {
    for (uint32_t elem = 0; elem <= type_id(ValueType::f64); ++elem) {
        const auto type = static_cast<ValueType>(elem);
        SCOPED_TRACE(value_type_name(type));
        for (uint64_t count : {uint64_t(100000), uint64_t(1) << 62, kU64Max}) {
            RawFile f = valid_raw();
            f.kvs.push_back({"x.array", type_id(ValueType::array), array_payload(elem, count)});
            EXPECT_GGUF_ERROR(f.build(), {"metadata \"x.array\" claims " + std::to_string(count),
                                          std::string("elements of type ") + value_type_name(type),
                                          "bytes left in the file can hold"});
        }
    }
}

TEST(GgufCorrupt, UnknownValueType) {
    for (uint32_t type : {13u, 100u, 0xffffffffu}) {
        RawFile f = valid_raw();
        f.kvs[1].type = type;
        EXPECT_GGUF_ERROR(f.build(), {"metadata \"llama.block_count\" has unknown value type " +
                                      std::to_string(type)});
    }
}

TEST(GgufCorrupt, UnknownArrayElementType) {
    RawFile f = valid_raw();
    f.kvs.push_back({"x.array", type_id(ValueType::array), array_payload(13, 0)});
    EXPECT_GGUF_ERROR(f.build(), {"metadata \"x.array\" has unknown array element type 13"});
}

// An array nesting `levels` arrays, the innermost holding one u8.
std::vector<uint8_t> nested_array_payload(int levels) {
    std::vector<uint8_t> p = array_payload(type_id(ValueType::u8), 1, {7});
    for (int i = 1; i < levels; ++i) p = array_payload(type_id(ValueType::array), 1, p);
    return p;
}

TEST(GgufCorrupt, NestedArraysTooDeep) {
    RawFile ok = valid_raw();
    ok.kvs.push_back({"x.nested", type_id(ValueType::array), nested_array_payload(4)});
    const auto ok_bytes = ok.build();
    const GgufFile parsed = GgufFile::parse(ok_bytes, std::string(kName));
    EXPECT_EQ(value_to_string(*parsed.find("x.nested")),
              "[1 x array] [[1 x array] [[1 x array] [[1 x u8] [7]]]]");

    RawFile deep = valid_raw();
    deep.kvs.push_back({"x.nested", type_id(ValueType::array), nested_array_payload(5)});
    EXPECT_GGUF_ERROR(deep.build(), {"metadata \"x.nested\"[0][0][0]",
                                     "nests arrays deeper "
                                     "than 4 levels"});
}

TEST(GgufCorrupt, DuplicateKeys) {
    RawFile f = valid_raw();
    f.kvs.push_back({"llama.block_count", type_id(ValueType::u32), u32_payload(3)});
    EXPECT_GGUF_ERROR(f.build(), {"duplicate metadata key \"llama.block_count\" (metadata[2])"});
}

TEST(GgufCorrupt, DuplicateTensorNames) {
    RawFile f = valid_raw();
    f.tensors[1].name = "a";
    EXPECT_GGUF_ERROR(f.build(), {"duplicate tensor name \"a\" (tensor[1])"});
}

TEST(GgufCorrupt, DimensionCountZeroAndFive) {
    RawFile f = valid_raw();
    f.tensors[0].ne = {};
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"a\" has n_dims = 0"});
    f.tensors[0].ne = {8, 1, 1, 1, 1};
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"a\" has n_dims = 5"});
}

TEST(GgufCorrupt, ZeroDimension) {
    RawFile f = valid_raw();
    f.tensors[1].ne = {8, 0};
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"b\" has ne[1] = 0"});
}

TEST(GgufCorrupt, DimensionProductOverflowsInt64) {
    RawFile f = valid_raw();
    f.tensors[0].ne = {1ull << 32, 1ull << 31};
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"a\" has ne[1] = 2147483648", "overflows"});
    f.tensors[0].ne = {8, 1ull << 63};
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"a\" has ne[1] = 9223372036854775808", "overflows"});
    f.tensors[0].ne = {kU64Max};
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"a\" has ne[0] = " + std::to_string(kU64Max)});
    // The product just fits, but the tensor is then far larger than the file.
    f.tensors[0].ne = {1ull << 30, 1ull << 31};
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"a\" data", "lies outside the file"});
}

TEST(GgufCorrupt, UnknownTensorType) {
    for (uint32_t type : {4u, 5u, 31u, 36u, 40u, 0xffffffffu}) {
        RawFile f = valid_raw();
        f.tensors[0].type = type;
        EXPECT_GGUF_ERROR(f.build(), {"tensor \"a\" has unknown type id " + std::to_string(type)});
    }
}

TEST(GgufCorrupt, RowLengthNotMultipleOfBlockSize) {
    RawFile f = valid_raw();
    f.tensors[0].type = static_cast<uint32_t>(GgmlType::Q4_0);
    f.tensors[0].ne = {48};
    EXPECT_GGUF_ERROR(f.build(),
                      {"tensor \"a\" of type Q4_0 has row length ne[0] = 48", "block size 32"});
    f.tensors[0].type = static_cast<uint32_t>(GgmlType::Q4_K);
    f.tensors[0].ne = {128, 2};
    EXPECT_GGUF_ERROR(f.build(),
                      {"tensor \"a\" of type Q4_K has row length ne[0] = 128", "block size 256"});
    // The types of issue 38: llama.cpp falls back to IQ4_NL for such rows; a file that has them
    // in a 256-element type anyway is refused by name.
    for (GgmlType type : {GgmlType::IQ4_XS, GgmlType::TQ1_0, GgmlType::TQ2_0}) {
        f.tensors[0].type = static_cast<uint32_t>(type);
        f.tensors[0].ne = {160, 2};
        const std::string name(ggml_layout(uint32_t(type))->name);
        EXPECT_GGUF_ERROR(
            f.build(),
            {"tensor \"a\" of type " + name + " has row length ne[0] = 160", "block size 256"});
    }
    for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::MXFP4}) {
        f.tensors[0].type = static_cast<uint32_t>(type);
        f.tensors[0].ne = {48};
        EXPECT_GGUF_ERROR(f.build(), {"has row length ne[0] = 48", "block size 32"});
    }
}

TEST(GgufCorrupt, TensorDataOutsideFile) {
    RawFile f = valid_raw();
    f.data_size = 95;
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"b\" data", "lies outside the file"});
    f = valid_raw();
    f.tensors[1].offset = 1ull << 40;
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"b\" data [", "lies outside the file"});
    // Offset plus size beyond 2^64.
    f.tensors[1].offset = kU64Max - 31;
    EXPECT_GGUF_ERROR(f.build(),
                      {"tensor \"b\" offset " + std::to_string(kU64Max - 31), "overflows"});
}

TEST(GgufCorrupt, OffsetNotAligned) {
    RawFile f = valid_raw();
    f.tensors[1].offset = 33;
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"b\" has offset 33", "alignment 32"});
}

TEST(GgufCorrupt, AlignmentNotAPowerOfTwo) {
    for (uint32_t alignment : {0u, 3u, 48u, 0x80000001u}) {
        RawFile f = valid_raw();
        f.kvs.push_back({"general.alignment", type_id(ValueType::u32), u32_payload(alignment)});
        EXPECT_GGUF_ERROR(
            f.build(), {"general.alignment = " + std::to_string(alignment), "not a power of two"});
    }
}

TEST(GgufCorrupt, AlignmentOfWrongType) {
    RawFile f = valid_raw();
    std::vector<uint8_t> u64_32;
    put_u64(u64_32, 32);
    f.kvs.push_back({"general.alignment", type_id(ValueType::u64), u64_32});
    EXPECT_GGUF_ERROR(f.build(), {"general.alignment has type u64, expected u32"});
    f.kvs.back() = {"general.alignment", type_id(ValueType::string), string_payload("32")};
    EXPECT_GGUF_ERROR(f.build(), {"general.alignment has type string, expected u32"});
}

TEST(GgufCorrupt, AlignmentIsHonoured) {
    // With alignment 64, offset 32 is misaligned and the data section moves to a multiple of 64.
    RawFile f = valid_raw();
    f.kvs.push_back({"general.alignment", type_id(ValueType::u32), u32_payload(64)});
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"b\" has offset 32", "alignment 64"});
    f.tensors[1].offset = 64;
    f.padding_alignment = 64;
    f.data_size = 128;
    const auto bytes = f.build();
    const GgufFile parsed = GgufFile::parse(bytes, std::string(kName));
    EXPECT_EQ(parsed.alignment(), 64u);
    EXPECT_EQ(parsed.data_offset() % 64, 0u);
    EXPECT_EQ(parsed.data_end(), bytes.size());
}

TEST(GgufCorrupt, OverlappingTensors) {
    RawFile f = valid_raw();
    f.tensors[0].ne = {16};  // 64 bytes at offset 0 runs into "b" at 32
    EXPECT_GGUF_ERROR(f.build(), {"tensor \"a\" (offset 0, 64 bytes) overlaps tensor \"b\" "
                                  "(offset 32)"});
    f = valid_raw();
    f.tensors[1].offset = 0;  // same offset; order in the file must not matter
    f.tensors[1].ne = {8};
    EXPECT_GGUF_ERROR(f.build(), {"overlaps tensor", "(offset 0)"});
}

TEST(GgufCorrupt, BoolByteTwo) {
    RawFile f = valid_raw();
    f.kvs.push_back({"x.flag", type_id(ValueType::boolean), {2}});
    EXPECT_GGUF_ERROR(f.build(), {"metadata \"x.flag\" is a bool with byte value 2"});
    f.kvs.back() = {"x.flags", type_id(ValueType::array),
                    array_payload(type_id(ValueType::boolean), 3, {1, 0, 2})};
    EXPECT_GGUF_ERROR(f.build(), {"metadata \"x.flags\"[2] is a bool with byte value 2"});
}

TEST(GgufCorrupt, HeaderOnlyAcceptsPrefixHoldingTheHeader) {
    const auto bytes = valid_written();
    const GgufFile full = GgufFile::parse(bytes, std::string(kName));
    const uint64_t data_offset = full.data_offset();
    ParseOptions header_only;
    header_only.header_only = true;

    // Exactly the header (with its padding): every tensor is described, none has data.
    const std::vector<uint8_t> header(bytes.begin(), bytes.begin() + data_offset);
    const GgufFile partial = GgufFile::parse(header, std::string(kName), header_only);
    ASSERT_EQ(partial.tensors().size(), full.tensors().size());
    EXPECT_EQ(partial.data_end(), full.data_end());
    EXPECT_EQ(partial.get_string("general.architecture"), "llama");
    for (const TensorInfo& t : partial.tensors()) {
        EXPECT_EQ(t.data, nullptr) << t.name;
        EXPECT_EQ(t.n_bytes, full.find_tensor(t.name)->n_bytes) << t.name;
    }
    EXPECT_GGUF_ERROR(header, {"lies outside the file"});

    // Prefixes that reach into the data keep the pointers of the tensors that are complete.
    const TensorInfo& first = full.tensors()[0];
    const std::vector<uint8_t> some(bytes.begin(), bytes.begin() + data_offset + first.n_bytes);
    const GgufFile part = GgufFile::parse(some, std::string(kName), header_only);
    EXPECT_EQ(part.tensors()[0].data, some.data() + data_offset);
    EXPECT_EQ(part.tensors()[1].data, nullptr);

    // The prefixes that parse header-only form one range: from the end of the tensor infos
    // (somewhere in the padding) to the whole file. Shorter ones still fail.
    size_t shortest = bytes.size();
    for (size_t size = bytes.size(); size-- > 0;) {
        const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + size);
        try {
            GgufFile::parse(prefix, std::string(kName), header_only);
            EXPECT_EQ(shortest, size + 1) << "prefix " << size << " parses after a failure";
            shortest = size;
        } catch (const Error&) {
        }
    }
    EXPECT_LE(shortest, data_offset);
    EXPECT_GT(shortest + full.alignment(), data_offset);
}

TEST(GgufCorrupt, HeaderOnlyThroughMappedFilePrefix) {
    const auto bytes = valid_written();
    const uint64_t data_offset = GgufFile::parse(bytes, std::string(kName)).data_offset();
    const std::string path = temp_path();
    write_bytes(path, bytes);
    MapOptions map;
    map.max_bytes = data_offset;
    const MappedFile mapped = MappedFile::open(path, map);
    ParseOptions header_only;
    header_only.header_only = true;
    const GgufFile f = GgufFile::parse(mapped.bytes(), path, header_only);
    EXPECT_EQ(f.tensors().size(), 3u);
    for (const TensorInfo& t : f.tensors()) EXPECT_EQ(t.data, nullptr);
    try {
        GgufFile::parse(mapped.bytes(), path);
        ADD_FAILURE() << "a header-only prefix parsed as a whole file";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

TEST(GgufCorrupt, TypedGettersRejectUnusableValues) {
    RawFile f = valid_raw();
    std::vector<uint8_t> huge_double, huge_u64;
    const double big = 1e300;
    huge_double.resize(8);
    std::memcpy(huge_double.data(), &big, 8);
    put_u64(huge_u64, kU64Max);
    f.kvs.push_back({"x.big_f64", type_id(ValueType::f64), huge_double});
    f.kvs.push_back({"x.big_u64", type_id(ValueType::u64), huge_u64});
    const auto bytes = f.build();
    const GgufFile parsed = GgufFile::parse(bytes, std::string(kName));
    // A double beyond float's range must not be converted (undefined behaviour), but reported.
    try {
        parsed.get_f32("x.big_f64");
        ADD_FAILURE() << "1e300 accepted as f32";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("corrupt.gguf: metadata \"x.big_f64\" = 1e+300"),
                  std::string::npos)
            << e.what();
    }
    // A u64 above i64's range is still a number.
    EXPECT_EQ(parsed.find("x.big_u64")->as_f64(), 18446744073709551616.0);
    EXPECT_EQ(parsed.get_u64("x.big_u64"), kU64Max);
    EXPECT_THROW(parsed.get_i64("x.big_u64"), Error);
    EXPECT_THROW(parsed.get_u32("x.big_u64"), Error);
    EXPECT_THROW(parsed.get_bool("x.big_u64"), Error);
    EXPECT_THROW(parsed.get_array("x.big_u64", ValueType::u8), Error);
}

// Regression tests for fuzz_gguf findings: the inputs as found (minimised), byte for byte.

TEST(GgufFuzzFinding, U64ArrayAboveI64RangeRenders) {
    // value_to_string threw "does not fit in i64" for a u64 array element >= 2^63, though it must
    // render any parsed value (memwall inspect prints every key).
    const std::vector<uint8_t> input = {
        0x47, 0x47, 0x55, 0x46, 0x03, 0x00, 0x00, 0x00,        // "GGUF", version 3
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // 0 tensors
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // 1 key-value pair
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x78,  // key "x"
        0x09, 0x00, 0x00, 0x00,                                // array
        0x0a, 0x00, 0x00, 0x00,                                // of u64
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // 1 element
        0xec, 0xe3, 0x5b, 0x0d, 0x9b, 0x77, 0xd6, 0xe0,        // 16201268217339700204
    };
    const GgufFile f = GgufFile::parse(input, std::string(kName));
    EXPECT_EQ(value_to_string(*f.find("x")), "[1 x u64] [16201268217339700204]");
    EXPECT_THROW(f.find("x")->elem_i64(0), Error);
    EXPECT_EQ(f.find("x")->elem_f64(0), 16201268217339700204.0);
}

TEST(GgufFuzzFinding, FileWithoutTensorsEndsAtItsHeader) {
    // data_end() was the padded data offset (32), beyond this 24-byte file, so a caller checking
    // data_end() <= file size called a complete vocab-only file truncated.
    const std::vector<uint8_t> input = {
        0x47, 0x47, 0x55, 0x46, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    const GgufFile f = GgufFile::parse(input, std::string(kName));
    EXPECT_EQ(f.data_end(), input.size());
    EXPECT_TRUE(f.metadata().empty());
}

}  // namespace
}  // namespace mw::gguf
