// The one place that decides which CPU features the kernels may use, detected at run time so
// that one binary runs on any CPU of its architecture.
#pragma once

#include <string>

namespace mw {

struct CpuFeatures {
    // x86-64
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512vbmi = false;
    bool avx512vnni = false;
    bool avx512bf16 = false;
    bool avx_vnni = false;
    bool amx_int8 = false;  // only when the OS has enabled the AMX tile state
    // ARM64
    bool neon = false;
    bool dotprod = false;
    bool i8mm = false;
};

const CpuFeatures& cpu_features();
// e.g. "AVX2 FMA F16C AVX512F AVX512BW AVX512VL AVX512_VNNI AVX512_BF16".
std::string cpu_features_summary();

}  // namespace mw
