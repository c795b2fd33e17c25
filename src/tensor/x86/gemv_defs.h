// The decode entry points of a set (tensor/x86/set.h), defined once for every set over its vector
// type; gemv_<set>.cpp includes this with its ISA flags and instantiates Set<that set>.
#pragma once

#include "tensor/simd/packed.h"
#include "tensor/x86/blocks_avx512.h"
#include "tensor/x86/gemv.h"
#include "tensor/x86/gemv_lattice.h"
#include "tensor/x86/set.h"

namespace mw::x86 {

// The 32-element types: one block per 256-bit vector, or AVX-512's VBMI kernels.
template <Isa I>
void Set<I>::gemv_q4_0(const MatmulArgs& a) {
    if constexpr (I == Isa::avx512) {
        vbmi::gemv_q4_0(a);
    } else {
        gemv_block32<typename VecOf<I>::type, DecodeQ4_0>(a, kActQ8_0);
    }
}
template <Isa I>
void Set<I>::gemv_q4_1(const MatmulArgs& a) {
    if constexpr (I == Isa::avx512) {
        vbmi::gemv_q4_1(a);
    } else {
        gemv_block32<typename VecOf<I>::type, DecodeQ4_1>(a, kActQ8_1);
    }
}
template <Isa I>
void Set<I>::gemv_q5_0(const MatmulArgs& a) {
    if constexpr (I == Isa::avx512) {
        vbmi::gemv_q5_0(a);
    } else {
        gemv_block32<typename VecOf<I>::type, DecodeQ5_0>(a, kActQ8_0);
    }
}
template <Isa I>
void Set<I>::gemv_q5_1(const MatmulArgs& a) {
    if constexpr (I == Isa::avx512) {
        vbmi::gemv_q5_1(a);
    } else {
        gemv_block32<typename VecOf<I>::type, DecodeQ5_1>(a, kActQ8_1);
    }
}
template <Isa I>
void Set<I>::gemv_q8_0(const MatmulArgs& a) {
    using V = typename VecOf<I>::type;
    if constexpr (I == Isa::avx512) {
        vbmi::gemv_q8_0(a);
    } else {
        gemv_block32<V, DecodeQ8_0<V>>(a, kActQ8_0);
    }
}

template <Isa I>
void Set<I>::gemv_q2_k(const MatmulArgs& a) {
    gemv_kquant<typename VecOf<I>::type, KQ2>(a);
}
template <Isa I>
void Set<I>::gemv_q3_k(const MatmulArgs& a) {
    gemv_kquant<typename VecOf<I>::type, KQ3>(a);
}
template <Isa I>
void Set<I>::gemv_q4_k(const MatmulArgs& a) {
    gemv_kquant<typename VecOf<I>::type, KQ4>(a);
}
template <Isa I>
void Set<I>::gemv_q5_k(const MatmulArgs& a) {
    gemv_kquant<typename VecOf<I>::type, KQ5>(a);
}
template <Isa I>
void Set<I>::gemv_q6_k(const MatmulArgs& a) {
    gemv_kquant<typename VecOf<I>::type, KQ6>(a);
}

template <Isa I>
void Set<I>::gemv_iq4_nl(const MatmulArgs& a) {
    if constexpr (I == Isa::avx512) {
        vbmi::gemv_iq4_nl(a);  // Q4_0's kernel with the code book in a byte shuffle
    } else {
        gemv_nl32<DecodeIQ4_NL>(a);
    }
}
template <Isa I>
void Set<I>::gemv_mxfp4(const MatmulArgs& a) {
    if constexpr (I == Isa::avx512) {
        vbmi::gemv_mxfp4(a);
    } else {
        gemv_nl32<DecodeMXFP4>(a);
    }
}
template <Isa I>
void Set<I>::gemv_iq4_xs(const MatmulArgs& a) {
    gemv_signed<typename VecOf<I>::type, DecodeIQ4_XS>(a);
}
template <Isa I>
void Set<I>::gemv_tq1_0(const MatmulArgs& a) {
    gemv_signed<typename VecOf<I>::type, DecodeTQ1_0>(a);
}
template <Isa I>
void Set<I>::gemv_tq2_0(const MatmulArgs& a) {
    gemv_signed<typename VecOf<I>::type, DecodeTQ2_0>(a);
}

template <Isa I>
void Set<I>::gemv_iq2_xxs(const MatmulArgs& a) {
    gemv_lattice<typename VecOf<I>::type, LatticeIQ2_XXS>(a);
}
template <Isa I>
void Set<I>::gemv_iq2_xs(const MatmulArgs& a) {
    gemv_lattice<typename VecOf<I>::type, LatticeIQ2_XS>(a);
}
template <Isa I>
void Set<I>::gemv_iq2_s(const MatmulArgs& a) {
    gemv_lattice<typename VecOf<I>::type, LatticeIQ2_S>(a);
}
template <Isa I>
void Set<I>::gemv_iq3_xxs(const MatmulArgs& a) {
    gemv_lattice<typename VecOf<I>::type, LatticeIQ3_XXS>(a);
}
template <Isa I>
void Set<I>::gemv_iq3_s(const MatmulArgs& a) {
    gemv_lattice<typename VecOf<I>::type, LatticeIQ3_S>(a);
}
template <Isa I>
void Set<I>::gemv_iq1_s(const MatmulArgs& a) {
    gemv_lattice<typename VecOf<I>::type, LatticeIQ1_S>(a);
}
template <Isa I>
void Set<I>::gemv_iq1_m(const MatmulArgs& a) {
    gemv_lattice<typename VecOf<I>::type, LatticeIQ1_M>(a);
}

template <Isa I>
void Set<I>::packed_gemv_q4_0(const MatmulArgs& a) {
    PackedGemv<typename VecOf<I>::type>::q4_0(a);
}
template <Isa I>
void Set<I>::packed_gemv_q8_0(const MatmulArgs& a) {
    PackedGemv<typename VecOf<I>::type>::q8_0(a);
}
template <Isa I>
void Set<I>::packed_gemv_q4_k(const MatmulArgs& a) {
    PackedGemv<typename VecOf<I>::type>::q4_k(a);
}
template <Isa I>
void Set<I>::packed_gemv_q5_k(const MatmulArgs& a) {
    PackedGemv<typename VecOf<I>::type>::q5_k(a);
}
template <Isa I>
void Set<I>::packed_gemv_q6_k(const MatmulArgs& a) {
    PackedGemv<typename VecOf<I>::type>::q6_k(a);
}

}  // namespace mw::x86
