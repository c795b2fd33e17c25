// The type-traits table and the scalar reference code: hand-built blocks with values written from
// the format definitions, quantizer round trips, and dot products against double precision.
// Real llama.cpp-quantized data is checked in quants_real_test.cpp.
#include "tensor/quants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "format/ggml_types.h"
#include "tensor/types.h"

namespace mw {
namespace {

const TypeTraits& traits(GgmlType type) {
    const TypeTraits* t = type_traits(type);
    EXPECT_NE(t, nullptr) << uint32_t(type);
    return *t;
}

std::vector<float> decode(GgmlType type, const void* data, int64_t n) {
    std::vector<float> out(size_t(n), NAN);
    traits(type).to_float(data, out.data(), n);
    return out;
}

template <typename Block>
std::vector<float> decode_block(GgmlType type, const Block& b) {
    return decode(type, &b, traits(type).block_size);
}

// ---- The table ----------------------------------------------------------------------------

TEST(QuantTable, RowsMatchTheFileLayouts) {
    const GgmlType computed[] = {
        GgmlType::F32,     GgmlType::F16,    GgmlType::BF16,  GgmlType::Q4_0,    GgmlType::Q4_1,
        GgmlType::Q5_0,    GgmlType::Q5_1,   GgmlType::Q8_0,  GgmlType::Q8_1,    GgmlType::Q2_K,
        GgmlType::Q3_K,    GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,    GgmlType::Q8_K,
        GgmlType::IQ4_NL,  GgmlType::IQ4_XS, GgmlType::MXFP4, GgmlType::TQ1_0,   GgmlType::TQ2_0,
        GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
        GgmlType::IQ1_S,   GgmlType::IQ1_M};
    for (GgmlType type : computed) {
        const TypeTraits* t = type_traits(type);
        ASSERT_NE(t, nullptr) << uint32_t(type);
        EXPECT_EQ(t, type_traits(uint32_t(type)));
        const auto layout = ggml_layout(uint32_t(type));
        ASSERT_TRUE(layout.has_value());
        EXPECT_EQ(t->type, type);
        EXPECT_EQ(std::string_view(t->name), layout->name);
        EXPECT_EQ(t->block_size, layout->block_size) << t->name;
        EXPECT_EQ(t->type_size, layout->type_size) << t->name;
        EXPECT_EQ(t->is_quantized, t->block_size > 1) << t->name;
        EXPECT_NE(t->to_float, nullptr) << t->name;
        // Every weight type's activation type can be encoded and has the same block size.
        if (t->vec_dot != nullptr) {
            const TypeTraits* act = type_traits(t->vec_dot_type);
            ASSERT_NE(act, nullptr) << t->name;
            EXPECT_NE(act->from_float, nullptr) << t->name;
            EXPECT_EQ(act->block_size, t->block_size) << t->name;
        }
    }
    EXPECT_EQ(traits(GgmlType::Q4_0).vec_dot_type, GgmlType::Q8_0);
    EXPECT_EQ(traits(GgmlType::Q5_0).vec_dot_type, GgmlType::Q8_0);
    EXPECT_EQ(traits(GgmlType::Q8_0).vec_dot_type, GgmlType::Q8_0);
    EXPECT_EQ(traits(GgmlType::Q4_1).vec_dot_type, GgmlType::Q8_1);
    EXPECT_EQ(traits(GgmlType::Q5_1).vec_dot_type, GgmlType::Q8_1);
    EXPECT_EQ(traits(GgmlType::IQ4_NL).vec_dot_type, GgmlType::Q8_0);
    EXPECT_EQ(traits(GgmlType::MXFP4).vec_dot_type, GgmlType::Q8_0);
    for (GgmlType k : {GgmlType::IQ4_XS, GgmlType::TQ1_0, GgmlType::TQ2_0}) {
        EXPECT_EQ(traits(k).vec_dot_type, GgmlType::Q8_K);
    }
    for (GgmlType k :
         {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        EXPECT_EQ(traits(k).vec_dot_type, GgmlType::Q8_K);
        EXPECT_NE(traits(k).from_float, nullptr)
            << "the K-quant quantizers (tensor/quantize/quantize.h)";
    }
    EXPECT_EQ(traits(GgmlType::F16).vec_dot_type, GgmlType::F16);
    EXPECT_EQ(traits(GgmlType::BF16).vec_dot_type, GgmlType::BF16);
    EXPECT_EQ(traits(GgmlType::F32).vec_dot_type, GgmlType::F32);
    EXPECT_EQ(row_bytes(traits(GgmlType::Q4_K), 512), 288u);
}

TEST(QuantTable, TypesWithoutKernelsHaveNoRow) {
    for (GgmlType type :
         {GgmlType::I8, GgmlType::I16, GgmlType::I32, GgmlType::I64, GgmlType::F64}) {
        EXPECT_EQ(type_traits(type), nullptr) << uint32_t(type);
    }
    EXPECT_EQ(type_traits(4u), nullptr);  // removed Q4_2
    EXPECT_EQ(type_traits(12345u), nullptr);
}

// ---- Hand-built blocks: expected values from the format definitions ------------------------

TEST(QuantDequant, PlainTypes) {
    const uint16_t f16[] = {0x3c00, 0xc500, 0x0001, 0x7bff};
    EXPECT_EQ(decode(GgmlType::F16, f16, 4),
              (std::vector<float>{1.0f, -5.0f, std::ldexp(1.0f, -24), 65504.0f}));
    const uint16_t bf16[] = {0x3f80, 0xc0a0, 0x4049};
    EXPECT_EQ(decode(GgmlType::BF16, bf16, 3), (std::vector<float>{1.0f, -5.0f, 3.140625f}));
    const float f32[] = {1.5f, -2.25f};
    EXPECT_EQ(decode(GgmlType::F32, f32, 2), (std::vector<float>{1.5f, -2.25f}));
}

TEST(QuantDequant, Q4_0) {
    BlockQ4_0 b;
    b.d = f32_to_fp16(0.5f);
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
    const auto y = decode_block(GgmlType::Q4_0, b);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;            // low nibbles: elements 0..15
        EXPECT_EQ(y[j + 16], (15 - j - 8) * 0.5f) << j;  // high nibbles: elements 16..31
    }
}

TEST(QuantDequant, Q4_1) {
    BlockQ4_1 b;
    b.d = f32_to_fp16(0.25f);
    b.m = f32_to_fp16(-1.0f);
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t((j * 7) % 16 | j << 4);
    const auto y = decode_block(GgmlType::Q4_1, b);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], (j * 7) % 16 * 0.25f - 1.0f) << j;
        EXPECT_EQ(y[j + 16], j * 0.25f - 1.0f) << j;
    }
}

