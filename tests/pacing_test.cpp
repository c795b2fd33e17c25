// Pacing to a temperature or a speed, on simulated time: a fake sysfs tree (MEMWALL_SYSFS_ROOT)
// whose thermal zone a simulated chip rewrites after every token, heating 1 °C per token while
// the pacer's load is above 70 % and always cooling toward the room's temperature. Nothing sleeps:
// the pacer is asked for its decision (mw_pacer_decide) at the simulated time, and the simulation
// applies it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "memwall.h"
#include "runtime/pacer.h"
#include "support/test_support.h"

namespace mw {
namespace {

// Sets an environment variable for the life of the object.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        ::setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old_.empty()) {
            ::unsetenv(name_);
        } else {
            ::setenv(name_, old_.c_str(), 1);
        }
    }

  private:
    const char* name_;
    std::string old_;
};

void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A sysfs tree with thermal zones of the given types.
struct FakeThermal {
    std::string root = test::temp_dir();
    explicit FakeThermal(const std::vector<std::string>& types) {
        ::mkdir((root + "/class").c_str(), 0755);
        ::mkdir((root + "/class/thermal").c_str(), 0755);
        for (size_t i = 0; i < types.size(); ++i) {
            const std::string dir = root + "/class/thermal/thermal_zone" + std::to_string(i);
            ::mkdir(dir.c_str(), 0755);
            write(dir + "/type", types[i] + "\n");
            set(i, 30.0);
        }
    }
    // Rewritten in place at a fixed width: truncating a file and writing it again makes ext4
    // flush it on close (auto_da_alloc), milliseconds per token.
    void set(size_t zone, double celsius) {
        const std::string path =
            root + "/class/thermal/thermal_zone" + std::to_string(zone) + "/temp";
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        if (!f) f.open(path, std::ios::out | std::ios::binary);
        f << fmt::format("{:08d}\n", std::lround(celsius * 1000));
    }
    void set_text(size_t zone, const std::string& text) {
        write(root + "/class/thermal/thermal_zone" + std::to_string(zone) + "/temp", text);
    }
};

struct PacerHandle {
    mw_pacer* p = nullptr;
    explicit PacerHandle(const mw_pacer_params& params) {
        EXPECT_EQ(mw_pacer_create(&params, &p), MW_OK) << mw_last_error();
    }
    ~PacerHandle() { mw_pacer_free(p); }
};

// The simulated phone: 4 cores; a token takes 0.16 s / threads (25 tok/s on all four); the load
// of a token is threads / 4 x its share of busy time (the idle gap before it counts as rest).
struct Chip {
    static constexpr int kCores = 4;
    double temp = 35.0;
    double ambient = 30.0;
    double heat_per_token = 1.0;  // °C, while the load is above 70 %
    double cooling = 0.05;        // per second, toward the ambient (Newton)

    // Runs one token after `gap` idle seconds with `threads`; returns its busy time.
    double token(int threads, double gap) {
        const double busy = 0.16 / threads;
        temp -= cooling * (temp - ambient) * (gap + busy);
        const double load = double(threads) / kCores * busy / (busy + gap);
        if (load > 0.7) temp = std::min(110.0, temp + heat_per_token);
        return busy;
    }
};

struct Step {
    double t, temp, sleep;
    int threads;
};

// Runs the chip for `seconds` of simulated time from t0, pacing with `pacer` (or not, when null),
// with the zone file rewritten after every token.
std::vector<Step> simulate(Chip& chip, FakeThermal& sysfs, mw_pacer* pacer, double t0,
                           double seconds, int& threads, double& gap) {
    std::vector<Step> steps;
    double t = t0;
    while (t < t0 + seconds) {
        t += gap + chip.token(threads, gap);
        sysfs.set(0, chip.temp);
        if (pacer) {
            mw_pace pace;
            EXPECT_EQ(mw_pacer_decide(pacer, t, NAN, &pace), MW_OK) << mw_last_error();
            threads = pace.n_threads;
            gap = pace.sleep_s;
            EXPECT_NEAR(pace.temp_c, chip.temp, 0.001);  // it read the file just written
        }
        steps.push_back({t, chip.temp, gap, threads});
    }
    return steps;
}

double rate(const std::vector<Step>& steps, double from, double to) {
    int n = 0;
    for (const Step& s : steps) n += s.t > from && s.t <= to;
    return n / (to - from);
}

