#include "plan/measure.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "tensor/kernels.h"
#include "tensor/ops.h"

namespace mw {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

constexpr uint64_t MiB = uint64_t(1) << 20;
constexpr uint64_t GiB = uint64_t(1) << 30;
constexpr int kArrays = 3;

class RealMemoryPasses final : public BandwidthPasses {
  public:
    RealMemoryPasses(Parallel& par, uint64_t array_bytes)
        : par_(par),
          n_(size_t(array_bytes / sizeof(double))),
          a_(new double[n_]),
          b_(new double[n_]),
          c_(new double[n_]),
          sums_(size_t(par.n_threads()) * 8, 0.0),
          load_(par.n_threads()) {
        // First touch by the threads that will read each range (NUMA placement, page faults now).
        double *pa = a_.get(), *pb = b_.get(), *pc = c_.get();
        par_.for_each_thread([&](int ith, int nth) {
            const Range range = split_range(int64_t(n_), ith, nth);
            for (int64_t i = range.begin; i < range.end; ++i) {
                pa[i] = 0.0;
                pb[i] = 1.0;
                pc[i] = 2.0;
            }
        });
    }
    ~RealMemoryPasses() override {
        double total = 0;
        for (double s : sums_) total += s;
        // The sums are consumed so that the reads cannot be optimised away.
        volatile double sink = total;
        (void)sink;
    }

    uint64_t array_bytes() const override { return n_ * sizeof(double); }
    int n_threads() const override { return par_.n_threads(); }

    double read_pass() override {
        const double* arrays[kArrays] = {a_.get(), b_.get(), c_.get()};
        const auto t0 = Clock::now();
        par_.for_each_thread([&](int ith, int nth) {
            const Range range = split_range(int64_t(n_), ith, nth);
            // Vector accumulators (GCC/Clang vector extensions: SSE2, AVX or NEON as compiled),
            // four of them in flight, so that the sum runs far ahead of memory.
            typedef double v4d __attribute__((vector_size(32)));
            v4d acc[4] = {};
            for (const double* p : arrays) {
                int64_t i = range.begin;
                for (; i + 16 <= range.end; i += 16) {
                    for (int j = 0; j < 4; ++j) {
                        v4d v;
                        std::memcpy(&v, p + i + 4 * j, sizeof v);
                        acc[j] += v;
                    }
                }
                for (; i < range.end; ++i) acc[0][0] += p[i];
            }
            double sum = 0;
            for (const v4d& v : acc) sum += v[0] + v[1] + v[2] + v[3];
            sums_[size_t(ith) * 8] += sum;
        });
        return seconds_since(t0);
    }

    double triad_pass() override {
        double *pa = a_.get(), *pb = b_.get(), *pc = c_.get();
        const double scalar = 3.0;
        const auto t0 = Clock::now();
        par_.for_each_thread([&](int ith, int nth) {
            const Range range = split_range(int64_t(n_), ith, nth);
            for (int64_t i = range.begin; i < range.end; ++i) pa[i] = pb[i] + scalar * pc[i];
        });
        const double dt = seconds_since(t0);
        if (pa[n_ / 2] != 1.0 + scalar * 2.0) {
            fail(ErrorKind::unsupported, "memory bandwidth probe: unexpected result {}",
                 pa[n_ / 2]);
        }
        return dt;
    }

    double others_cpu_share() override { return load_.others_cpu_share(); }

  private:
    Parallel& par_;
    size_t n_;
    std::unique_ptr<double[]> a_, b_, c_;
    std::vector<double> sums_;  // one cache line per thread
    CpuLoadMonitor load_;
};

// CPUs this process may run on (its affinity mask); empty when unknown.
std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
    for (int i = 0; i < CPU_SETSIZE; ++i) {
        if (CPU_ISSET(i, &set)) cpus.push_back(i);
    }
    return cpus;
}

// Busy seconds of the allowed CPUs since boot (user, nice, system, irq, softirq, steal); < 0
// when /proc/stat cannot be read.
double busy_seconds(const std::vector<int>& cpus) {
    std::ifstream in("/proc/stat");
    if (!in) return -1;
    const double tick = double(std::max<long>(1, sysconf(_SC_CLK_TCK)));
    double busy = 0;
    int found = 0;
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit((unsigned char)line[3]))
            continue;
        std::istringstream ss(line.substr(3));
        int id = -1;
        uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                 steal = 0;
        ss >> id >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
        if (!cpus.empty() && !std::binary_search(cpus.begin(), cpus.end(), id)) continue;
        busy += double(user + nice + system + irq + softirq + steal) / tick;
        ++found;
    }
    return found > 0 ? busy : -1;
}