// The 5-bit code of element e in these tests.
int code5(int e) {
    return (e * 7 + 3) % 32;
}

template <typename Block>
void pack_q5(Block& b) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        b.qs[j] = uint8_t((code5(j) & 15) | (code5(j + 16) & 15) << 4);
        qh |= uint32_t(code5(j) >> 4) << j | uint32_t(code5(j + 16) >> 4) << (j + 16);
    }
    for (int i = 0; i < 4; ++i) b.qh[i] = uint8_t(qh >> (8 * i));  // little-endian
}

TEST(QuantDequant, Q5_0) {
    BlockQ5_0 b;
    b.d = f32_to_fp16(0.125f);
    pack_q5(b);
    const auto y = decode_block(GgmlType::Q5_0, b);
    for (int e = 0; e < 32; ++e) EXPECT_EQ(y[e], (code5(e) - 16) * 0.125f) << e;
}

TEST(QuantDequant, Q5_1) {
    BlockQ5_1 b;
    b.d = f32_to_fp16(0.5f);
    b.m = f32_to_fp16(2.0f);
    pack_q5(b);
    const auto y = decode_block(GgmlType::Q5_1, b);
    for (int e = 0; e < 32; ++e) EXPECT_EQ(y[e], code5(e) * 0.5f + 2.0f) << e;
}

TEST(QuantDequant, Q8_0AndQ8_1AndQ8_K) {
    BlockQ8_0 b0;
    b0.d = f32_to_fp16(0.25f);
    BlockQ8_1 b1;
    b1.d = f32_to_fp16(0.25f);
    b1.s = 0;
    BlockQ8_K bk;
    bk.d = -0.375f;
    for (int e = 0; e < 32; ++e) b0.qs[e] = b1.qs[e] = int8_t(e * 8 - 128);
    for (int e = 0; e < 256; ++e) bk.qs[e] = int8_t(e - 128);
    const auto y0 = decode_block(GgmlType::Q8_0, b0);
    const auto y1 = decode_block(GgmlType::Q8_1, b1);
    const auto yk = decode_block(GgmlType::Q8_K, bk);
    for (int e = 0; e < 32; ++e) {
        EXPECT_EQ(y0[e], (e * 8 - 128) * 0.25f) << e;
        EXPECT_EQ(y1[e], (e * 8 - 128) * 0.25f) << e;
    }
    for (int e = 0; e < 256; ++e) EXPECT_EQ(yk[e], (e - 128) * -0.375f) << e;
}

