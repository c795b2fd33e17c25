#include "format/safetensors.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "format/json_text.h"

namespace mw::safetensors {
namespace {

struct DtypeInfo {
    Dtype dtype;
    const char* name;
    size_t size;
};

constexpr DtypeInfo kDtypes[] = {
    {Dtype::BOOL, "BOOL", 1}, {Dtype::U8, "U8", 1},           {Dtype::I8, "I8", 1},
    {Dtype::U16, "U16", 2},   {Dtype::I16, "I16", 2},         {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2}, {Dtype::U32, "U32", 4},         {Dtype::I32, "I32", 4},
    {Dtype::F32, "F32", 4},   {Dtype::U64, "U64", 8},         {Dtype::I64, "I64", 8},
    {Dtype::F64, "F64", 8},   {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::F8_E5M2, "F8_E5M2", 1},
};

const DtypeInfo& info(Dtype d) {
    for (const DtypeInfo& i : kDtypes) {
        if (i.dtype == d) return i;
    }
    return kDtypes[0];
}

// Dimensions and offsets beyond this are refused before any arithmetic: no real tensor comes
// near it, and products of a few such values cannot overflow unnoticed (checked below anyway).
constexpr uint64_t kMaxValue = uint64_t(1) << 53;

class HeaderParser {
  public:
    HeaderParser(const std::string& name, uint64_t data_size)
        : name_(name), data_size_(data_size) {}

    TensorInfo tensor(const std::string& tensor_name, const nlohmann::json& entry) {
        if (!entry.is_object()) {
            bad(tensor_name, fmt::format("is {}, expected an object with dtype, shape and "
                                         "data_offsets",
                                         json_type_word(entry)));
        }
        for (const auto& [key, value] : entry.items()) {
            if (key != "dtype" && key != "shape" && key != "data_offsets") {
                bad(tensor_name, fmt::format("has an unknown field \"{}\"", key));
            }
        }
        TensorInfo t;
        t.name = tensor_name;

        const nlohmann::json* dtype = field(tensor_name, entry, "dtype");
        if (!dtype->is_string()) {
            bad(tensor_name, fmt::format("dtype is {} ({}), expected a string",
                                         json_type_word(*dtype), json_brief(*dtype)));
        }
        const auto d = dtype_from_name(dtype->get_ref<const std::string&>());
        if (!d)
            bad(tensor_name, fmt::format("dtype \"{}\" is not a safetensors dtype",
                                         dtype->get_ref<const std::string&>()));
        t.dtype = *d;

        const nlohmann::json* shape = field(tensor_name, entry, "shape");
        if (!shape->is_array()) {
            bad(tensor_name, fmt::format("shape is {}, expected an array", json_type_word(*shape)));
        }
        if (shape->size() > kMaxDims) {
            bad(tensor_name,
                fmt::format("shape has {} dimensions (at most {})", shape->size(), kMaxDims));
        }
        t.n_elements = 1;
        for (size_t i = 0; i < shape->size(); ++i) {
            const uint64_t dim = count(tensor_name, fmt::format("shape[{}]", i), (*shape)[i]);
            t.shape.push_back(dim);
            if (dim != 0 && t.n_elements > kMaxValue / dim) {
                bad(tensor_name, "shape has more elements than any file can hold");
            }
            t.n_elements *= dim;
        }

        const nlohmann::json* offsets = field(tensor_name, entry, "data_offsets");
        if (!offsets->is_array() || offsets->size() != 2) {
            bad(tensor_name,
                fmt::format("data_offsets is {}, expected [begin, end]", json_brief(*offsets)));
        }
        const uint64_t begin = count(tensor_name, "data_offsets[0]", (*offsets)[0]);
        const uint64_t end = count(tensor_name, "data_offsets[1]", (*offsets)[1]);
        if (begin > end) {
            bad(tensor_name,
                fmt::format("data_offsets [{}, {}] end before they begin", begin, end));
        }
        const size_t elem = dtype_size(t.dtype);
        if (t.n_elements > kMaxValue / elem || t.n_elements * elem != end - begin) {
            bad(tensor_name,
                fmt::format("data_offsets [{}, {}] hold {} bytes, but {} {} elements of shape {} "
                            "need {}",
                            begin, end, end - begin, t.n_elements, dtype_name(t.dtype),
                            shape_text(t.shape), t.n_elements * elem));
        }
        if (end > data_size_) {
            bad(tensor_name, fmt::format("data_offsets [{}, {}] reach past the {} bytes of data in "
                                         "the file",
                                         begin, end, data_size_));
        }
        t.offset = begin;  // made absolute by the caller
        t.n_bytes = end - begin;
        return t;
    }

    static std::string shape_text(const std::vector<uint64_t>& shape) {
        std::string s = "[";
        for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
        return s + "]";
    }

