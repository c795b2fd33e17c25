// The x86 sets' prefill of the lattice i-quants (IQ3/IQ2/IQ1) and the ternary types (TQ1_0,
// TQ2_0), as on ARM (tensor/arm/kernels_neon_i8mm.cpp): each call decodes its rows once into the
// panels of the width-generic GEMM (tensor/simd/gemm.h, K-quant tiles, Q8_K activations), which
// then reuse every decoded byte for all the tokens, G x R rows times a tile of tokens at a time
// (the decode kernels, below 8 tokens, take one row and up to 4 tokens).
//
// A super-block is decoded by its decode kernels' decoder (gemv_iquants.h: signed values, integer
// scales per 16 values, the block's factor; the lattice types through their groups in
// gemv_lattice.h), then stored as unsigned codes value + offset, the offset being the type's
// largest magnitude, so that vpmaddubsw / vpdpbusd multiply the codes with the signed quants
// exactly; the tiles add -offset * sum(x) per sub-block (kBias). Smaller codes let AVX2 sum more
// vpmaddubsw results in int16 before widening (DotChain): IQ3_XXS's levels are all even and are
// stored halved (twice the scale). Sub-blocks are the scales' span: 32 values where a scale covers
// 32 (one float multiply-add per 32 instead of 16), else 16.
#pragma once

#include "tensor/simd/gemm.h"
#include "tensor/x86/gemv_lattice.h"

namespace mw::x86 {
namespace {

// A lattice type's super-block as the panels take it, from its decode kernels' groups (grid
// bytes and +-1 signs, scale pairs, factor): the 8 vectors of signed values, the 16 scale words
// (sub-block of 16 k takes word k) and the factor.
template <class L>
struct LatticeDecode {
    using Block = typename L::Block;
    static constexpr bool kUnitScales = false;
    static float decode(const Block& b, __m256i w[8], __m256i* words) {
        const IqGrids& g = iq_grids();
        alignas(32) uint32_t pairs[8];
        for (int j = 0; j < 8; ++j) {
            const Group32 group = L::group(g, b, j);
            w[j] = _mm256_sign_epi8(group.grid, group.sign);
            pairs[j] = L::scales(b, j);
        }
        *words = _mm256_load_si256(reinterpret_cast<const __m256i*>(pairs));
        return L::factor(b);
    }
};

// Per type: the decoder, the sub-block (kBL), the code offset (kOffset: the largest |value|,
// after the halving of kHalve), so codes are 0 .. 2 * kOffset.
template <class D, int BL, int Offset, bool Halve = false>
struct SignedPanel {
    using Decode = D;
    static constexpr int kBL = BL;
    static constexpr int kOffset = Offset;
    static constexpr bool kHalve = Halve;
    static constexpr PanelFormat kFormat{BL, Offset, false, true, kActQ8_0};
};
using PanelTQ1_0 = SignedPanel<DecodeTQ1_0, 32, 1>;                       // -1..1
using PanelTQ2_0 = SignedPanel<DecodeTQ2_0, 32, 1>;                       // -1..1
using PanelIQ2_XXS = SignedPanel<LatticeDecode<LatticeIQ2_XXS>, 32, 43>;  // levels 8, 25, 43
using PanelIQ2_XS = SignedPanel<LatticeDecode<LatticeIQ2_XS>, 16, 43>;
using PanelIQ2_S = SignedPanel<LatticeDecode<LatticeIQ2_S>, 16, 43>;
using PanelIQ3_XXS =
    SignedPanel<LatticeDecode<LatticeIQ3_XXS>, 32, 31, true>;         // levels 4 .. 62, halved
using PanelIQ3_S = SignedPanel<LatticeDecode<LatticeIQ3_S>, 32, 15>;  // levels 1, 3, .. 15
using PanelIQ1_S = SignedPanel<LatticeDecode<LatticeIQ1_S>, 32, 9>;   // 8 * (-1..1) +- 1
using PanelIQ1_M = SignedPanel<LatticeDecode<LatticeIQ1_M>, 16, 9>;

// One row: its codes in element order and each sub-block's float scale (the GEMM's RowDecodeFn).
template <class P>
void row_signed(const uint8_t* row, int64_t n, uint8_t* codes, float* scale, float*) {
    using D = typename P::Decode;
    constexpr int kSubs = 256 / P::kBL;
    const auto* b = reinterpret_cast<const typename D::Block*>(row);
    const __m256i offset = _mm256_set1_epi8(char(P::kHalve ? 2 * P::kOffset : P::kOffset));
    for (int64_t i = 0; i < n / 256; ++i, codes += 256, scale += kSubs) {
        __m256i w[8], words = _mm256_setzero_si256();
        float d = D::decode(b[i], w, &words);
        for (int v = 0; v < 8; ++v) {
            __m256i c = _mm256_add_epi8(w[v], offset);
            // (value + 2 * offset) / 2: even, so the byte shift loses nothing; the mask drops
            // the bit the 16-bit shift brings in from the next byte.
            if constexpr (P::kHalve)
                c = _mm256_and_si256(_mm256_srli_epi16(c, 1), _mm256_set1_epi8(0x7F));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + 32 * v), c);
        }
        if constexpr (P::kHalve) d *= 2.0f;
        const __m256 dv = _mm256_set1_ps(d);
        if constexpr (D::kUnitScales) {
            for (int j = 0; j < kSubs; j += 8) _mm256_storeu_ps(scale + j, dv);
        } else if constexpr (P::kBL == 16) {
            // 16 scale words: d * word j for sub-block j.
            const __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(words));
            const __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(words, 1));
            _mm256_storeu_ps(scale, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(lo)));
            _mm256_storeu_ps(scale + 8, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(hi)));
        } else {
            // A scale per 32 values: the decoder repeats it in words 2j and 2j + 1.
            const __m256i even = _mm256_srai_epi32(_mm256_slli_epi32(words, 16), 16);
            _mm256_storeu_ps(scale, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(even)));
        }
    }
}

// Codes <= 2 * kOffset, unsigned (no signed-byte tiles: every set multiplies them directly).
template <class V, class P>
void gemm_signed(const MatmulArgs& a) {
    gemm_rows<V, P::kBL, true, false, true, TileInts<2 * P::kOffset, false>>(a, P::kFormat,
                                                                             row_signed<P>);
}

}  // namespace
}  // namespace mw::x86