// K-quant element codes: element e of a super-block, 2..6 bits.
int kcode(int e, int bits) {
    return (e * 5 + e / 3) % (1 << bits);
}

// Low 2 bits of element 128*h + 32*s + l go to bits 2s of qs[32h + l] (Q2_K and Q3_K).
void pack_2bit(uint8_t qs[64], int bits) {
    std::memset(qs, 0, 64);
    for (int e = 0; e < 256; ++e) {
        qs[32 * (e / 128) + e % 32] |= uint8_t((kcode(e, bits) & 3) << (2 * ((e % 128) / 32)));
    }
}

TEST(QuantDequant, Q2_K) {
    BlockQ2_K b;
    b.d = f32_to_fp16(0.5f);
    b.dmin = f32_to_fp16(0.25f);
    for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(j | (15 - j) << 4);  // scale | min << 4
    pack_2bit(b.qs, 2);
    const auto y = decode_block(GgmlType::Q2_K, b);
    for (int e = 0; e < 256; ++e) {
        const int j = e / 16;
        EXPECT_EQ(y[e], 0.5f * j * kcode(e, 2) - 0.25f * (15 - j)) << e;
    }
}

int q3_scale_value(int j) {
    return (j * 11 + 5) % 64;
}  // 6-bit, stored with +32

TEST(QuantDequant, Q3_K) {
    BlockQ3_K b;
    b.d = f32_to_fp16(0.25f);
    pack_2bit(b.qs, 3);
    std::memset(b.hmask, 0, sizeof b.hmask);
    for (int e = 0; e < 256; ++e) b.hmask[e % 32] |= uint8_t((kcode(e, 3) >> 2) << (e / 32));
    // 16 six-bit scales: low nibbles in bytes 0-7 (j < 8 low, j >= 8 high nibble), top 2 bits in
    // bytes 8-11 (byte 8 + j%4, bits 2*(j/4)).
    std::memset(b.scales, 0, sizeof b.scales);
    for (int j = 0; j < 16; ++j) {
        const int s = q3_scale_value(j);
        b.scales[j % 8] |= uint8_t((s & 15) << (j < 8 ? 0 : 4));
        b.scales[8 + j % 4] |= uint8_t((s >> 4) << (2 * (j / 4)));
    }
    const auto y = decode_block(GgmlType::Q3_K, b);
    for (int e = 0; e < 256; ++e) {
        EXPECT_EQ(y[e], 0.25f * (q3_scale_value(e / 16) - 32) * (kcode(e, 3) - 4)) << e;
    }
}

// Q4_K / Q5_K: 8 six-bit (scale, min) pairs. j < 4: low 6 bits of bytes j (scale) and j+4 (min).
// j >= 4: low 4 bits in byte j+4 (scale low nibble, min high nibble), top 2 bits in the top 2
// bits of byte j-4 (scale) and byte j (min).
int k4_scale(int j) {
    return (j * 9 + 40) % 64;
}
int k4_min(int j) {
    return (j * 13 + 7) % 64;
}

void pack_k4_scales(uint8_t scales[12]) {
    std::memset(scales, 0, 12);
    for (int j = 0; j < 8; ++j) {
        const int s = k4_scale(j), m = k4_min(j);
        if (j < 4) {
            scales[j] |= uint8_t(s);
            scales[j + 4] |= uint8_t(m);
        } else {
            scales[j + 4] = uint8_t((s & 15) | (m & 15) << 4);
            scales[j - 4] |= uint8_t((s >> 4) << 6);
            scales[j] |= uint8_t((m >> 4) << 6);
        }
    }
}

// Element 64p + l takes the low nibble of qs[32p + l], element 64p + 32 + l its high nibble.
void pack_4bit(uint8_t qs[128], int bits) {
    std::memset(qs, 0, 128);
    for (int e = 0; e < 256; ++e) {
        qs[32 * (e / 64) + e % 32] |= uint8_t((kcode(e, bits) & 15) << (e % 64 < 32 ? 0 : 4));
    }
}

