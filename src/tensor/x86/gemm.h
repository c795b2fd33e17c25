// The x86 sets' prefill of the GGUF layout: row decoders (256-bit, and the K-quants at the set's
// width, tensor/x86/codes.h; IQ4_NL, IQ4_XS and MXFP4 through their value table) feeding the
// width-generic GEMM (tensor/simd/gemm.h).
#pragma once

#include <type_traits>

#include "tensor/simd/gemm.h"
#include "tensor/x86/codes.h"
#include "tensor/x86/simd.h"

namespace mw::x86 {
namespace {

// ---- Row decoders: codes in element order, scale (and min) per sub-block ------------------

inline void store32(uint8_t* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

template <class Block, bool kHigh, bool kMin>
void row_nibbles(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float* min) {
    const auto* b = reinterpret_cast<const Block*>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
        __m256i c = nibbles32(b[i].qs);
        if constexpr (kHigh) c = _mm256_or_si256(c, high_bits(load_u32(b[i].qh)));
        store32(codes + 32 * i, c);
        scale[i] = half(b[i].d);
        if constexpr (kMin) min[i] = half(b[i].m);
    }
}

// Q8_0 codes are q + 128 (offset 128).
inline void row_q8_0(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float*) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
        store32(codes + 32 * i, _mm256_xor_si256(load256(b[i].qs), _mm256_set1_epi8(char(0x80))));
        scale[i] = half(b[i].d);
    }
}

// The 4-bit table types: each nibble through the 16-entry value table, plus the panel offset
// (IQ4 values are -127..113, offset 128 as Q8_0's codes; MXFP4's doubled E2M1 values are
// -12..12, offset 16 as Q5_0's), so one vpshufb makes a vector of codes.
template <int kOffset>
inline __m256i code_table(const int8_t* values) {
    return _mm256_add_epi8(table16(values), _mm256_set1_epi8(char(kOffset)));
}

struct RowIQ4_NL {
    using Block = BlockIQ4_NL;
    static constexpr int kOffset = 128;
    static const int8_t* values() { return kIq4Values; }
    static float scale(const Block& b) { return half(b.d); }
};
// The values are doubled, so the scale is half the E8M0 one (2^(e - 128), subnormal for e < 2,
// as the reference multiplies it).
struct RowMXFP4 {
    using Block = BlockMXFP4;
    static constexpr int kOffset = 16;
    static const int8_t* values() { return kMxfp4Values; }
    static float scale(const Block& b) { return e8m0_half(b.e); }
};

template <class D>
void row_table32(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float*) {
    const auto* b = reinterpret_cast<const typename D::Block*>(row);
    const __m256i table = code_table<D::kOffset>(D::values());
    for (int64_t i = 0; i < n / 32; ++i) {
        store32(codes + 32 * i, _mm256_shuffle_epi8(table, nibbles32(b[i].qs)));
        scale[i] = D::scale(b[i]);
    }
}

// IQ4_XS: eight IQ4_NL-coded sub-blocks of 32 per super-block, scale d * (ls_j - 32).
inline void row_iq4_xs(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float*) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(row);
    const __m256i table = code_table<RowIQ4_NL::kOffset>(kIq4Values);
    for (int64_t i = 0; i < n / 256; ++i, codes += 256, scale += 8) {
        const float d = half(b[i].d);
        for (int j = 0; j < 8; ++j) {
            store32(codes + 32 * j, _mm256_shuffle_epi8(table, nibbles32(b[i].qs + 16 * j)));
            scale[j] = d * float(iq4xs_scale(b[i], j));
        }
    }
}

