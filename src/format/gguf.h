// GGUF reader: parses and validates a GGUF v2/v3 file held in memory (mapped or read).
//
// Every count, length, dimension and offset is checked against the bytes actually present before
// it is used for an allocation or pointer arithmetic, so a hostile file yields an mw::Error naming
// the file, the field and the value, never a crash. Values point into the caller's bytes (no copies
// of the large vocab arrays); the bytes must outlive the GgufFile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"

namespace mw::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

enum class ValueType : uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12,
};

const char* value_type_name(ValueType type);
// Size in bytes of a fixed-size value type; 0 for string and array.
size_t value_type_size(ValueType type);

// One metadata value. Scalars and numeric arrays point at their little-endian bytes in the file.
struct Value {
    ValueType type = ValueType::u8;
    const uint8_t* data = nullptr;  // scalar bytes, string chars, or numeric array elements

    // Strings.
    std::string_view str;

    // Arrays.
    ValueType elem_type = ValueType::u8;
    uint64_t count = 0;
    std::vector<std::string_view> strings;  // when elem_type == string
    std::vector<Value> arrays;              // when elem_type == array (nested)

    bool is_integer() const;
    bool is_float() const;
    // Numeric conversions; throw if the value is not numeric or does not fit.
    int64_t as_i64() const;
    uint64_t as_u64() const;
    double as_f64() const;
    // Element i of a numeric array, converted.
    int64_t elem_i64(uint64_t i) const;
    double elem_f64(uint64_t i) const;
};

struct KeyValue {
    std::string_view key;
    Value value;
};

struct TensorInfo {
    std::string_view name;
    uint32_t n_dims = 0;
    uint64_t ne[kMaxDims] = {1, 1, 1, 1};  // ne[0] is the fastest-varying (row length)
    uint32_t type = 0;                     // ggml type id; known to the type table
    uint64_t offset = 0;                   // relative to the start of the data section
    uint64_t n_elements = 0;
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;  // null when the data section was not loaded (header-only)
};

struct ParseOptions {
    // Accept a file whose tensor data lies (partly) beyond the bytes given: for reading the header
    // of a partial download. Tensor data pointers are then null.
    bool header_only = false;
    // Nonzero: the bytes given are the first bytes of a file of this size (a remote file read
    // with range requests). Sizes and counts are checked against the whole file, as when it is
    // all there, and a header that goes on past the bytes given throws NeedMoreBytes instead of
    // a truncation error. Implies header_only.
    uint64_t file_size = 0;
};

// Thrown by GgufFile::parse with ParseOptions::file_size when the header continues beyond the
// bytes given: `needed` is the length of prefix that the failed read needed (more may follow).
class NeedMoreBytes : public Error {
  public:
    NeedMoreBytes(const std::string& message, uint64_t needed)
        : Error(ErrorKind::bad_file, message), needed_(needed) {}
    uint64_t needed() const { return needed_; }

  private:
    uint64_t needed_;
};

class GgufFile {
  public:
    // `name` is used in error messages only (normally the path).
    static GgufFile parse(std::span<const uint8_t> bytes, std::string name,
                          const ParseOptions& options = {});

    const std::string& name() const { return name_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    // End of the last tensor's data (the size a complete file must have at least); the end of
    // the header for a file without tensors, which needs no padding.
    uint64_t data_end() const { return data_end_; }

    const std::vector<KeyValue>& metadata() const { return kv_; }
    const std::vector<TensorInfo>& tensors() const { return tensors_; }

    const Value* find(std::string_view key) const;
    const TensorInfo* find_tensor(std::string_view name) const;

    // Typed getters: nullopt when absent, mw::Error when present with an unusable type or value.
    std::optional<std::string_view> get_string(std::string_view key) const;
    std::optional<uint64_t> get_u64(std::string_view key) const;
    std::optional<int64_t> get_i64(std::string_view key) const;
    std::optional<uint32_t> get_u32(std::string_view key) const;
    std::optional<float> get_f32(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    // An array with elements of `elem` type (any numeric type for numeric requests).
    const Value* get_array(std::string_view key, ValueType elem) const;

  private:
    std::string name_;
    uint32_t version_ = 0;
    uint32_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0;
    uint64_t data_end_ = 0;
    std::vector<KeyValue> kv_;
    std::vector<TensorInfo> tensors_;
    // Positions by name (the views point into the file's bytes, not into this object), so that
    // binding a model of tens of thousands of tensors by name stays linear.
    std::unordered_map<std::string_view, size_t> kv_index_, tensor_index_;
};

// Human-readable rendering of a value (arrays abbreviated), for `memwall inspect` and errors.
std::string value_to_string(const Value& value, size_t max_elements = 8);

}  // namespace mw::gguf