TEST(Pacer, ScriptedTraceHoldsTheLimitAndRecoversWhenCool) {
    FakeThermal sysfs({"cpu-thermal"});
    ScopedEnv env("MEMWALL_SYSFS_ROOT", sysfs.root);

    // Unpaced, the trace runs away: the chip reaches its 110 °C ceiling.
    {
        Chip chip;
        int threads = Chip::kCores;
        double gap = 0;
        const std::vector<Step> free = simulate(chip, sysfs, nullptr, 0, 30, threads, gap);
        ASSERT_GT(free.back().temp, 100.0);
        EXPECT_NEAR(rate(free, 0, 30), 25.0, 0.5);
    }

    mw_pacer_params params = mw_pacer_default_params();
    params.max_temp_c = 45;
    params.max_threads = Chip::kCores;
    PacerHandle pacer(params);
    ASSERT_NE(pacer.p, nullptr);
    EXPECT_EQ(mw_pacer_warning(pacer.p), nullptr);
    Chip chip;
    sysfs.set(0, chip.temp);
    int threads = Chip::kCores;
    double gap = 0;
    mw_pace first;
    ASSERT_EQ(mw_pacer_decide(pacer.p, 0.0, NAN, &first), MW_OK);
    EXPECT_EQ(first.n_threads, Chip::kCores);

    // Phase 1, 150 s: heating 1 °C per token above 70 % load.
    const std::vector<Step> hot = simulate(chip, sysfs, pacer.p, 0, 150, threads, gap);
    double hottest = 0, sum = 0;
    int n = 0;
    for (const Step& s : hot) {
        if (s.t < 30) continue;
        hottest = std::max(hottest, s.temp);
        sum += s.temp;
        ++n;
    }
    EXPECT_LE(hottest, 46.0) << "the pacer let the scripted temperature past the limit";
    // It holds the limit, not far below it: the headroom is used.
    EXPECT_GT(sum / n, 40.0);
    // The back-off costs speed (25 tok/s unpaced), but stays with threads, not long gaps.
    const double paced = rate(hot, 30, 150);
    EXPECT_LT(paced, 20.0);
    EXPECT_GT(paced, 8.0);

    // Phase 2: a fan; the same load now heats 0.02 °C per token, into a cooler room.
    chip.heat_per_token = 0.02;
    chip.ambient = 20;
    const std::vector<Step> cool = simulate(chip, sysfs, pacer.p, hot.back().t, 150, threads, gap);
    const double end = cool.back().t;
    for (const Step& s : cool) {
        if (s.t < end - 30) continue;
        EXPECT_EQ(s.threads, Chip::kCores) << "at " << s.t << " s";
        EXPECT_EQ(s.sleep, 0.0) << "at " << s.t << " s";
    }
    EXPECT_NEAR(rate(cool, end - 30, end), 25.0, 0.5) << "the speed did not recover";
    std::printf(
        "paced, 30-150 s: hottest %.1f °C, mean %.1f °C, %.1f tok/s (25 unpaced); "
        "cooled, last 30 s: %.1f tok/s\n",
        hottest, sum / n, paced, rate(cool, end - 30, end));
    const std::string summary = mw_pacer_summary(pacer.p);
    EXPECT_NE(summary.find("back-off"), std::string::npos) << summary;
    EXPECT_NE(summary.find("recover"), std::string::npos) << summary;
}

TEST(Pacer, StaticHotTraceBacksOffOneLevelAtATimeToTheLast) {
    // Always 90 °C whatever the load: one level per settle_s/2, then it stays at the deepest.
    PacerConfig c;
    c.max_temp_c = 45;
    c.max_threads = 4;
    Pacer pacer(c);
    double t = 0, gap = 0;
    int threads = 4, backoffs = 0;
    for (int i = 0; i < 2000; ++i) {
        t += gap + 0.1 / threads;
        const PaceDecision d = pacer.decide(t, 90.0, "zone");
        if (d.changed) {
            ++backoffs;
            EXPECT_NE(d.message.find("back off"), std::string::npos) << d.message;
        }
        threads = d.threads;
        gap = d.sleep_s;
    }
    EXPECT_EQ(backoffs, pacer.max_level());
    EXPECT_EQ(pacer.level(), pacer.max_level());
    EXPECT_EQ(threads, 1);
    EXPECT_NEAR(gap, 8 * 0.1, 1e-6);  // the last gap: 8x a one-thread token
    EXPECT_EQ(pacer.gap_ratio_at(3), 0.0);
    EXPECT_EQ(pacer.gap_ratio_at(4), 0.25);
}

TEST(Pacer, HysteresisRecoversOnlyWellBelowTheLimit) {
    PacerConfig c;
    c.max_temp_c = 45;
    c.max_threads = 2;
    Pacer pacer(c);
    EXPECT_EQ(pacer.decide(0.0, 46.0).threads, 1);
    // 43 °C is below the limit but within the 3 °C hysteresis: no recovery, however long.
    for (double t = 0.1; t < 20; t += 0.1) EXPECT_EQ(pacer.decide(t, 43.0).threads, 1);
    const PaceDecision d = pacer.decide(20.0, 41.9);
    EXPECT_TRUE(d.changed);
    EXPECT_EQ(d.threads, 2);
    EXPECT_NE(d.message.find("recover"), std::string::npos) << d.message;
}

