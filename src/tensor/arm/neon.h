// The ARM64 kernel sets. Internal to tensor/ (and its tests and benchmarks).
//
// tensor/arm/ holds three levels, so one binary runs on any ARMv8 phone:
// - neon:    ARMv8.0 Advanced SIMD (every ARM64 CPU): SIMD activation quantizers (Q8_0, Q8_1,
//            Q8_K, F16, BF16), F32/F16/BF16 kernels, integer dot products by widening multiplies
//            (kernels_neon.cpp). Reads the GGUF layout.
// - dotprod: the quantized kernels on SDOT (ARMv8.2+, e.g. Cortex-A55/A76), and packed layouts
//            in groups of 4 rows (tensor/repack.h) for Q4_0, Q8_0, Q4_K, Q5_K, Q6_K: their decode
//            and prefill are the width-generic kernels of tensor/simd/ on V128 (simd.h), the same
//            source as on x86 (kernels_neon_dotprod.cpp).
// - i8mm:    prefill on SMMLA, 2 rows x 2 tokens x 8 bytes per instruction (ARMv8.6+, e.g.
//            Cortex-A710/X2), for the GGUF layout and the packed layouts; decode stays on SDOT
//            (kernels_neon_i8mm.cpp).
// The GGUF-layout kernels of neon and dotprod are one source over an integer engine (dot.h,
// decode.h). Each level's file is compiled with its own -march (src/CMakeLists.txt) and
// installed only when cpu_features() reports it. Every kernel is tested against the scalar
// reference (mw::ref) in tests/kernels_neon_test.cpp and tests/repack_test.cpp.
#pragma once

#include "tensor/cpu_features.h"
#include "tensor/kernels.h"

namespace mw::neon {

enum class Level { neon, dotprod, i8mm };

// The highest level `cpu` supports (ARM64 always has NEON).
Level best_level(const CpuFeatures& cpu);

// Installs the kernels of `level` and of the levels below it into `set` and names it ("neon",
// "neon-dotprod", "neon-i8mm"). The caller makes sure the CPU has `level`.
void install(KernelSet& set, Level level);

// One level's kernels over what is already in the set (install() calls them in order).
void install_neon(KernelSet& set);
void install_dotprod(KernelSet& set);
void install_i8mm(KernelSet& set);

// The register-only loops of the int8 peak (KernelSet::int8_peak; kernels_neon_dotprod.cpp,
// kernels_neon_i8mm.cpp): multiply-accumulates done in `iterations` passes. The plain NEON
// level has none (its widening multiplies are not what prefill is measured against).
double sdot_peak_loop(int64_t iterations);
double smmla_peak_loop(int64_t iterations);

// The table row of `type` (which must be in the table).
TypeTraits& row_of(TraitsArray& table, GgmlType type);

}  // namespace mw::neon
