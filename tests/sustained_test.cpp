// The sustained bench (bench --duration), pacing in `run` (--max-temp, --max-tps) through the
// CLI with MEMWALL_SYSFS_ROOT pointing at fake sensor trees, the charts bench --plot and
// plan --plot write, and the conditions printed beside every tok/s.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "plan/sustained.h"
#include "support/svg_check.h"
#include "support/test_support.h"

namespace mw {
namespace {

using nlohmann::json;

void put(const std::string& root, const std::string& relative, const std::string& text) {
    const std::string path = root + "/" + relative;
    for (size_t i = 1; i < path.size(); ++i) {
        if (path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A phone-like tree: one core's frequency, a CPU zone at `celsius`, a battery drawing 2 W.
std::string phone_tree(double celsius) {
    const std::string root = test::temp_dir();
    put(root, "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "1800000\n");
    put(root, "class/thermal/thermal_zone0/type", "cpu-thermal\n");
    put(root, "class/thermal/thermal_zone0/temp", std::to_string(std::lround(celsius * 1000)));
    put(root, "class/power_supply/battery/type", "Battery\n");
    put(root, "class/power_supply/battery/status", "Discharging\n");
    put(root, "class/power_supply/battery/current_now", "-500000\n");
    put(root, "class/power_supply/battery/voltage_now", "4000000\n");
    return root;
}

std::string stories() {
    return test::shared_path("models/stories260K.gguf");
}

test::CommandResult memwall(const std::string& sysfs, const std::string& args) {
    return test::run_command("MEMWALL_SYSFS_ROOT='" + sysfs + "' " + test::cli_path() + " " + args);
}

SustainedSample sample(double t, double seconds, int tokens, double energy_j, double temp) {
    SustainedSample s;
    s.t_s = t;
    s.seconds = seconds;
    s.tokens = tokens;
    s.tok_s = tokens / seconds;
    s.energy_j = energy_j;
    s.sensors = {{2000.0}, {temp}, NAN, NAN};
    return s;
}

TEST(Sustained, SummaryComparesTheFirstAndLastMinute) {
    // 2 minutes in 5 s intervals: 20 tok/s the first minute, 14 the second, 2 J per interval.
    std::vector<SustainedSample> xs;
    for (int i = 1; i <= 24; ++i) {
        xs.push_back(sample(5.0 * i, 5.0, i <= 12 ? 100 : 70, 2.0, i <= 12 ? 40.0 : 50.0));
    }
    const SustainedSummary s = summarize(xs);
    EXPECT_EQ(s.tokens, 12 * 100 + 12 * 70);
    EXPECT_DOUBLE_EQ(s.window_s, 60.0);
    EXPECT_DOUBLE_EQ(s.first_tok_s, 20.0);
    EXPECT_DOUBLE_EQ(s.last_tok_s, 14.0);
    EXPECT_DOUBLE_EQ(s.drop_pct, 30.0);
    EXPECT_DOUBLE_EQ(s.energy_j, 48.0);
    EXPECT_DOUBLE_EQ(s.j_per_token, 48.0 / 2040);
    EXPECT_DOUBLE_EQ(s.mean_power_w, 0.4);
    EXPECT_DOUBLE_EQ(s.first_temp_c, 40.0);
    EXPECT_DOUBLE_EQ(s.last_temp_c, 50.0);
    EXPECT_DOUBLE_EQ(s.temp_c_max, 50.0);

    // A 20 s run: the windows are its halves; no energy reading, no J/token.
    std::vector<SustainedSample> short_run;
    for (int i = 1; i <= 4; ++i)
        short_run.push_back(sample(5.0 * i, 5.0, i <= 2 ? 50 : 40, NAN, 40));
    const SustainedSummary t = summarize(short_run);
    EXPECT_DOUBLE_EQ(t.window_s, 10.0);
    EXPECT_DOUBLE_EQ(t.first_tok_s, 10.0);
    EXPECT_DOUBLE_EQ(t.last_tok_s, 8.0);
    EXPECT_TRUE(std::isnan(t.j_per_token));
}

TEST(Sustained, BenchDurationRecordsTheSeriesWithSensors) {
    const std::string sysfs = phone_tree(50.0);
    const std::string dir = test::temp_dir();
    const auto r = memwall(sysfs, "bench -m " + stories() +
                                      " --duration 2s --interval 0.5s -p 16 -n 32 -t 1 --json "
                                      "--plot " +
                                      dir + "/sustained.svg");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json doc = json::parse(r.out);
    EXPECT_EQ(doc["kind"], "memwall.sustained_bench");
    EXPECT_EQ(doc["conditions"], "tg d16-48 t1 kv f16 no sampler");
    const json& samples = doc["samples"];
    ASSERT_GE(samples.size(), 3u);
    ASSERT_LE(samples.size(), 5u);
    for (const json& s : samples) {
        EXPECT_GT(s["tok_s"].get<double>(), 0);
        EXPECT_EQ(s["cpu_mhz"], json({1800.0}));
        EXPECT_EQ(s["temp_c"], json({50.0}));
        EXPECT_NEAR(s["power_w"].get<double>(), 2.0, 1e-9);
        EXPECT_GE(s["n_past"][0].get<int>(), 16);  // the prompt is kept by every shift
        EXPECT_LE(s["n_past"][1].get<int>(), 48);
        EXPECT_GT(s["rss_bytes"].get<uint64_t>(), 0u);
    }
    const json& m = doc["summary"];
    EXPECT_NEAR(m["seconds"].get<double>(), 2.0, 0.5);
    EXPECT_DOUBLE_EQ(m["window_s"].get<double>(), m["seconds"].get<double>() / 2);
    EXPECT_GT(m["first_tok_s"].get<double>(), 0);
    // 2 W for every token: J/token x tok/s is the power.
    EXPECT_NEAR(m["j_per_token"].get<double>() * m["tok_s"].get<double>(), 2.0, 0.02);
    EXPECT_TRUE(doc["sensors"]["missing"].empty());
    EXPECT_EQ(doc["sensors"]["energy_source"], "battery battery (current_now x voltage_now)");

    const std::string svg = test::read_text(dir + "/sustained.svg");
    EXPECT_EQ(test::xml_problem(svg), "");
    EXPECT_EQ(test::count_of(svg, "<g class=\"series\">"), 4u);  // tok/s, zone, cpu0, power
    const test::PngRender png = test::render_png(svg, "bench_duration_plot");
    if (png.available) {
        EXPECT_EQ(png.exit_code, 0) << png.err;
        EXPECT_EQ(png.err, "");
        std::printf("chart rendered: %s\n", png.png_path.c_str());
    }
}

TEST(Sustained, MissingSensorsAreListedAndTheCsvHasTheirColumns) {
    const std::string empty = test::temp_dir();
    auto r =
        memwall(empty, "bench -m " + stories() + " --duration 1s --interval 0.5s -p 8 -n 16 -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(first 0\.5\d* s: )"))) << r.out;
    EXPECT_NE(r.out.find("missing sensor: cpufreq: no devices/system/cpu/cpu*/cpufreq/"
                         "scaling_cur_freq under " +
                         empty),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("missing sensor: thermal:"), std::string::npos);
    EXPECT_NE(r.out.find("missing sensor: energy:"), std::string::npos);
    EXPECT_EQ(r.out.find("J per token"), std::string::npos);

    const std::string sysfs = phone_tree(41.0);
    r = memwall(sysfs,
                "bench -m " + stories() + " --duration 1s --interval 0.25s -p 8 -n 16 -t 1 --csv");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string head = r.out.substr(0, r.out.find('\n'));
    EXPECT_NE(head.find("t_s,seconds,tokens,tok_s,"), std::string::npos) << head;
    EXPECT_NE(head.find(",cpu0_mhz,zone0_cpu-thermal_c"), std::string::npos) << head;
    EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 4);
}

TEST(Sustained, BenchDurationRejectsBadFlags) {
    const std::string empty = test::temp_dir();
    auto r = memwall(empty, "bench -m " + stories() + " --duration soon");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--duration soon: expected a duration such as 90s, 10m or 1h"),
              std::string::npos)
        << r.err;
    r = memwall(empty, "bench -m " + stories() + " --duration 1s --interval 2s");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--interval is longer than --duration"), std::string::npos);
    r = memwall(empty, "bench -m " + stories() + " -p 4 -n 2 --plot x.svg");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("go with --duration"), std::string::npos) << r.err;
}

TEST(PacingCli, RunBacksOffOnAHotTraceAndLogsItWithVerbose) {
    const std::string hot = phone_tree(90.0);
    const std::string args = "run -m " + stories() + " -p 'Once upon a time' -n 40 --temp 0 -t 2";
    const auto plain = memwall(hot, args);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    const auto paced = memwall(hot, args + " --max-temp 45 --verbose");
    ASSERT_EQ(paced.exit_code, 0) << paced.err;
    EXPECT_NE(paced.err.find("pacing: 90.0 °C >= 45.0 °C (thermal_zone0 cpu-thermal): back off "
                             "to 1 thread"),
              std::string::npos)
        << paced.err;
    EXPECT_NE(paced.err.find("pacing:  1 back-off, 0 recoveries"), std::string::npos) << paced.err;
    EXPECT_NE(paced.err.find("hottest 90.0 °C (limit 45.0 °C)"), std::string::npos) << paced.err;
    // Pacing changes when tokens come, never which.
    EXPECT_EQ(paced.out, plain.out);
    // Without --verbose the decisions are not printed; the summary is.
    const auto quiet = memwall(hot, args + " --max-temp 45");
    EXPECT_EQ(quiet.err.find("back off to"), std::string::npos) << quiet.err;
    EXPECT_NE(quiet.err.find("pacing:  1 back-off"), std::string::npos) << quiet.err;
}

TEST(PacingCli, RunWithoutSensorsWarnsAndRunsUnpaced) {
    const std::string empty = test::temp_dir();
    const auto r =
        memwall(empty, "run -m " + stories() + " -p 'Once' -n 8 --temp 0 -t 1 --max-temp 45");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: --max-temp: no class/thermal/thermal_zone*/temp under " + empty +
                         ": there is no temperature to pace by"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("no temperature was read"), std::string::npos) << r.err;
}