TEST(Pacer, MaxTpsSpacesTokensEvenly) {
    PacerConfig c;
    c.max_tps = 20;
    c.max_threads = 2;
    Pacer pacer(c);
    // Tokens of 10 ms: each start 50 ms after the last, so 40 ms of gap.
    double t = 0, gap = 0;
    pacer.decide(t, std::nullopt);
    for (int i = 0; i < 200; ++i) {
        t += gap + 0.010;
        const PaceDecision d = pacer.decide(t, std::nullopt);
        gap = d.sleep_s;
        EXPECT_NEAR(gap, 0.040, 1e-9);
        EXPECT_EQ(d.threads, 2);
    }
    EXPECT_NEAR(200 / t, 20.0, 0.2);
    // Tokens slower than the limit are not slowed further.
    for (int i = 0; i < 10; ++i) {
        t += gap + 0.080;
        gap = pacer.decide(t, std::nullopt).sleep_s;
    }
    EXPECT_EQ(gap, 0.0);
}

TEST(Pacer, NoThermalZoneIsAWarningNotAnError) {
    const std::string empty = test::temp_dir();
    ScopedEnv env("MEMWALL_SYSFS_ROOT", empty);
    mw_pacer_params params = mw_pacer_default_params();
    params.max_temp_c = 45;
    params.max_threads = 2;
    PacerHandle pacer(params);
    ASSERT_NE(pacer.p, nullptr);
    const char* warning = mw_pacer_warning(pacer.p);
    ASSERT_NE(warning, nullptr);
    EXPECT_NE(std::string(warning).find("no class/thermal/thermal_zone*/temp under " + empty),
              std::string::npos)
        << warning;
    mw_pace pace;
    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(mw_pacer_decide(pacer.p, i * 0.1, NAN, &pace), MW_OK);
        EXPECT_EQ(pace.n_threads, 2);
        EXPECT_EQ(pace.sleep_s, 0.0);
        EXPECT_TRUE(std::isnan(pace.temp_c));
    }
}

TEST(Pacer, ZoneFilterChoosesWhichZonesCount) {
    FakeThermal sysfs({"battery", "cpu-0-0-usr"});
    sysfs.set(0, 60);  // a hot battery
    sysfs.set(1, 40);
    ScopedEnv env("MEMWALL_SYSFS_ROOT", sysfs.root);
    mw_pacer_params params = mw_pacer_default_params();
    params.max_temp_c = 45;
    params.max_threads = 2;
    mw_pace pace;
    {
        PacerHandle all(params);
        ASSERT_EQ(mw_pacer_decide(all.p, 0, NAN, &pace), MW_OK);
        EXPECT_EQ(pace.n_threads, 1);
        EXPECT_EQ(pace.temp_c, 60.0);
        EXPECT_NE(std::string(pace.message).find("thermal_zone0 battery"), std::string::npos)
            << pace.message;
    }
    params.temp_zone = "cpu";
    {
        PacerHandle cpu(params);
        ASSERT_EQ(mw_pacer_decide(cpu.p, 0, NAN, &pace), MW_OK);
        EXPECT_EQ(pace.n_threads, 2);
        EXPECT_EQ(pace.temp_c, 40.0);
    }
    params.temp_zone = "gpu";
    PacerHandle none(params);
    ASSERT_NE(mw_pacer_warning(none.p), nullptr);
    EXPECT_NE(std::string(mw_pacer_warning(none.p)).find("battery, cpu-0-0-usr"),
              std::string::npos);
}

TEST(Pacer, GarbageInTheZoneFileIsSkippedWithOneWarning) {
    FakeThermal sysfs({"cpu"});
    ScopedEnv env("MEMWALL_SYSFS_ROOT", sysfs.root);
    mw_pacer_params params = mw_pacer_default_params();
    params.max_temp_c = 45;
    params.max_threads = 2;
    PacerHandle pacer(params);
    mw_pace pace;
    sysfs.set(0, 50);
    ASSERT_EQ(mw_pacer_decide(pacer.p, 0.0, NAN, &pace), MW_OK);
    EXPECT_EQ(pace.n_threads, 1);
    EXPECT_STREQ(mw_pacer_take_warnings(pacer.p), "");
    double t = 0;
    for (const char* garbage : {"", "hot\n", "-5000\n", "999999999\n"}) {
        sysfs.set_text(0, garbage);
        for (int i = 0; i < 3; ++i) {
            t += 0.1;
            ASSERT_EQ(mw_pacer_decide(pacer.p, t, NAN, &pace), MW_OK);
            EXPECT_TRUE(std::isnan(pace.temp_c)) << "'" << garbage << "'";
            EXPECT_EQ(pace.level, 1) << "a reading it could not use changed the level";
        }
    }
    // One warning for the file, not one per reading.
    const std::string warnings = mw_pacer_take_warnings(pacer.p);
    EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
    EXPECT_NE(warnings.find("thermal_zone0/temp: empty; ignored"), std::string::npos) << warnings;
}

}  // namespace
}  // namespace mw
