// GGUF v3 writer: the one writer every tool that writes model files uses (synth, quantize,
// convert, tests). Metadata keeps insertion order; setting an existing key replaces its value.
// Tensor data is either given as bytes or produced on demand while writing, so a file larger than
// RAM can be written tensor by tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "format/ggml_types.h"
#include "format/gguf.h"

namespace mw::gguf {

class GgufWriter {
  public:
    explicit GgufWriter(uint32_t alignment = kDefaultAlignment);

    void set_u8(std::string_view key, uint8_t v);
    void set_i8(std::string_view key, int8_t v);
    void set_u16(std::string_view key, uint16_t v);
    void set_i16(std::string_view key, int16_t v);
    void set_u32(std::string_view key, uint32_t v);
    void set_i32(std::string_view key, int32_t v);
    void set_u64(std::string_view key, uint64_t v);
    void set_i64(std::string_view key, int64_t v);
    void set_f32(std::string_view key, float v);
    void set_f64(std::string_view key, double v);
    void set_bool(std::string_view key, bool v);
    void set_string(std::string_view key, std::string_view v);
    void set_array_strings(std::string_view key, const std::vector<std::string>& v);
    void set_array_i32(std::string_view key, std::span<const int32_t> v);
    void set_array_u32(std::string_view key, std::span<const uint32_t> v);
    void set_array_f32(std::string_view key, std::span<const float> v);
    void set_array_bool(std::string_view key, const std::vector<bool>& v);
    // Copies a value read from another file (any type, arrays included).
    void set_value(std::string_view key, const Value& v);
    void remove(std::string_view key);
    bool has(std::string_view key) const;

    // Writes the tensor's bytes into `dst` (exactly the tensor's byte size).
    using Producer = std::function<void(uint8_t* dst)>;

    // ne: dimensions, fastest first (ne[0] is the row length).
    void add_tensor(std::string_view name, GgmlType type, std::vector<uint64_t> ne,
                    std::span<const uint8_t> data);
    void add_tensor(std::string_view name, GgmlType type, std::vector<uint64_t> ne,
                    Producer producer);

    std::vector<uint8_t> to_bytes() const;
    // Writes `path` atomically (a temporary file renamed into place), so an interrupted write
    // never leaves a truncated model behind. `on_tensor(i, n)` is called after each tensor.
    void write_file(const std::string& path,
                    const std::function<void(size_t, size_t)>& on_tensor = {}) const;

    size_t tensor_count() const { return tensors_.size(); }
    uint64_t total_bytes() const;
    // The header alone (metadata and tensor infos, no data): what a header-only parse needs, e.g.
    // to plan the memory of a model that exists only as a description.
    std::vector<uint8_t> header_bytes() const;

  private:
    struct Entry {
        std::string key;
        uint32_t type;
        std::vector<uint8_t> payload;  // encoded value, without key and type
    };
    struct Tensor {
        std::string name;
        GgmlType type;
        std::vector<uint64_t> ne;
        uint64_t n_bytes;
        uint64_t offset;
        std::span<const uint8_t> data;
        Producer producer;
    };

    void set_raw(std::string_view key, ValueType type, std::vector<uint8_t> payload);
    Tensor& add_tensor_info(std::string_view name, GgmlType type, std::vector<uint64_t> ne);

    uint32_t alignment_;
    std::vector<Entry> entries_;
    std::unordered_map<std::string, size_t> entry_index_;  // key -> position in entries_
    std::vector<Tensor> tensors_;
    std::unordered_set<std::string> tensor_names_;  // duplicate checks stay O(1) per tensor
    uint64_t data_size_ = 0;
};

}  // namespace mw::gguf