// K-quants at the set's width: the super-block's codes, then its float scales (and mins).
template <class V, class Block>
void row_kquant(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float* min) {
    constexpr int N = 256 / V::kBytes;
    const auto* b = reinterpret_cast<const Block*>(row);
    constexpr int n_sub =
        std::is_same_v<Block, BlockQ4_K> || std::is_same_v<Block, BlockQ5_K> ? 8 : 16;
    for (int64_t i = 0; i < n / 256; ++i, codes += 256, scale += n_sub, min += n_sub) {
        typename V::I c[N];
        kcodes(b[i], c);
        for (int v = 0; v < N; ++v) V::store(codes + V::kBytes * v, c[v]);
        const KScales ks = kscales(b[i]);
        alignas(32) int16_t words[16], per_bsum[16];
        _mm256_store_si256(reinterpret_cast<__m256i*>(words), ks.words);
        _mm256_store_si256(reinterpret_cast<__m256i*>(per_bsum), ks.per_bsum);
        for (int j = 0; j < n_sub; ++j) {
            scale[j] = ks.d * float(words[j]);
            // Mins per sub-block: per_bsum repeats each min over the sums of a sub-block.
            min[j] = -ks.dmin * float(per_bsum[j * 16 / n_sub]);
        }
    }
}

template <class V>
struct Gemm {
    // Q8_0 panels hold q + 128: with VNNI the bias -128 * sum(x); without, signed products.
    using Q8Ints = TileInts<255, V::kSignedBias == 0>;
    static constexpr bool kQ8Bias = V::kSignedBias != 0;

    static void q4_0(const MatmulArgs& a) {
        gemm_rows<V, 32, true, false, false, TileInts<15, false>>(
            a, kPanelQ4_0, row_nibbles<BlockQ4_0, false, false>);
    }
    static void q4_1(const MatmulArgs& a) {
        gemm_rows<V, 32, false, true, false, TileInts<15, false>>(
            a, kPanelQ4_1, row_nibbles<BlockQ4_1, false, true>);
    }
    static void q5_0(const MatmulArgs& a) {
        gemm_rows<V, 32, true, false, false, TileInts<31, false>>(
            a, kPanelQ5_0, row_nibbles<BlockQ5_0, true, false>);
    }
    static void q5_1(const MatmulArgs& a) {
        gemm_rows<V, 32, false, true, false, TileInts<31, false>>(
            a, kPanelQ5_1, row_nibbles<BlockQ5_1, true, true>);
    }
    static void q8_0(const MatmulArgs& a) {
        gemm_rows<V, 32, kQ8Bias, false, false, Q8Ints>(a, kPanelQ8_0, row_q8_0);
    }
    // The table types share the tiles of the type with the same offset and code range:
    // IQ4_NL those of Q8_0, MXFP4 those of Q5_0, IQ4_XS the K-quant tile with Q8_0's integers.
    static void iq4_nl(const MatmulArgs& a) {
        gemm_rows<V, 32, kQ8Bias, false, false, Q8Ints>(a, kPanelIQ4_NL, row_table32<RowIQ4_NL>);
    }
    static void mxfp4(const MatmulArgs& a) {
        gemm_rows<V, 32, true, false, false, TileInts<31, false>>(a, kPanelMXFP4,
                                                                  row_table32<RowMXFP4>);
    }
    static void iq4_xs(const MatmulArgs& a) {
        gemm_rows<V, 32, kQ8Bias, false, true, Q8Ints>(a, kPanelIQ4_XS, row_iq4_xs);
    }
    static void q2_k(const MatmulArgs& a) {
        gemm_rows<V, 16, false, true, true, TileInts<3, false>>(a, kPanelQ2K,
                                                                row_kquant<V, BlockQ2_K>);
    }
    static void q3_k(const MatmulArgs& a) {
        gemm_rows<V, 16, true, false, true, TileInts<7, false>>(a, kPanelQ3K,
                                                                row_kquant<V, BlockQ3_K>);
    }
    static void q4_k(const MatmulArgs& a) {
        gemm_rows<V, 32, false, true, true, TileInts<15, false>>(a, kPanelQ4K,
                                                                 row_kquant<V, BlockQ4_K>);
    }
    static void q5_k(const MatmulArgs& a) {
        gemm_rows<V, 32, false, true, true, TileInts<31, false>>(a, kPanelQ5K,
                                                                 row_kquant<V, BlockQ5_K>);
    }
    static void q6_k(const MatmulArgs& a) {
        gemm_rows<V, 16, true, false, true, TileInts<63, false>>(a, kPanelQ6K,
                                                                 row_kquant<V, BlockQ6_K>);
    }
};

}  // namespace
}  // namespace mw::x86
