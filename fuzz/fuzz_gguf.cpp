// libFuzzer target: GgufFile::parse on arbitrary bytes, whole-file and header-only, then every
// accessor on whatever parsed. A finding is a crash, a sanitizer report, an exception other than
// mw::Error, an error message that does not name the file, or a parsed file that breaks one of
// the invariants the layers above rely on (checked below).
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "format/ggml_types.h"
#include "format/gguf.h"
#include "gguf_mutator.h"

namespace {

using namespace mw::gguf;

constexpr std::string_view kName = "fuzz.gguf";

[[noreturn]] void violated(const char* what, std::string_view detail = {}) {
    std::fprintf(stderr, "fuzz_gguf: invariant violated: %s %.*s\n", what, int(detail.size()),
                 detail.data());
    std::abort();
}

void require(bool ok, const char* what, std::string_view detail = {}) {
    if (!ok) violated(what, detail);
}

// Parse errors must start with the file name: users see them as they are.
void check_message(const mw::Error& e) {
    const std::string_view message = e.what();
    require(message.substr(0, kName.size() + 2) == std::string(kName) + ": ",
            "error message does not start with the file name:", message);
}

struct Bytes {
    const uint8_t* begin;
    const uint8_t* end;
    bool contains(const void* p, uint64_t n) const {
        const auto* q = static_cast<const uint8_t*>(p);
        return q >= begin && q <= end && n <= uint64_t(end - q);
    }
};

// Forces a read so that AddressSanitizer checks the address.
void touch(const uint8_t* p) {
    volatile uint8_t sink = *p;
    (void)sink;
}

// Calls a getter that may legitimately refuse the value; a refusal must name the file.
template <typename Get>
void try_get(Get get) {
    try {
        get();
    } catch (const mw::Error& e) {
        check_message(e);
    }
}

void walk_value(const Value& v, const Bytes& bytes, int depth) {
    require(depth < 8, "arrays nested deeper than the parser allows");
    (void)value_to_string(v);
    (void)value_to_string(v, 0);
    switch (v.type) {
        case ValueType::string:
            require(bytes.contains(v.str.data(), v.str.size()), "string outside the input");
            break;
        case ValueType::array: {
            require(v.elem_type != ValueType::array || v.arrays.size() == v.count,
                    "nested array count mismatch");
            require(v.elem_type != ValueType::string || v.strings.size() == v.count,
                    "string array count mismatch");
            for (std::string_view s : v.strings) {
                require(bytes.contains(s.data(), s.size()), "array string outside the input");
            }
            for (const Value& a : v.arrays) walk_value(a, bytes, depth + 1);
            const size_t width = value_type_size(v.elem_type);
            if (width != 0) {
                require(bytes.contains(v.data, v.count * width),
                        "array elements outside the input");
                for (uint64_t i : {uint64_t(0), v.count / 2, v.count - 1}) {
                    if (i >= v.count) continue;
                    try {
                        (void)v.elem_f64(i);
                        (void)v.elem_i64(i);
                    } catch (const mw::Error&) {
                    }
                }
            }
            // Out-of-range elements are refused, not read.
            try {
                (void)v.elem_i64(v.count);
                violated("elem_i64 past the end accepted");
            } catch (const mw::Error&) {
            }
            break;
        }
        default:
            require(bytes.contains(v.data, value_type_size(v.type)), "scalar outside the input");
            try {
                (void)v.as_i64();
            } catch (const mw::Error&) {
            }
            try {
                (void)v.as_u64();
            } catch (const mw::Error&) {
            }
            try {
                const double d = v.as_f64();
                (void)std::isnan(d);
            } catch (const mw::Error&) {
            }
            break;
    }
}

void walk(const GgufFile& f, const Bytes& bytes, bool header_only) {
    require(f.version() == 2 || f.version() == 3, "version");
    require(f.alignment() != 0 && (f.alignment() & (f.alignment() - 1)) == 0, "alignment");
    require(f.data_offset() % f.alignment() == 0, "data offset not aligned");
    require(f.tensors().empty() || f.data_end() >= f.data_offset(), "data end before data offset");
    if (!header_only) require(f.data_end() <= uint64_t(bytes.end - bytes.begin), "data end");

    size_t turn = 0;
    for (const KeyValue& kv : f.metadata()) {
        require(!kv.key.empty() && bytes.contains(kv.key.data(), kv.key.size()), "key");
        require(f.find(kv.key) == &kv.value, "find(key) does not return the pair");
        walk_value(kv.value, bytes, 0);
        // Every getter on every key would spend most of the time throwing the same "wrong type"
        // errors; each key gets the getters of its own type and two others, in turn.
        const auto getters = std::to_array<std::function<void()>>({
            [&] { (void)f.get_string(kv.key); },
            [&] { (void)f.get_u64(kv.key); },
            [&] { (void)f.get_i64(kv.key); },
            [&] { (void)f.get_u32(kv.key); },
            [&] {
                const std::optional<float> x = f.get_f32(kv.key);
                require(!x || std::isfinite(*x), "get_f32 returned a non-finite value");
            },
            [&] { (void)f.get_bool(kv.key); },
            [&] { (void)f.get_array(kv.key, kv.value.elem_type); },
            [&] { (void)f.get_array(kv.key, ValueType(turn % 13)); },
        });
        const bool integer = kv.value.is_integer() && kv.value.type != ValueType::boolean;
        for (size_t i = 0; i < getters.size(); ++i) {
            const bool own = (i == 0 && kv.value.type == ValueType::string) ||
                             (i >= 1 && i <= 4 && (integer || (i == 4 && kv.value.is_float()))) ||
                             (i == 5 && kv.value.type == ValueType::boolean) ||
                             (i == 6 && kv.value.type == ValueType::array);
            if (own || i == turn % getters.size() || i == (turn + 3) % getters.size()) {
                try_get(getters[i]);
            }
        }
        ++turn;
    }

    for (const TensorInfo& t : f.tensors()) {
        const std::string name(t.name);
        require(f.find_tensor(t.name) == &t, "find_tensor does not return the tensor", name);
        require(t.n_dims >= 1 && t.n_dims <= uint32_t(kMaxDims), "n_dims", name);
        uint64_t n = 1;
        for (int d = 0; d < kMaxDims; ++d) {
            require(t.ne[d] >= 1, "zero dimension", name);
            require(d < int(t.n_dims) || t.ne[d] == 1, "unused dimension not 1", name);
            require(n <= uint64_t(INT64_MAX) / t.ne[d], "element count overflows", name);
            n *= t.ne[d];
        }
        require(n == t.n_elements, "n_elements", name);
        const auto layout = mw::ggml_layout(t.type);
        require(layout.has_value(), "unknown type accepted", name);
        require(t.ne[0] % layout->block_size == 0, "row not a whole number of blocks", name);
        require(t.n_bytes == n / layout->block_size * layout->type_size, "n_bytes", name);
        require(t.offset % f.alignment() == 0, "offset not aligned", name);
        require(f.data_offset() + t.offset + t.n_bytes <= f.data_end(), "tensor past data_end",
                name);
        if (t.data) {
            require(t.data == bytes.begin + f.data_offset() + t.offset, "data pointer", name);
            require(bytes.contains(t.data, t.n_bytes), "tensor data outside the input", name);
            touch(t.data);
            touch(t.data + t.n_bytes - 1);
        } else {
            require(header_only, "tensor without data in a whole-file parse", name);
        }
    }
}

void check(const uint8_t* data, size_t size, bool header_only) {
    ParseOptions options;
    options.header_only = header_only;
    std::optional<GgufFile> f;
    try {
        f.emplace(GgufFile::parse({data, size}, std::string(kName), options));
    } catch (const mw::Error& e) {
        check_message(e);
        return;
    }
    walk(*f, Bytes{data, data + size}, header_only);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    check(data, size, false);
    check(data, size, true);
    return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
    return mw::fuzz::mutate_gguf(data, size, max_size, seed);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t max_out_size, unsigned int seed) {
    return mw::fuzz::cross_over_gguf(data1, size1, data2, size2, out, max_out_size, seed);
}
