// Scalar reference code for the K-quants (Q2_K .. Q6_K) and their activation type Q8_K.
//
// Decoding repeats ggml's float operations in the same order (bit-identical results). The dot
// products take each weight block against a Q8_K block: integer sums per sub-block, times the
// sub-block's integer scale, summed over the super-block in int32, then one float scale per
// super-block. The per-sub-block mins of Q2_K/Q4_K/Q5_K use Q8_K's precomputed sums of 16.
//
// The K-quant quantizers (importance-weighted scale search) are not here yet.
#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "tensor/quants.h"

namespace mw::ref {
namespace {

// ggml's nearest_int: round to nearest, ties to even, via the float mantissa (|x| < 2^22).
inline int nearest_int(float x) {
    const float shifted = x + 12582912.0f;  // 1.5 * 2^23: the integer lands in the low mantissa
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

// The 256 quants of a Q3_K block as signed values -4..3.
void unpack_q3_k(const BlockQ3_K& b, int8_t q[kQK_K]) {
    for (int e = 0; e < kQK_K; ++e) {
        const int half = e / 128, slot = (e % 128) / 32, l = e % 32;
        const int low = (b.qs[32 * half + l] >> (2 * slot)) & 3;
        const bool high = (b.hmask[l] >> (e / 32)) & 1;
        q[e] = int8_t(low - (high ? 0 : 4));
    }
}

// The 256 quants of a Q6_K block as signed values -32..31.
void unpack_q6_k(const BlockQ6_K& b, int8_t q[kQK_K]) {
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = b.ql + 64 * half;
        const uint8_t* qh = b.qh + 32 * half;
        int8_t* out = q + 128 * half;
        for (int l = 0; l < 32; ++l) {
            out[l] = int8_t(((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
            out[l + 32] = int8_t(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            out[l + 64] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            out[l + 96] = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

// Q4_K / Q5_K: sum over the 8 sub-blocks of min_j * (sum of the 32 activation quants), from the
// Q8_K sums of 16.
inline int q4k_min_sum(const uint8_t* scales, const BlockQ8_K& x) {
    int sum = 0;
    for (int j = 0; j < 8; ++j) {
        int scale, min;
        q4k_scale_min(scales, j, &scale, &min);
        sum += min * (x.bsums[2 * j] + x.bsums[2 * j + 1]);
    }
    return sum;
}

}  // namespace

// ---- Dequantization -------------------------------------------------------------------------

void dequantize_row_q2_k(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ2_K*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockQ2_K& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        const float dmin = fp16_to_f32(b.dmin);
        for (int sub = 0; sub < 16; ++sub) {  // 16 elements each
            const float dl = d * (b.scales[sub] & 0xF);
            const float ml = dmin * (b.scales[sub] >> 4);
            const int half = sub / 8, shift = 2 * ((sub % 8) / 2), offset = 16 * (sub % 2);
            const uint8_t* q = b.qs + 32 * half + offset;
            for (int l = 0; l < 16; ++l) *dst++ = dl * ((q[l] >> shift) & 3) - ml;
        }
    }
}

void dequantize_row_q3_k(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ3_K*>(src);
    int8_t q[kQK_K];
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockQ3_K& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        unpack_q3_k(b, q);
        for (int sub = 0; sub < 16; ++sub) {
            const float dl = d * (q3k_scale(b.scales, sub) - 32);
            for (int l = 0; l < 16; ++l) *dst++ = dl * q[16 * sub + l];
        }
    }
}

void dequantize_row_q4_k(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ4_K*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockQ4_K& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        const float dmin = fp16_to_f32(b.dmin);
        for (int sub = 0; sub < 8; ++sub) {  // 32 elements each
            int scale, min;
            q4k_scale_min(b.scales, sub, &scale, &min);
            const float dl = d * scale;
            const float ml = dmin * min;
            const uint8_t* q = b.qs + 32 * (sub / 2);
            const int shift = 4 * (sub % 2);
            for (int l = 0; l < 32; ++l) *dst++ = dl * ((q[l] >> shift) & 0xF) - ml;
        }
    }
}

void dequantize_row_q5_k(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ5_K*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockQ5_K& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        const float dmin = fp16_to_f32(b.dmin);
        for (int sub = 0; sub < 8; ++sub) {
            int scale, min;
            q4k_scale_min(b.scales, sub, &scale, &min);
            const float dl = d * scale;
            const float ml = dmin * min;
            const uint8_t* q = b.qs + 32 * (sub / 2);
            const int shift = 4 * (sub % 2);
            for (int l = 0; l < 32; ++l) {
                const int high = ((b.qh[l] >> sub) & 1) << 4;
                *dst++ = dl * (((q[l] >> shift) & 0xF) + high) - ml;
            }
        }
    }
}

void dequantize_row_q6_k(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ6_K*>(src);
    int8_t q[kQK_K];
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockQ6_K& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        unpack_q6_k(b, q);
        // (d * scale) * q, in this order, as the reference.
        for (int e = 0; e < kQK_K; ++e) *dst++ = d * b.scales[e / 16] * q[e];
    }
}

void dequantize_row_q8_k(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ8_K*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        for (int j = 0; j < kQK_K; ++j) *dst++ = blocks[i].d * blocks[i].qs[j];
    }
}

// ---- Q8_K activation quantizer --------------------------------------------------------------
// Scale -127 / (the signed absolute maximum): that element becomes -127 and d may be negative.
// Rounds to nearest even (unlike Q8_0's roundf).

void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
        BlockQ8_K& b = blocks[i];
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kQK_K; ++j) {
            const float ax = std::fabs(src[j]);
            if (ax > amax) {
                amax = ax;
                max = src[j];
            }
        }
        if (amax == 0.0f) {
            std::memset(&b, 0, sizeof b);  // the reference leaves bsums unset here; we zero them
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < kQK_K; ++j) {
            const int v = nearest_int(iscale * src[j]);
            b.qs[j] = int8_t(v < 127 ? v : 127);
        }
        for (int j = 0; j < kQK_K / 16; ++j) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += b.qs[16 * j + l];
            b.bsums[j] = int16_t(sum);
        }
        b.d = 1 / iscale;
    }
}

