#include "format/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "format/ggml_types.h"

namespace mw::gguf {
namespace {

constexpr int kMaxArrayNesting = 4;
constexpr size_t kMaxTensorNameLength = 255;
constexpr size_t kMaxKeyLength = 65535;

// Reads little-endian values from the file with a bounds check on every read. `field` names what
// is being read so that every error can say exactly where the file went wrong. The bytes may be
// the first part of a longer file (`file_size`): bounds are the file's, and a read past the bytes
// present but inside the file throws NeedMoreBytes.
class Cursor {
  public:
    Cursor(std::span<const uint8_t> bytes, uint64_t file_size, const std::string& name)
        : bytes_(bytes), file_size_(std::max<uint64_t>(file_size, bytes.size())), name_(name) {}

    uint64_t pos() const { return pos_; }
    // Bytes left in the file (not only in the bytes present).
    uint64_t remaining() const { return file_size_ - pos_; }
    // Bytes left in the bytes present.
    uint64_t present() const { return bytes_.size() - pos_; }
    const uint8_t* here() const { return bytes_.data() + pos_; }

    [[noreturn]] void truncated(std::string_view field, uint64_t need) const {
        fail(ErrorKind::bad_file,
             "{}: truncated file: {} needs {} bytes at offset {}, but the file has only {} bytes",
             name_, field, need, pos_, file_size_);
    }

    const uint8_t* take(uint64_t n, std::string_view field) {
        if (n > remaining()) truncated(field, n);
        if (n > present()) {
            throw NeedMoreBytes(fmt::format("{}: {} at offset {} lies beyond the {} bytes read",
                                            name_, field, pos_, bytes_.size()),
                                pos_ + n);
        }
        const uint8_t* p = here();
        pos_ += n;
        return p;
    }

    template <typename T>
    T read(std::string_view field) {
        T value;
        std::memcpy(&value, take(sizeof(T), field), sizeof(T));
        return value;
    }

    std::string_view read_string(std::string_view field) {
        const uint64_t length = read<uint64_t>(field);
        if (length > remaining()) {
            fail(ErrorKind::bad_file,
                 "{}: {} has length {} at offset {}, larger than the {} bytes left in the file",
                 name_, field, length, pos_ - 8, remaining());
        }
        return {reinterpret_cast<const char*>(take(length, field)), length};
    }

    // read_string without building a field name: false (nothing consumed) when the string does
    // not fit in the bytes present, so that hot loops (vocab arrays) format the name only for
    // the error message.
    bool try_read_string(std::string_view& out) {
        if (present() < 8) return false;
        uint64_t length;
        std::memcpy(&length, here(), 8);
        if (length > present() - 8) return false;
        out = {reinterpret_cast<const char*>(here() + 8), length};
        pos_ += 8 + length;
        return true;
    }

  private:
    std::span<const uint8_t> bytes_;
    uint64_t file_size_;
    const std::string& name_;
    uint64_t pos_ = 0;
};

bool valid_value_type(uint32_t t) {
    return t <= static_cast<uint32_t>(ValueType::f64);
}

// Smallest number of bytes one value of this type can occupy: bounds element counts before any
// allocation.
uint64_t min_encoded_size(ValueType type) {
    switch (type) {
        case ValueType::string:
            return 8;  // length
        case ValueType::array:
            return 4 + 8;  // element type + count
        default:
            return value_type_size(type);
    }
}

std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 80)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u >= 0x20 && u < 0x7f) ? c : '?';
    }
    if (s.size() > 80) out += "...";
    return out;
}

class Parser {
  public:
    Parser(std::span<const uint8_t> bytes, uint64_t file_size, const std::string& name)
        : cur_(bytes, file_size, name), name_(name) {}

