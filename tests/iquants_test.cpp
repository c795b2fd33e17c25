// The non-linear, microscaled and ternary types (issue 38): hand-built blocks with values written
// from the format definitions, and the reference decoding of llama-quantize's files against
// ggml's own dequantization of the same files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "format/gguf.h"
#include "support/test_support.h"
#include "tensor/quants.h"
#include "tensor/types.h"

namespace mw {
namespace {

template <typename Block>
std::vector<float> decode_block(GgmlType type, const Block& b) {
    const TypeTraits* t = type_traits(type);
    EXPECT_NE(t, nullptr);
    std::vector<float> out(t->block_size, NAN);
    t->to_float(&b, out.data(), t->block_size);
    return out;
}

// The IQ4 code book as the format defines it (written out here, not taken from the library).
constexpr int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// E2M1: sign, 2-bit exponent, 1-bit mantissa.
float e2m1(int q) {
    const int e = (q >> 1) & 3, m = q & 1;
    const float mag = e == 0 ? 0.5f * m : std::ldexp(1.0f + 0.5f * m, e - 1);
    return q & 8 ? -mag : mag;
}

TEST(IQuantDequant, IQ4_NL) {
    BlockIQ4_NL b;
    b.d = f32_to_fp16(0.25f);
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
    const auto y = decode_block(GgmlType::IQ4_NL, b);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.25f * kIq4[j]) << j;
        EXPECT_EQ(y[j + 16], 0.25f * kIq4[15 - j]) << j;
    }
}

TEST(IQuantDequant, IQ4_XS) {
    BlockIQ4_XS b;
    b.d = f32_to_fp16(0.5f);
    const int ls[8] = {0, 63, 32, 31, 17, 48, 5, 40};  // 6-bit, stored with +32
    b.scales_h = 0;
    std::memset(b.scales_l, 0, sizeof b.scales_l);
    for (int j = 0; j < 8; ++j) {
        b.scales_l[j / 2] |= uint8_t((ls[j] & 15) << (4 * (j % 2)));
        b.scales_h |= uint16_t((ls[j] >> 4) << (2 * j));
    }
    for (int i = 0; i < 128; ++i) b.qs[i] = uint8_t(((i * 7) & 15) | (((i * 5 + 3) & 15) << 4));
    const auto y = decode_block(GgmlType::IQ4_XS, b);
    for (int e = 0; e < 256; ++e) {
        const int j = e / 32, l = e % 32;
        const uint8_t q = b.qs[16 * j + l % 16];
        const int code = l < 16 ? q & 15 : q >> 4;
        EXPECT_EQ(y[e], 0.5f * float(ls[j] - 32) * kIq4[code]) << e;
    }
}

TEST(IQuantDequant, MXFP4) {
    BlockMXFP4 b;
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
    for (int e : {127, 130, 100, 1, 0, 254}) {
        b.e = uint8_t(e);
        const auto y = decode_block(GgmlType::MXFP4, b);
        for (int j = 0; j < 16; ++j) {
            // 2^(e - 127) * value, exact in double, then rounded to float once (subnormal for
            // small e, infinite beyond FLT_MAX).
            EXPECT_EQ(y[j], float(std::ldexp(double(e2m1(j)), e - 127))) << e << " " << j;
            EXPECT_EQ(y[j + 16], float(std::ldexp(double(e2m1(15 - j)), e - 127))) << e;
        }
    }
}

// A TQ1_0 byte holding trits t[0..n) (t[0] most significant) as the format packs them: the base-3
// number scaled to 256 / 3^n, rounded up.
uint8_t pack_trits(const int* t, int n) {
    int q = 0;
    for (int k = 0; k < n; ++k) q = 3 * q + t[k];
    int pow = 1;
    for (int k = 0; k < n; ++k) pow *= 3;
    return uint8_t((q * 256 + pow - 1) / pow);
}

TEST(IQuantDequant, TQ1_0) {
    std::mt19937 rng(5);
    int t[256];
    for (int& v : t) v = int(rng() % 3);
    BlockTQ1_0 b;
    b.d = f32_to_fp16(0.75f);
    for (int m = 0; m < 32; ++m) {
        const int d[5] = {t[m], t[32 + m], t[64 + m], t[96 + m], t[128 + m]};
        b.qs[m] = pack_trits(d, 5);
    }
    for (int m = 0; m < 16; ++m) {
        const int d[5] = {t[160 + m], t[176 + m], t[192 + m], t[208 + m], t[224 + m]};
        b.qs[32 + m] = pack_trits(d, 5);
    }
    // qh holds 4 trits per byte, scaled as 5 (its last trit 0).
    for (int m = 0; m < 4; ++m) {
        const int d[5] = {t[240 + m], t[244 + m], t[248 + m], t[252 + m], 0};
        b.qh[m] = pack_trits(d, 5);
    }
    const auto y = decode_block(GgmlType::TQ1_0, b);
    for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.75f * float(t[e] - 1)) << e;
}

