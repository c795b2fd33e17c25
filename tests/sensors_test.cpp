// Reading sensors from a sysfs tree: recorded values from fake trees (the layout of a laptop and
// of a phone), missing and unreadable sensors reported as missing, and garbage in sensor files
// skipped with one warning per file. MEMWALL_SYSFS_ROOT points the reader at a tree.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "memwall.h"
#include "runtime/sensors.h"
#include "support/test_support.h"

namespace mw {
namespace {

void mkdirs(const std::string& path) {
    for (size_t i = 1; i <= path.size(); ++i) {
        if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
    }
}

void put(const std::string& root, const std::string& relative, const std::string& text) {
    const std::string path = root + "/" + relative;
    mkdirs(path.substr(0, path.rfind('/')));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A laptop: two cores with cpufreq, a package and a Wi-Fi thermal zone, RAPL package counters.
std::string laptop_tree() {
    const std::string root = test::temp_dir();
    put(root, "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "2400000\n");
    put(root, "devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "3100000\n");
    put(root, "devices/system/cpu/cpufreq/policy0/scaling_cur_freq", "1\n");  // not a cpuN
    put(root, "class/thermal/thermal_zone0/type", "x86_pkg_temp\n");
    put(root, "class/thermal/thermal_zone0/temp", "52000\n");
    put(root, "class/thermal/thermal_zone1/type", "iwlwifi_1\n");
    put(root, "class/thermal/thermal_zone1/temp", "41500\n");
    put(root, "class/powercap/intel-rapl:0/name", "package-0\n");
    put(root, "class/powercap/intel-rapl:0/energy_uj", "1000000\n");
    put(root, "class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    // A sub-zone of the package: not counted twice.
    put(root, "class/powercap/intel-rapl:0:0/energy_uj", "500000\n");
    return root;
}

TEST(Sensors, ReadsALaptopTree) {
    const std::string root = laptop_tree();
    SensorReader r(root);
    ASSERT_EQ(r.cpus(), (std::vector<int>{0, 1}));
    ASSERT_EQ(r.zones().size(), 2u);
    EXPECT_EQ(r.zones()[0].type, "x86_pkg_temp");
    EXPECT_EQ(r.zones()[1].type, "iwlwifi_1");
    EXPECT_EQ(r.energy_source(), "RAPL intel-rapl:0 (package-0)");
    EXPECT_TRUE(r.missing().empty());

    SensorSample s = r.sample(0.0);
    EXPECT_EQ(s.cpu_mhz, (std::vector<double>{2400, 3100}));
    EXPECT_EQ(s.temp_c, (std::vector<double>{52.0, 41.5}));
    EXPECT_EQ(s.energy_j, 0.0);
    EXPECT_TRUE(std::isnan(s.power_w));

    // 6 J in 2 s: 3 W. Then the counter wraps at its range: still counted.
    put(root, "class/powercap/intel-rapl:0/energy_uj", "7000000\n");
    s = r.sample(2.0);
    EXPECT_DOUBLE_EQ(s.energy_j, 6.0);
    EXPECT_DOUBLE_EQ(s.power_w, 3.0);
    put(root, "class/powercap/intel-rapl:0/energy_uj", "1000000\n");
    s = r.sample(3.0);
    EXPECT_NEAR(s.energy_j, 6.0 + (262143328850.0 - 7000000 + 1000000) * 1e-6, 1e-6);

    const SensorReader::Hottest h = r.hottest(r.zones_matching(""));
    EXPECT_EQ(h.celsius, 52.0);
    EXPECT_EQ(h.zone, 0u);
    EXPECT_EQ(r.zones_matching("wifi"), (std::vector<size_t>{1}));
    EXPECT_TRUE(r.take_warnings().empty());
}

TEST(Sensors, BatteryPowerIsCurrentTimesVoltage) {
    const std::string root = test::temp_dir();
    put(root, "class/power_supply/usb/type", "USB\n");
    put(root, "class/power_supply/battery/type", "Battery\n");
    put(root, "class/power_supply/battery/status", "Discharging\n");
    // A phone's convention: a discharge is a negative current (µA), at 3.9 V (µV).
    put(root, "class/power_supply/battery/current_now", "-1000000\n");
    put(root, "class/power_supply/battery/voltage_now", "3900000\n");
    SensorReader r(root);
    EXPECT_EQ(r.energy_source(), "battery battery (current_now x voltage_now)");
    r.sample(0.0);
    SensorSample s = r.sample(10.0);
    EXPECT_NEAR(s.power_w, 3.9, 1e-9);
    EXPECT_NEAR(s.energy_j, 39.0, 1e-9);
    // Charging: the battery's flow is not what the machine draws; not counted, one warning.
    put(root, "class/power_supply/battery/status", "Charging\n");
    s = r.sample(20.0);
    s = r.sample(30.0);
    EXPECT_NEAR(s.energy_j, 39.0 + 3.9 * 10, 1e-9);  // the last known power, for one interval
    const auto w = r.take_warnings();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("charging"), std::string::npos) << w[0];
}

TEST(Sensors, MissingSensorsAreReportedNotErrors) {
    const std::string root = test::temp_dir();  // nothing in it
    SensorReader r(root);
    EXPECT_TRUE(r.cpus().empty());
    EXPECT_TRUE(r.zones().empty());
    EXPECT_EQ(r.energy_source(), "");
    ASSERT_EQ(r.missing().size(), 3u);
    EXPECT_EQ(r.missing()[0],
              "cpufreq: no devices/system/cpu/cpu*/cpufreq/scaling_cur_freq under " + root);
    EXPECT_EQ(r.missing()[1], "thermal: no class/thermal/thermal_zone*/temp under " + root);
    EXPECT_NE(r.missing()[2].find("energy: no class/powercap/intel-rapl:*/energy_uj"),
              std::string::npos);
    const SensorSample s = r.sample(1.0);
    EXPECT_TRUE(s.cpu_mhz.empty());
    EXPECT_TRUE(std::isnan(s.energy_j));
    EXPECT_TRUE(std::isnan(r.hottest(r.zones_matching("")).celsius));

    // A root that does not exist at all is the same.
    SensorReader none(root + "/absent");
    EXPECT_EQ(none.missing().size(), 3u);
}

TEST(Sensors, UnreadableSensorsAreReportedAsMissing) {
    // A sensor file that cannot be read: a folder where the file should be (EISDIR), which works
    // whoever runs the test (permission bits: the next test, when not running as root).
    const std::string root = test::temp_dir();
    mkdirs(root + "/class/powercap/intel-rapl:0/energy_uj");
    put(root, "class/thermal/thermal_zone0/type", "cpu\n");
    mkdirs(root + "/class/thermal/thermal_zone0/temp");
    SensorReader r(root);
    ASSERT_EQ(r.missing().size(), 2u);  // cpufreq and energy; the zone is kept (it may wake)
    EXPECT_NE(r.missing()[1].find("intel-rapl:0/energy_uj is not readable (Is a directory)"),
              std::string::npos)
        << r.missing()[1];
    ASSERT_EQ(r.zones().size(), 1u);
    EXPECT_TRUE(std::isnan(r.sample(0).temp_c[0]));
    const auto w = r.take_warnings();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("cannot be read"), std::string::npos) << w[0];
}

TEST(Sensors, PermissionDeniedIsReportedAsMissing) {
    if (::geteuid() == 0) {
        GTEST_SKIP() << "running as root: permission bits do not stop reads, so the chmod 000 "
                        "case (RAPL counters are root-only since Linux 5.10) is not exercised";
    }
    const std::string locked = test::temp_dir();
    put(locked, "class/powercap/intel-rapl:0/energy_uj", "1\n");
    ::chmod((locked + "/class/powercap/intel-rapl:0/energy_uj").c_str(), 0);
    SensorReader l(locked);
    ASSERT_EQ(l.missing().size(), 3u);
    EXPECT_NE(l.missing()[2].find("Permission denied; root only since Linux 5.10"),
              std::string::npos)
        << l.missing()[2];
}

TEST(Sensors, GarbageValuesAreIgnoredWithOneWarningPerFile) {
    const std::string root = test::temp_dir();
    const char* garbage[] = {"", "\n", "warm\n", "-3000\n", "12abc\n", "999999999\n"};
    for (size_t i = 0; i < std::size(garbage); ++i) {
        const std::string zone = "class/thermal/thermal_zone" + std::to_string(i);
        put(root, zone + "/type", "zone" + std::to_string(i));
        put(root, zone + "/temp", garbage[i]);
    }
    put(root, "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "fast\n");
    SensorReader r(root);
    ASSERT_EQ(r.zones().size(), std::size(garbage));
    for (int pass = 0; pass < 3; ++pass) {
        const SensorSample s = r.sample(pass);
        for (double t : s.temp_c) EXPECT_TRUE(std::isnan(t));
        EXPECT_TRUE(std::isnan(s.cpu_mhz[0]));
    }
    const auto w = r.take_warnings();
    ASSERT_EQ(w.size(), std::size(garbage) + 1) << "one warning per file, not per reading";
    EXPECT_NE(w[0].find("scaling_cur_freq: \"fast\" is not a whole number"), std::string::npos)
        << w[0];
    EXPECT_NE(w[1].find("thermal_zone0/temp: empty; ignored"), std::string::npos) << w[1];
    EXPECT_NE(w[2].find("thermal_zone1/temp: empty"), std::string::npos) << w[2];
    EXPECT_NE(w[3].find("\"warm\" is not a whole number"), std::string::npos) << w[3];
    EXPECT_NE(w[4].find("-3000 is negative"), std::string::npos) << w[4];
    EXPECT_NE(w[5].find("\"12abc\" is not a whole number"), std::string::npos) << w[5];
    EXPECT_NE(w[6].find("not a plausible temperature"), std::string::npos) << w[6];
    // A good value later is read again.
    put(root, "class/thermal/thermal_zone2/temp", "45000");
    EXPECT_EQ(r.sample(4).temp_c[2], 45.0);
}

TEST(Sensors, TheJsonOfThisMachineNeverFails) {
    // Whatever /sys holds here (this VM may have none of it), the C API answers.
    char* text = mw_sensors_json();
    ASSERT_NE(text, nullptr) << mw_last_error();
    const nlohmann::json j = nlohmann::json::parse(text);
    mw_free_string(text);
    EXPECT_EQ(j["root"], sysfs_root());
    EXPECT_EQ(j["cpus"].size(), j["cpu_mhz"].size());
    EXPECT_EQ(j["cpus"].empty() + j["thermal_zones"].empty() +
                  j["energy_source"].get<std::string>().empty(),
              int(j["missing"].size()))
        << j.dump(1);
}

}  // namespace
}  // namespace mw