    Value parse_value(ValueType type, const std::string& field, int depth) {
        Value v;
        v.type = type;
        if (type == ValueType::string) {
            v.str = cur_.read_string(field);
            v.data = reinterpret_cast<const uint8_t*>(v.str.data());
            return v;
        }
        if (type != ValueType::array) {
            v.data = cur_.take(value_type_size(type), field);
            if (type == ValueType::boolean && *v.data > 1) {
                fail(ErrorKind::bad_file, "{}: {} is a bool with byte value {} (must be 0 or 1)",
                     name_, field, *v.data);
            }
            return v;
        }
        const uint32_t elem = cur_.read<uint32_t>(field + " (array element type)");
        if (!valid_value_type(elem)) {
            fail(ErrorKind::bad_file, "{}: {} has unknown array element type {}", name_, field,
                 elem);
        }
        v.elem_type = static_cast<ValueType>(elem);
        if (v.elem_type == ValueType::array && depth + 1 >= kMaxArrayNesting) {
            fail(ErrorKind::bad_file, "{}: {} nests arrays deeper than {} levels", name_, field,
                 kMaxArrayNesting);
        }
        v.count = cur_.read<uint64_t>(field + " (array length)");
        const uint64_t min_size = min_encoded_size(v.elem_type);
        if (v.count > cur_.remaining() / min_size) {
            fail(ErrorKind::bad_file,
                 "{}: {} claims {} elements of type {}, more than the {} bytes left in the file "
                 "can hold",
                 name_, field, v.count, value_type_name(v.elem_type), cur_.remaining());
        }
        v.data = cur_.here();
        if (v.elem_type == ValueType::string) {
            // count <= remaining / 8, so this reserves at most twice the size of the bytes
            // present (of a prefix, the count is only checked against the whole file).
            v.strings.reserve(std::min(v.count, cur_.present() / 8));
            for (uint64_t i = 0; i < v.count; ++i) {
                std::string_view s;
                if (!cur_.try_read_string(s)) s = cur_.read_string(fmt::format("{}[{}]", field, i));
                v.strings.push_back(s);
            }
        } else if (v.elem_type == ValueType::array) {
            // No reserve: a Value is ~8 times larger than the 12 bytes an empty array needs, so
            // memory follows the arrays actually present, not the count claimed.
            for (uint64_t i = 0; i < v.count; ++i) {
                v.arrays.push_back(
                    parse_value(ValueType::array, fmt::format("{}[{}]", field, i), depth + 1));
            }
        } else {
            cur_.take(v.count * min_size, field);
            if (v.elem_type == ValueType::boolean) {
                for (uint64_t i = 0; i < v.count; ++i) {
                    if (v.data[i] > 1) {
                        fail(ErrorKind::bad_file,
                             "{}: {}[{}] is a bool with byte value {} (must be 0 or 1)", name_,
                             field, i, v.data[i]);
                    }
                }
            }
        }
        return v;
    }

    Cursor cur_;
    const std::string& name_;
};

void check_header(Cursor& cur, const std::string& name, uint64_t size, uint32_t& version) {
    if (size < 4) {
        fail(ErrorKind::bad_file, "{}: not a GGUF file: only {} bytes long", name, size);
    }
    const uint32_t magic = cur.read<uint32_t>("header.magic");
    if (magic != kMagic) {
        char text[5] = {};
        std::memcpy(text, &magic, 4);
        for (char& c : text) {
            if (c != 0 &&
                (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f))
                c = '?';
        }
        if (magic == 0x67676d6c || magic == 0x67676d66 || magic == 0x67676a74) {
            fail(ErrorKind::bad_file,
                 "{}: this is a legacy GGML/GGJT file (magic \"{}\"), not GGUF; convert it to "
                 "GGUF with a current llama.cpp",
                 name, text);
        }
        fail(ErrorKind::bad_file,
             "{}: not a GGUF file: header.magic is 0x{:08x} (\"{}\"), expected \"GGUF\"", name,
             magic, text);
    }
    version = cur.read<uint32_t>("header.version");
    if (version == 1) {
        fail(ErrorKind::unsupported,
             "{}: header.version = 1: GGUF v1 is not supported (32-bit counts); re-convert the "
             "model with a current tool to get GGUF v3",
             name);
    }
    if (version != 2 && version != 3) {
        const uint32_t swapped = __builtin_bswap32(version);
        if (swapped == 2 || swapped == 3) {
            fail(ErrorKind::unsupported,
                 "{}: header.version = 0x{:08x}: this is a big-endian GGUF file, which memwall "
                 "does not read",
                 name, version);
        }
        fail(ErrorKind::unsupported,
             "{}: header.version = {}: unsupported GGUF version (memwall reads versions 2 and 3)",
             name, version);
    }
}

}  // namespace

const char* value_type_name(ValueType type) {
    switch (type) {
        case ValueType::u8:
            return "u8";
        case ValueType::i8:
            return "i8";
        case ValueType::u16:
            return "u16";
        case ValueType::i16:
            return "i16";
        case ValueType::u32:
            return "u32";
        case ValueType::i32:
            return "i32";
        case ValueType::f32:
            return "f32";
        case ValueType::boolean:
            return "bool";
        case ValueType::string:
            return "string";
        case ValueType::array:
            return "array";
        case ValueType::u64:
            return "u64";
        case ValueType::i64:
            return "i64";
        case ValueType::f64:
            return "f64";
    }
    return "?";
}