TEST(PacingCli, MaxTpsHoldsASteadyRate) {
    const std::string empty = test::temp_dir();
    const auto start = std::chrono::steady_clock::now();
    const auto r = memwall(empty, "run -m " + stories() +
                                      " -p 'Once' -n 11 --temp 0 -t 1 "
                                      "--ignore-eos --max-tps 40");
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // 10 gaps of at least 25 ms between 11 tokens (stories260K decodes one in well under 1 ms).
    EXPECT_GE(s, 0.25);
    EXPECT_NE(r.err.find("limit 40 tok/s"), std::string::npos) << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex("; ([0-9.]+) tok/s over the wall time")))
        << r.err;
    EXPECT_LE(std::stod(m[1]), 41.0);
    EXPECT_GE(std::stod(m[1]), 30.0);
}

TEST(StatedConditions, EveryTokPerSecondSaysItsConditions) {
    const std::string empty = test::temp_dir();
    auto r = memwall(empty, "run -m " + stories() + " -p 'Once upon a time' -n 12 --temp 0 -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(tok/s \(pp\d+ d0 t2 kv f16 no sampler\))")))
        << r.err;
    EXPECT_TRUE(
        std::regex_search(r.err, std::regex(R"(tok/s \(tg\d+ d\d+-\d+ t2 kv f16 greedy\))")))
        << r.err;
    r = memwall(empty, "run -m " + stories() +
                           " -p 'Once' -n 4 -t 1 --temp 0.7 --top-k 20 "
                           "-ctk bf16 -s 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("t1 kv bf16/f16 temp 0.7 top-k 20 top-p 0.95 min-p 0.05)"),
              std::string::npos)
        << r.err;

    r = memwall(empty, "bench -m " + stories() + " -p 8 -n 4 -d 4 -r 1 -t 1 --no-bandwidth");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("pp8 d4 t1 kv f16 no sampler"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tg4 d4 t1 kv f16 no sampler"), std::string::npos) << r.out;

    r = memwall(empty, "plan --model llama-3.1-8b --device phone-12g");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(
        std::regex_search(r.out, std::regex(R"(tok/s at phone-12g: tg d0 t\d+ kv f16 no sampler)")))
        << r.out;

    const std::string dir = test::temp_dir();
    std::string text;
    for (int i = 0; i < 40; ++i) text += "Once upon a time there was a little girl. ";
    put(dir, "text.txt", text);
    r = memwall(empty, "perplexity -m " + stories() + " -f " + dir + "/text.txt -c 32 -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(
        std::regex_search(r.out, std::regex(R"(\d+ tok/s \(pp32 d0 t1 kv f16 no sampler\))")))
        << r.out;
    EXPECT_NE(r.err.find("tok/s (pp32 d0 t1 kv f16 no sampler)"), std::string::npos) << r.err;
}

