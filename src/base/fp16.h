// IEEE half and bfloat16 conversions, bit-exact with the rounding GGUF writers use
// (round to nearest even; NaN stays NaN).
#pragma once

#include <cstdint>
#include <cstring>

namespace mw {

inline float bits_to_f32(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint32_t f32_to_bits(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}

inline float fp16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1f;
    uint32_t mantissa = h & 0x3ff;
    if (exponent == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
    if (exponent == 0) {
        if (mantissa == 0) return bits_to_f32(sign);
        // Subnormal: value = mantissa * 2^-24.
        const float magnitude = float(mantissa) * 5.9604644775390625e-08f;
        return sign ? -magnitude : magnitude;
    }
    return bits_to_f32(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline uint16_t f32_to_fp16(float f) {
    const uint32_t bits = f32_to_bits(f);
    const uint32_t sign = (bits >> 16) & 0x8000;
    const uint32_t abs = bits & 0x7fffffff;
    if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00);   // NaN
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to infinity
    if (abs < 0x38800000u) {
        // Result is subnormal or zero: add 0.5 (as a float) so the FPU does the rounding.
        const float magnitude = bits_to_f32(abs) + 0.5f;
        return uint16_t(sign | (f32_to_bits(magnitude) - 0x3f000000u));
    }
    // Normal: rebias the exponent and round the mantissa to 10 bits, ties to even.
    const uint32_t odd = (abs >> 13) & 1;
    const uint32_t rounded = abs + 0xc8000fffu + odd;  // (-112 << 23) + 0xfff
    return uint16_t(sign | (rounded >> 13));
}

inline float bf16_to_f32(uint16_t h) {
    return bits_to_f32(uint32_t(h) << 16);
}

inline uint16_t f32_to_bf16(float f) {
    const uint32_t bits = f32_to_bits(f);
    if ((bits & 0x7fffffff) > 0x7f800000u) return uint16_t((bits >> 16) | 64);  // quiet the NaN
    return uint16_t((bits + (0x7fff + ((bits >> 16) & 1))) >> 16);
}

}  // namespace mw