  private:
    [[noreturn]] void bad(const std::string& tensor, const std::string& what) const {
        fail(ErrorKind::bad_file, "{}: safetensors header: tensor \"{}\": {}", name_, tensor, what);
    }

    const nlohmann::json* field(const std::string& tensor, const nlohmann::json& entry,
                                const char* key) const {
        const auto it = entry.find(key);
        if (it == entry.end()) bad(tensor, fmt::format("has no \"{}\"", key));
        return &*it;
    }

    uint64_t count(const std::string& tensor, const std::string& what,
                   const nlohmann::json& v) const {
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
            bad(tensor, fmt::format("{} is {} ({}), expected a non-negative integer", what,
                                    json_type_word(v), json_brief(v)));
        }
        const uint64_t x = v.get<uint64_t>();
        if (x > kMaxValue) bad(tensor, fmt::format("{} = {} is too large", what, x));
        return x;
    }

    const std::string& name_;
    uint64_t data_size_;
};

}  // namespace

std::optional<Dtype> dtype_from_name(std::string_view name) {
    for (const DtypeInfo& i : kDtypes) {
        if (name == i.name) return i.dtype;
    }
    return std::nullopt;
}

const char* dtype_name(Dtype d) {
    return info(d).name;
}
size_t dtype_size(Dtype d) {
    return info(d).size;
}

const TensorInfo* Header::find(std::string_view tensor_name) const {
    for (const TensorInfo& t : tensors) {
        if (t.name == tensor_name) return &t;
    }
    return nullptr;
}

Header parse_header(std::span<const uint8_t> bytes, const std::string& name) {
    if (bytes.size() < 8) {
        fail(ErrorKind::bad_file,
             "{}: not a safetensors file: {} bytes, too short for the 8-byte header length", name,
             bytes.size());
    }
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[size_t(i)];
    if (header_len > kMaxHeaderBytes) {
        fail(ErrorKind::bad_file,
             "{}: safetensors header length {} is larger than the {} MiB limit", name, header_len,
             kMaxHeaderBytes >> 20);
    }
    if (header_len > bytes.size() - 8) {
        fail(ErrorKind::bad_file,
             "{}: safetensors header length {} reaches past the end of the file ({} bytes)", name,
             header_len, bytes.size());
    }
    if (header_len < 2 || bytes[8] != '{') {
        fail(ErrorKind::bad_file, "{}: the safetensors header does not start with '{{'", name);
    }
    const nlohmann::json root =
        parse_json_strict(bytes.subspan(8, size_t(header_len)), name, "safetensors header");
    if (!root.is_object()) {
        fail(ErrorKind::bad_file, "{}: the safetensors header is {}, expected an object", name,
             json_type_word(root));
    }

    Header h;
    h.data_offset = 8 + header_len;
    const uint64_t data_size = bytes.size() - h.data_offset;
    HeaderParser parser(name, data_size);
    for (const auto& [key, value] : root.items()) {
        if (key == "__metadata__") {
            if (!value.is_object()) {
                fail(ErrorKind::bad_file, "{}: safetensors __metadata__ is {}, expected an object",
                     name, json_type_word(value));
            }
            for (const auto& [mk, mv] : value.items()) {
                if (!mv.is_string()) {
                    fail(ErrorKind::bad_file,
                         "{}: safetensors __metadata__ \"{}\" is {}, expected a string", name, mk,
                         json_type_word(mv));
                }
                h.metadata[mk] = mv.get<std::string>();
            }
            continue;
        }
        if (key.empty())
            fail(ErrorKind::bad_file, "{}: safetensors header has an empty tensor name", name);
        h.tensors.push_back(parser.tensor(key, value));
    }

    // The data must be covered exactly: sorted by offset, each tensor starts where the last ended.
    std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.offset != b.offset ? a.offset < b.offset : a.n_bytes < b.n_bytes;
    });
    uint64_t covered = 0;
    const TensorInfo* previous = nullptr;
    for (TensorInfo& t : h.tensors) {
        if (t.offset < covered) {
            fail(ErrorKind::bad_file,
                 "{}: safetensors header: tensors \"{}\" and \"{}\" overlap (bytes [{}, {}) and "
                 "[{}, {}) of the data)",
                 name, previous->name, t.name, previous->offset, covered, t.offset,
                 t.offset + t.n_bytes);
        }
        if (t.offset > covered) {
            fail(ErrorKind::bad_file,
                 "{}: safetensors header: bytes [{}, {}) of the data belong to no tensor (before "
                 "\"{}\")",
                 name, covered, t.offset, t.name);
        }
        covered = t.offset + t.n_bytes;
        previous = &t;
    }
    if (covered != data_size) {
        fail(ErrorKind::bad_file,
             "{}: safetensors data is {} bytes, but the tensors cover {} (the file is truncated or "
             "has trailing bytes)",
             name, data_size, covered);
    }
    for (TensorInfo& t : h.tensors) t.offset += h.data_offset;
    return h;
}

}  // namespace mw::safetensors
