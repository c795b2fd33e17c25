// Scalar reference code for F32, F16, BF16 and the 32-element block types (Q4_0 .. Q8_1).
//
// Decoding and the quantizers repeat ggml's float operations in the same order, so results are
// bit-identical to ggml's dequantize_row_* / quantize_row_*_ref for the same input. The dot
// products sum integer products per block and scale once per block, as ggml's generic code does.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "tensor/quants.h"

namespace mw::ref {
namespace {

// Bit 4 of the 5-bit quants of a Q5 block: element j < 16 takes bit j of qh, element j + 16 takes
// bit j + 16.
inline uint32_t load_qh(const uint8_t qh[4]) {
    return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

inline void store_qh(uint8_t qh[4], uint32_t bits) {
    for (int i = 0; i < 4; ++i) qh[i] = uint8_t(bits >> (8 * i));
}

// Largest |x| of a block, and the signed value that has it (the first one on ties).
inline float signed_absmax(const float* x, int count) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < count; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

inline void min_max(const float* x, int count, float* min, float* max) {
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < count; ++j) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

// Float-to-integer conversion as the reference does it (truncation) for every value a block of
// finite numbers gives; NaN becomes 0 and values beyond the type saturate instead of being
// undefined behaviour: the activations of a hostile model can be inf or NaN.
inline int8_t to_i8(float x) {
    if (x > -129.0f && x < 128.0f) return int8_t(x);
    return x >= 128.0f ? int8_t(127) : x <= -129.0f ? int8_t(-128) : int8_t(0);
}
inline uint8_t to_u8(float x) {
    if (x > -1.0f && x < 256.0f) return uint8_t(x);
    return x >= 256.0f ? uint8_t(255) : uint8_t(0);
}

// Q8_0 and Q8_1 share the scale: amax / 127, stored as fp16 but applied in float.
inline float q8_scale(const float* x) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    return amax / 127;
}

}  // namespace

// ---- F32 / F16 / BF16 -----------------------------------------------------------------------

void f32_to_float(const void* src, float* dst, int64_t n) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
}

void f32_from_float(const float* src, void* dst, int64_t n) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
}

void f16_to_float(const void* src, float* dst, int64_t n) {
    const auto* h = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
}

void f16_from_float(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
    const auto* h = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}

void bf16_from_float(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}

float vec_dot_f32(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const float*>(w);
    const auto* b = static_cast<const float*>(x);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(a[i] * b[i]);
    return float(sum);
}

float vec_dot_f16(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const uint16_t*>(w);
    const auto* b = static_cast<const uint16_t*>(x);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(fp16_to_f32(a[i]) * fp16_to_f32(b[i]));
    return float(sum);
}

float vec_dot_bf16(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const uint16_t*>(w);
    const auto* b = static_cast<const uint16_t*>(x);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(bf16_to_f32(a[i]) * bf16_to_f32(b[i]));
    return float(sum);
}

// ---- Dequantization -------------------------------------------------------------------------

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ4_0*>(src);
    for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
        const BlockQ4_0& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        for (int j = 0; j < kQK / 2; ++j) {
            dst[j] = ((b.qs[j] & 0xF) - 8) * d;
            dst[j + kQK / 2] = ((b.qs[j] >> 4) - 8) * d;
        }
    }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ4_1*>(src);
    for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
        const BlockQ4_1& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        const float m = fp16_to_f32(b.m);
        for (int j = 0; j < kQK / 2; ++j) {
            dst[j] = (b.qs[j] & 0xF) * d + m;
            dst[j + kQK / 2] = (b.qs[j] >> 4) * d + m;
        }
    }
}

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ5_0*>(src);
    for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
        const BlockQ5_0& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        const uint32_t qh = load_qh(b.qh);
        for (int j = 0; j < kQK / 2; ++j) {
            const int high0 = int((qh >> j) & 1) << 4;
            const int high1 = int((qh >> (j + 16)) & 1) << 4;
            dst[j] = (((b.qs[j] & 0xF) | high0) - 16) * d;
            dst[j + kQK / 2] = (((b.qs[j] >> 4) | high1) - 16) * d;
        }
    }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ5_1*>(src);
    for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
        const BlockQ5_1& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        const float m = fp16_to_f32(b.m);
        const uint32_t qh = load_qh(b.qh);
        for (int j = 0; j < kQK / 2; ++j) {
            const int high0 = int((qh >> j) & 1) << 4;
            const int high1 = int((qh >> (j + 16)) & 1) << 4;
            dst[j] = ((b.qs[j] & 0xF) | high0) * d + m;
            dst[j + kQK / 2] = ((b.qs[j] >> 4) | high1) * d + m;
        }
    }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ8_0*>(src);
    for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
        const float d = fp16_to_f32(blocks[i].d);
        for (int j = 0; j < kQK; ++j) dst[j] = blocks[i].qs[j] * d;
    }
}

void dequantize_row_q8_1(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const BlockQ8_1*>(src);
    for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
        const float d = fp16_to_f32(blocks[i].d);
        for (int j = 0; j < kQK; ++j) dst[j] = blocks[i].qs[j] * d;
    }
}

// ---- Round-to-nearest quantizers ------------------------------------------------------------
// The symmetric types map the signed absolute maximum to the most negative code (-8 / -16), so
// the code range is used fully on that side; the float-to-int8 conversions truncate after adding
// the offset plus 0.5, exactly as the reference does.