TEST(QuantDequant, Q4_K) {
    BlockQ4_K b;
    b.d = f32_to_fp16(0.5f);
    b.dmin = f32_to_fp16(0.125f);
    pack_k4_scales(b.scales);
    pack_4bit(b.qs, 4);
    const auto y = decode_block(GgmlType::Q4_K, b);
    for (int e = 0; e < 256; ++e) {
        const int j = e / 32;
        EXPECT_EQ(y[e], 0.5f * k4_scale(j) * kcode(e, 4) - 0.125f * k4_min(j)) << e;
    }
}

TEST(QuantDequant, Q5_K) {
    BlockQ5_K b;
    b.d = f32_to_fp16(0.25f);
    b.dmin = f32_to_fp16(0.5f);
    pack_k4_scales(b.scales);
    pack_4bit(b.qs, 5);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int e = 0; e < 256; ++e) b.qh[e % 32] |= uint8_t((kcode(e, 5) >> 4) << (e / 32));
    const auto y = decode_block(GgmlType::Q5_K, b);
    for (int e = 0; e < 256; ++e) {
        const int j = e / 32;
        EXPECT_EQ(y[e], 0.25f * k4_scale(j) * kcode(e, 5) - 0.5f * k4_min(j)) << e;
    }
}

TEST(QuantDequant, Q6_K) {
    BlockQ6_K b;
    b.d = f32_to_fp16(0.5f);
    for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(j * 17 - 128);
    std::memset(b.ql, 0, sizeof b.ql);
    std::memset(b.qh, 0, sizeof b.qh);
    // In half h, element 32k + l (k < 4): low 4 bits in ql[64h + l + 32*(k%2)], nibble k/2;
    // high 2 bits in qh[32h + l] bits 2k.
    for (int e = 0; e < 256; ++e) {
        const int h = e / 128, k = (e % 128) / 32, l = e % 32, q = kcode(e, 6);
        b.ql[64 * h + l + 32 * (k % 2)] |= uint8_t((q & 15) << (4 * (k / 2)));
        b.qh[32 * h + l] |= uint8_t((q >> 4) << (2 * k));
    }
    const auto y = decode_block(GgmlType::Q6_K, b);
    for (int e = 0; e < 256; ++e) {
        EXPECT_EQ(y[e], 0.5f * float(b.scales[e / 16]) * (kcode(e, 6) - 32)) << e;
    }
}

// ---- Quantizer round trips ------------------------------------------------------------------

// Random rows of several blocks at different magnitudes, with one all-zero block and one block of
// a single repeated value.
std::vector<float> random_row(std::mt19937& rng, int n, int block) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        const float magnitude = std::ldexp(1.0f, int((i / block) % 9) - 4);
        x[i] = normal(rng) * magnitude;
    }
    if (n >= 3 * block) {
        std::fill(x.begin() + block, x.begin() + 2 * block, 0.0f);
        std::fill(x.begin() + 2 * block, x.begin() + 3 * block, -0.7f);
    }
    return x;
}

std::vector<uint8_t> encode(GgmlType type, const std::vector<float>& x) {
    const TypeTraits& t = traits(type);
    std::vector<uint8_t> out(row_bytes(t, int64_t(x.size())));
    t.from_float(x.data(), out.data(), int64_t(x.size()));
    return out;
}

