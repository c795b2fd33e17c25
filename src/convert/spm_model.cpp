#include "convert/spm_model.h"

#include <cstring>

#include "base/error.h"

namespace mw::convert {
namespace {

enum WireType : uint32_t { wire_varint = 0, wire_fixed64 = 1, wire_bytes = 2, wire_fixed32 = 5 };

struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    uint64_t varint = 0;
    std::span<const uint8_t> bytes;  // wire_bytes
    uint32_t fixed32 = 0;
    uint64_t offset = 0;  // of the field's key in the file
};

// Reads the fields of one protobuf message, every length checked against the bytes present.
class ProtoReader {
  public:
    ProtoReader(std::span<const uint8_t> bytes, uint64_t base, const std::string& file,
                const char* message)
        : bytes_(bytes), base_(base), file_(file), message_(message) {}

    bool done() const { return pos_ == bytes_.size(); }

    Field next() {
        Field f;
        f.offset = base_ + pos_;
        const uint64_t key = varint("field key");
        f.number = uint32_t(key >> 3);
        f.wire = uint32_t(key & 7);
        if (f.number == 0 || key >> 32 != 0)
            bad(f.offset, fmt::format("invalid field key {}", key));
        switch (f.wire) {
            case wire_varint:
                f.varint = varint("varint");
                break;
            case wire_fixed64:
                take(8, "fixed64");
                break;
            case wire_fixed32:
                std::memcpy(&f.fixed32, take(4, "fixed32"), 4);
                break;
            case wire_bytes: {
                const uint64_t n = varint("length");
                if (n > bytes_.size() - pos_) {
                    bad(f.offset, fmt::format("field {} has length {}, but only {} bytes follow",
                                              f.number, n, bytes_.size() - pos_));
                }
                f.bytes = bytes_.subspan(pos_, size_t(n));
                pos_ += size_t(n);
                break;
            }
            default:
                bad(f.offset, fmt::format("field {} has wire type {}, which SentencePiece models "
                                          "do not use",
                                          f.number, f.wire));
        }
        return f;
    }

    uint64_t base_of(const Field& f) const {
        return uint64_t(f.bytes.data() - bytes_.data()) + base_;
    }

    [[noreturn]] void bad(uint64_t offset, const std::string& what) const {
        fail(ErrorKind::bad_file, "{}: tokenizer model: {} at offset {}: {}", file_, message_,
             offset, what);
    }

    void expect(const Field& f, uint32_t wire, const char* field_name) const {
        if (f.wire != wire) {
            bad(f.offset, fmt::format("{} (field {}) has wire type {}, expected {}", field_name,
                                      f.number, f.wire, wire));
        }
    }

  private:
    uint64_t varint(const char* what) {
        uint64_t value = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            if (pos_ >= bytes_.size()) bad(base_ + pos_, fmt::format("truncated {}", what));
            const uint8_t b = bytes_[pos_++];
            if (shift == 63 && b > 1)
                bad(base_ + pos_ - 1, fmt::format("{} overflows 64 bits", what));
            value |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return value;
        }
        bad(base_ + pos_, fmt::format("{} is longer than 10 bytes", what));
    }

    const uint8_t* take(size_t n, const char* what) {
        if (n > bytes_.size() - pos_) bad(base_ + pos_, fmt::format("truncated {}", what));
        const uint8_t* p = bytes_.data() + pos_;
        pos_ += n;
        return p;
    }

    std::span<const uint8_t> bytes_;
    uint64_t base_;
    const std::string& file_;
    const char* message_;
    size_t pos_ = 0;
};

// A protobuf int32 (negative values are sign-extended to 64 bits on the wire).
int32_t as_int32(const ProtoReader& r, const Field& f, const char* name) {
    r.expect(f, wire_varint, name);
    const int64_t v = int64_t(f.varint);
    if (v < INT32_MIN || v > INT32_MAX)
        r.bad(f.offset, fmt::format("{} = {} is not an int32", name, v));
    return int32_t(v);
}

