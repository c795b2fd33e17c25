// The attention kernels (tensor/simd/attention.h) with AVX-512 (F, BW, VL): twice the AVX2
// set's width, with masked tails.
#include "tensor/simd/attention.h"
#include "tensor/x86/simd.h"

namespace mw {

const AttentionKernels& attention_kernels_avx512_set() {
    static constexpr AttentionKernels kSet = simd::Attention<simd::V512>::kernels("avx512");
    return kSet;
}

}  // namespace mw