TEST(QuantFromFloat, Q8_0AndQ8_1WithinHalfAStep) {
    std::mt19937 rng(1);
    const int n = 32 * 40;
    const auto x = random_row(rng, n, 32);
    const auto e0 = encode(GgmlType::Q8_0, x);
    const auto e1 = encode(GgmlType::Q8_1, x);
    const auto y0 = decode(GgmlType::Q8_0, e0.data(), n);
    const auto y1 = decode(GgmlType::Q8_1, e1.data(), n);
    const auto* b0 = reinterpret_cast<const BlockQ8_0*>(e0.data());
    const auto* b1 = reinterpret_cast<const BlockQ8_1*>(e1.data());
    for (int i = 0; i < n / 32; ++i) {
        const float d = fp16_to_f32(b0[i].d);
        EXPECT_EQ(b0[i].d, b1[i].d);
        EXPECT_EQ(std::memcmp(b0[i].qs, b1[i].qs, 32), 0);  // same rounding
        // Half a step, plus what rounding d to fp16 costs on the largest code (127 * 2^-11 * d).
        const float bound = d * (0.5f + 127.0f / 2048) + 1e-30f;
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
            EXPECT_LE(std::fabs(y0[32 * i + j] - x[32 * i + j]), bound) << i << " " << j;
            EXPECT_EQ(y1[32 * i + j], y0[32 * i + j]);
            sum += b1[i].qs[j];
        }
        // s = fp16(d_float * sum): close to fp16(d) * sum.
        EXPECT_NEAR(fp16_to_f32(b1[i].s), d * sum, std::fabs(d * sum) / 512 + 1e-30f) << i;
    }
    // The all-zero block (block 1) encodes as d = 0, codes 0.
    EXPECT_EQ(b0[1].d, 0);
    EXPECT_EQ(b1[1].s, 0);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(b0[1].qs[j], 0);
    // The largest magnitude maps to +-127 (block 2: every element -0.7).
    for (int j = 0; j < 32; ++j) EXPECT_EQ(b0[2].qs[j], -127);
}

TEST(QuantFromFloat, Q8_KWithinHalfAStepAndBsums) {
    std::mt19937 rng(2);
    const int n = 256 * 12;
    const auto x = random_row(rng, n, 256);
    const auto enc = encode(GgmlType::Q8_K, x);
    const auto y = decode(GgmlType::Q8_K, enc.data(), n);
    const auto* b = reinterpret_cast<const BlockQ8_K*>(enc.data());
    for (int i = 0; i < n / 256; ++i) {
        const float step = std::fabs(b[i].d);
        for (int j = 0; j < 256; ++j) {
            EXPECT_LE(std::fabs(y[256 * i + j] - x[256 * i + j]), step * 0.5f * (1 + 1e-6f))
                << i << " " << j;
        }
        for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += b[i].qs[16 * g + l];
            EXPECT_EQ(b[i].bsums[g], sum) << i << " " << g;
        }
    }
    // Zero block: everything zero, bsums included. Constant block of -0.7: the scale is
    // -127 / (signed max) > 0, so every code is -127 and d = 0.7 / 127 > 0.
    EXPECT_EQ(b[1].d, 0.0f);
    for (int g = 0; g < 16; ++g) EXPECT_EQ(b[1].bsums[g], 0);
    EXPECT_EQ(b[2].qs[0], -127);
    EXPECT_FLOAT_EQ(b[2].d, 0.7f / 127);
}

TEST(QuantFromFloat, Q8_KRoundsTiesToEven) {
    // Max 127 gives iscale -1 exactly, so x = k + 0.5 is a tie: 2.5 -> -2, 3.5 -> -4 (even).
    std::vector<float> x(256, 0.0f);
    x[0] = 127.0f;
    x[1] = 2.5f;
    x[2] = 3.5f;
    x[3] = -2.5f;
    const auto enc = encode(GgmlType::Q8_K, x);
    const auto* b = reinterpret_cast<const BlockQ8_K*>(enc.data());
    EXPECT_EQ(b->d, -1.0f);
    EXPECT_EQ(b->qs[0], -127);
    EXPECT_EQ(b->qs[1], -2);
    EXPECT_EQ(b->qs[2], -4);
    EXPECT_EQ(b->qs[3], 2);
    // Q8_0 uses roundf instead (ties away from zero): d = 127/127 = 1, 2.5 -> 3.
    std::vector<float> x0(x.begin(), x.begin() + 32);
    const auto enc0 = encode(GgmlType::Q8_0, x0);
    const auto* b0 = reinterpret_cast<const BlockQ8_0*>(enc0.data());
    EXPECT_EQ(b0->qs[1], 3);
    EXPECT_EQ(b0->qs[2], 4);
    EXPECT_EQ(b0->qs[3], -3);
}

