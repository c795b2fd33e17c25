// The x86-64 kernel sets. Internal to tensor/ (and its tests and benchmarks).
//
// tensor/x86/ holds three sets built from one source: avx2 (AVX2 + FMA + F16C: every x86 CPU
// since 2013-2015), avxvnni (the same with AVX-VNNI's 256-bit vpdpbusd: Alder Lake, Zen 5) and
// avx512 (F, BW, VL, DQ, VNNI, VBMI; BF16 where present: Ice Lake, Sapphire Rapids, Zen 4 on).
// simd.h defines their vector types (V256<false>, V256<true>, V512) for the width-generic kernels
// of tensor/simd/ (packed layouts, the prefill GEMM); gemv.h (decode of the GGUF layout) and
// gemm.h, codes.h (its prefill row decoders) are generic over the two x86 widths; set.h declares
// a set's entry points, which set_<set>.cpp instantiates with that set's ISA flags
// (src/CMakeLists.txt). Written per set: the float kernels and activation encoders
// (float_avx2.cpp, float_avx512.cpp; avxvnni runs avx2's) and AVX-512's VBMI decode kernels of
// the 32-element types (gemv_blocks_avx512.cpp). kernels.cpp installs a set at run time.
//
// How the quantized kernels work (every set):
// - Activations are encoded once per matrix product in the weight type's vec_dot_type (Q8_0, Q8_1,
//   Q8_K) by the SIMD quantizers, byte-identical to the reference quantizers.
// - Packed layouts (tensor/repack.h, groups of R = 16 rows for avx512, 8 for avx2/avxvnni) are
//   offered for Q4_0, Q8_0, Q4_K, Q5_K and Q6_K: one vector holds 4 codes of each of R rows, so
//   decode is one dot-product instruction per 4 x R weights and no horizontal sums.
// - Decode of the GGUF layout (few tokens): each row decoded in registers, several blocks at a
//   time, times up to 4 tokens' activations, streaming the weights once.
// - Prefill (many tokens): rows decoded once per call into panels of R rows of unsigned 8-bit
//   codes interleaved 4 per row per vector, with float scales, and a register-blocked
//   micro-kernel multiplies each panel with tiles of tokens.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/cpu_features.h"
#include "tensor/kernels.h"

namespace mw::x86 {

enum class Isa { avx2, avxvnni, avx512 };

// Whether this CPU can run the set.
bool supported(Isa isa, const CpuFeatures& cpu);

// "avx2", "avxvnni", "avx512".
const char* isa_name(Isa isa);

// Installs the set's kernels into `set` (its table's vec_dot, matmul and activation from_float
// entries, and its packed layouts). The caller makes sure the CPU has it.
void install(Isa isa, KernelSet& set, const CpuFeatures& cpu);

// The reference table with exactly this set installed, for tests and benchmarks that compare
// the sets; false when this CPU cannot run it.
bool kernel_set(Isa isa, KernelSet& out);

}  // namespace mw::x86