double self_seconds() {
    rusage u{};
    if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double wall_seconds() {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Rates of `min_passes` calls of `pass`, and more while their summed time stays within
// `budget`; `spent` accumulates that time.
template <typename Pass>
std::vector<double> run_passes(Pass&& pass, double bytes, int min_passes, double budget,
                               double& spent) {
    std::vector<double> rates;
    double own = 0;
    // A contended machine can make passes very slow: past twice the budget, three passes do
    // (the spread then says what they are worth).
    auto more = [&](int i) {
        if (i >= 32) return false;
        if (own < budget) return true;
        if (budget > 0 && own > 2 * budget) return i < std::min(min_passes, 3);
        return i < min_passes;
    };
    for (int i = 0; more(i); ++i) {
        const double dt = std::max(pass(), 1e-9);
        own += dt;
        rates.push_back(bytes / dt);
    }
    spent += own;
    return rates;
}

}  // namespace

RateStats robust_stats(const std::vector<double>& rates) {
    RateStats s;
    s.n = int(rates.size());
    if (rates.empty()) return s;
    s.median = median_of(rates);
    s.min = *std::min_element(rates.begin(), rates.end());
    s.max = *std::max_element(rates.begin(), rates.end());
    std::vector<double> dev;
    for (double r : rates) dev.push_back(std::abs(r - s.median));
    const double limit = std::max(4 * median_of(dev), 0.05 * s.median);
    double far = 0;
    for (double d : dev) {
        if (d > limit) {
            ++s.n_outliers;
        } else {
            far = std::max(far, d);
        }
    }
    s.spread = s.median > 0 ? far / s.median : 0;
    return s;
}

std::unique_ptr<BandwidthPasses> memory_passes(Parallel& par, uint64_t array_bytes) {
    return std::make_unique<RealMemoryPasses>(par,
                                              std::max<uint64_t>(array_bytes, 64 * sizeof(double)));
}

BandwidthResult measure_bandwidth(BandwidthPasses& passes, double seconds, int min_passes) {
    BandwidthResult r;
    r.buffer_bytes = passes.array_bytes();
    r.n_threads = passes.n_threads();
    const double bytes = double(kArrays) * double(r.buffer_bytes);
    const double budget = std::max(0.0, seconds) / 2;
    r.read = robust_stats(
        run_passes([&] { return passes.read_pass(); }, bytes, min_passes, budget, r.seconds));
    r.triad = robust_stats(
        run_passes([&] { return passes.triad_pass(); }, bytes, min_passes, budget, r.seconds));
    r.others_cpu_share = passes.others_cpu_share();
    r.contention = judge_contention(r);
    return r;
}

std::string judge_contention(const BandwidthResult& r) {
    std::vector<std::string> why;
    for (const auto& [name, s] : {std::pair<const char*, const RateStats&>{"read", r.read},
                                  std::pair<const char*, const RateStats&>{"triad", r.triad}}) {
        if (s.n == 0) continue;
        if (double(s.n_outliers) > kMaxOutlierFraction * double(s.n)) {
            why.push_back(fmt::format("{} of {} {} passes were outliers ({:.1f} to {:.1f} GB/s)",
                                      s.n_outliers, s.n, name, s.min / 1e9, s.max / 1e9));
        } else if (s.spread > kMaxSpread) {
            why.push_back(fmt::format("the {} passes varied by +-{:.0f} % (limit +-{:.0f} %)", name,
                                      100 * s.spread, 100 * kMaxSpread));
        }
    }
    if (r.others_cpu_share > kMaxOthersCpuShare) {
        why.push_back(
            fmt::format("other work took {:.0f} % of the CPU time the {} threads needed "
                        "(limit {:.0f} %)",
                        100 * r.others_cpu_share, r.n_threads, 100 * kMaxOthersCpuShare));
    }
    std::string text;
    for (const std::string& w : why) text += (text.empty() ? "" : "; ") + w;
    return text;
}

uint64_t last_level_cache_bytes(const SystemInfo& system) {
    const CacheLevel* llc = nullptr;
    for (const CacheLevel& c : system.caches) {
        if (c.type == "Instruction") continue;
        if (!llc || c.level > llc->level || (c.level == llc->level && c.bytes > llc->bytes))
            llc = &c;
    }
    if (!llc || llc->bytes == 0) return 0;
    const int cpus = std::max(system.logical_cpus, 1);
    const int shared = std::clamp(llc->shared_by, 1, cpus);
    const uint64_t instances = uint64_t((cpus + shared - 1) / shared);
    return llc->bytes * instances;
}

ArraySize choose_array_bytes(const SystemInfo& system) {
    ArraySize a;
    a.last_level_cache_bytes = last_level_cache_bytes(system);
    uint64_t total = 0;
    if (a.last_level_cache_bytes > 0) {
        total = std::max<uint64_t>(4 * a.last_level_cache_bytes, kArrays * 64 * MiB);
        a.why = "4 x the last-level cache";
    } else {
        uint64_t largest = 0;
        for (const CacheLevel& c : system.caches) largest = std::max(largest, c.bytes);
        total = std::max<uint64_t>(GiB, 4 * largest);
        a.why = "caches unknown: 1 GiB";
    }
    const uint64_t cap = system.memory.available_bytes / 4;
    if (cap > 0 && total > cap) {
        total = std::max<uint64_t>(cap, kArrays * 4 * MiB);
        a.why = "a quarter of the available memory";
    }
    a.bytes = total / kArrays / 4096 * 4096;
    return a;
}

RateStats measure_matmul_gflops(Parallel& par, double seconds) {
    const TypeTraits* q4k = type_traits(GgmlType::Q4_K);
    if (!q4k || !q4k->vec_dot) return {};
    constexpr int64_t kCols = 4096, kRows = 512, kTokens = 32;
    WeightMatrix w;
    w.traits = q4k;
    w.n_cols = kCols;
    w.n_rows = kRows;
    w.row_bytes = row_bytes(*q4k, kCols);
    // Any bit pattern is a valid Q4_K block; 0x11 gives small finite scales (fp16 0x1111).
    std::vector<uint8_t> weights(w.row_bytes * kRows, 0x11);
    w.data = weights.data();
    std::vector<float> x(size_t(kCols * kTokens));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 17) - 8) * 0.125f;
    std::vector<float> y(size_t(kRows * kTokens));
    std::vector<uint8_t> scratch(matmul_scratch_bytes(w, kTokens));

    matmul(par, w, x.data(), kTokens, y.data(), scratch.data());  // warm up
    const double flops_per_call = 2.0 * double(kCols) * double(kRows) * double(kTokens);
    std::vector<double> rates;
    const auto start = Clock::now();
    for (int i = 0; i < 2000 && (i < 5 || seconds_since(start) < seconds); ++i) {
        const auto t0 = Clock::now();
        matmul(par, w, x.data(), kTokens, y.data(), scratch.data());
        rates.push_back(flops_per_call / std::max(seconds_since(t0), 1e-9) / 1e9);
    }
    return robust_stats(rates);
}

