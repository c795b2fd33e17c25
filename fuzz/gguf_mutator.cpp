#include "gguf_mutator.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "format/ggml_types.h"
#include "format/gguf.h"

// libFuzzer's byte-level mutator, linked in by -fsanitize=fuzzer.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace mw::fuzz {
namespace {

using gguf::ValueType;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kLastValueType = static_cast<uint32_t>(ValueType::f64);
// Arrays of thousands of tokens would drown every other field; a few elements per array suffice.
constexpr size_t kMaxFieldsPerArray = 16;

enum class FieldKind : uint8_t {
    version,
    tensor_count,
    kv_count,
    key_length,
    value_type,
    string_length,
    elem_type,
    array_count,
    bool_byte,
    scalar,
    alignment,
    name_length,
    n_dims,
    dim,
    tensor_type,
    tensor_offset,
};
constexpr size_t kFieldKinds = size_t(FieldKind::tensor_offset) + 1;

struct Field {
    size_t pos;
    uint8_t width;
    FieldKind kind;
};

struct TensorEntry {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type = 0;
    uint64_t offset = 0;
};

// What a tolerant scan of the input found. Fields are recorded up to the first inconsistency;
// the entry lists describe the whole header only when `complete` is set.
struct Layout {
    std::vector<Field> fields;
    std::vector<std::vector<uint8_t>> kvs;  // each pair exactly as encoded: key, type, value
    std::vector<TensorEntry> tensors;
    uint32_t magic = gguf::kMagic;
    uint32_t version = 3;
    uint32_t alignment = gguf::kDefaultAlignment;
    size_t header_end = 0;
    bool complete = false;
};

uint64_t align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}
bool is_power_of_two(uint64_t x) {
    return x != 0 && (x & (x - 1)) == 0;
}

class Scanner {
  public:
    Scanner(const uint8_t* data, size_t size, Layout& layout)
        : data_(data), size_(size), out_(layout) {}

    void run() {
        if (!read(out_.magic)) return;
        if (!field(FieldKind::version, out_.version)) return;
        uint64_t tensor_count = 0, kv_count = 0;
        if (!field(FieldKind::tensor_count, tensor_count)) return;
        if (!field(FieldKind::kv_count, kv_count)) return;
        if (kv_count > left() / 13 || tensor_count > left() / 32) return;
        for (uint64_t i = 0; i < kv_count; ++i) {
            const size_t begin = pos_;
            std::string key;
            if (!string(FieldKind::key_length, &key)) return;
            uint32_t type = 0;
            if (!field(FieldKind::value_type, type)) return;
            if (key == "general.alignment" && type == uint32_t(ValueType::u32)) {
                uint32_t alignment = 0;
                if (!field(FieldKind::alignment, alignment)) return;
                if (is_power_of_two(alignment)) out_.alignment = alignment;
            } else if (!value(type, 0, true)) {
                return;
            }
            out_.kvs.emplace_back(data_ + begin, data_ + pos_);
        }
        for (uint64_t i = 0; i < tensor_count; ++i) {
            TensorEntry t;
            if (!string(FieldKind::name_length, &t.name)) return;
            uint32_t n_dims = 0;
            if (!field(FieldKind::n_dims, n_dims) || n_dims > 8) return;
            t.ne.resize(n_dims);
            for (uint64_t& ne : t.ne) {
                if (!field(FieldKind::dim, ne)) return;
            }
            if (!field(FieldKind::tensor_type, t.type)) return;
            if (!field(FieldKind::tensor_offset, t.offset)) return;
            out_.tensors.push_back(std::move(t));
        }
        out_.header_end = pos_;
        out_.complete = true;
    }

  private:
    uint64_t left() const { return size_ - pos_; }

    template <typename T>
    bool read(T& v) {
        if (sizeof v > left()) return false;
        std::memcpy(&v, data_ + pos_, sizeof v);
        pos_ += sizeof v;
        return true;
    }

    template <typename T>
    bool field(FieldKind kind, T& v, bool record = true) {
        if (record && sizeof v <= left()) out_.fields.push_back({pos_, uint8_t(sizeof v), kind});
        return read(v);
    }

