// The quantized kernels on SDOT (ARMv8.2 dot product, compiled with +dotprod): four 8-bit
// products summed into each 32-bit lane per instruction. Same tiling as the NEON fallback
// (kernels_neon_dot.h), only the integer engine differs.
#include "tensor/arm/dot.h"
#include "tensor/arm/neon.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "kernels_neon_dotprod.cpp needs -march=armv8.2-a+dotprod (src/CMakeLists.txt)"
#endif

namespace mw::neon {
namespace {

template <class T>
void set_32(TraitsArray& table, GgmlType type) {
    TypeTraits& t = row_of(table, type);
    t.vec_dot = vec_dot_32<T, DotEngine>;
    t.matmul = matmul_32<T, DotEngine>;
    t.isa = "neon-dotprod";
}

template <class T>
void set_k(TraitsArray& table, GgmlType type) {
    TypeTraits& t = row_of(table, type);
    t.vec_dot = vec_dot_k<T, DotEngine>;
    t.matmul = matmul_k<T, DotEngine>;
    t.isa = "neon-dotprod";
}

}  // namespace

void install_dotprod(TraitsArray& table) {
    set_32<Q4_0>(table, GgmlType::Q4_0);
    set_32<Q4_1>(table, GgmlType::Q4_1);
    set_32<Q5_0>(table, GgmlType::Q5_0);
    set_32<Q5_1>(table, GgmlType::Q5_1);
    set_32<Q8_0>(table, GgmlType::Q8_0);
    set_k<Q2_K>(table, GgmlType::Q2_K);
    set_k<Q3_K>(table, GgmlType::Q3_K);
    set_k<Q4_K>(table, GgmlType::Q4_K);
    set_k<Q5_K>(table, GgmlType::Q5_K);
    set_k<Q6_K>(table, GgmlType::Q6_K);
}

}  // namespace mw::neon
