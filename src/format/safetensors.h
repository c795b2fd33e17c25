// Safetensors reader: the header of a .safetensors file, validated against the file's bytes.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON (an object mapping each tensor
// name to {"dtype", "shape", "data_offsets": [begin, end]}, plus an optional "__metadata__"
// object of strings), then the tensor data; offsets count from the end of the header. Every
// tensor's byte range must match its dtype and shape, lie inside the file, and the ranges must
// cover the data exactly (no overlap, no gap), as the format requires.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mw::safetensors {

enum class Dtype {
    BOOL,
    U8,
    I8,
    U16,
    I16,
    F16,
    BF16,
    U32,
    I32,
    F32,
    U64,
    I64,
    F64,
    F8_E4M3,
    F8_E5M2,
};

// "F16", "BF16", ...; nullopt for a name the format does not define.
std::optional<Dtype> dtype_from_name(std::string_view name);
const char* dtype_name(Dtype dtype);
size_t dtype_size(Dtype dtype);

inline constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // as the reference implementation
inline constexpr size_t kMaxDims = 8;

struct TensorInfo {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<uint64_t> shape;  // outermost dimension first (row-major), as written
    uint64_t n_elements = 0;
    uint64_t offset = 0;  // absolute: from the start of the file
    uint64_t n_bytes = 0;
};

struct Header {
    uint64_t data_offset = 0;                     // 8 + the header length
    std::vector<TensorInfo> tensors;              // in data order
    std::map<std::string, std::string> metadata;  // "__metadata__"

    const TensorInfo* find(std::string_view name) const;
};

// Parses and validates the header of a whole file held in `bytes`. `name` (normally the path)
// names the file in errors, which also name the tensor, field and value at fault. Throws
// ErrorKind::bad_file for anything malformed, ErrorKind::unsupported never.
Header parse_header(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace mw::safetensors
