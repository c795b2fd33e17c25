#include "tensor/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xmmintrin.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace mw {
namespace {

CpuFeatures detect() {
    CpuFeatures f;
#if defined(__x86_64__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
    f.avx512vbmi = __builtin_cpu_supports("avx512vbmi");
    f.avx512vnni = __builtin_cpu_supports("avx512vnni");
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d)) f.f16c = (c >> 29) & 1;
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
        f.avx512bf16 = (a >> 5) & 1;
        f.avx_vnni = (a >> 4) & 1;
    }
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        const bool amx_tile = (d >> 24) & 1;
        const bool amx_int8 = (d >> 25) & 1;
        // Linux only grants the tile state on request (arch_prctl ARCH_REQ_XCOMP_PERM).
        constexpr int kArchReqXcompPerm = 0x1023;
        constexpr int kXfeatureTileData = 18;
        f.amx_int8 = amx_tile && amx_int8 &&
                     syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) == 0;
    }
#endif
#if defined(__aarch64__)
    f.neon = true;
#if defined(__linux__)
    const unsigned long hw = getauxval(AT_HWCAP);
    const unsigned long hw2 = getauxval(AT_HWCAP2);
    f.dotprod = (hw & HWCAP_ASIMDDP) != 0;
#ifdef HWCAP2_I8MM
    f.i8mm = (hw2 & HWCAP2_I8MM) != 0;
#else
    (void)hw2;
#endif
#endif
#endif
    return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

std::string cpu_features_summary() {
    const CpuFeatures& f = cpu_features();
    std::string s;
    auto add = [&](bool on, const char* name) {
        if (!on) return;
        if (!s.empty()) s += ' ';
        s += name;
    };
    add(f.avx2, "AVX2");
    add(f.fma, "FMA");
    add(f.f16c, "F16C");
    add(f.avx512f, "AVX512F");
    add(f.avx512bw, "AVX512BW");
    add(f.avx512vl, "AVX512VL");
    add(f.avx512dq, "AVX512DQ");
    add(f.avx512vbmi, "AVX512_VBMI");
    add(f.avx512vnni, "AVX512_VNNI");
    add(f.avx512bf16, "AVX512_BF16");
    add(f.avx_vnni, "AVX_VNNI");
    add(f.amx_int8, "AMX_INT8");
    add(f.neon, "NEON");
    add(f.dotprod, "DOTPROD");
    add(f.i8mm, "I8MM");
    return s.empty() ? "scalar" : s;
}

#if defined(__x86_64__)
namespace {
constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6;
}  // namespace

FlushSubnormals::FlushSubnormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero);
}
FlushSubnormals::~FlushSubnormals() {
    _mm_setcsr(saved_);
}
#else
FlushSubnormals::FlushSubnormals() = default;
FlushSubnormals::~FlushSubnormals() = default;
#endif

}  // namespace mw