    bool string(FieldKind kind, std::string* text, bool record = true) {
        uint64_t length = 0;
        if (!field(kind, length, record) || length > left()) return false;
        if (text) text->assign(reinterpret_cast<const char*>(data_ + pos_), length);
        pos_ += length;
        return true;
    }

    bool value(uint32_t type, int depth, bool record) {
        if (type > kLastValueType) return false;
        const auto t = static_cast<ValueType>(type);
        if (t == ValueType::string) return string(FieldKind::string_length, nullptr, record);
        if (t != ValueType::array) {
            const size_t width = gguf::value_type_size(t);
            if (width > left()) return false;
            if (record) {
                const auto kind =
                    t == ValueType::boolean ? FieldKind::bool_byte : FieldKind::scalar;
                out_.fields.push_back({pos_, uint8_t(width), kind});
            }
            pos_ += width;
            return true;
        }
        uint32_t elem = 0;
        uint64_t count = 0;
        if (!field(FieldKind::elem_type, elem, record)) return false;
        if (!field(FieldKind::array_count, count, record)) return false;
        if (elem > kLastValueType) return false;
        const auto elem_type = static_cast<ValueType>(elem);
        if (elem_type == ValueType::array && depth >= 3) return false;
        const size_t width = gguf::value_type_size(elem_type);
        if (width != 0) {
            if (count > left() / width) return false;
            for (uint64_t i = 0; record && i < std::min<uint64_t>(count, kMaxFieldsPerArray); ++i) {
                const auto kind =
                    elem_type == ValueType::boolean ? FieldKind::bool_byte : FieldKind::scalar;
                out_.fields.push_back({pos_ + size_t(i) * width, uint8_t(width), kind});
            }
            pos_ += size_t(count) * width;
            return true;
        }
        if (count > left() / 8) return false;
        for (uint64_t i = 0; i < count; ++i) {
            if (!value(elem, depth + 1, record && i < kMaxFieldsPerArray)) return false;
        }
        return true;
    }