size_t value_type_size(ValueType type) {
    switch (type) {
        case ValueType::u8:
        case ValueType::i8:
        case ValueType::boolean:
            return 1;
        case ValueType::u16:
        case ValueType::i16:
            return 2;
        case ValueType::u32:
        case ValueType::i32:
        case ValueType::f32:
            return 4;
        case ValueType::u64:
        case ValueType::i64:
        case ValueType::f64:
            return 8;
        case ValueType::string:
        case ValueType::array:
            return 0;
    }
    return 0;
}

namespace {

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// A scalar at `p` of numeric type `type`, as the widest integer/float types.
bool scalar_is_integer(ValueType t) {
    switch (t) {
        case ValueType::u8:
        case ValueType::i8:
        case ValueType::u16:
        case ValueType::i16:
        case ValueType::u32:
        case ValueType::i32:
        case ValueType::u64:
        case ValueType::i64:
        case ValueType::boolean:
            return true;
        default:
            return false;
    }
}

bool scalar_is_float(ValueType t) {
    return t == ValueType::f32 || t == ValueType::f64;
}

// Integer value as i128-like pair: (is_negative, magnitude) avoids losing u64 values above i64 max.
struct IntValue {
    bool negative;
    uint64_t magnitude;
};

IntValue load_int(ValueType t, const uint8_t* p) {
    auto from_signed = [](int64_t v) {
        return v < 0 ? IntValue{true, uint64_t(0) - uint64_t(v)} : IntValue{false, uint64_t(v)};
    };
    switch (t) {
        case ValueType::u8:
        case ValueType::boolean:
            return {false, load<uint8_t>(p)};
        case ValueType::i8:
            return from_signed(load<int8_t>(p));
        case ValueType::u16:
            return {false, load<uint16_t>(p)};
        case ValueType::i16:
            return from_signed(load<int16_t>(p));
        case ValueType::u32:
            return {false, load<uint32_t>(p)};
        case ValueType::i32:
            return from_signed(load<int32_t>(p));
        case ValueType::u64:
            return {false, load<uint64_t>(p)};
        case ValueType::i64:
            return from_signed(load<int64_t>(p));
        default:
            return {false, 0};
    }
}

double load_float(ValueType t, const uint8_t* p) {
    return t == ValueType::f32 ? double(load<float>(p)) : load<double>(p);
}

}  // namespace

bool Value::is_integer() const {
    return scalar_is_integer(type);
}
bool Value::is_float() const {
    return scalar_is_float(type);
}

int64_t Value::as_i64() const {
    if (!is_integer())
        fail(ErrorKind::bad_file, "value of type {} is not an integer", value_type_name(type));
    const IntValue v = load_int(type, data);
    if (!v.negative && v.magnitude > uint64_t(std::numeric_limits<int64_t>::max())) {
        fail(ErrorKind::bad_file, "integer value {} does not fit in i64", v.magnitude);
    }
    return v.negative ? int64_t(0 - v.magnitude) : int64_t(v.magnitude);
}

uint64_t Value::as_u64() const {
    if (!is_integer())
        fail(ErrorKind::bad_file, "value of type {} is not an integer", value_type_name(type));
    const IntValue v = load_int(type, data);
    if (v.negative) fail(ErrorKind::bad_file, "integer value -{} is negative", v.magnitude);
    return v.magnitude;
}

double Value::as_f64() const {
    if (is_float()) return load_float(type, data);
    if (is_integer()) {
        const IntValue v = load_int(type, data);  // u64 above i64 max converts too
        return v.negative ? -double(v.magnitude) : double(v.magnitude);
    }
    fail(ErrorKind::bad_file, "value of type {} is not a number", value_type_name(type));
}

int64_t Value::elem_i64(uint64_t i) const {
    if (type != ValueType::array || i >= count || !scalar_is_integer(elem_type)) {
        fail(ErrorKind::bad_file, "array element {} is not an integer", i);
    }
    Value v;
    v.type = elem_type;
    v.data = data + i * value_type_size(elem_type);
    return v.as_i64();
}

