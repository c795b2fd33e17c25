#include "tensor/kernels.h"

#include <time.h>

#include <chrono>
#include <cstring>
#include <utility>

#include "tensor/repack.h"

#if defined(__aarch64__)
#include "tensor/arm/neon.h"
#endif
#if defined(__x86_64__)
#include "tensor/x86/x86.h"
#endif

namespace mw {

void KernelSet::add_packed(GgmlType type, int rows, MatmulFn matmul) {
    for (const TypeTraits& t : table) {
        if (t.type != type || n_packed == kMaxPackedLayouts) continue;
        TypeTraits p = t;
        p.name = packed_layout_name(type, rows);
        p.to_float = nullptr;
        p.vec_dot = nullptr;
        p.matmul = matmul;
        p.isa = name;
        p.pack_rows = rows;
        packed[size_t(n_packed++)] = p;
    }
}

void install_kernels(KernelSet& set, const CpuFeatures& cpu, IsaLimit limit) {
    (void)cpu;
    (void)limit;
    set.name = "scalar";
#if defined(__aarch64__)
    // ARM64: NEON always; SDOT and SMMLA kernels where the CPU has them (tensor/arm/neon.h).
    if (limit != IsaLimit::scalar) {
        neon::install(set, neon::best_level(cpu));
        return;
    }
#endif
#if defined(__x86_64__)
    // x86-64: AVX-512 (VNNI + VBMI) where present, else AVX2 with AVX-VNNI, else AVX2 + FMA.
    const bool allow512 = limit == IsaLimit::avx512 || limit == IsaLimit::best;
    const bool allow_vnni = allow512 || limit == IsaLimit::avxvnni;
    const bool allow2 = allow_vnni || limit == IsaLimit::avx2;
    for (auto [isa, allowed] :
         {std::pair{x86::Isa::avx512, allow512}, std::pair{x86::Isa::avxvnni, allow_vnni},
          std::pair{x86::Isa::avx2, allow2}}) {
        if (allowed && x86::supported(isa, cpu)) {
            x86::install(isa, set, cpu);
            return;
        }
    }
#endif
}

std::vector<KernelSet> available_kernel_sets() {
    std::vector<KernelSet> sets(1);
    sets[0].table = reference_type_traits();
    const CpuFeatures& cpu = cpu_features();
    (void)cpu;
#if defined(__x86_64__)
    for (x86::Isa isa : {x86::Isa::avx2, x86::Isa::avxvnni, x86::Isa::avx512}) {
        KernelSet set;
        if (x86::kernel_set(isa, set)) sets.push_back(set);
    }
#endif
#if defined(__aarch64__)
    for (neon::Level level : {neon::Level::neon, neon::Level::dotprod, neon::Level::i8mm}) {
        if (int(level) > int(neon::best_level(cpu))) continue;
        KernelSet set;
        set.table = reference_type_traits();
        neon::install(set, level);
        sets.push_back(set);
    }
#endif
    return sets;
}

double int8_peak_macs(double seconds) {
    const KernelSet& set = installed_kernels();
    return set.int8_peak ? set.int8_peak(seconds) : 0.0;
}

namespace {

// This thread's CPU time: a pass the OS interrupts (other processes on a shared machine) is not
// charged for the interruption.
double thread_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace

double time_peak_loop(double (*loop)(int64_t iterations), double seconds) {
    using Clock = std::chrono::steady_clock;
    // Grow the pass until it is long enough to time, then keep the best of the passes.
    int64_t iterations = 1 << 12;
    double best = 0.0;
    const auto start = Clock::now();
    while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
        const double t0 = thread_seconds();
        const double macs = loop(iterations);
        const double dt = thread_seconds() - t0;
        if (dt < 2e-3) {
            iterations *= 4;
            continue;
        }
        if (macs / dt > best) best = macs / dt;
    }
    return best;
}

}  // namespace mw
