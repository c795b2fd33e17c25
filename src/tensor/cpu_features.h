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

// While alive, this thread's float arithmetic flushes subnormal results and inputs to zero
// (x86: MXCSR FTZ and DAZ); the previous mode comes back when it ends. An x86 core takes a
// microcode assist of ~100 cycles for every subnormal: softmax weights of far-away positions times
// the values land there all the time, which made attention a third of prefill. ARM64 cores handle
// subnormals at full speed, so there it changes nothing.
class FlushSubnormals {
  public:
    FlushSubnormals();
    ~FlushSubnormals();
    FlushSubnormals(const FlushSubnormals&) = delete;
    FlushSubnormals& operator=(const FlushSubnormals&) = delete;

  private:
    unsigned saved_ = 0;
};

}  // namespace mw
