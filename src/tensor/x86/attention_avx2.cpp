// The attention kernels (tensor/simd/attention.h) with AVX2 + FMA + F16C.
#include "tensor/simd/attention.h"
#include "tensor/x86/simd.h"

namespace mw {

const AttentionKernels& attention_kernels_avx2_set() {
    static constexpr AttentionKernels kSet = simd::Attention<simd::V256<false>>::kernels("avx2");
    return kSet;
}

}  // namespace mw