TEST(PlanPlot, RooflineOfA7BModelRenders) {
    const std::string dir = test::temp_dir();
    const auto r = memwall(test::temp_dir(),
                           "plan --model llama-3.1-8b --device phone-12g "
                           "--device laptop-16g --plot " +
                               dir + "/plan.svg");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string svg = test::read_text(dir + "/plan.svg");
    EXPECT_EQ(test::xml_problem(svg), "");
    EXPECT_EQ(test::count_of(svg, "<g class=\"series\">"), 4u);
    EXPECT_NE(svg.find(">Q4_K_M<"), std::string::npos);
    const test::PngRender png = test::render_png(svg, "plan_plot");
    if (!png.available) GTEST_SKIP() << "rsvg-convert is not installed (Debian librsvg2-bin)";
    EXPECT_EQ(png.exit_code, 0) << png.err;
    EXPECT_EQ(png.err, "");
    std::printf("chart rendered: %s\n", png.png_path.c_str());
}

TEST(PlanPlot, PlotCommandChartsASavedDocument) {
    const std::string dir = test::temp_dir();
    put(dir, "bars.json", R"({"chart": "bars", "title": "t", "panels": [{"y_label": "tok/s",
        "groups": ["a", "b"], "series": [{"name": "memwall", "values": [1, 2]}]}]})");
    auto r = memwall(dir, "plot " + dir + "/bars.json -o " + dir + "/bars.svg");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::xml_problem(test::read_text(dir + "/bars.svg")), "");
    put(dir, "bad.json", "[1, 2]");
    r = memwall(dir, "plot " + dir + "/bad.json -o " + dir + "/bad.svg");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(dir + "/bad.svg: chart: the document is none of"), std::string::npos)
        << r.err;
}

}  // namespace
}  // namespace mw
