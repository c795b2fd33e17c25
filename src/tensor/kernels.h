// Installing the SIMD kernels: each ISA's kernel file provides an install function that replaces
// entries of the type table (vec_dot, matmul, activation from_float) with its own versions. The
// scalar reference (tensor/quants.h, namespace mw::ref) stays the specification every kernel is
// tested against.
#pragma once

#include <array>
#include <cstddef>

#include "tensor/cpu_features.h"
#include "tensor/types.h"

namespace mw {

inline constexpr size_t kTypeCount = 15;
using TraitsArray = std::array<TypeTraits, kTypeCount>;

// The scalar reference table (what MEMWALL_ISA=scalar runs).
const TraitsArray& reference_type_traits();

// The highest kernel set the user allows (MEMWALL_ISA).
enum class IsaLimit { scalar, avx2, avx512, neon, best };

// Chooses the best kernels for `cpu` within `limit`, installs them into `table` and returns the
// name of the set ("scalar" when none applies). Defined in tensor/kernels.cpp.
const char* install_kernels(TraitsArray& table, const CpuFeatures& cpu, IsaLimit limit);

}  // namespace mw
