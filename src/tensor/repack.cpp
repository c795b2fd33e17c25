#include "tensor/repack.h"

#include <cstring>
#include <vector>

#include "tensor/quants.h"

#if defined(__x86_64__)
namespace mw::avx512 {
// The kernels of the packed layouts (tensor/packed_avx512.cpp); offered only when the AVX-512 set
// is installed (kernel_isa() == "avx512"), so nothing here runs them on other CPUs.
void matmul_q4_0_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy);
void matmul_q4_k_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy);
void matmul_q6_k_x16(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                     const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y,
                     int64_t ldy);
}  // namespace mw::avx512
#endif

namespace mw {
namespace {

// ---- Where each element's code lives in a GGUF block ------------------------------------------

// Q4_0: element j < 16 in the low nibble of qs[j], j + 16 in its high nibble.
void set_q4_0_code(BlockQ4_0& b, int e, int code) {
    uint8_t& byte = b.qs[e % 16];
    byte = e < 16 ? uint8_t((byte & 0xF0) | code) : uint8_t((byte & 0x0F) | code << 4);
}

// Q4_K: element 64 p + l in the low nibble of qs[32 p + l] (l < 32), else the high nibble.
void set_q4k_code(BlockQ4_K& b, int e, int code) {
    const int p = e / 64, l = e % 64;
    uint8_t& byte = b.qs[32 * p + l % 32];
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

// ---- One row's block <-> its slot (row i of 16) in a packed record -------------------------

// The 32 codes c of a sub-block into its four 64-byte vectors of a record, at this row's 4 bytes
// (`out` = the first vector + 4 i): byte k of vector q holds codes 8 q + k and 8 q + 4 + k.
inline void pack_nibble_pairs(const uint8_t c[32], uint8_t* out) {
    for (int q = 0; q < 4; ++q) {
        for (int k = 0; k < 4; ++k) out[64 * q + k] = uint8_t(c[8 * q + k] | c[8 * q + 4 + k] << 4);
    }
}

struct CodecQ4_0 {
    using Block = BlockQ4_0;
    static constexpr int kRecord = PackedQ4_0::kRecord;
    static void pack(const Block& b, int i, uint8_t* rec) {
        std::memcpy(rec + PackedQ4_0::kD + 2 * i, &b.d, 2);
        uint8_t c[kQK];
        for (int e = 0; e < 16; ++e) {
            c[e] = b.qs[e] & 15;
            c[e + 16] = b.qs[e] >> 4;
        }
        pack_nibble_pairs(c, rec + PackedQ4_0::kCodes + 4 * i);
    }
    static void unpack(const uint8_t* rec, int i, Block& b) {
        std::memcpy(&b.d, rec + PackedQ4_0::kD + 2 * i, 2);
        for (int q = 0; q < 4; ++q) {
            for (int k = 0; k < 4; ++k) {
                const uint8_t byte = rec[PackedQ4_0::kCodes + 64 * q + 4 * i + k];
                set_q4_0_code(b, 8 * q + k, byte & 15);
                set_q4_0_code(b, 8 * q + 4 + k, byte >> 4);
            }
        }
    }
    static void dequantize(const Block& b, float* out) { ref::dequantize_row_q4_0(&b, out, kQK); }
};

struct CodecQ4K {
    using Block = BlockQ4_K;
    static constexpr int kRecord = PackedQ4K::kRecord;
    static void pack(const Block& b, int i, uint8_t* rec) {
        std::memcpy(rec + PackedQ4K::kD + 2 * i, &b.d, 2);
        std::memcpy(rec + PackedQ4K::kDmin + 2 * i, &b.dmin, 2);
        for (int s = 0; s < 12; ++s) rec[PackedQ4K::kScales + 16 * s + i] = b.scales[s];
        for (int j = 0; j < 8; ++j) {
            // Sub-block j: the low (even j) or high nibbles of qs[32 (j / 2) ..].
            const uint8_t* qs = b.qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            uint8_t c[32];
            for (int x = 0; x < 32; ++x) c[x] = (qs[x] >> shift) & 15;
            pack_nibble_pairs(c, rec + PackedQ4K::kCodes + 256 * j + 4 * i);
        }
    }
    static void unpack(const uint8_t* rec, int i, Block& b) {
        std::memcpy(&b.d, rec + PackedQ4K::kD + 2 * i, 2);
        std::memcpy(&b.dmin, rec + PackedQ4K::kDmin + 2 * i, 2);
        for (int s = 0; s < 12; ++s) b.scales[s] = rec[PackedQ4K::kScales + 16 * s + i];
        for (int j = 0; j < 8; ++j) {
            for (int q = 0; q < 4; ++q) {
                for (int k = 0; k < 4; ++k) {
                    const int e = 32 * j + 8 * q + k;
                    const uint8_t byte = rec[PackedQ4K::kCodes + 256 * j + 64 * q + 4 * i + k];
                    set_q4k_code(b, e, byte & 15);
                    set_q4k_code(b, e + 4, byte >> 4);
                }
            }
        }
    }
    static void dequantize(const Block& b, float* out) { ref::dequantize_row_q4_k(&b, out, kQK_K); }
};

struct CodecQ6K {
    using Block = BlockQ6_K;
    static constexpr int kRecord = PackedQ6K::kRecord;
    static void pack(const Block& b, int i, uint8_t* rec) {
        std::memcpy(rec + PackedQ6K::kD + 2 * i, &b.d, 2);
        for (int j = 0; j < 16; ++j) rec[PackedQ6K::kScales + 16 * j + i] = uint8_t(b.scales[j]);
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
            uint8_t* codes = rec + PackedQ6K::kCodes + 192 * j + 4 * i;
            for (int k = 0; k < 4; ++k) {
                int c[4];
                for (int s = 0; s < 4; ++s) c[s] = all[16 * j + 4 * s + k];
                codes[k] = uint8_t((c[0] & 15) | (c[1] & 15) << 4);
                codes[64 + k] = uint8_t((c[2] & 15) | (c[3] & 15) << 4);
                codes[128 + k] =
                    uint8_t(c[0] >> 4 | (c[1] >> 4) << 2 | (c[2] >> 4) << 4 | (c[3] >> 4) << 6);
            }
        }
    }
    static void unpack(const uint8_t* rec, int i, Block& b) {
        std::memcpy(&b.d, rec + PackedQ6K::kD + 2 * i, 2);
        for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(rec[PackedQ6K::kScales + 16 * j + i]);
        for (int j = 0; j < 16; ++j) {
            const uint8_t* codes = rec + PackedQ6K::kCodes + 192 * j + 4 * i;
            for (int k = 0; k < 4; ++k) {
                const int lows[4] = {codes[k] & 15, codes[k] >> 4, codes[64 + k] & 15,
                                     codes[64 + k] >> 4};
                for (int s = 0; s < 4; ++s) {
                    set_q6k_code(b, 16 * j + 4 * s + k,
                                 lows[s] | ((codes[128 + k] >> (2 * s)) & 3) << 4);
                }
            }
        }
    }
    static void dequantize(const Block& b, float* out) { ref::dequantize_row_q6_k(&b, out, kQK_K); }
};

template <class Codec>
void repack_with(const uint8_t* src, uint8_t* dst, int64_t n_rows, int64_t n_cols,
                 int64_t per_block) {
    using Block = typename Codec::Block;
    const int64_t nb = n_cols / per_block;
    const size_t row_bytes = size_t(nb) * sizeof(Block);
    for (int64_t g = 0; g < n_rows / kPackRows; ++g) {
        uint8_t* group = dst + size_t(g) * kPackRows * row_bytes;
        for (int i = 0; i < kPackRows; ++i) {
            const auto* row =
                reinterpret_cast<const Block*>(src + size_t(g * kPackRows + i) * row_bytes);
            for (int64_t b = 0; b < nb; ++b)
                Codec::pack(row[b], i, group + size_t(b) * Codec::kRecord);
        }
    }
}

template <class Codec>
void get_row_with(const uint8_t* data, int64_t n_cols, int64_t r, float* out, int64_t per_block) {
    using Block = typename Codec::Block;
    const int64_t nb = n_cols / per_block;
    const uint8_t* group = data + size_t(r / kPackRows) * kPackRows * size_t(nb) * sizeof(Block);
    for (int64_t b = 0; b < nb; ++b) {
        Block block{};
        Codec::unpack(group + size_t(b) * Codec::kRecord, int(r % kPackRows), block);
        Codec::dequantize(block, out + b * per_block);
    }
}

#if defined(__x86_64__)
const TypeTraits kQ4_0X16 = {
    GgmlType::Q4_0, "Q4_0/x16", kQK,     sizeof(BlockQ4_0), true,
    nullptr,        nullptr,    nullptr, GgmlType::Q8_0,    avx512::matmul_q4_0_x16,
    "avx512"};
const TypeTraits kQ4KX16 = {
    GgmlType::Q4_K, "Q4_K/x16", kQK_K,          sizeof(BlockQ4_K),       true,    nullptr,
    nullptr,        nullptr,    GgmlType::Q8_K, avx512::matmul_q4_k_x16, "avx512"};
const TypeTraits kQ6KX16 = {
    GgmlType::Q6_K, "Q6_K/x16", kQK_K,          sizeof(BlockQ6_K),       true,    nullptr,
    nullptr,        nullptr,    GgmlType::Q8_K, avx512::matmul_q6_k_x16, "avx512"};
#endif

}  // namespace

const TypeTraits* packed_traits(GgmlType type, int64_t n_rows, int64_t n_cols) {
#if defined(__x86_64__)
    if (n_rows <= 0 || n_rows % kPackRows != 0 || std::strcmp(kernel_isa(), "avx512") != 0)
        return nullptr;
    if (type == GgmlType::Q4_0 && n_cols % kQK == 0) return &kQ4_0X16;
    if (type == GgmlType::Q4_K && n_cols % kQK_K == 0) return &kQ4KX16;
    if (type == GgmlType::Q6_K && n_cols % kQK_K == 0) return &kQ6KX16;
#else
    (void)type;
    (void)n_rows;
    (void)n_cols;
#endif
    return nullptr;
}

bool is_packed(const TypeTraits* t) {
#if defined(__x86_64__)
    return t == &kQ4_0X16 || t == &kQ4KX16 || t == &kQ6KX16;
#else
    (void)t;
    return false;
#endif
}

void repack_matrix(const TypeTraits& packed, const uint8_t* src, uint8_t* dst, int64_t n_rows,
                   int64_t n_cols) {
    switch (packed.type) {
        case GgmlType::Q4_0:
            repack_with<CodecQ4_0>(src, dst, n_rows, n_cols, kQK);
            break;
        case GgmlType::Q4_K:
            repack_with<CodecQ4K>(src, dst, n_rows, n_cols, kQK_K);
            break;
        case GgmlType::Q6_K:
            repack_with<CodecQ6K>(src, dst, n_rows, n_cols, kQK_K);
            break;
        default:
            break;
    }
}

void repack_in_place(const TypeTraits& packed, uint8_t* data, int64_t n_rows, int64_t n_cols) {
    const size_t group_bytes = row_bytes(packed, n_cols) * kPackRows;
    std::vector<uint8_t> group(group_bytes);
    for (int64_t g = 0; g < n_rows / kPackRows; ++g) {
        uint8_t* at = data + size_t(g) * group_bytes;
        std::memcpy(group.data(), at, group_bytes);
        repack_matrix(packed, group.data(), at, kPackRows, n_cols);
    }
}

void packed_get_row(const TypeTraits& packed, const uint8_t* data, int64_t n_cols, int64_t r,
                    float* out) {
    switch (packed.type) {
        case GgmlType::Q4_0:
            get_row_with<CodecQ4_0>(data, n_cols, r, out, kQK);
            break;
        case GgmlType::Q4_K:
            get_row_with<CodecQ4K>(data, n_cols, r, out, kQK_K);
            break;
        case GgmlType::Q6_K:
            get_row_with<CodecQ6K>(data, n_cols, r, out, kQK_K);
            break;
        default:
            break;
    }
}

}  // namespace mw
