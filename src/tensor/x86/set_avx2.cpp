// The avx2 set's quantized kernels (decode, prefill, packed layouts) and its int8 peak loop:
// tensor/x86/gemv_defs.h and gemm_defs.h compiled with this set's flags (src/CMakeLists.txt).
#include "tensor/x86/gemm_defs.h"
#include "tensor/x86/gemv_defs.h"

namespace mw::x86 {
template struct Set<Isa::avx2>;
}  // namespace mw::x86