// ---- Dot products against Q8_K -------------------------------------------------------------

float vec_dot_q2_k_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockQ2_K*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockQ2_K& b = wb[i];
        const int8_t* q8 = xb[i].qs;
        int min_sum = 0;
        for (int sub = 0; sub < 16; ++sub) min_sum += xb[i].bsums[sub] * (b.scales[sub] >> 4);
        int isum = 0;
        for (int sub = 0; sub < 16; ++sub) {
            const int half = sub / 8, shift = 2 * ((sub % 8) / 2), offset = 16 * (sub % 2);
            const uint8_t* q2 = b.qs + 32 * half + offset;
            int sub_sum = 0;
            for (int l = 0; l < 16; ++l) sub_sum += q8[16 * sub + l] * ((q2[l] >> shift) & 3);
            isum += (b.scales[sub] & 0xF) * sub_sum;
        }
        const float dall = xb[i].d * fp16_to_f32(b.d);
        const float dmin = xb[i].d * fp16_to_f32(b.dmin);
        sum += dall * isum - dmin * min_sum;
    }
    return sum;
}

float vec_dot_q3_k_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockQ3_K*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    int8_t q[kQK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        unpack_q3_k(wb[i], q);
        const int8_t* q8 = xb[i].qs;
        int isum = 0;
        for (int sub = 0; sub < 16; ++sub) {
            int sub_sum = 0;
            for (int l = 0; l < 16; ++l) sub_sum += q8[16 * sub + l] * q[16 * sub + l];
            isum += (q3k_scale(wb[i].scales, sub) - 32) * sub_sum;
        }
        sum += fp16_to_f32(wb[i].d) * xb[i].d * isum;
    }
    return sum;
}

namespace {

// Q4_K and Q5_K share their super-block layout (8 sub-blocks of 32 with 6-bit scales and mins);
// quant(b, sub, l) gives the unsigned weight code of element l of sub-block sub.
template <class Block, class Quant>
float vec_dot_q45_k_q8_k(int64_t n, const void* w, const void* x, Quant quant) {
    const auto* wb = static_cast<const Block*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const Block& b = wb[i];
        const int8_t* q8 = xb[i].qs;
        int isum = 0;
        for (int sub = 0; sub < 8; ++sub) {
            int scale, min;
            q4k_scale_min(b.scales, sub, &scale, &min);
            int sub_sum = 0;
            for (int l = 0; l < 32; ++l) sub_sum += q8[32 * sub + l] * quant(b, sub, l);
            isum += scale * sub_sum;
        }
        const float d = fp16_to_f32(b.d) * xb[i].d;
        const float dmin = fp16_to_f32(b.dmin) * xb[i].d;
        sum += d * isum - dmin * q4k_min_sum(b.scales, xb[i]);
    }
    return sum;
}

// The low nibble of byte l of the sub-block pair for even sub-blocks, the high one for odd.
template <class Block>
int q4_code(const Block& b, int sub, int l) {
    return (b.qs[32 * (sub / 2) + l] >> (4 * (sub % 2))) & 0xF;
}

}  // namespace

float vec_dot_q4_k_q8_k(int64_t n, const void* w, const void* x) {
    return vec_dot_q45_k_q8_k<BlockQ4_K>(n, w, x, q4_code<BlockQ4_K>);
}

float vec_dot_q5_k_q8_k(int64_t n, const void* w, const void* x) {
    return vec_dot_q45_k_q8_k<BlockQ5_K>(n, w, x, [](const BlockQ5_K& b, int sub, int l) {
        return q4_code(b, sub, l) | (((b.qh[l] >> sub) & 1) << 4);
    });
}

float vec_dot_q6_k_q8_k(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockQ6_K*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    int8_t q[kQK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        unpack_q6_k(wb[i], q);
        const int8_t* q8 = xb[i].qs;
        int isum = 0;
        for (int sub = 0; sub < 16; ++sub) {
            int sub_sum = 0;
            for (int l = 0; l < 16; ++l) sub_sum += q8[16 * sub + l] * q[16 * sub + l];
            isum += wb[i].scales[sub] * sub_sum;
        }
        sum += fp16_to_f32(wb[i].d) * xb[i].d * isum;
    }
    return sum;
}

}  // namespace mw::ref
