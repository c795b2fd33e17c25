#include "base/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tensor/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MW_TEST_HAVE_F16C 1
#endif

namespace mw {
namespace {

bool is_fp16_nan(uint16_t h) {
    return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
}
bool is_bf16_nan(uint16_t h) {
    return (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0;
}

#ifdef MW_TEST_HAVE_F16C
// The CPU's own conversions (F16C), the ground truth for IEEE round-to-nearest-even.
__attribute__((target("f16c"))) uint16_t hw_f32_to_fp16(float f) {
    return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hw_fp16_to_f32(uint16_t h) {
    return _cvtsh_ss(h);
}

bool have_f16c() {
    return mw::cpu_features().f16c;
}
#endif

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = fp16_to_f32(uint16_t(h));
        const uint16_t back = f32_to_fp16(f);
        if (is_fp16_nan(uint16_t(h))) {
            EXPECT_TRUE(std::isnan(f)) << std::hex << h;
            EXPECT_TRUE(is_fp16_nan(back)) << std::hex << h;
        } else {
            EXPECT_EQ(back, h) << std::hex << h;
        }
    }
}

TEST(Fp16, KnownValues) {
    EXPECT_EQ(fp16_to_f32(0x3c00), 1.0f);
    EXPECT_EQ(fp16_to_f32(0xc000), -2.0f);
    EXPECT_EQ(fp16_to_f32(0x7bff), 65504.0f);
    EXPECT_EQ(fp16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(fp16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
    EXPECT_TRUE(std::isinf(fp16_to_f32(0xfc00)) && fp16_to_f32(0xfc00) < 0);
    EXPECT_EQ(f32_to_fp16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_fp16(65519.996f), 0x7bff);  // just below the tie with infinity
    EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);    // tie: 0x7bff is odd, rounds up to infinity
    EXPECT_EQ(f32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie to even (down)
    EXPECT_EQ(f32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie to even (up)
    EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);      // half the smallest subnormal
    EXPECT_EQ(f32_to_fp16(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 subnormal steps
    EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);  // to normal
}

#ifdef MW_TEST_HAVE_F16C
TEST(Fp16, HalfToFloatMatchesHardware) {
    if (!have_f16c()) GTEST_SKIP() << "CPU has no F16C";
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float ours = fp16_to_f32(uint16_t(h));
        const float hw = hw_fp16_to_f32(uint16_t(h));
        if (std::isnan(hw)) {
            EXPECT_TRUE(std::isnan(ours)) << std::hex << h;
        } else {
            EXPECT_EQ(f32_to_bits(ours), f32_to_bits(hw)) << std::hex << h;
        }
    }
}

TEST(Fp16, FloatToHalfMatchesHardware) {
    if (!have_f16c()) GTEST_SKIP() << "CPU has no F16C";
    std::mt19937 rng(20240611);
    int mismatches = 0;
    auto check = [&](uint32_t bits) {
        const float f = bits_to_f32(bits);
        const uint16_t ours = f32_to_fp16(f);
        const uint16_t hw = hw_f32_to_fp16(f);
        // NaN payloads differ by design (we return the canonical quiet NaN, like ggml).
        const bool ok = std::isnan(f) ? is_fp16_nan(ours) && is_fp16_nan(hw) : ours == hw;
        if (!ok && ++mismatches <= 10) {
            ADD_FAILURE() << "f32 bits 0x" << std::hex << bits << ": ours 0x" << ours << ", hw 0x"
                          << hw;
        }
    };
    // Any bit pattern (mostly far outside the half range: overflow, flush to zero, NaN, inf).
    for (int i = 0; i < 2'000'000; ++i) check(rng());
    // Exponents around the half range (normals, subnormals, overflow), random mantissas.
    for (int i = 0; i < 2'000'000; ++i) {
        const uint32_t sign = rng() & 0x80000000u;
        const uint32_t exponent = 100 + rng() % 46;  // 2^-27 .. 2^18
        check(sign | exponent << 23 | (rng() & 0x7fffff));
    }
    // Exact ties and their neighbours: low mantissa bits at the rounding boundary of a normal
    // half (13 dropped bits) and of subnormal halves (14..23 dropped bits).
    for (int i = 0; i < 1'000'000; ++i) {
        const uint32_t sign = rng() & 0x80000000u;
        const uint32_t exponent = 100 + rng() % 46;
        const int dropped = exponent >= 113 ? 13 : std::min(24, 13 + int(113 - exponent));
        const uint32_t half_ulp = 1u << (dropped - 1);
        uint32_t mantissa = (rng() & 0x7fffff) & ~((half_ulp << 1) - 1);
        mantissa |= half_ulp;
        const int nudge = int(rng() % 3) - 1;  // below, at, above the tie
        check(sign | exponent << 23 | ((mantissa + uint32_t(nudge)) & 0x7fffff));
    }
    EXPECT_EQ(mismatches, 0);
}
#endif

TEST(Fp16, Bf16RoundsToNearestEven) {
    struct Case {
        uint32_t f32_bits;
        uint16_t bf16;
    };
    const Case cases[] = {
        {0x3f800000, 0x3f80},  // 1.0 exactly
        {0x3f808000, 0x3f80},  // tie, 0x3f80 even: down
        {0x3f818000, 0x3f82},  // tie, 0x3f81 odd: up
        {0x3f807fff, 0x3f80},  // just below the tie
        {0x3f808001, 0x3f81},  // just above the tie
        {0xbf808000, 0xbf80},  // negative tie: down in magnitude
        {0xbf818000, 0xbf82},  // negative tie: up in magnitude
        {0x7f7f8000, 0x7f80},  // tie at the largest finite: rounds to infinity
        {0x7f7effff, 0x7f7f},  // above a tie: up to the largest finite
        {0x7f800000, 0x7f80},  // infinity
        {0xff800000, 0xff80},  // -infinity
        {0x00008000, 0x0000},  // subnormal tie down
        {0x00018000, 0x0002},  // subnormal tie up
        {0x80000000, 0x8000},  // -0
        {0x3fffffff, 0x4000},  // mantissa carry into the exponent
    };
    for (const Case& c : cases) {
        EXPECT_EQ(f32_to_bf16(bits_to_f32(c.f32_bits)), c.bf16) << std::hex << c.f32_bits;
    }
    // NaNs stay NaN (quieted), including signalling ones whose payload is in the low bits only.
    for (uint32_t bits : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fffffffu}) {
        EXPECT_TRUE(is_bf16_nan(f32_to_bf16(bits_to_f32(bits)))) << std::hex << bits;
    }
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const uint16_t back = f32_to_bf16(bf16_to_f32(uint16_t(h)));
        if (is_bf16_nan(uint16_t(h))) {
            EXPECT_TRUE(is_bf16_nan(back)) << std::hex << h;
        } else {
            EXPECT_EQ(back, h) << std::hex << h;
        }
    }
}

}  // namespace
}  // namespace mw