double Value::elem_f64(uint64_t i) const {
    if (type != ValueType::array || i >= count ||
        !(scalar_is_integer(elem_type) || scalar_is_float(elem_type))) {
        fail(ErrorKind::bad_file, "array element {} is not a number", i);
    }
    Value v;
    v.type = elem_type;
    v.data = data + i * value_type_size(elem_type);
    return v.as_f64();
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, std::string name,
                         const ParseOptions& options) {
    GgufFile file;
    file.name_ = std::move(name);
    const std::string& fname = file.name_;
    // A prefix of a longer file: sizes are checked against the whole file, data is not there.
    const bool prefix = options.file_size > bytes.size();
    const bool header_only = options.header_only || prefix;
    const uint64_t file_size = prefix ? options.file_size : bytes.size();
    Parser parser(bytes, file_size, fname);
    Cursor& cur = parser.cur_;

    check_header(cur, fname, file_size, file.version_);

    const uint64_t tensor_count = cur.read<uint64_t>("header.tensor_count");
    const uint64_t kv_count = cur.read<uint64_t>("header.metadata_kv_count");

    // Each key-value needs at least a key length, a type and one byte; each tensor info at least
    // a name length, n_dims, one dimension, a type and an offset.
    constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
    constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
    if (kv_count > cur.remaining() / kMinKvBytes) {
        fail(ErrorKind::bad_file,
             "{}: header.metadata_kv_count = {} is impossible: the {} bytes after the header can "
             "hold at most {} key-value pairs",
             fname, kv_count, cur.remaining(), cur.remaining() / kMinKvBytes);
    }
    if (tensor_count > cur.remaining() / kMinTensorInfoBytes) {
        fail(ErrorKind::bad_file,
             "{}: header.tensor_count = {} is impossible: the {} bytes after the header can hold "
             "at most {} tensor infos",
             fname, tensor_count, cur.remaining(), cur.remaining() / kMinTensorInfoBytes);
    }

    // Metadata.
    // Reserved for what the bytes present can hold: of a prefix, the counts are only checked
    // against the whole file.
    file.kv_.reserve(std::min(kv_count, cur.present() / kMinKvBytes));
    file.kv_index_.reserve(std::min(kv_count, cur.present() / kMinKvBytes));
    for (uint64_t i = 0; i < kv_count; ++i) {
        KeyValue kv;
        kv.key = cur.read_string(fmt::format("metadata[{}].key", i));
        if (kv.key.empty() || kv.key.size() > kMaxKeyLength) {
            fail(ErrorKind::bad_file, "{}: metadata[{}].key has invalid length {}", fname, i,
                 kv.key.size());
        }
        if (!file.kv_index_.try_emplace(kv.key, file.kv_.size()).second) {
            fail(ErrorKind::bad_file, "{}: duplicate metadata key \"{}\" (metadata[{}])", fname,
                 printable(kv.key), i);
        }
        const std::string field = fmt::format("metadata \"{}\"", printable(kv.key));
        const uint32_t type = cur.read<uint32_t>(field + " (type)");
        if (!valid_value_type(type)) {
            fail(ErrorKind::bad_file, "{}: {} has unknown value type {}", fname, field, type);
        }
        kv.value = parser.parse_value(static_cast<ValueType>(type), field, 0);
        file.kv_.push_back(std::move(kv));
    }

    if (const Value* a = file.find("general.alignment")) {
        if (a->type != ValueType::u32) {
            fail(ErrorKind::bad_file, "{}: general.alignment has type {}, expected u32", fname,
                 value_type_name(a->type));
        }
        const uint32_t alignment = load<uint32_t>(a->data);
        if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
            fail(ErrorKind::bad_file, "{}: general.alignment = {} is not a power of two", fname,
                 alignment);
        }
        file.alignment_ = alignment;
    }

    // Tensor infos. Checked again now that the metadata is read, before reserving.
    if (tensor_count > cur.remaining() / kMinTensorInfoBytes) {
        fail(ErrorKind::bad_file,
             "{}: header.tensor_count = {} is impossible: the {} bytes after the metadata can "
             "hold at most {} tensor infos",
             fname, tensor_count, cur.remaining(), cur.remaining() / kMinTensorInfoBytes);
    }
    file.tensors_.reserve(std::min(tensor_count, cur.present() / kMinTensorInfoBytes));
    file.tensor_index_.reserve(std::min(tensor_count, cur.present() / kMinTensorInfoBytes));
    for (uint64_t i = 0; i < tensor_count; ++i) {
        TensorInfo t;
        t.name = cur.read_string(fmt::format("tensor[{}].name", i));
        const std::string tname = printable(t.name);
        if (t.name.empty() || t.name.size() > kMaxTensorNameLength) {
            fail(ErrorKind::bad_file, "{}: tensor[{}].name has invalid length {}", fname, i,
                 t.name.size());
        }
        if (!file.tensor_index_.try_emplace(t.name, file.tensors_.size()).second) {
            fail(ErrorKind::bad_file, "{}: duplicate tensor name \"{}\" (tensor[{}])", fname, tname,
                 i);
        }
        t.n_dims = cur.read<uint32_t>(fmt::format("tensor \"{}\" n_dims", tname));
        if (t.n_dims == 0 || t.n_dims > kMaxDims) {
            fail(ErrorKind::bad_file, "{}: tensor \"{}\" has n_dims = {} (must be 1 to {})", fname,
                 tname, t.n_dims, kMaxDims);
        }
        uint64_t n_elements = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            const uint64_t ne = cur.read<uint64_t>(fmt::format("tensor \"{}\" ne[{}]", tname, d));
            if (ne == 0) {
                fail(ErrorKind::bad_file, "{}: tensor \"{}\" has ne[{}] = 0 (zero-sized dimension)",
                     fname, tname, d);
            }
            if (ne > uint64_t(std::numeric_limits<int64_t>::max()) ||
                n_elements > uint64_t(std::numeric_limits<int64_t>::max()) / ne) {
                fail(ErrorKind::bad_file,
                     "{}: tensor \"{}\" has ne[{}] = {}: the element count overflows 63 bits",
                     fname, tname, d, ne);
            }
            t.ne[d] = ne;
            n_elements *= ne;
        }
        t.n_elements = n_elements;
        t.type = cur.read<uint32_t>(fmt::format("tensor \"{}\" type", tname));
        const auto layout = ggml_layout(t.type);
        if (!layout) {
            fail(ErrorKind::bad_file, "{}: tensor \"{}\" has unknown type id {}", fname, tname,
                 t.type);
        }
        if (t.ne[0] % layout->block_size != 0) {
            fail(ErrorKind::bad_file,
                 "{}: tensor \"{}\" of type {} has row length ne[0] = {}, not a multiple of the "
                 "block size {}",
                 fname, tname, layout->name, t.ne[0], layout->block_size);
        }
        // n_elements fits in 63 bits and type_size/block_size <= 36, so this cannot overflow
        // 64 bits; still check against the file below.
        const uint64_t blocks = n_elements / layout->block_size;
        if (blocks > std::numeric_limits<uint64_t>::max() / layout->type_size) {
            fail(ErrorKind::bad_file, "{}: tensor \"{}\" byte size overflows", fname, tname);
        }
        t.n_bytes = blocks * layout->type_size;
        t.offset = cur.read<uint64_t>(fmt::format("tensor \"{}\" offset", tname));
        if (t.offset % file.alignment_ != 0) {
            fail(ErrorKind::bad_file,
                 "{}: tensor \"{}\" has offset {}, not a multiple of the alignment {}", fname,
                 tname, t.offset, file.alignment_);
        }
        file.tensors_.push_back(t);
    }

    // The data section starts at the next multiple of the alignment.
    const uint64_t header_end = cur.pos();
    file.data_offset_ = (header_end + file.alignment_ - 1) / file.alignment_ * file.alignment_;
    // A file without tensors (a vocab-only file) needs no padding after its header.
    file.data_end_ = file.tensors_.empty() ? header_end : file.data_offset_;

    for (TensorInfo& t : file.tensors_) {
        const std::string tname = printable(t.name);
        const uint64_t max = std::numeric_limits<uint64_t>::max();
        if (t.offset > max - file.data_offset_ || t.n_bytes > max - file.data_offset_ - t.offset) {
            fail(ErrorKind::bad_file, "{}: tensor \"{}\" offset {} + size {} overflows", fname,
                 tname, t.offset, t.n_bytes);
        }
        const uint64_t begin = file.data_offset_ + t.offset;
        const uint64_t end = begin + t.n_bytes;
        file.data_end_ = std::max(file.data_end_, end);
        if (end > bytes.size()) {
            if (header_only) continue;
            fail(ErrorKind::bad_file,
                 "{}: tensor \"{}\" data [{}, {}) lies outside the file ({} bytes): the file is "
                 "truncated or the offset is wrong",
                 fname, tname, begin, end, file_size);
        }
        t.data = bytes.data() + begin;
    }

    // Tensors must not overlap: each byte of weight data belongs to one tensor.
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(file.tensors_.size());
    for (const TensorInfo& t : file.tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const TensorInfo& prev = *by_offset[i - 1];
        const TensorInfo& next = *by_offset[i];
        if (prev.offset + prev.n_bytes > next.offset) {
            fail(ErrorKind::bad_file,
                 "{}: tensor \"{}\" (offset {}, {} bytes) overlaps tensor \"{}\" (offset {})",
                 fname, printable(prev.name), prev.offset, prev.n_bytes, printable(next.name),
                 next.offset);
        }
    }
    return file;
}

