#include "tensor/repack.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include "tensor/kernels.h"
#include "tensor/quants.h"

namespace mw {
namespace {

// ---- Where each element's code lives in a GGUF block ------------------------------------------

// Q4_0: element j < 16 in the low nibble of qs[j], j + 16 in its high nibble.
int q4_0_code(const BlockQ4_0& b, int e) {
    return e < 16 ? b.qs[e] & 15 : b.qs[e - 16] >> 4;
}
void set_q4_0_code(BlockQ4_0& b, int e, int code) {
    uint8_t& byte = b.qs[e % 16];
    byte = e < 16 ? uint8_t((byte & 0xF0) | code) : uint8_t((byte & 0x0F) | code << 4);
}

// Q4_K / Q5_K low 4 bits: element 64 p + l in the low nibble of qs[32 p + l] (l < 32), else the
// high nibble.
int q4k_code(const uint8_t* qs, int e) {
    const int p = e / 64, l = e % 64;
    return l < 32 ? qs[32 * p + l] & 15 : qs[32 * p + l - 32] >> 4;
}
void set_q4k_code(uint8_t* qs, int e, int code) {
    const int p = e / 64, l = e % 64;
    uint8_t& byte = qs[32 * p + l % 32];
    byte = l < 32 ? uint8_t((byte & 0xF0) | code) : uint8_t((byte & 0x0F) | code << 4);
}

// Q6_K (code = q + 32): element 128 h + 32 m + l has its low 4 bits in ql[64 h + 32 (m & 1) + l]
// (low nibble for m < 2) and its top 2 bits at bit 2 m of qh[32 h + l].
void set_q6k_code(BlockQ6_K& b, int e, int code) {
    const int h = e / 128, m = (e % 128) / 32, l = e % 32;
    uint8_t& ql = b.ql[64 * h + 32 * (m & 1) + l];
    ql = m < 2 ? uint8_t((ql & 0xF0) | (code & 15)) : uint8_t((ql & 0x0F) | (code & 15) << 4);
    uint8_t& qh = b.qh[32 * h + l];
    qh = uint8_t((qh & ~(3 << (2 * m))) | (code >> 4) << (2 * m));
}

// ---- One row's block <-> its slot (row i of R) in a packed record -------------------------
//
// A codec per type, for every group size R: pack() writes row i's block into a record, unpack()
// reads it back (exactly), dequantize() is the reference decoder of the block.

// The 32 codes c of a sub-block into its four steps of a record, at this row's 4 bytes
// (`out` = the first step + 4 i; steps 4R bytes apart): byte k of step q holds codes 8 q + k and
// 8 q + 4 + k.
template <int R>
void pack_nibble_pairs(const uint8_t c[32], uint8_t* out) {
    for (int q = 0; q < 4; ++q) {
        for (int k = 0; k < 4; ++k) {
            out[4 * R * q + k] = uint8_t(c[8 * q + k] | c[8 * q + 4 + k] << 4);
        }
    }
}
template <int R>
void unpack_nibble_pairs(const uint8_t* in, uint8_t c[32]) {
    for (int q = 0; q < 4; ++q) {
        for (int k = 0; k < 4; ++k) {
            const uint8_t byte = in[4 * R * q + k];
            c[8 * q + k] = byte & 15;
            c[8 * q + 4 + k] = byte >> 4;
        }
    }
}

// The 12 scale bytes of a K-quant block as planes (byte b of row i at R b + i).
template <int R>
void pack_planes(const uint8_t* bytes, int n, int i, uint8_t* planes) {
    for (int b = 0; b < n; ++b) planes[R * b + i] = bytes[b];
}
template <int R>
void unpack_planes(const uint8_t* planes, int n, int i, uint8_t* bytes) {
    for (int b = 0; b < n; ++b) bytes[b] = planes[R * b + i];
}

template <int R>
struct CodecQ4_0 {
    using Block = BlockQ4_0;
    using L = PackedQ4_0<R>;
    static constexpr int kElems = kQK;
    static void pack(const Block& b, int i, uint8_t* rec) {
        std::memcpy(rec + L::kD + 2 * i, &b.d, 2);
        uint8_t c[32];
        for (int e = 0; e < 32; ++e) c[e] = uint8_t(q4_0_code(b, e));
        pack_nibble_pairs<R>(c, rec + L::kCodes + 4 * i);
    }
    static void unpack(const uint8_t* rec, int i, Block& b) {
        std::memcpy(&b.d, rec + L::kD + 2 * i, 2);
        uint8_t c[32];
        unpack_nibble_pairs<R>(rec + L::kCodes + 4 * i, c);
        for (int e = 0; e < 32; ++e) set_q4_0_code(b, e, c[e]);
    }
    static void dequantize(const Block& b, float* out) { ref::dequantize_row_q4_0(&b, out, kQK); }
};

template <int R>
struct CodecQ8_0 {
    using Block = BlockQ8_0;
    using L = PackedQ8_0<R>;
    static constexpr int kElems = kQK;
    static void pack(const Block& b, int i, uint8_t* rec) {
        std::memcpy(rec + L::kD + 2 * i, &b.d, 2);
        for (int s = 0; s < 8; ++s)
            std::memcpy(rec + L::kCodes + 4 * R * s + 4 * i, b.qs + 4 * s, 4);
    }
    static void unpack(const uint8_t* rec, int i, Block& b) {
        std::memcpy(&b.d, rec + L::kD + 2 * i, 2);
        for (int s = 0; s < 8; ++s)
            std::memcpy(b.qs + 4 * s, rec + L::kCodes + 4 * R * s + 4 * i, 4);
    }
    static void dequantize(const Block& b, float* out) { ref::dequantize_row_q8_0(&b, out, kQK); }
};

// Q4_K, and Q5_K with its fifth bits (kFifth).
template <int R, bool kFifth>
struct CodecQ45K {
    using Block = std::conditional_t<kFifth, BlockQ5_K, BlockQ4_K>;
    using L4 = PackedQ4K<R>;
    using L5 = PackedQ5K<R>;
    static constexpr int kCodes = kFifth ? L5::kCodes : L4::kCodes;
    static constexpr int kElems = kQK_K;
    static void pack(const Block& b, int i, uint8_t* rec) {
        std::memcpy(rec + L4::kD + 2 * i, &b.d, 2);
        std::memcpy(rec + L4::kDmin + 2 * i, &b.dmin, 2);
        pack_planes<R>(b.scales, 12, i, rec + L4::kScales);
        for (int j = 0; j < 8; ++j) {
            uint8_t c[32];
            for (int x = 0; x < 32; ++x) c[x] = uint8_t(q4k_code(b.qs, 32 * j + x));
            pack_nibble_pairs<R>(c, rec + kCodes + 16 * R * j + 4 * i);
            if constexpr (kFifth) {
                for (int k = 0; k < 4; ++k) {
                    uint8_t bits = 0;
                    for (int q = 0; q < 4; ++q) {
                        const int e = 32 * j + 8 * q + k;
                        bits |= uint8_t(((b.qh[e % 32] >> (e / 32)) & 1) << (2 * q));
                        bits |=
                            uint8_t(((b.qh[(e + 4) % 32] >> ((e + 4) / 32)) & 1) << (2 * q + 1));
                    }
                    rec[L5::kHigh + 4 * R * j + 4 * i + k] = bits;
                }
            }
        }
    }
    static void unpack(const uint8_t* rec, int i, Block& b) {
        std::memcpy(&b.d, rec + L4::kD + 2 * i, 2);
        std::memcpy(&b.dmin, rec + L4::kDmin + 2 * i, 2);
        unpack_planes<R>(rec + L4::kScales, 12, i, b.scales);
        if constexpr (kFifth) std::memset(b.qh, 0, sizeof b.qh);
        for (int j = 0; j < 8; ++j) {
            uint8_t c[32];
            unpack_nibble_pairs<R>(rec + kCodes + 16 * R * j + 4 * i, c);
            for (int x = 0; x < 32; ++x) set_q4k_code(b.qs, 32 * j + x, c[x]);
            if constexpr (kFifth) {
                for (int k = 0; k < 4; ++k) {
                    const uint8_t bits = rec[L5::kHigh + 4 * R * j + 4 * i + k];
                    for (int q = 0; q < 4; ++q) {
                        for (int h = 0; h < 2; ++h) {
                            const int e = 32 * j + 8 * q + 4 * h + k;
                            b.qh[e % 32] |= uint8_t(((bits >> (2 * q + h)) & 1) << (e / 32));
                        }
                    }
                }
            }
        }
    }
    static void dequantize(const Block& b, float* out) {
        if constexpr (kFifth) {
            ref::dequantize_row_q5_k(&b, out, kQK_K);
        } else {
            ref::dequantize_row_q4_k(&b, out, kQK_K);
        }
    }
};

template <int R>
struct CodecQ6K {
    using Block = BlockQ6_K;
    using L = PackedQ6K<R>;
    static constexpr int kElems = kQK_K;
    static void pack(const Block& b, int i, uint8_t* rec) {
        std::memcpy(rec + L::kD + 2 * i, &b.d, 2);
        pack_planes<R>(reinterpret_cast<const uint8_t*>(b.scales), 16, i, rec + L::kScales);
        // All 256 codes first (element 128 h + 32 m + l, as set_q6k_code writes them).
        uint8_t all[kQK_K];
        for (int h = 0; h < 2; ++h) {
            for (int m = 0; m < 4; ++m) {
                const uint8_t* ql = b.ql + 64 * h + 32 * (m & 1);
                const uint8_t* qh = b.qh + 32 * h;
                for (int l = 0; l < 32; ++l) {
                    const int low = m < 2 ? ql[l] & 15 : ql[l] >> 4;
                    all[128 * h + 32 * m + l] = uint8_t(low | ((qh[l] >> (2 * m)) & 3) << 4);
                }
            }
        }
        for (int j = 0; j < 16; ++j) {
            uint8_t* codes = rec + L::kCodes + 12 * R * j + 4 * i;
            for (int k = 0; k < 4; ++k) {
                int c[4];
                for (int s = 0; s < 4; ++s) c[s] = all[16 * j + 4 * s + k];
                codes[k] = uint8_t((c[0] & 15) | (c[1] & 15) << 4);
                codes[4 * R + k] = uint8_t((c[2] & 15) | (c[3] & 15) << 4);
                codes[8 * R + k] =
                    uint8_t(c[0] >> 4 | (c[1] >> 4) << 2 | (c[2] >> 4) << 4 | (c[3] >> 4) << 6);
            }
        }
    }
    static void unpack(const uint8_t* rec, int i, Block& b) {
        std::memcpy(&b.d, rec + L::kD + 2 * i, 2);
        unpack_planes<R>(rec + L::kScales, 16, i, reinterpret_cast<uint8_t*>(b.scales));
        for (int j = 0; j < 16; ++j) {
            const uint8_t* codes = rec + L::kCodes + 12 * R * j + 4 * i;
            for (int k = 0; k < 4; ++k) {
                const int lows[4] = {codes[k] & 15, codes[k] >> 4, codes[4 * R + k] & 15,
                                     codes[4 * R + k] >> 4};
                for (int s = 0; s < 4; ++s) {
                    set_q6k_code(b, 16 * j + 4 * s + k,
                                 lows[s] | ((codes[8 * R + k] >> (2 * s)) & 3) << 4);
                }
            }
        }
    }
    static void dequantize(const Block& b, float* out) { ref::dequantize_row_q6_k(&b, out, kQK_K); }
};

template <class Codec, int R>
void repack_with(const uint8_t* src, uint8_t* dst, int64_t n_rows, int64_t n_cols) {
    using Block = typename Codec::Block;
    constexpr int kRecord = R * int(sizeof(Block));
    const int64_t nb = n_cols / Codec::kElems;
    const size_t row_bytes = size_t(nb) * sizeof(Block);
    for (int64_t g = 0; g < n_rows / R; ++g) {
        uint8_t* group = dst + size_t(g) * R * row_bytes;
        for (int i = 0; i < R; ++i) {
            const auto* row = reinterpret_cast<const Block*>(src + size_t(g * R + i) * row_bytes);
            for (int64_t b = 0; b < nb; ++b) Codec::pack(row[b], i, group + size_t(b) * kRecord);
        }
    }
}

template <class Codec, int R>
void get_row_with(const uint8_t* data, int64_t n_cols, int64_t r, float* out) {
    using Block = typename Codec::Block;
    constexpr int kRecord = R * int(sizeof(Block));
    const int64_t nb = n_cols / Codec::kElems;
    const uint8_t* group = data + size_t(r / R) * R * size_t(nb) * sizeof(Block);
    for (int64_t b = 0; b < nb; ++b) {
        Block block{};
        Codec::unpack(group + size_t(b) * kRecord, int(r % R), block);
        Codec::dequantize(block, out + b * Codec::kElems);
    }
}

// Calls fn.template operator()<Codec, R>() with the codec of (type, rows); false if none.
template <int R, class Fn>
bool with_codec_of(GgmlType type, Fn& fn) {
    switch (type) {
        case GgmlType::Q4_0:
            fn.template operator()<CodecQ4_0<R>, R>();
            return true;
        case GgmlType::Q8_0:
            fn.template operator()<CodecQ8_0<R>, R>();
            return true;
        case GgmlType::Q4_K:
            fn.template operator()<CodecQ45K<R, false>, R>();
            return true;
        case GgmlType::Q5_K:
            fn.template operator()<CodecQ45K<R, true>, R>();
            return true;
        case GgmlType::Q6_K:
            fn.template operator()<CodecQ6K<R>, R>();
            return true;
        default:
            return false;
    }
}

template <class Fn>
bool with_codec(GgmlType type, int rows, Fn&& fn) {
    switch (rows) {
        case 4:
            return with_codec_of<4>(type, fn);
        case 8:
            return with_codec_of<8>(type, fn);
        case 16:
            return with_codec_of<16>(type, fn);
        default:
            return false;
    }
}

}  // namespace

bool packable(GgmlType type, int rows) {
    return with_codec(type, rows, []<class, int>() {});
}

const char* packed_layout_name(GgmlType type, int rows) {
    struct Name {
        GgmlType type;
        int rows;
        const char* name;
    };
    static constexpr Name kNames[] = {
        {GgmlType::Q4_0, 4, "Q4_0/x4"},   {GgmlType::Q4_0, 8, "Q4_0/x8"},
        {GgmlType::Q4_0, 16, "Q4_0/x16"}, {GgmlType::Q8_0, 4, "Q8_0/x4"},
        {GgmlType::Q8_0, 8, "Q8_0/x8"},   {GgmlType::Q8_0, 16, "Q8_0/x16"},
        {GgmlType::Q4_K, 4, "Q4_K/x4"},   {GgmlType::Q4_K, 8, "Q4_K/x8"},
        {GgmlType::Q4_K, 16, "Q4_K/x16"}, {GgmlType::Q5_K, 4, "Q5_K/x4"},
        {GgmlType::Q5_K, 8, "Q5_K/x8"},   {GgmlType::Q5_K, 16, "Q5_K/x16"},
        {GgmlType::Q6_K, 4, "Q6_K/x4"},   {GgmlType::Q6_K, 8, "Q6_K/x8"},
        {GgmlType::Q6_K, 16, "Q6_K/x16"},
    };
    for (const Name& n : kNames) {
        if (n.type == type && n.rows == rows) return n.name;
    }
    return "packed";
}

const TypeTraits* packed_traits(GgmlType type, int64_t n_rows, int64_t n_cols) {
    const KernelSet& set = installed_kernels();
    for (int k = 0; k < set.n_packed; ++k) {
        const TypeTraits& p = set.packed[size_t(k)];
        if (p.type != type || n_rows <= 0 || n_rows % p.pack_rows != 0) continue;
        if (n_cols <= 0 || n_cols % p.block_size != 0) continue;
        return &p;
    }
    return nullptr;
}

bool is_packed(const TypeTraits* t) {
    return t && t->pack_rows > 0;
}

void repack_matrix(const TypeTraits& packed, const uint8_t* src, uint8_t* dst, int64_t n_rows,
                   int64_t n_cols) {
    with_codec(packed.type, packed.pack_rows,
               [&]<class Codec, int R>() { repack_with<Codec, R>(src, dst, n_rows, n_cols); });
}

void repack_in_place(const TypeTraits& packed, uint8_t* data, int64_t n_rows, int64_t n_cols) {
    const size_t group_bytes = row_bytes(packed, n_cols) * size_t(packed.pack_rows);
    std::vector<uint8_t> group(group_bytes);
    for (int64_t g = 0; g < n_rows / packed.pack_rows; ++g) {
        uint8_t* at = data + size_t(g) * group_bytes;
        std::memcpy(group.data(), at, group_bytes);
        repack_matrix(packed, group.data(), at, packed.pack_rows, n_cols);
    }
}

void packed_get_row(const TypeTraits& packed, const uint8_t* data, int64_t n_cols, int64_t r,
                    float* out) {
    with_codec(packed.type, packed.pack_rows,
               [&]<class Codec, int R>() { get_row_with<Codec, R>(data, n_cols, r, out); });
}

}  // namespace mw
