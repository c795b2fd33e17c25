#include "format/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"

namespace mw::gguf {
namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof v);
    std::memcpy(out.data() + at, &v, sizeof v);
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

template <typename T>
std::vector<uint8_t> scalar(T v) {
    std::vector<uint8_t> out;
    put(out, v);
    return out;
}

template <typename T>
std::vector<uint8_t> numeric_array(ValueType elem, std::span<const T> v) {
    std::vector<uint8_t> out;
    put<uint32_t>(out, static_cast<uint32_t>(elem));
    put<uint64_t>(out, v.size());
    const size_t at = out.size();
    out.resize(at + v.size_bytes());
    if (!v.empty()) std::memcpy(out.data() + at, v.data(), v.size_bytes());
    return out;
}

// Re-encodes a parsed value's payload (everything after its type tag).
void encode_value(std::vector<uint8_t>& out, const Value& v) {
    switch (v.type) {
        case ValueType::string:
            put_string(out, v.str);
            return;
        case ValueType::array: {
            put<uint32_t>(out, static_cast<uint32_t>(v.elem_type));
            put<uint64_t>(out, v.count);
            if (v.elem_type == ValueType::string) {
                for (std::string_view s : v.strings) put_string(out, s);
            } else if (v.elem_type == ValueType::array) {
                for (const Value& a : v.arrays) encode_value(out, a);
            } else {
                const size_t n = v.count * value_type_size(v.elem_type);
                out.insert(out.end(), v.data, v.data + n);
            }
            return;
        }
        default:
            out.insert(out.end(), v.data, v.data + value_type_size(v.type));
            return;
    }
}

uint64_t align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        fail(ErrorKind::invalid_argument, "GGUF alignment {} is not a power of two", alignment);
    }
    if (alignment != kDefaultAlignment) set_u32("general.alignment", alignment);
}

void GgufWriter::set_raw(std::string_view key, ValueType type, std::vector<uint8_t> payload) {
    const auto [it, added] = entry_index_.try_emplace(std::string(key), entries_.size());
    if (!added) {
        Entry& e = entries_[it->second];
        e.type = static_cast<uint32_t>(type);
        e.payload = std::move(payload);
        return;
    }
    entries_.push_back({std::string(key), static_cast<uint32_t>(type), std::move(payload)});
}

void GgufWriter::set_u8(std::string_view k, uint8_t v) {
    set_raw(k, ValueType::u8, scalar(v));
}
void GgufWriter::set_i8(std::string_view k, int8_t v) {
    set_raw(k, ValueType::i8, scalar(v));
}
void GgufWriter::set_u16(std::string_view k, uint16_t v) {
    set_raw(k, ValueType::u16, scalar(v));
}
void GgufWriter::set_i16(std::string_view k, int16_t v) {
    set_raw(k, ValueType::i16, scalar(v));
}
void GgufWriter::set_u32(std::string_view k, uint32_t v) {
    set_raw(k, ValueType::u32, scalar(v));
}
void GgufWriter::set_i32(std::string_view k, int32_t v) {
    set_raw(k, ValueType::i32, scalar(v));
}
void GgufWriter::set_u64(std::string_view k, uint64_t v) {
    set_raw(k, ValueType::u64, scalar(v));
}
void GgufWriter::set_i64(std::string_view k, int64_t v) {
    set_raw(k, ValueType::i64, scalar(v));
}
void GgufWriter::set_f32(std::string_view k, float v) {
    set_raw(k, ValueType::f32, scalar(v));
}
void GgufWriter::set_f64(std::string_view k, double v) {
    set_raw(k, ValueType::f64, scalar(v));
}
void GgufWriter::set_bool(std::string_view k, bool v) {
    set_raw(k, ValueType::boolean, scalar<uint8_t>(v ? 1 : 0));
}
void GgufWriter::set_string(std::string_view k, std::string_view v) {
    std::vector<uint8_t> out;
    put_string(out, v);
    set_raw(k, ValueType::string, std::move(out));
}
void GgufWriter::set_array_strings(std::string_view k, const std::vector<std::string>& v) {
    std::vector<uint8_t> out;
    put<uint32_t>(out, static_cast<uint32_t>(ValueType::string));
    put<uint64_t>(out, v.size());
    for (const std::string& s : v) put_string(out, s);
    set_raw(k, ValueType::array, std::move(out));
}
void GgufWriter::set_array_i32(std::string_view k, std::span<const int32_t> v) {
    set_raw(k, ValueType::array, numeric_array(ValueType::i32, v));
}
void GgufWriter::set_array_u32(std::string_view k, std::span<const uint32_t> v) {
    set_raw(k, ValueType::array, numeric_array(ValueType::u32, v));
}
void GgufWriter::set_array_f32(std::string_view k, std::span<const float> v) {
    set_raw(k, ValueType::array, numeric_array(ValueType::f32, v));
}
void GgufWriter::set_array_bool(std::string_view k, const std::vector<bool>& v) {
    std::vector<uint8_t> bytes(v.size());
    for (size_t i = 0; i < v.size(); ++i) bytes[i] = v[i] ? 1 : 0;
    set_raw(k, ValueType::array,
            numeric_array(ValueType::boolean, std::span<const uint8_t>(bytes)));
}
void GgufWriter::set_value(std::string_view k, const Value& v) {
    std::vector<uint8_t> out;
    encode_value(out, v);
    set_raw(k, v.type, std::move(out));
}

void GgufWriter::remove(std::string_view key) {
    const auto it = entry_index_.find(std::string(key));
    if (it == entry_index_.end()) return;
    entries_.erase(entries_.begin() + ptrdiff_t(it->second));
    entry_index_.clear();
    for (size_t i = 0; i < entries_.size(); ++i) entry_index_.emplace(entries_[i].key, i);
}

