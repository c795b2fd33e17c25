#include "tensor/kernels.h"

#if defined(__aarch64__)
#include "tensor/kernels_neon.h"
#endif
#if defined(__x86_64__)
#include "tensor/kernels_x86.h"
#endif

namespace mw {

const char* install_kernels(TraitsArray& table, const CpuFeatures& cpu, IsaLimit limit) {
    (void)table;
    (void)cpu;
    (void)limit;
#if defined(__aarch64__)
    // ARM64: NEON always; SDOT and SMMLA kernels where the CPU has them (tensor/kernels_neon.h).
    if (limit != IsaLimit::scalar) return neon::install(table, neon::best_level(cpu));
#endif
#if defined(__x86_64__)
    // x86-64: AVX-512 (VNNI + VBMI) where present, else AVX2 + FMA (tensor/kernels_x86.h).
    const bool allow512 = limit == IsaLimit::avx512 || limit == IsaLimit::best;
    const bool allow2 = allow512 || limit == IsaLimit::avx2;
    if (allow512 && x86::avx512_supported(cpu)) {
        x86::install_avx512(table, cpu);
        return "avx512";
    }
    if (allow2 && x86::avx2_supported(cpu)) {
        x86::install_avx2(table, cpu);
        return "avx2";
    }
#endif
    // No SIMD kernel sets yet: the scalar reference runs everywhere.
    return "scalar";
}

}  // namespace mw
