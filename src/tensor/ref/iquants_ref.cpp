// Scalar reference code for the non-linear (IQ4_NL, IQ4_XS), microscaled (MXFP4) and ternary
// (TQ1_0, TQ2_0) types: the specification of their kernels.
//
// Decoding repeats ggml's float operations (one multiply of the scale by a small integer), so it
// is bit-identical to ggml's dequantize_row_*. The dot products sum integer products per block
// (per super-block, the integer sub-block scales included) and scale once, as the K-quants do.
#include "base/fp16.h"
#include "tensor/quants.h"

namespace mw::ref {
namespace {

// Trit k (0 = most significant) of a TQ1_0 byte: the top trit of byte * 3^k, wrapped to a byte.
inline int trit(uint8_t byte, int k) {
    static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = uint8_t(byte * kPow3[k]);
    return (q * 3) >> 8;
}

// The 256 ternary codes (0..2) of a TQ1_0 block in element order.
void unpack_tq1_0(const BlockTQ1_0& b, uint8_t t[kQK_K]) {
    for (int k = 0; k < 5; ++k) {
        for (int m = 0; m < 32; ++m) t[32 * k + m] = uint8_t(trit(b.qs[m], k));
        for (int m = 0; m < 16; ++m) t[160 + 16 * k + m] = uint8_t(trit(b.qs[32 + m], k));
    }
    for (int k = 0; k < 4; ++k) {
        for (int m = 0; m < 4; ++m) t[240 + 4 * k + m] = uint8_t(trit(b.qh[m], k));
    }
}

// The 256 codes (0..3) of a TQ2_0 block in element order.
void unpack_tq2_0(const BlockTQ2_0& b, uint8_t t[kQK_K]) {
    for (int h = 0; h < 2; ++h) {
        for (int s = 0; s < 4; ++s) {
            for (int l = 0; l < 32; ++l)
                t[128 * h + 32 * s + l] = (b.qs[32 * h + l] >> (2 * s)) & 3;
        }
    }
}

// A 32-element block of nibble codes through a 16-entry table, integer dot with 32 quants.
inline int nibble_dot(const uint8_t qs[16], const int8_t table[16], const int8_t* q8) {
    int sum = 0;
    for (int j = 0; j < 16; ++j) {
        sum += table[qs[j] & 0xF] * q8[j];
        sum += table[qs[j] >> 4] * q8[j + 16];
    }
    return sum;
}

inline void nibble_decode(const uint8_t qs[16], const int8_t table[16], float d, float* dst) {
    for (int j = 0; j < 16; ++j) {
        dst[j] = d * table[qs[j] & 0xF];
        dst[j + 16] = d * table[qs[j] >> 4];
    }
}

}  // namespace

void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockIQ4_NL*>(src);
    for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
        nibble_decode(blocks[i].qs, kIq4Values, fp16_to_f32(blocks[i].d), dst);
    }
}

void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockIQ4_XS*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = fp16_to_f32(blocks[i].d);
        for (int j = 0; j < 8; ++j, dst += 32) {
            nibble_decode(blocks[i].qs + 16 * j, kIq4Values, d * float(iq4xs_scale(blocks[i], j)),
                          dst);
        }
    }
}

// ggml multiplies the doubled value by half the scale (E8M0 / 2): exact either way.
void dequantize_row_mxfp4(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockMXFP4*>(src);
    for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
        nibble_decode(blocks[i].qs, kMxfp4Values, e8m0_half(blocks[i].e), dst);
    }
}

void dequantize_row_tq1_0(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockTQ1_0*>(src);
    uint8_t t[kQK_K];
    for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
        unpack_tq1_0(blocks[i], t);
        const float d = fp16_to_f32(blocks[i].d);
        for (int j = 0; j < kQK_K; ++j) dst[j] = float(t[j] - 1) * d;
    }
}

void dequantize_row_tq2_0(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockTQ2_0*>(src);
    uint8_t t[kQK_K];
    for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
        unpack_tq2_0(blocks[i], t);
        const float d = fp16_to_f32(blocks[i].d);
        for (int j = 0; j < kQK_K; ++j) dst[j] = float(t[j] - 1) * d;
    }
}

float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockIQ4_NL*>(w);
    const auto* xb = static_cast<const BlockQ8_0*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const int isum = nibble_dot(wb[i].qs, kIq4Values, xb[i].qs);
        sum += isum * (fp16_to_f32(wb[i].d) * fp16_to_f32(xb[i].d));
    }
    return sum;
}

float vec_dot_iq4_xs_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockIQ4_XS*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int isum = 0;
        for (int j = 0; j < 8; ++j) {
            isum += iq4xs_scale(wb[i], j) *
                    nibble_dot(wb[i].qs + 16 * j, kIq4Values, xb[i].qs + 32 * j);
        }
        sum += fp16_to_f32(wb[i].d) * xb[i].d * isum;
    }
    return sum;
}

float vec_dot_mxfp4_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockMXFP4*>(w);
    const auto* xb = static_cast<const BlockQ8_0*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const int isum = nibble_dot(wb[i].qs, kMxfp4Values, xb[i].qs);
        sum += isum * (e8m0_half(wb[i].e) * fp16_to_f32(xb[i].d));
    }
    return sum;
}

namespace {

// sum_j (t_j - 1) * q8_j over one super-block.
inline int ternary_dot(const uint8_t t[kQK_K], const int8_t* q8) {
    int sum = 0;
    for (int j = 0; j < kQK_K; ++j) sum += (t[j] - 1) * q8[j];
    return sum;
}

}  // namespace

float vec_dot_tq1_0_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockTQ1_0*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    uint8_t t[kQK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        unpack_tq1_0(wb[i], t);
        sum += fp16_to_f32(wb[i].d) * xb[i].d * ternary_dot(t, xb[i].qs);
    }
    return sum;
}

float vec_dot_tq2_0_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockTQ2_0*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    uint8_t t[kQK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        unpack_tq2_0(wb[i], t);
        sum += fp16_to_f32(wb[i].d) * xb[i].d * ternary_dot(t, xb[i].qs);
    }
    return sum;
}

const char* check_block_mxfp4(const void* block) {
    return static_cast<const BlockMXFP4*>(block)->e == 0xFF
               ? "its E8M0 scale is 0xFF, which the OCP MX format defines as NaN"
               : nullptr;
}

const char* check_block_tq2_0(const void* block) {
    for (uint8_t byte : static_cast<const BlockTQ2_0*>(block)->qs) {
        // A code 3 in any of the four 2-bit fields: both bits set.
        if (byte & (byte >> 1) & 0x55) return "it holds code 3, which is not a ternary value";
    }
    return nullptr;
}

}  // namespace mw::ref