Int8Peak measure_int8_peak(Parallel& par, double seconds) {
    Int8Peak r;
    r.kernel_set = installed_kernels().name;
    r.n_threads = par.n_threads();
    std::vector<double> per_thread(size_t(std::max(r.n_threads, 1)), 0.0);
    // All threads at once: cores that share a unit (SMT siblings) or a power budget show it.
    par.for_each_thread([&](int ith, int) { per_thread[size_t(ith)] = int8_peak_macs(seconds); });
    for (double x : per_thread) r.macs_per_s += x;
    return r;
}

CpuLoadMonitor::CpuLoadMonitor(int n_threads) : n_threads_(std::max(n_threads, 1)) {
    const double busy = busy_seconds(allowed_cpus());
    available_ = busy >= 0;
    start_busy_ = busy;
    start_self_ = self_seconds();
    start_wall_ = wall_seconds();
}

double CpuLoadMonitor::others_cpu_share() const {
    if (!available_) return 0;
    const std::vector<int> cpus = allowed_cpus();
    const double wall = wall_seconds() - start_wall_;
    if (wall <= 0.02) return 0;
    const double busy = busy_seconds(cpus) - start_busy_;
    const double others = std::max(0.0, busy - (self_seconds() - start_self_)) / wall;  // CPUs
    // Other work on CPUs the measurement's threads leave idle takes nothing from them.
    const double n_cpus = double(cpus.empty() ? n_threads_ : int(cpus.size()));
    const double spare = std::max(0.0, n_cpus - double(n_threads_));
    return std::clamp((others - spare) / double(n_threads_), 0.0, 1.0);
}

}  // namespace mw