TEST(IQuantDequant, TQ2_0) {
    BlockTQ2_0 b;
    b.d = f32_to_fp16(-1.5f);
    std::memset(b.qs, 0, sizeof b.qs);
    auto code = [](int e) { return (e * 7 + e / 5) % 4; };
    for (int e = 0; e < 256; ++e) {
        b.qs[32 * (e / 128) + e % 32] |= uint8_t(code(e) << (2 * ((e % 128) / 32)));
    }
    const auto y = decode_block(GgmlType::TQ2_0, b);
    for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], -1.5f * float(code(e) - 1)) << e;
}

// ---- llama-quantize's files ----------------------------------------------------------------

struct LoadedGguf {
    std::vector<uint8_t> bytes;
    gguf::GgufFile file;
};

std::unique_ptr<LoadedGguf> load(const std::string& name) {
    auto bytes = test::read_file(test::shared_path("reference/models/" + name));
    auto file = gguf::GgufFile::parse(bytes, name);
    return std::make_unique<LoadedGguf>(LoadedGguf{std::move(bytes), std::move(file)});
}

std::vector<float> decode_tensor(const gguf::TensorInfo& t) {
    const TypeTraits* traits = type_traits(t.type);
    EXPECT_NE(traits, nullptr) << t.name << " type " << t.type;
    std::vector<float> out(t.n_elements);
    if (traits) traits->to_float(t.data, out.data(), int64_t(t.n_elements));
    return out;
}

// FNV-1a (64 bits) over the float32 bits of every quantized tensor of a file, in file order.
uint64_t dequantized_hash(const gguf::GgufFile& f) {
    uint64_t h = 1469598103934665603ull;
    for (const gguf::TensorInfo& t : f.tensors()) {
        if (GgmlType(t.type) == GgmlType::F32) continue;
        for (float v : decode_tensor(t)) {
            uint32_t bits;
            std::memcpy(&bits, &v, sizeof bits);
            for (int k = 0; k < 4; ++k) {
                h ^= (bits >> (8 * k)) & 0xFF;
                h *= 1099511628211ull;
            }
        }
    }
    return h;
}

// The expected hashes are of ggml's own dequantize_row_* run on the same tensor bytes:
// ggml-quants.c and ggml-common.h of ggml-org/ggml at d99724f2, compiled outside this project into
// a small program that decodes each tensor's raw bytes (read from the file's tensor table) and
// hashes them the same way. The README's check_dequant.py found gguf-py's dequantization
// bit-identical to ggml's on these files. Bit-identical decoding or nothing.
TEST(IQuantRealData, DecodingIsBitIdenticalToGgml) {
    const std::pair<const char*, uint64_t> files[] = {
        {"kq-tiny-IQ4_NL.gguf", 0x0aef0b65efb5de2cull},
        {"kq-tiny-IQ4_XS.gguf", 0x09cdefece54a857cull},
        {"kq-tiny-MXFP4.gguf", 0x62e1270f127a89bdull},
        {"kq-tiny-TQ1_0.gguf", 0x32d1b622f5b4fba1ull},
        {"kq-tiny-TQ2_0.gguf", 0x32d1b622f5b4fba1ull},
        // The lattice types (IQ2_XXS and IQ2_XS files hold one Q2_K tensor, token_embd).
        {"kq-tiny-IQ3_S.gguf", 0x0ad5cabbb56e38a0ull},
        {"kq-tiny-IQ3_XXS.gguf", 0x5ae80396440f119aull},
        {"kq-tiny-IQ2_XXS.gguf", 0xb6aa5bdefae584d7ull},
        {"kq-tiny-IQ2_XS.gguf", 0xbf460e43c67edad1ull},
        {"kq-tiny-IQ2_S.gguf", 0x54ec62d9817955e8ull},
        {"kq-tiny-IQ1_S.gguf", 0xa02940aba59fdcebull},
        {"kq-tiny-IQ1_M.gguf", 0x70863668e1445adbull},
    };
    for (const auto& [name, hash] : files) {
        const auto q = load(name);
        EXPECT_EQ(dequantized_hash(q->file), hash) << name;
    }
}