    const uint8_t* data_;
    size_t size_;
    Layout& out_;
    size_t pos_ = 0;
};

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_string(std::vector<uint8_t>& out, std::string_view s) {
    put_u64(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

// The key of an encoded pair (which starts with it).
std::string_view key_of(const std::vector<uint8_t>& kv) {
    uint64_t length = 0;
    std::memcpy(&length, kv.data(), 8);
    return {reinterpret_cast<const char*>(kv.data() + 8), size_t(length)};
}

// The alignment the parser will use for these pairs: a valid u32 general.alignment, or 32.
uint32_t alignment_of(const std::vector<std::vector<uint8_t>>& kvs) {
    for (const auto& kv : kvs) {
        const std::string_view key = key_of(kv);
        if (key != "general.alignment" || kv.size() != 8 + key.size() + 4 + 4) continue;
        uint32_t type = 0, value = 0;
        std::memcpy(&type, kv.data() + 8 + key.size(), 4);
        std::memcpy(&value, kv.data() + 8 + key.size() + 4, 4);
        if (type == uint32_t(ValueType::u32) && is_power_of_two(value)) return value;
    }
    return gguf::kDefaultAlignment;
}

// Storage size of a tensor, or 0 when its type or shape is invalid (the parser rejects those
// anyway; the layout just needs some offset for them).
uint64_t tensor_bytes(const TensorEntry& t) {
    const auto layout = ggml_layout(t.type);
    if (!layout || t.ne.empty() || t.ne.size() > size_t(gguf::kMaxDims)) return 0;
    uint64_t n = 1;
    for (uint64_t d : t.ne) {
        if (d == 0 || d > (uint64_t(1) << 32) || n > (uint64_t(1) << 40) / d) return 0;
        n *= d;
    }
    return n / layout->block_size * layout->type_size;
}

constexpr std::array<uint32_t, 32> kValidTensorTypes = {0,  1,  2,  3,  6,  7,  8,  9,  10, 11, 12,
                                                        13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                                        24, 25, 26, 27, 28, 29, 30, 34, 35, 39};
constexpr std::array<uint32_t, 11> kInvalidTensorTypes = {4,  5,  31, 32,  33,         36,
                                                          37, 38, 40, 255, 0xffffffffu};
// Keys the readers look for: general, llama hyper-parameters and the tokenizer.
constexpr std::array<std::string_view, 32> kKeys = {"general.architecture",
                                                    "general.alignment",
                                                    "general.name",
                                                    "general.file_type",
                                                    "llama.block_count",
                                                    "llama.context_length",
                                                    "llama.embedding_length",
                                                    "llama.feed_forward_length",
                                                    "llama.attention.head_count",
                                                    "llama.attention.head_count_kv",
                                                    "llama.attention.key_length",
                                                    "llama.attention.value_length",
                                                    "llama.attention.layer_norm_rms_epsilon",
                                                    "llama.rope.dimension_count",
                                                    "llama.rope.freq_base",
                                                    "llama.rope.scaling.type",
                                                    "llama.rope.scaling.factor",
                                                    "llama.expert_count",
                                                    "llama.expert_used_count",
                                                    "llama.expert_feed_forward_length",
                                                    "tokenizer.ggml.model",
                                                    "tokenizer.ggml.pre",
                                                    "tokenizer.ggml.tokens",
                                                    "tokenizer.ggml.scores",
                                                    "tokenizer.ggml.token_type",
                                                    "tokenizer.ggml.merges",
                                                    "tokenizer.ggml.bos_token_id",
                                                    "tokenizer.ggml.eos_token_id",
                                                    "tokenizer.ggml.unknown_token_id",
                                                    "tokenizer.ggml.add_bos_token",
                                                    "tokenizer.ggml.add_space_prefix",
                                                    "x"};

class Mutator {
  public:
    Mutator(uint8_t* data, size_t size, size_t max_size, unsigned seed)
        : data_(data), size_(size), max_size_(max_size), rng_(seed) {
        Scanner(data, size, layout_).run();
    }

    size_t run() {
        if (layout_.fields.empty()) return LLVMFuzzerMutate(data_, size_, max_size_);
        const uint64_t r = pick(100);
        if (r < 45) return mutate_fields();
        if (r < 80 && layout_.complete) {
            if (const size_t n = mutate_structure()) return n;
            return mutate_fields();
        }
        if (r < 88) return resize();
        return LLVMFuzzerMutate(data_, size_, max_size_);
    }

    const Layout& layout() const { return layout_; }
    uint64_t pick(uint64_t n) { return n ? rng_() % n : 0; }
    bool chance(unsigned percent) { return pick(100) < percent; }

    // Serialises `layout` (counts from its lists) followed by a data section of `data_size`
    // bytes filled from the current data section. Returns 0 when it would not fit.
    size_t rebuild(const Layout& layout, uint64_t data_size, uint8_t* out, size_t max_size) {
        std::vector<uint8_t> file;
        put_u32(file, layout.magic);
        put_u32(file, layout.version);
        put_u64(file, layout.tensors.size());
        put_u64(file, layout.kvs.size());
        for (const auto& kv : layout.kvs) file.insert(file.end(), kv.begin(), kv.end());
        for (const TensorEntry& t : layout.tensors) {
            put_string(file, t.name);
            put_u32(file, uint32_t(t.ne.size()));
            for (uint64_t d : t.ne) put_u64(file, d);
            put_u32(file, t.type);
            put_u64(file, t.offset);
        }
        const uint64_t data_offset = align_up(file.size(), layout.alignment);
        if (data_offset > max_size || data_size > max_size - data_offset) return 0;
        file.resize(data_offset, 0);
        const size_t old_data =
            std::min<size_t>(align_up(layout_.header_end, layout_.alignment), size_);
        for (uint64_t i = 0; i < data_size; ++i) {
            const size_t from = old_data + size_t(i);
            file.push_back(from < size_ ? data_[from] : uint8_t(i * 37));
        }
        std::memcpy(out, file.data(), file.size());
        return file.size();
    }

  private:
    size_t mutate_fields() {
        const int n = 1 + int(pick(3));
        for (int i = 0; i < n; ++i) {
            // Choose the kind first: a vocab has thousands of string lengths but one tensor_count.
            std::array<std::vector<const Field*>, kFieldKinds> by_kind;
            for (const Field& f : layout_.fields) by_kind[size_t(f.kind)].push_back(&f);
            std::vector<size_t> kinds;
            for (size_t k = 0; k < kFieldKinds; ++k) {
                if (!by_kind[k].empty()) kinds.push_back(k);
            }
            const auto& fields = by_kind[kinds[pick(kinds.size())]];
            mutate_field(*fields[pick(fields.size())]);
        }
        return size_;
    }

    uint64_t load(const Field& f) const {
        uint64_t v = 0;
        std::memcpy(&v, data_ + f.pos, f.width);
        return v;
    }

    void store(const Field& f, uint64_t v) {
        for (int i = 0; i < f.width; ++i) data_[f.pos + i] = uint8_t(v >> (8 * i));
    }

    // A count or length near what the rest of the file could hold, or far beyond it.
    uint64_t interesting_count(uint64_t current, uint64_t left) {
        const uint64_t choices[] = {0,           1,           2,           current + 1,
                                    current - 1, current * 2, current / 2, left,
                                    left + 1,    left / 8,    left / 12,   left / 13,
                                    left / 32,   1ull << 31,  1ull << 32,  (1ull << 32) + 1,
                                    1ull << 62,  1ull << 63,  kU64Max,     rng_()};
        return choices[pick(std::size(choices))];
    }

    uint64_t interesting_dim(uint64_t current) {
        const uint64_t choices[] = {0,
                                    1,
                                    2,
                                    3,
                                    8,
                                    31,
                                    32,
                                    33,
                                    64,
                                    172,
                                    256,
                                    512,
                                    current + 1,
                                    current - 1,
                                    current * 2,
                                    current * 256,
                                    1ull << 31,
                                    1ull << 32,
                                    (1ull << 32) + 1,
                                    1ull << 62,
                                    (1ull << 63) - 1,
                                    1ull << 63,
                                    kU64Max,
                                    rng_()};
        return choices[pick(std::size(choices))];
    }

    uint64_t interesting_offset(uint64_t current) {
        const uint64_t a = layout_.alignment;
        const uint64_t data_size =
            size_ > align_up(layout_.header_end, a) ? size_ - align_up(layout_.header_end, a) : 0;
        std::vector<uint64_t> choices = {0,
                                         current + a,
                                         current - a,
                                         current + 1,
                                         current - 1,
                                         data_size,
                                         align_up(data_size, a),
                                         1ull << 63,
                                         (kU64Max - 31) & ~uint64_t(31),
                                         kU64Max,
                                         pick(data_size + 1) / a * a};
        for (const TensorEntry& t : layout_.tensors) {
            choices.push_back(t.offset);
            choices.push_back(t.offset + a);
            choices.push_back(t.offset + tensor_bytes(t));
        }
        return choices[pick(choices.size())];
    }

    void mutate_field(const Field& f) {
        const uint64_t current = load(f);
        const uint64_t left = size_ - (f.pos + f.width);
        uint64_t v = rng_();
        switch (f.kind) {
            case FieldKind::version: {
                const uint64_t c[] = {0, 1, 2, 3, 4, 0x02000000, 0x03000000, v};
                v = c[pick(std::size(c))];
                break;
            }
            case FieldKind::tensor_count:
            case FieldKind::kv_count:
            case FieldKind::key_length:
            case FieldKind::string_length:
            case FieldKind::array_count:
            case FieldKind::name_length:
                v = interesting_count(current, left);
                break;
            case FieldKind::value_type:
            case FieldKind::elem_type: {
                const uint64_t c[] = {pick(kLastValueType + 2), 8, 9, 7, 0xffffffffu};
                v = c[pick(std::size(c))];
                break;
            }
            case FieldKind::bool_byte:
                v = pick(4) == 3 ? 255 : pick(3);
                break;
            case FieldKind::scalar: {
                // Hyper-parameters are small integers: near values break shapes subtly (a head
                // count that no longer divides, a dimension one off).
                const uint64_t c[] = {0,
                                      kU64Max,
                                      1ull << (f.width * 8 - 1),
                                      0x7ff8000000000000ull /* NaN */,
                                      0x7e967699ull /* 1e38f */,
                                      0x7e37e43c8800759cull /* 1e300 */,
                                      0x7f800000 /* inf */,
                                      1,
                                      2,
                                      3,
                                      current + 1,
                                      current - 1,
                                      current * 2,
                                      current / 2,
                                      v};
                v = c[pick(std::size(c))];
                break;
            }
            case FieldKind::alignment: {
                const uint64_t c[] = {0,  1,  2,    3,     8,          16,          24, 32,
                                      48, 64, 4096, 65536, 1ull << 31, 0xffffffffu, v};
                v = c[pick(std::size(c))];
                break;
            }
            case FieldKind::n_dims: {
                const uint64_t c[] = {0, 1, 2, 3, 4, 5, 8, 0xffffffffu, v};
                v = c[pick(std::size(c))];
                break;
            }
            case FieldKind::dim:
                v = interesting_dim(current);
                break;
            case FieldKind::tensor_type:
                v = chance(70) ? kValidTensorTypes[pick(kValidTensorTypes.size())]
                               : kInvalidTensorTypes[pick(kInvalidTensorTypes.size())];
                break;
            case FieldKind::tensor_offset:
                v = interesting_offset(current);
                break;
        }
        store(f, v);
    }

    // A random pair of a plausible or hostile kind (with the given key, if any).
    std::vector<uint8_t> random_kv(std::string_view key = {}) {
        std::vector<uint8_t> kv;
        if (!key.empty()) {
            put_string(kv, key);
        } else if (!layout_.kvs.empty() && chance(15)) {
            put_string(kv, key_of(layout_.kvs[pick(layout_.kvs.size())]));  // a duplicate key
        } else {
            put_string(kv, kKeys[pick(kKeys.size())]);
        }
        auto type = [&](ValueType t) { put_u32(kv, uint32_t(t)); };
        switch (pick(9)) {
            case 0: {
                kv.clear();
                put_string(kv, "general.alignment");
                type(ValueType::u32);
                const uint32_t c[] = {0, 1, 3, 16, 32, 64, 256, 4096, 1u << 31, uint32_t(rng_())};
                put_u32(kv, c[pick(std::size(c))]);
                break;
            }
            case 1:
                kv.clear();
                put_string(kv, "general.alignment");
                if (chance(50)) {
                    type(ValueType::u64);
                    put_u64(kv, 32);
                } else {
                    type(ValueType::i32);
                    put_u32(kv, 32);
                }
                break;
            case 2:
                type(ValueType::boolean);
                kv.push_back(uint8_t(pick(3)));
                break;
            case 3: {
                type(ValueType::string);
                std::string s(pick(12), 'a');
                for (char& c : s) c = char(pick(4) ? 'a' + pick(26) : pick(256));
                put_string(kv, s);
                break;
            }
            case 4: {
                type(ValueType::array);
                put_u32(kv, uint32_t(ValueType::string));
                const uint64_t n = pick(6);
                put_u64(kv, n);
                for (uint64_t i = 0; i < n; ++i)
                    put_string(kv, std::string(pick(5), char('a' + i)));
                break;
            }
            case 5: {
                type(ValueType::array);
                auto elem = ValueType(pick(kLastValueType + 1));
                if (elem == ValueType::string || elem == ValueType::array) elem = ValueType::i32;
                put_u32(kv, uint32_t(elem));
                const uint64_t n = pick(9);
                put_u64(kv, n);
                for (uint64_t i = 0; i < n * gguf::value_type_size(elem); ++i) {
                    kv.push_back(elem == ValueType::boolean ? uint8_t(pick(2)) : uint8_t(rng_()));
                }
                break;
            }
            case 6: {  // arrays nested 1 to 5 deep around one u8
                type(ValueType::array);
                const int depth = 1 + int(pick(5));
                for (int d = 1; d < depth; ++d) {
                    put_u32(kv, uint32_t(ValueType::array));
                    put_u64(kv, 1);
                }
                put_u32(kv, uint32_t(ValueType::u8));
                put_u64(kv, 1);
                kv.push_back(7);
                break;
            }
            case 7: {
                const auto t = ValueType(pick(kLastValueType + 1));
                if (t == ValueType::string || t == ValueType::array) {
                    type(ValueType::u32);
                    put_u32(kv, uint32_t(pick(1u << 20)));
                } else {
                    type(t);
                    for (size_t i = 0; i < gguf::value_type_size(t); ++i) {
                        kv.push_back(t == ValueType::boolean ? 1 : uint8_t(rng_()));
                    }
                }
                break;
            }
            default:
                put_u32(kv, kLastValueType + 1 + uint32_t(pick(4)));  // unknown type
                put_u32(kv, 0);
                break;
        }
        return kv;
    }

    // Offsets packed in order with the layout's alignment (sometimes with a gap), so that the
    // file is valid again after shapes, types or the alignment changed.
    uint64_t relayout(Layout& layout) {
        uint64_t offset = 0;
        for (TensorEntry& t : layout.tensors) {
            if (chance(5)) offset += layout.alignment;
            t.offset = offset;
            offset = align_up(offset + tensor_bytes(t), layout.alignment);
            if (offset > max_size_) return kU64Max;
        }
        return offset;
    }

    size_t mutate_structure() {
        Layout next = layout_;
        auto& kvs = next.kvs;
        auto& tensors = next.tensors;
        uint64_t data_size = size_ > align_up(layout_.header_end, layout_.alignment)
                                 ? size_ - align_up(layout_.header_end, layout_.alignment)
                                 : 0;
        bool repack = false;
        switch (pick(10)) {
            case 0:
                if (kvs.empty()) return 0;
                kvs.erase(kvs.begin() + long(pick(kvs.size())));
                break;
            case 1: {
                if (kvs.empty()) return 0;
                const std::vector<uint8_t> copy = kvs[pick(kvs.size())];
                kvs.insert(kvs.begin() + long(pick(kvs.size() + 1)), copy);
                break;
            }
            case 2:
                if (!kvs.empty() && chance(50)) {  // another value (and type) for a key
                    std::vector<uint8_t>& kv = kvs[pick(kvs.size())];
                    kv = random_kv(std::string(key_of(kv)));
                } else {
                    kvs.insert(kvs.begin() + long(pick(kvs.size() + 1)), random_kv());
                }
                break;
            case 3:
                if (tensors.empty()) return 0;
                tensors.erase(tensors.begin() + long(pick(tensors.size())));
                repack = chance(50);
                break;
            case 4: {
                TensorEntry t =
                    tensors.empty() ? TensorEntry{"t", {32}, 0, 0} : tensors[pick(tensors.size())];
                if (chance(80)) t.name += char('0' + pick(10));
                tensors.insert(tensors.begin() + long(pick(tensors.size() + 1)), t);
                repack = chance(80);
                break;
            }
            case 5:  // reorder
                if (kvs.size() > 1 && chance(50)) {
                    std::swap(kvs[pick(kvs.size())], kvs[pick(kvs.size())]);
                } else if (tensors.size() > 1) {
                    std::swap(tensors[pick(tensors.size())], tensors[pick(tensors.size())]);
                } else {
                    return 0;
                }
                break;
            case 6: {  // new type and shape, then a valid layout for it
                if (tensors.empty()) return 0;
                TensorEntry& t = tensors[pick(tensors.size())];
                t.type = chance(90) ? kValidTensorTypes[pick(kValidTensorTypes.size())]
                                    : kInvalidTensorTypes[pick(kInvalidTensorTypes.size())];
                const auto layout = ggml_layout(t.type);
                const uint64_t block = layout ? layout->block_size : 1;
                t.ne.assign(chance(95) ? 1 + pick(4) : pick(6), 1);
                if (!t.ne.empty()) t.ne[0] = block * (1 + pick(3)) + (chance(5) ? 1 : 0);
                for (size_t d = 1; d < t.ne.size(); ++d) t.ne[d] = 1 + pick(3);
                repack = true;
                break;
            }
            case 7: {  // another alignment
                std::erase_if(kvs,
                              [](const auto& kv) { return key_of(kv) == "general.alignment"; });
                const uint32_t alignment = chance(90) ? 1u << pick(13) : uint32_t(pick(100));
                std::vector<uint8_t> kv;
                put_string(kv, "general.alignment");
                put_u32(kv, uint32_t(ValueType::u32));
                put_u32(kv, alignment);
                kvs.insert(kvs.begin() + long(pick(kvs.size() + 1)), kv);
                repack = true;
                break;
            }
            case 8: {  // make two tensors overlap or collide in name
                if (tensors.size() < 2) return 0;
                TensorEntry& a = tensors[pick(tensors.size())];
                const TensorEntry& b = tensors[pick(tensors.size())];
                if (chance(70)) {
                    a.offset = b.offset + (chance(50) ? 0 : next.alignment);
                } else {
                    a.name = b.name;
                }
                break;
            }
            default:
                repack = true;
                break;
        }
        next.alignment = alignment_of(kvs);
        if (repack) {
            const uint64_t needed = relayout(next);
            if (needed == kU64Max) return 0;
            data_size = needed;
        }
        return rebuild(next, data_size, data_, max_size_);
    }

    // Cut the file at a field boundary (or anywhere), or grow it.
    size_t resize() {
        if (chance(60)) {
            const Field& f = layout_.fields[pick(layout_.fields.size())];
            return std::min(size_, f.pos + pick(f.width + 1));
        }
        if (chance(50) || size_ == 0) return size_ == 0 ? 0 : pick(size_);
        const size_t grow = std::min<size_t>(max_size_ - size_, 1 + pick(256));
        for (size_t i = 0; i < grow; ++i) data_[size_ + i] = uint8_t(rng_());
        return size_ + grow;
    }

    uint8_t* data_;
    size_t size_;
    size_t max_size_;
    std::mt19937_64 rng_;
    Layout layout_;
};

}  // namespace

size_t mutate_gguf(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
    // When minimising, libFuzzer asks for a result smaller than the input.
    return Mutator(data, std::min(size, max_size), max_size, seed).run();
}

size_t cross_over_gguf(const uint8_t* data, size_t size, const uint8_t* other, size_t other_size,
                       uint8_t* out, size_t max_size, unsigned seed) {
    size = std::min(size, max_size);
    std::vector<uint8_t> copy(data, data + size);
    Mutator first(copy.data(), size, size, seed);
    Layout second;
    Scanner(other, other_size, second).run();
    if (first.layout().complete && second.complete && first.chance(80)) {
        // Some pairs and tensor infos of the other file join this one's.
        Layout next = first.layout();
        const uint64_t n = 1 + first.pick(3);
        for (uint64_t i = 0; i < n; ++i) {
            if (!second.kvs.empty() && first.chance(60)) {
                next.kvs.insert(next.kvs.begin() + long(first.pick(next.kvs.size() + 1)),
                                second.kvs[first.pick(second.kvs.size())]);
            } else if (!second.tensors.empty()) {
                next.tensors.insert(
                    next.tensors.begin() + long(first.pick(next.tensors.size() + 1)),
                    second.tensors[first.pick(second.tensors.size())]);
            }
        }
        const uint64_t data_begin = align_up(next.header_end, next.alignment);
        const uint64_t data_size = size > data_begin ? size - data_begin : 0;
        next.alignment = alignment_of(next.kvs);
        if (const size_t n_out = first.rebuild(next, data_size, out, max_size)) return n_out;
    }
    // Byte-level: a prefix of one and a suffix of the other.
    const size_t head = size ? size_t(first.pick(size + 1)) : 0;
    const size_t tail_from = other_size ? size_t(first.pick(other_size + 1)) : 0;
    const size_t n_head = std::min(head, max_size);
    if (n_head) std::memcpy(out, data, n_head);
    const size_t n_tail = std::min(other_size - tail_from, max_size - n_head);
    if (n_tail) std::memcpy(out + n_head, other + tail_from, n_tail);
    return n_head + n_tail;
}

}  // namespace mw::fuzz
