// The ARM64 kernel sets, in three levels so one binary runs on any ARMv8 phone:
// - neon:    ARMv8.0 Advanced SIMD (every ARM64 CPU): SIMD activation quantizers (Q8_0, Q8_1,
//            Q8_K, F16, BF16), F32/F16/BF16 kernels, integer dot products by widening multiplies.
//            kernels_neon.cpp.
// - dotprod: the quantized kernels on SDOT (ARMv8.2+, e.g. Cortex-A55/A76).
// kernels_neon_dotprod.cpp.
// - i8mm:    prefill matrix kernels on SMMLA, 2 rows x 2 tokens per instruction (ARMv8.6+, e.g.
//            Cortex-A710/X2); decode stays on SDOT. kernels_neon_i8mm.cpp.
// Each level's file is compiled with its own -march (src/CMakeLists.txt) and installed only when
// cpu_features() reports it. Every kernel is tested against the scalar reference (mw::ref) in
// tests/kernels_neon_test.cpp.
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

// One level's kernels over what is already in the table (install() calls them in order).
void install_neon(TraitsArray& table);
void install_dotprod(TraitsArray& table);
void install_i8mm(TraitsArray& table);

// The table row of `type` (which must be in the table).
TypeTraits& row_of(TraitsArray& table, GgmlType type);

}  // namespace mw::neon