// Q4_0 / Q5_0: d = signed max / -levels, codes clamp at levels - 1, so values on the side opposite
// the max (up to `levels` steps away) can be off by up to one step; everything else by half.
void check_symmetric(GgmlType type, int levels) {
    std::mt19937 rng(3 + levels);
    const int n = 32 * 40;
    const auto x = random_row(rng, n, 32);
    const auto enc = encode(type, x);
    const auto y = decode(type, enc.data(), n);
    for (int i = 0; i < n / 32; ++i) {
        const float d = fp16_to_f32(
            *reinterpret_cast<const uint16_t*>(enc.data() + size_t(i) * traits(type).type_size));
        for (int j = 0; j < 32; ++j) {
            const float v = d != 0.0f ? x[32 * i + j] / d : 0.0f;  // in steps, -levels..levels
            const float steps = std::max(0.5f, v - float(levels - 1));
            // The codes were chosen with the float d; decoding uses fp16(d): up to `levels`
            // codes times its rounding error (2^-11 relative).
            const float bound = (steps + levels / 2048.0f) * std::fabs(d) * 1.001f + 1e-30f;
            EXPECT_LE(std::fabs(y[32 * i + j] - x[32 * i + j]), bound)
                << traits(type).name << " " << i << " " << j;
        }
    }
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[32 + j], 0.0f);  // the zero block
}

// Q4_1 / Q5_1: d = (max - min) / (levels - 1), codes round to nearest: half a step, plus the
// fp16 rounding of d (on up to `levels` steps) and of the min.
void check_asymmetric(GgmlType type, int levels) {
    std::mt19937 rng(5 + levels);
    const int n = 32 * 40;
    const auto x = random_row(rng, n, 32);
    const auto enc = encode(type, x);
    const auto y = decode(type, enc.data(), n);
    for (int i = 0; i < n / 32; ++i) {
        uint16_t dm[2];
        std::memcpy(dm, enc.data() + size_t(i) * traits(type).type_size, sizeof dm);
        const float d = fp16_to_f32(dm[0]), m = fp16_to_f32(dm[1]);
        const float bound = d * (0.5f + levels / 2048.0f) * 1.001f + std::fabs(m) / 2048 + 1e-30f;
        for (int j = 0; j < 32; ++j) {
            EXPECT_LE(std::fabs(y[32 * i + j] - x[32 * i + j]), bound)
                << traits(type).name << " " << i << " " << j;
        }
    }
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[32 + j], 0.0f);
}

TEST(QuantFromFloat, Q4_0AndQ5_0WithinHalfAStep) {
    check_symmetric(GgmlType::Q4_0, 8);
    check_symmetric(GgmlType::Q5_0, 16);
}

TEST(QuantFromFloat, Q4_1AndQ5_1WithinHalfAStep) {
    check_asymmetric(GgmlType::Q4_1, 16);
    check_asymmetric(GgmlType::Q5_1, 32);
}

TEST(QuantFromFloat, Q4_0UsesTheFullRangeOnTheMaxSide) {
    // Max |x| = -4 (negative): d = -4 / -8 = 0.5, so -4 is code 0 and +3.5 code 15.
    std::vector<float> x(32, 0.0f);
    x[0] = -4.0f;
    x[1] = 3.5f;
    x[2] = 0.24f;  // rounds to code 8 (0.0)
    x[3] = 0.26f;  // rounds to code 9 (0.5)
    const auto enc = encode(GgmlType::Q4_0, x);
    const auto y = decode(GgmlType::Q4_0, enc.data(), 32);
    EXPECT_EQ(y[0], -4.0f);
    EXPECT_EQ(y[1], 3.5f);
    EXPECT_EQ(y[2], 0.0f);
    EXPECT_EQ(y[3], 0.5f);
}

TEST(QuantFromFloat, Fp16AndBf16AndF32Encode) {
    const std::vector<float> x = {1.0f, -2.5f, 1e-8f, 70000.0f};
    const auto h = encode(GgmlType::F16, x);
    const auto yh = decode(GgmlType::F16, h.data(), 4);
    EXPECT_EQ(yh[0], 1.0f);
    EXPECT_EQ(yh[1], -2.5f);
    EXPECT_EQ(yh[2], 0.0f);  // below half the smallest fp16 subnormal
    EXPECT_TRUE(std::isinf(yh[3]));
    const auto b = encode(GgmlType::BF16, x);
    const auto yb = decode(GgmlType::BF16, b.data(), 4);
    EXPECT_EQ(yb[1], -2.5f);
    EXPECT_NEAR(yb[2], 1e-8f, 1e-10f);
    EXPECT_EQ(yb[3], 70144.0f);  // 70000 rounds to 8 mantissa bits
    const auto f = encode(GgmlType::F32, x);
    EXPECT_EQ(decode(GgmlType::F32, f.data(), 4), x);
}

}  // namespace
}  // namespace mw