bool GgufWriter::has(std::string_view key) const {
    return entry_index_.count(std::string(key)) != 0;
}

GgufWriter::Tensor& GgufWriter::add_tensor_info(std::string_view name, GgmlType type,
                                                std::vector<uint64_t> ne) {
    const auto layout = ggml_layout(static_cast<uint32_t>(type));
    if (!layout) fail(ErrorKind::invalid_argument, "tensor {}: unknown type", name);
    if (ne.empty() || ne.size() > size_t(kMaxDims)) {
        fail(ErrorKind::invalid_argument, "tensor {}: {} dimensions (must be 1 to 4)", name,
             ne.size());
    }
    if (tensor_names_.count(std::string(name))) {
        fail(ErrorKind::invalid_argument, "duplicate tensor name {}", name);
    }
    if (ne[0] % layout->block_size != 0) {
        fail(ErrorKind::invalid_argument,
             "tensor {}: row length {} is not a multiple of the {} block size {}", name, ne[0],
             layout->name, layout->block_size);
    }
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;
    Tensor t;
    t.name = std::string(name);
    t.type = type;
    t.ne = std::move(ne);
    t.n_bytes = n / layout->block_size * layout->type_size;
    t.offset = data_size_;
    data_size_ = align_up(data_size_ + t.n_bytes, alignment_);
    tensor_names_.insert(t.name);
    tensors_.push_back(std::move(t));
    return tensors_.back();
}

void GgufWriter::add_tensor(std::string_view name, GgmlType type, std::vector<uint64_t> ne,
                            std::span<const uint8_t> data) {
    Tensor& t = add_tensor_info(name, type, std::move(ne));
    if (data.size() != t.n_bytes) {
        const std::string n(name);
        const uint64_t expected = t.n_bytes;
        data_size_ = t.offset;  // as if the tensor had never been added
        tensor_names_.erase(n);
        tensors_.pop_back();
        fail(ErrorKind::invalid_argument, "tensor {}: {} bytes given, {} expected", n, data.size(),
             expected);
    }
    t.data = data;
}

void GgufWriter::add_tensor(std::string_view name, GgmlType type, std::vector<uint64_t> ne,
                            Producer producer) {
    add_tensor_info(name, type, std::move(ne)).producer = std::move(producer);
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
    std::vector<uint8_t> out;
    put<uint32_t>(out, kMagic);
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, entries_.size());
    for (const Entry& e : entries_) {
        put_string(out, e.key);
        put<uint32_t>(out, e.type);
        out.insert(out.end(), e.payload.begin(), e.payload.end());
    }
    for (const Tensor& t : tensors_) {
        put_string(out, t.name);
        put<uint32_t>(out, uint32_t(t.ne.size()));
        for (uint64_t d : t.ne) put<uint64_t>(out, d);
        put<uint32_t>(out, static_cast<uint32_t>(t.type));
        put<uint64_t>(out, t.offset);
    }
    out.resize(align_up(out.size(), alignment_), 0);
    return out;
}

uint64_t GgufWriter::total_bytes() const {
    return header_bytes().size() + data_size_;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    std::vector<uint8_t> out = header_bytes();
    const size_t base = out.size();
    out.resize(base + data_size_, 0);
    for (const Tensor& t : tensors_) {
        uint8_t* dst = out.data() + base + t.offset;
        if (t.producer) {
            t.producer(dst);
        } else if (t.n_bytes) {
            std::memcpy(dst, t.data.data(), t.n_bytes);
        }
    }
    return out;
}

void GgufWriter::write_file(const std::string& path,
                            const std::function<void(size_t, size_t)>& on_tensor) const {
    const std::string tmp = path + ".tmp";
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(tmp.c_str(), "wb"), std::fclose);
    if (!f) fail(ErrorKind::io, "{}: cannot create: {}", tmp, std::strerror(errno));
    auto write = [&](const void* p, size_t n) {
        if (n && std::fwrite(p, 1, n, f.get()) != n) {
            const std::string why = std::strerror(errno);
            f.reset();
            std::remove(tmp.c_str());
            fail(ErrorKind::io, "{}: write failed: {}", tmp, why);
        }
    };
    const std::vector<uint8_t> header = header_bytes();
    write(header.data(), header.size());
    std::vector<uint8_t> buffer;
    uint64_t written = 0;
    static const uint8_t zeros[256] = {};
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const Tensor& t = tensors_[i];
        while (written < t.offset) {  // alignment padding
            const size_t n = size_t(std::min<uint64_t>(sizeof zeros, t.offset - written));
            write(zeros, n);
            written += n;
        }
        if (t.producer) {
            buffer.assign(t.n_bytes, 0);
            try {
                t.producer(buffer.data());
            } catch (...) {  // a failed producer (bad input data) leaves no temporary behind
                f.reset();
                std::remove(tmp.c_str());
                throw;
            }
            write(buffer.data(), buffer.size());
        } else {
            write(t.data.data(), t.n_bytes);
        }
        written += t.n_bytes;
        if (on_tensor) on_tensor(i + 1, tensors_.size());
    }
    while (written < data_size_) {
        const size_t n = size_t(std::min<uint64_t>(sizeof zeros, data_size_ - written));
        write(zeros, n);
        written += n;
    }
    if (std::fflush(f.get()) != 0) {
        const std::string why = std::strerror(errno);
        f.reset();
        std::remove(tmp.c_str());
        fail(ErrorKind::io, "{}: write failed: {}", tmp, why);
    }
    f.reset();
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        fail(ErrorKind::io, "{}: cannot rename {} into place: {}", path, tmp, why);
    }
}

}  // namespace mw::gguf
