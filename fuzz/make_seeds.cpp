// Writes the generated part of the fuzz seed corpus: small valid GGUF files that between them
// use every value type, every tensor type, nested arrays, several alignments and a vocab-only
// layout, plus a shrunk copy of each GGUF file named on the command line (same metadata keys and
// tensor names and types, arrays cut to a few elements, tensors cut to one block row), so that
// the fuzzer starts from realistic headers at a size where it runs fast.
//
// usage: fuzz_make_seeds OUT_DIR [FILE.gguf...]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/ggml_types.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"

namespace {

using namespace mw;
using namespace mw::gguf;

constexpr uint64_t kMaxArrayElements = 16;

void save(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) fail(ErrorKind::io, "{}: cannot write", path);
}

// One tensor of each type the format knows, one block row each.
GgufWriter every_tensor_type(uint32_t alignment) {
    GgufWriter w(alignment);
    w.set_string("general.architecture", "llama");
    for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
        const auto layout = ggml_layout(id);
        if (!layout) continue;
        const uint64_t rows = 1 + id % 3;
        std::vector<uint64_t> ne = {layout->block_size, rows};
        w.add_tensor(fmt::format("t.{}", layout->name), GgmlType(id), ne,
                     [n = layout->type_size * rows](uint8_t* dst) {
                         for (uint64_t i = 0; i < n; ++i) dst[i] = uint8_t(i * 7 + 1);
                     });
    }
    return w;
}

GgufWriter every_value_type() {
    GgufWriter w;
    w.set_u8("v.u8", 200);
    w.set_i8("v.i8", -100);
    w.set_u16("v.u16", 60000);
    w.set_i16("v.i16", -30000);
    w.set_u32("v.u32", 4000000000u);
    w.set_i32("v.i32", -2000000000);
    w.set_u64("v.u64", ~0ull);
    w.set_i64("v.i64", -(1ll << 62));
    w.set_f32("v.f32", 1.5f);
    w.set_f64("v.f64", 1e300);
    w.set_bool("v.bool", true);
    w.set_string("v.string", "h\xc3\xa9llo");
    w.set_array_strings("v.strings", {"a", "", "bc"});
    const int32_t ints[] = {1, -2, 3};
    w.set_array_i32("v.i32s", ints);
    const uint32_t uints[] = {7, 8};
    w.set_array_u32("v.u32s", uints);
    const float floats[] = {0.5f, -1.0f, 1e30f};
    w.set_array_f32("v.f32s", floats);
    const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    w.add_tensor("t", GgmlType::F32, {8},
                 std::span(reinterpret_cast<const uint8_t*>(data), sizeof data));
    return w;
}

GgufWriter vocab_only() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_array_strings("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "b", "ab", "\xc4\xa0"});
    const float scores[] = {0, 0, -1, -2, -3, -4};
    w.set_array_f32("tokenizer.ggml.scores", scores);
    const int32_t types[] = {3, 3, 1, 1, 1, 1};
    w.set_array_i32("tokenizer.ggml.token_type", types);
    w.set_array_strings("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.bos_token_id", 0);
    w.set_u32("tokenizer.ggml.eos_token_id", 1);
    return w;
}

// Arrays of arrays cannot be made with the writer's typed setters: spelled out byte by byte.
std::vector<uint8_t> nested_arrays() {
    std::vector<uint8_t> out;
    auto u32 = [&](uint32_t v) {
        out.insert(out.end(), {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)});
    };
    auto u64 = [&](uint64_t v) {
        u32(uint32_t(v));
        u32(uint32_t(v >> 32));
    };
    u32(kMagic);
    u32(3);
    u64(0);  // tensors
    u64(1);  // key-value pairs
    u64(8);
    out.insert(out.end(), {'x', '.', 'n', 'e', 's', 't', 'e', 'd'});
    u32(uint32_t(ValueType::array));
    u32(uint32_t(ValueType::array));  // array of 2 arrays of arrays
    u64(2);
    for (int i = 0; i < 2; ++i) {
        u32(uint32_t(ValueType::array));
        u64(1);
        u32(uint32_t(ValueType::u16));
        u64(2);
        u32(0xffff0001u);
    }
    return out;
}

// The value with arrays cut to their first elements (nested arrays too).
Value shrink(const Value& v) {
    Value s = v;
    if (s.type != ValueType::array) return s;
    s.count = std::min(s.count, kMaxArrayElements);
    if (s.elem_type == ValueType::string) s.strings.resize(s.count);
    if (s.elem_type == ValueType::array) {
        s.arrays.resize(s.count);
        for (Value& a : s.arrays) a = shrink(a);
    }
    return s;
}

std::vector<uint8_t> shrunk_copy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
    const GgufFile f = GgufFile::parse(bytes, path);
    GgufWriter w(f.alignment());
    for (const KeyValue& kv : f.metadata()) {
        if (kv.key != "general.alignment") w.set_value(kv.key, shrink(kv.value));
    }
    for (const TensorInfo& t : f.tensors()) {
        const auto layout = ggml_layout(t.type);
        std::vector<uint64_t> ne(t.ne, t.ne + t.n_dims);
        ne[0] = layout->block_size;
        for (size_t d = 1; d < ne.size(); ++d) ne[d] = std::min<uint64_t>(ne[d], 2);
        uint64_t n = 1;
        for (uint64_t d : ne) n *= d;
        const uint64_t n_bytes = n / layout->block_size * layout->type_size;
        w.add_tensor(t.name, GgmlType(t.type), ne, std::span(t.data, n_bytes));
    }
    return w.to_bytes();
}

std::string base_name(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s OUT_DIR [FILE.gguf...]\n", argv[0]);
        return 2;
    }
    const std::string out = argv[1];
    try {
        save(out + "/every-tensor-type.gguf", every_tensor_type(32).to_bytes());
        save(out + "/every-tensor-type-align8.gguf", every_tensor_type(8).to_bytes());
        save(out + "/every-tensor-type-align64.gguf", every_tensor_type(64).to_bytes());
        save(out + "/every-value-type.gguf", every_value_type().to_bytes());
        save(out + "/vocab-only.gguf", vocab_only().to_bytes());
        save(out + "/nested-arrays.gguf", nested_arrays());
        save(out + "/empty.gguf", GgufWriter().to_bytes());
        std::vector<uint8_t> v2 = every_value_type().to_bytes();
        v2[4] = 2;  // GGUF v2 has the same layout as v3
        save(out + "/version2.gguf", v2);
        for (int i = 2; i < argc; ++i) {
            save(out + "/" + base_name(argv[i]) + ".small.gguf", shrunk_copy(argv[i]));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
