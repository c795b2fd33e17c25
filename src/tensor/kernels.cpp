#include "tensor/kernels.h"

namespace mw {

const char* install_kernels(TraitsArray& table, const CpuFeatures& cpu, IsaLimit limit) {
    (void)table;
    (void)cpu;
    (void)limit;
    // No SIMD kernel sets yet: the scalar reference runs everywhere.
    return "scalar";
}

}  // namespace mw