// Relative RMS error against the F16 originals (what the format can hold of N(0, 0.1^2) data).
// Measured: IQ4_NL 7.57 %, IQ4_XS 7.63 %, MXFP4 11.8 %, TQ1_0 = TQ2_0 80.7 % (ternary with the
// block's absolute maximum as its scale rounds most of a Gaussian to 0; llama-quantize writes
// the same values in both), IQ3_S 14.2 %, IQ3_XXS 19.0 %, IQ2_S 25.5 %, IQ2_XS 30.6 %, IQ2_XXS
// 34.7 % (its token_embd in Q2_K), IQ1_M 47.8 %, IQ1_S 48.7 %.
TEST(IQuantRealData, DequantizedWeightsMatchTheF16Originals) {
    const auto f16 = load("kq-tiny-F16.gguf");
    // Bounds about 15 % above the measured error (printed); the lower bound catches comparing
    // the wrong thing.
    const std::pair<const char*, double> files[] = {
        {"kq-tiny-IQ4_NL.gguf", 0.087},  {"kq-tiny-IQ4_XS.gguf", 0.088},
        {"kq-tiny-MXFP4.gguf", 0.135},   {"kq-tiny-TQ1_0.gguf", 0.93},
        {"kq-tiny-TQ2_0.gguf", 0.93},    {"kq-tiny-IQ3_S.gguf", 0.164},
        {"kq-tiny-IQ3_XXS.gguf", 0.218}, {"kq-tiny-IQ2_XXS.gguf", 0.40},
        {"kq-tiny-IQ2_XS.gguf", 0.352},  {"kq-tiny-IQ2_S.gguf", 0.293},
        {"kq-tiny-IQ1_S.gguf", 0.56},    {"kq-tiny-IQ1_M.gguf", 0.55},
    };
    for (const auto& [name, bound] : files) {
        const auto q = load(name);
        double err2 = 0, ref2 = 0;
        for (const gguf::TensorInfo& t : q->file.tensors()) {
            if (GgmlType(t.type) == GgmlType::F32) continue;
            const auto a = decode_tensor(t);
            const auto b = decode_tensor(*f16->file.find_tensor(t.name));
            ASSERT_EQ(a.size(), b.size()) << t.name;
            for (size_t i = 0; i < a.size(); ++i) {
                err2 += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
                ref2 += double(b[i]) * b[i];
            }
        }
        const double rel = std::sqrt(err2 / ref2);
        std::printf("[ measured ] %-22s relative RMS error %.4f %%\n", name, 100 * rel);
        EXPECT_LT(rel, bound) << name;
        EXPECT_GT(rel, bound / 2) << name << ": suspiciously exact";
    }
}

// vec_dot on rows llama-quantize wrote, against double precision on the decoded operands.
TEST(IQuantRealData, VecDotOnLlamaQuantizedRows) {
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const char* name : {"kq-tiny-IQ4_NL.gguf", "kq-tiny-IQ4_XS.gguf", "kq-tiny-MXFP4.gguf",
                             "kq-tiny-TQ1_0.gguf", "kq-tiny-TQ2_0.gguf", "kq-tiny-IQ3_S.gguf",
                             "kq-tiny-IQ3_XXS.gguf", "kq-tiny-IQ2_XXS.gguf", "kq-tiny-IQ2_XS.gguf",
                             "kq-tiny-IQ2_S.gguf", "kq-tiny-IQ1_S.gguf", "kq-tiny-IQ1_M.gguf"}) {
        const auto q = load(name);
        int rows = 0;
        for (const gguf::TensorInfo& t : q->file.tensors()) {
            const TypeTraits* w = type_traits(t.type);
            ASSERT_NE(w, nullptr);
            if (t.n_dims < 2 || !w->is_quantized) continue;
            const TypeTraits* a = type_traits(w->vec_dot_type);
            const int64_t n = int64_t(t.ne[0]);
            std::vector<float> x(static_cast<size_t>(n)), wf(x.size()), xf(x.size());
            std::vector<uint8_t> xq(row_bytes(*a, n));
            for (uint64_t r = 0; r < t.ne[1]; r += t.ne[1] / 3) {
                const uint8_t* wrow = t.data + r * row_bytes(*w, n);
                for (float& v : x) v = normal(rng);
                a->from_float(x.data(), xq.data(), n);
                w->to_float(wrow, wf.data(), n);
                a->to_float(xq.data(), xf.data(), n);
                double expected = 0.0, abs_products = 0.0;
                for (int64_t i = 0; i < n; ++i) {
                    expected += double(wf[i]) * xf[i];
                    abs_products += std::fabs(double(wf[i]) * xf[i]);
                }
                EXPECT_NEAR(w->vec_dot(n, wrow, xq.data()), expected, 1e-5 * abs_products)
                    << name << " " << t.name << " row " << r;
                ++rows;
            }
        }
        EXPECT_GT(rows, 40) << name;
    }
}

}  // namespace
}  // namespace mw
