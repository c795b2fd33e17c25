// The attention kernels (tensor/simd/attention.h) with NEON, four lanes. They use no dot
// product; the file takes the dotprod flags because V128 (tensor/arm/simd.h) is defined with
// them, so this set runs where dotprod does (ARMv8.2 on; older cores keep the scalar set).
#include "tensor/arm/simd.h"
#include "tensor/simd/attention.h"

namespace mw {

const AttentionKernels& attention_kernels_neon_set() {
    static constexpr AttentionKernels kSet = simd::Attention<simd::V128>::kernels("neon");
    return kSet;
}

}  // namespace mw
