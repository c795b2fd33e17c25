// The x86-64 kernel sets: AVX2 (+FMA, F16C) and AVX-512 (F, BW, VL, VNNI, VBMI; BF16 where
// present). Each set lives in files named *_avx2.cpp / *_avx512.cpp, compiled with only their own
// ISA flags, and is installed into the type table at run time when the CPU has it
// (tensor/kernels.cpp). Internal to tensor/ (and its tests and benchmarks).
//
// How the quantized kernels work (both sets):
// - Activations are encoded once per matrix product in the weight type's vec_dot_type (Q8_0, Q8_1,
//   Q8_K) by the SIMD quantizers here, byte-identical to the reference quantizers.
// - Decode (few tokens): each weight row is decoded in registers from its GGUF layout, several
//   blocks at a time, and multiplied with up to 4 tokens' activations (integer dot products per
//   block, one float scale per block or super-block), streaming the weights once.
// - Prefill (many tokens): the rows are decoded once per call into a panel of unsigned 8-bit
//   codes interleaved for VNNI (16 rows of 4 bytes per vector) with float scales, and a
//   register-blocked micro-kernel multiplies each panel with tiles of tokens.
// These kernels read weights where they lie (mmap'd GGUF). Optionally, a loader can repack
// Q4_0 / Q4_K / Q6_K matrices once into the AVX-512 kernels' interleaved layout (tensor/repack.h),
// which roughly halves the decode work per byte.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/cpu_features.h"
#include "tensor/kernels.h"

namespace mw::x86 {

// Whether this CPU can run each set.
bool avx2_supported(const CpuFeatures& cpu);
bool avx512_supported(const CpuFeatures& cpu);

// Replace the table's vec_dot, matmul and activation from_float entries with the set's kernels.
void install_avx2(TraitsArray& table, const CpuFeatures& cpu);
void install_avx512(TraitsArray& table, const CpuFeatures& cpu);

// The reference table with exactly one set installed (isa: avx2 or avx512), for tests and
// benchmarks that compare the sets; false when this CPU cannot run it.
bool kernel_table(IsaLimit isa, TraitsArray& out);

// The arguments of a MatmulFn, bundled for the kernels' internal helpers.
struct MatmulArgs {
    const uint8_t* w;
    size_t w_row_bytes;
    int64_t n_cols;
    int64_t r0, r1;
    const uint8_t* act;
    size_t act_stride;
    int64_t n_tokens;
    float* y;
    int64_t ldy;
};

}  // namespace mw::x86