void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ4_0*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
        BlockQ4_0& b = blocks[i];
        const float d = signed_absmax(src, kQK) / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b.d = f32_to_fp16(d);
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = std::min(15, int(to_i8(src[j] * id + 8.5f)));
            const int q1 = std::min(15, int(to_i8(src[j + kQK / 2] * id + 8.5f)));
            b.qs[j] = uint8_t(q0 | (q1 << 4));
        }
    }
}

void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ4_1*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
        BlockQ4_1& b = blocks[i];
        float min, max;
        min_max(src, kQK, &min, &max);
        const float d = (max - min) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b.d = f32_to_fp16(d);
        b.m = f32_to_fp16(min);
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = std::min(15, int(to_i8((src[j] - min) * id + 0.5f)));
            const int q1 = std::min(15, int(to_i8((src[j + kQK / 2] - min) * id + 0.5f)));
            b.qs[j] = uint8_t(q0 | (q1 << 4));
        }
    }
}

void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ5_0*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
        BlockQ5_0& b = blocks[i];
        const float d = signed_absmax(src, kQK) / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b.d = f32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = std::min(31, int(to_i8(src[j] * id + 16.5f)));
            const int q1 = std::min(31, int(to_i8(src[j + kQK / 2] * id + 16.5f)));
            b.qs[j] = uint8_t((q0 & 0xF) | ((q1 & 0xF) << 4));
            qh |= uint32_t(q0 >> 4) << j;
            qh |= uint32_t(q1 >> 4) << (j + kQK / 2);
        }
        store_qh(b.qh, qh);
    }
}

void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ5_1*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
        BlockQ5_1& b = blocks[i];
        float min, max;
        min_max(src, kQK, &min, &max);
        const float d = (max - min) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b.d = f32_to_fp16(d);
        b.m = f32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            // No clamp here (as in the reference): (max - min) * id rounds to at most 31.5.
            const int q0 = to_u8((src[j] - min) * id + 0.5f);
            const int q1 = to_u8((src[j + kQK / 2] - min) * id + 0.5f);
            b.qs[j] = uint8_t((q0 & 0xF) | ((q1 & 0xF) << 4));
            qh |= uint32_t((q0 >> 4) & 1) << j;
            qh |= uint32_t((q1 >> 4) & 1) << (j + kQK / 2);
        }
        store_qh(b.qh, qh);
    }
}

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
        const float d = q8_scale(src);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[i].d = f32_to_fp16(d);
        for (int j = 0; j < kQK; ++j) blocks[i].qs[j] = to_i8(std::round(src[j] * id));
    }
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
        const float d = q8_scale(src);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[i].d = f32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            blocks[i].qs[j] = to_i8(std::round(src[j] * id));
            sum += blocks[i].qs[j];
        }
        // s uses the unrounded float d, so s is not exactly fp16(d) * sum.
        blocks[i].s = f32_to_fp16(float(sum) * d);
    }
}

// ---- Dot products ---------------------------------------------------------------------------

float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockQ4_0*>(w);
    const auto* xb = static_cast<const BlockQ8_0*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            isum += ((wb[i].qs[j] & 0xF) - 8) * xb[i].qs[j];
            isum += ((wb[i].qs[j] >> 4) - 8) * xb[i].qs[j + kQK / 2];
        }
        sum += isum * fp16_to_f32(wb[i].d) * fp16_to_f32(xb[i].d);
    }
    return sum;
}

// sum_j (d_w q_j + m) d_x p_j = d_w d_x sum_j q_j p_j + m s, with s = d_x sum_j p_j.
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockQ4_1*>(w);
    const auto* xb = static_cast<const BlockQ8_1*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            isum += (wb[i].qs[j] & 0xF) * xb[i].qs[j];
            isum += (wb[i].qs[j] >> 4) * xb[i].qs[j + kQK / 2];
        }
        sum += (fp16_to_f32(wb[i].d) * fp16_to_f32(xb[i].d)) * isum +
               fp16_to_f32(wb[i].m) * fp16_to_f32(xb[i].s);
    }
    return sum;
}

float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockQ5_0*>(w);
    const auto* xb = static_cast<const BlockQ8_0*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const uint32_t qh = load_qh(wb[i].qh);
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = ((wb[i].qs[j] & 0xF) | int((qh >> j) & 1) << 4) - 16;
            const int q1 = ((wb[i].qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4) - 16;
            isum += q0 * xb[i].qs[j] + q1 * xb[i].qs[j + kQK / 2];
        }
        sum += (fp16_to_f32(wb[i].d) * fp16_to_f32(xb[i].d)) * isum;
    }
    return sum;
}

float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockQ5_1*>(w);
    const auto* xb = static_cast<const BlockQ8_1*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const uint32_t qh = load_qh(wb[i].qh);
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = (wb[i].qs[j] & 0xF) | int((qh >> j) & 1) << 4;
            const int q1 = (wb[i].qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
            isum += q0 * xb[i].qs[j] + q1 * xb[i].qs[j + kQK / 2];
        }
        sum += (fp16_to_f32(wb[i].d) * fp16_to_f32(xb[i].d)) * isum +
               fp16_to_f32(wb[i].m) * fp16_to_f32(xb[i].s);
    }
    return sum;
}

float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const BlockQ8_0*>(w);
    const auto* xb = static_cast<const BlockQ8_0*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += wb[i].qs[j] * xb[i].qs[j];
        sum += isum * (fp16_to_f32(wb[i].d) * fp16_to_f32(xb[i].d));
    }
    return sum;
}

}  // namespace mw::ref
