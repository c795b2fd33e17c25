// Kernel sets and their installation. A kernel set is the type table with one ISA's kernels in
// it (vec_dot, matmul, activation from_float) plus the packed layouts it reads (tensor/repack.h):
// the layout is a property of the kernel set, not of the model. Each ISA's folder provides an
// install function (tensor/x86/x86.h, tensor/arm/neon.h); the scalar reference (tensor/ref/ref.h,
// namespace mw::ref) stays the specification every kernel is tested against.
//
// Layout of the kernel layer:
//   tensor/        the type table (types.h), block layouts (quants.h), this dispatch, repacking
//                  (repack.h), CPU features, ops (ops.h, attention.h)
//   tensor/ref/    the scalar reference functions: the specification
//   tensor/simd/   kernels written once over a vector type V (packed layouts, the prefill GEMM)
//   tensor/x86/    AVX2, AVX-VNNI and AVX-512: their vector types and the x86-only kernels
//   tensor/arm/    NEON, dotprod and i8mm: the vector type and the ARM-only kernels
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/cpu_features.h"
#include "tensor/types.h"

namespace mw {

inline constexpr size_t kTypeCount = 27;
using TraitsArray = std::array<TypeTraits, kTypeCount>;

// The most packed layouts one set offers.
inline constexpr int kMaxPackedLayouts = 8;

struct KernelSet {
    const char* name = "scalar";
    TraitsArray table{};
    // Traits rows of the packed layouts (pack_rows > 0), the first n_packed valid.
    std::array<TypeTraits, kMaxPackedLayouts> packed{};
    int n_packed = 0;
    // Multiply-accumulates per second of 8-bit integers that one thread reaches with the set's
    // dot-product instruction in a register-only loop of about `seconds` (null for scalar): the
    // int8 peak that prefill is measured against.
    double (*int8_peak)(double seconds) = nullptr;

    // Offers `type` packed in groups of `rows` with this matmul: a traits row like the table's
    // row of `type`, named e.g. "Q4_K/x16", with to_float and vec_dot null.
    void add_packed(GgmlType type, int rows, MatmulFn matmul);
};

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

// The scalar reference table (what MEMWALL_ISA=scalar runs).
const TraitsArray& reference_type_traits();

// The highest kernel set the user allows (MEMWALL_ISA).
enum class IsaLimit { scalar, avx2, avxvnni, avx512, neon, best };

// Chooses the best kernels for `cpu` within `limit` and installs them into `set`, whose table
// starts as the reference table. Sets set.name ("scalar" when none applies).
void install_kernels(KernelSet& set, const CpuFeatures& cpu, IsaLimit limit);

// The set this process runs (chosen once, from cpu_features() and MEMWALL_ISA).
const KernelSet& installed_kernels();

// Every set this CPU can run, the scalar reference first: for tests and benchmarks that compare
// the sets.
std::vector<KernelSet> available_kernel_sets();

// The installed set's int8 peak (KernelSet::int8_peak) on this thread; 0 for the scalar set.
double int8_peak_macs(double seconds);

// Times `loop(iterations)` (which returns the multiply-accumulates it did) for about `seconds`
// in passes long enough to time, in this thread's CPU time, and returns the best rate: how the
// sets' int8_peak are measured.
double time_peak_loop(double (*loop)(int64_t iterations), double seconds);

}  // namespace mw