const Value* GgufFile::find(std::string_view key) const {
    const auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].value;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::string) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" has type {}, expected string", name_, key,
             value_type_name(v->type));
    }
    return v->str;
}

std::optional<int64_t> GgufFile::get_i64(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_integer() || v->type == ValueType::boolean) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" has type {}, expected an integer", name_,
             key, value_type_name(v->type));
    }
    try {
        return v->as_i64();
    } catch (const Error& e) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\": {}", name_, key, e.what());
    }
}

std::optional<uint64_t> GgufFile::get_u64(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_integer() || v->type == ValueType::boolean) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" has type {}, expected an integer", name_,
             key, value_type_name(v->type));
    }
    try {
        return v->as_u64();
    } catch (const Error& e) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\": {}", name_, key, e.what());
    }
}

std::optional<uint32_t> GgufFile::get_u32(std::string_view key) const {
    const auto v = get_u64(key);
    if (!v) return std::nullopt;
    if (*v > std::numeric_limits<uint32_t>::max()) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" = {} is out of range", name_, key, *v);
    }
    return uint32_t(*v);
}

std::optional<float> GgufFile::get_f32(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_float() && !(v->is_integer() && v->type != ValueType::boolean)) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" has type {}, expected a number", name_, key,
             value_type_name(v->type));
    }
    const double d = v->as_f64();
    if (!std::isfinite(d)) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" = {} is not finite", name_, key, d);
    }
    // Converting a double outside float's range is undefined behaviour, not infinity.
    if (std::fabs(d) > double(std::numeric_limits<float>::max())) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" = {} is out of range for f32", name_, key,
             d);
    }
    return float(d);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != ValueType::boolean) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" has type {}, expected bool", name_, key,
             value_type_name(v->type));
    }
    return *v->data != 0;
}