bool as_bool(const ProtoReader& r, const Field& f, const char* name) {
    r.expect(f, wire_varint, name);
    return f.varint != 0;
}

SpmModel::Piece read_piece(std::span<const uint8_t> bytes, uint64_t base, const std::string& file,
                           size_t index) {
    const std::string message = fmt::format("piece {}", index);
    ProtoReader r(bytes, base, file, message.c_str());
    SpmModel::Piece p;
    bool has_text = false;
    while (!r.done()) {
        const Field f = r.next();
        if (f.number == 1) {
            r.expect(f, wire_bytes, "piece");
            p.text.assign(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
            has_text = true;
        } else if (f.number == 2) {
            r.expect(f, wire_fixed32, "score");
            std::memcpy(&p.score, &f.fixed32, 4);
            if (p.score != p.score) r.bad(f.offset, "score is NaN");
        } else if (f.number == 3) {
            p.type = as_int32(r, f, "type");
            if (p.type < spm_normal || p.type > spm_byte) {
                r.bad(f.offset,
                      fmt::format("type = {} is not a SentencePiece piece type (1-6)", p.type));
            }
        }
    }
    if (!has_text || p.text.empty()) r.bad(base, "the piece text is missing or empty");
    return p;
}

}  // namespace

SpmModel parse_spm_model(std::span<const uint8_t> bytes, const std::string& name) {
    SpmModel m;
    ProtoReader top(bytes, 0, name, "ModelProto");
    while (!top.done()) {
        const Field f = top.next();
        if (f.number == 1) {
            top.expect(f, wire_bytes, "pieces");
            m.pieces.push_back(read_piece(f.bytes, top.base_of(f), name, m.pieces.size()));
        } else if (f.number == 2) {
            top.expect(f, wire_bytes, "trainer_spec");
            ProtoReader r(f.bytes, top.base_of(f), name, "trainer_spec");
            while (!r.done()) {
                const Field t = r.next();
                switch (t.number) {
                    case 3:
                        m.model_type = as_int32(r, t, "model_type");
                        break;
                    case 35:
                        m.byte_fallback = as_bool(r, t, "byte_fallback");
                        break;
                    case 40:
                        m.unk_id = as_int32(r, t, "unk_id");
                        break;
                    case 41:
                        m.bos_id = as_int32(r, t, "bos_id");
                        break;
                    case 42:
                        m.eos_id = as_int32(r, t, "eos_id");
                        break;
                    case 43:
                        m.pad_id = as_int32(r, t, "pad_id");
                        break;
                    default:
                        break;
                }
            }
        } else if (f.number == 3) {
            top.expect(f, wire_bytes, "normalizer_spec");
            ProtoReader r(f.bytes, top.base_of(f), name, "normalizer_spec");
            while (!r.done()) {
                const Field n = r.next();
                if (n.number == 3) m.add_dummy_prefix = as_bool(r, n, "add_dummy_prefix");
                if (n.number == 4)
                    m.remove_extra_whitespaces = as_bool(r, n, "remove_extra_whitespaces");
            }
        }
    }
    if (m.pieces.empty()) {
        fail(ErrorKind::bad_file,
             "{}: tokenizer model has no pieces (is it a SentencePiece model?)", name);
    }
    const int32_t n = int32_t(std::min<size_t>(m.pieces.size(), INT32_MAX));
    const std::pair<const char*, int32_t> ids[] = {
        {"unk_id", m.unk_id}, {"bos_id", m.bos_id}, {"eos_id", m.eos_id}, {"pad_id", m.pad_id}};
    for (const auto& [field, id] : ids) {
        if (id < -1 || id >= n) {
            fail(ErrorKind::bad_file,
                 "{}: tokenizer model: trainer_spec.{} = {} is not a piece id (the model has {} "
                 "pieces)",
                 name, field, id, n);
        }
    }
    return m;
}

}  // namespace mw::convert
