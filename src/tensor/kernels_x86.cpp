#include "tensor/kernels_x86.h"

#if defined(__x86_64__)

namespace mw::x86 {

bool avx2_supported(const CpuFeatures& cpu) {
    return cpu.avx2 && cpu.fma && cpu.f16c;
}

// VNNI (vpdpbusd) and VBMI (byte permutes) are what the AVX-512 kernels are built on: Ice Lake,
// Sapphire Rapids and Zen 4 onwards. Older AVX-512 CPUs (Skylake-X) run the AVX2 set.
bool avx512_supported(const CpuFeatures& cpu) {
    return avx2_supported(cpu) && cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq &&
           cpu.avx512vnni && cpu.avx512vbmi;
}

bool kernel_table(IsaLimit isa, TraitsArray& out) {
    const CpuFeatures& cpu = cpu_features();
    out = reference_type_traits();
    if (isa == IsaLimit::avx2 && avx2_supported(cpu)) {
        install_avx2(out, cpu);
        return true;
    }
    if (isa == IsaLimit::avx512 && avx512_supported(cpu)) {
        install_avx512(out, cpu);
        return true;
    }
    return false;
}

}  // namespace mw::x86

#endif