const Value* GgufFile::get_array(std::string_view key, ValueType elem) const {
    const Value* v = find(key);
    if (!v) return nullptr;
    const bool numeric_request = elem != ValueType::string && elem != ValueType::array;
    const bool ok =
        v->type == ValueType::array &&
        (v->elem_type == elem ||
         (numeric_request && (scalar_is_integer(v->elem_type) || scalar_is_float(v->elem_type))));
    if (!ok) {
        fail(ErrorKind::bad_file, "{}: metadata \"{}\" has type {}{}{}, expected array of {}",
             name_, key, value_type_name(v->type), v->type == ValueType::array ? " of " : "",
             v->type == ValueType::array ? value_type_name(v->elem_type) : "",
             value_type_name(elem));
    }
    return v;
}

std::string value_to_string(const Value& value, size_t max_elements) {
    switch (value.type) {
        case ValueType::string:
            return fmt::format("\"{}\"", printable(value.str));
        case ValueType::boolean:
            return *value.data ? "true" : "false";
        case ValueType::f32:
        case ValueType::f64:
            return fmt::format("{}", value.as_f64());
        case ValueType::array: {
            std::string out =
                fmt::format("[{} x {}] [", value.count, value_type_name(value.elem_type));
            const uint64_t shown = std::min<uint64_t>(value.count, max_elements);
            for (uint64_t i = 0; i < shown; ++i) {
                if (i) out += ", ";
                if (value.elem_type == ValueType::string) {
                    out += fmt::format("\"{}\"", printable(value.strings[i]));
                } else if (value.elem_type == ValueType::array) {
                    out += value_to_string(value.arrays[i], max_elements);
                } else {
                    // Rendered as a scalar: elem_i64 would refuse u64 values above i64's range.
                    Value elem;
                    elem.type = value.elem_type;
                    elem.data = value.data + i * value_type_size(value.elem_type);
                    out += value_to_string(elem, max_elements);
                }
            }
            if (value.count > shown) out += ", ...";
            return out + "]";
        }
        default: {
            const IntValue v = load_int(value.type, value.data);
            return v.negative ? fmt::format("-{}", v.magnitude) : fmt::format("{}", v.magnitude);
        }
    }
}

}  // namespace mw::gguf
