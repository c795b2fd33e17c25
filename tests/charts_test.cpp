// Charts as SVG: well-formed XML with the series, axes and legend the data asks for, text
// escaped, and rendered by rsvg-convert (Debian librsvg2-bin) without a warning; the PNGs are
// kept under build/<preset>/test-artifacts for a person to look at.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "memwall.h"
#include "report/chart.h"
#include "report/documents.h"
#include "report/svg.h"
#include "support/svg_check.h"

namespace mw {
namespace {

using nlohmann::json;

// The SVG is well-formed, and rsvg-convert renders it at its size without a word on stderr.
void expect_renders(const std::string& svg, const std::string& name) {
    const std::string problem = test::xml_problem(svg);
    ASSERT_EQ(problem, "") << svg.substr(0, 2000);
    const test::PngRender r = test::render_png(svg, name);
    if (!r.available) {
        GTEST_SKIP() << "rsvg-convert is not installed (Debian librsvg2-bin, in "
                        "scripts/install-deps --test): the SVG was checked as XML but not rendered";
    }
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "") << "rsvg-convert warned";
    EXPECT_GT(r.width, 500);
    EXPECT_GT(r.height, 200);
    std::printf("chart rendered: %s (%d x %d)\n", r.png_path.c_str(), r.width, r.height);
}

TEST(Svg, EscapesTextAndAttributes) {
    EXPECT_EQ(svg::escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
    EXPECT_EQ(svg::escape(std::string("bell\x07 tab\t", 10)), "bell tab\t");
    EXPECT_EQ(svg::num(12.5), "12.5");
    EXPECT_EQ(svg::num(3.0), "3");
    EXPECT_EQ(svg::num(-0.001), "0");
    svg::Writer w(10, 10, "t<&>");
    w.text(1, 2, "x < y & \"z\"", {{"class", "a&b"}});
    const std::string doc = w.finish();
    EXPECT_EQ(test::xml_problem(doc), "") << doc;
    EXPECT_NE(doc.find("<title>t&lt;&amp;&gt;</title>"), std::string::npos) << doc;
    EXPECT_NE(doc.find(">x &lt; y &amp; &quot;z&quot;</text>"), std::string::npos) << doc;
}

TEST(Svg, TheXmlCheckerCatchesMistakes) {
    EXPECT_EQ(test::xml_problem("<a><b/></a>"), "");
    EXPECT_NE(test::xml_problem("<a><b></a>"), "");
    EXPECT_NE(test::xml_problem("<a>x & y</a>"), "");
    EXPECT_NE(test::xml_problem("<a b=\"1\" b=\"2\"/>"), "");
    EXPECT_NE(test::xml_problem("<a b=1/>"), "");
    EXPECT_NE(test::xml_problem("<a/><b/>"), "");
    EXPECT_NE(test::xml_problem("<a>"), "");
}

TEST(Chart, TicksAreRoundNumbers) {
    EXPECT_EQ(chart::ticks(0, 10, false), (std::vector<double>{0, 2, 4, 6, 8, 10}));
    const std::vector<double> unit = chart::ticks(0, 1, false);
    ASSERT_EQ(unit.size(), 6u);
    for (size_t i = 0; i < unit.size(); ++i) EXPECT_NEAR(unit[i], 0.2 * double(i), 1e-12);
    EXPECT_EQ(chart::ticks(1, 100, true), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
    EXPECT_EQ(chart::ticks(1, 1e4, true), (std::vector<double>{1, 10, 100, 1000, 1e4}));
    EXPECT_EQ(chart::tick_text(0.5), "0.5");
    EXPECT_EQ(chart::tick_text(1500), "1500");
    EXPECT_EQ(chart::tick_text(25000), "25000");
    EXPECT_EQ(chart::tick_text(0.02), "0.02");
}

TEST(Chart, LineChartHasItsSeriesAxesAndLegend) {
    chart::LineChart c;
    c.title = "A <test> & its title";
    c.subtitle = {"one line", "two lines"};
    c.x.label = "time (s)";
    chart::Panel a;
    a.y.label = "decode (tok/s)";
    a.series.push_back(
        {"fast & \"first\"", {0, 1, 2, 3}, {10, 11, NAN, 12}, chart::Style::line_points});
    a.series.push_back({"slow", {0, 1, 2, 3}, {5, 6, 7, 8}, chart::Style::dashed});
    chart::Panel b;
    b.y = {"temperature (°C)", false, std::nullopt, std::nullopt};
    b.series.push_back({"zone 0", {0, 3}, {40, 45}});
    chart::Panel empty;
    empty.y.label = "power (W)";
    empty.note = "no power sensor";
    c.panels = {a, b, empty};
    const std::string svg = chart::render(c);
    EXPECT_EQ(test::count_of(svg, "<g class=\"series\">"), 3u);
    EXPECT_EQ(test::count_of(svg, "<g class=\"legend-item\">"), 3u);
    EXPECT_EQ(test::count_of(svg, "<g class=\"axis x\""), 3u);
    EXPECT_EQ(test::count_of(svg, "<g class=\"axis y\""), 3u);
    for (const char* label :
         {">decode (tok/s)<", ">temperature (°C)<", ">time (s)<", ">power (W)<"}) {
        EXPECT_NE(svg.find(label), std::string::npos) << label;
    }
    EXPECT_EQ(test::count_of(svg, "class=\"axis-label\""), 4u);
    EXPECT_NE(svg.find("<title>fast &amp; &quot;first&quot;</title>"), std::string::npos);
    EXPECT_NE(svg.find("A &lt;test&gt; &amp; its title"), std::string::npos);
    EXPECT_NE(svg.find(">no power sensor<"), std::string::npos);
    // The NaN ends the first series' line after two points (the lone last point is a marker);
    // the dashed series and the zone are a line each.
    EXPECT_EQ(test::count_of(svg, "<polyline"), 3u);
    EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
    expect_renders(svg, "chart_line");
}

TEST(Chart, BarChartFromASpec) {
    const json spec = {{"chart", "bars"},
                       {"title", "memwall vs llama.cpp"},
                       {"subtitle", {"median of 3 alternating rounds"}},
                       {"panels",
                        {{{"title", "prompt"},
                          {"y_label", "prompt (tok/s)"},
                          {"groups", {"model-a\nt=1", "model-a\nt=2"}},
                          {"series",
                           {{{"name", "memwall"}, {"values", {100.5, 190}}},
                            {{"name", "llama.cpp"}, {"values", {90, nullptr}}}}}},
                         {{"title", "decode"},
                          {"y_label", "decode (tok/s)"},
                          {"groups", {"model-a\nt=1", "model-a\nt=2"}},
                          {"series",
                           {{{"name", "memwall"}, {"values", {10, 18}}},
                            {{"name", "llama.cpp"}, {"values", {9, 17}}}}}}}}};
    char* svg_c = mw_chart_svg(spec.dump().c_str());
    ASSERT_NE(svg_c, nullptr) << mw_last_error();
    const std::string svg = svg_c;
    mw_free_string(svg_c);
    EXPECT_EQ(test::count_of(svg, "<g class=\"series\">"), 4u);
    EXPECT_EQ(test::count_of(svg, "<g class=\"legend-item\">"), 4u);
    EXPECT_EQ(test::count_of(svg, "class=\"bar-value\""), 7u);  // one value is null: no bar
    EXPECT_NE(svg.find(">190<"), std::string::npos);
    EXPECT_NE(svg.find(">17.0<"), std::string::npos);
    EXPECT_NE(svg.find(">prompt (tok/s)<"), std::string::npos);
    EXPECT_NE(svg.find(">t=2<"), std::string::npos);
    expect_renders(svg, "chart_bars");
}

TEST(Chart, BadDocumentsNameWhatIsWrong) {
    auto error_of = [](const std::string& doc) {
        char* svg = mw_chart_svg(doc.c_str());
        EXPECT_EQ(svg, nullptr);
        mw_free_string(svg);
        return std::string(mw_last_error());
    };
    EXPECT_NE(error_of("{nope").find("chart: not valid JSON"), std::string::npos);
    EXPECT_NE(error_of("{\"a\": 1}").find("none of a sustained bench"), std::string::npos);
    EXPECT_NE(error_of(R"({"chart": "bars", "panels": [{"groups": ["a"], "series":
                           [{"name": "s", "values": [1, 2]}]}]})")
                  .find("panel 0 series \"s\" has 2 values for 1 groups"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"chart": "bars", "panels": [{"groups": [3], "series": []}]})")
                  .find("a group label is not text"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"kind": "memwall.sustained_bench", "samples": 3})")
                  .find("\"samples\" of the sustained bench is not an array"),
              std::string::npos);
    EXPECT_EQ(mw_chart_svg(nullptr), nullptr);
}

// A sustained bench document as bench --duration writes it: 2 zones, 2 cores, a battery.
json sustained_doc(bool with_sensors) {
    json samples = json::array();
    for (int i = 1; i <= 24; ++i) {
        const double tok_s = i <= 12 ? 20.0 : 14.0;
        samples.push_back(
            {{"t_s", 5.0 * i},
             {"seconds", 5.0},
             {"tokens", int(tok_s * 5)},
             {"tok_s", tok_s},
             {"n_past", {512, 640}},
             {"threads", 4},
             {"idle_s", 0.0},
             {"cpu_mhz", with_sensors ? json{2400 - 20 * i, 2300 - 20 * i} : json::array()},
             {"temp_c",
              with_sensors ? json{40 + i, i == 7 ? json(nullptr) : json(35 + i)} : json::array()},
             {"power_w", with_sensors ? json(4.5) : json(nullptr)},
             {"energy_j", with_sensors ? json(22.5) : json(nullptr)},
             {"rss_bytes", 100 << 20}});
    }
    json sensors = {
        {"root", "/sys"},
        {"cpus", with_sensors ? json{0, 1} : json::array()},
        {"thermal_zones", with_sensors ? json{{{"zone", 0}, {"type", "cpu-thermal"}},
                                              {{"zone", 1}, {"type", "battery"}}}
                                       : json::array()},
        {"energy_source", with_sensors ? "battery battery (current_now x voltage_now)" : ""},
        {"missing", with_sensors ? json::array()
                                 : json{"thermal: no class/thermal/thermal_zone*/temp under /sys"}},
        {"warnings", json::array()}};
    return {{"kind", "memwall.sustained_bench"},
            {"model", "m.gguf"},
            {"model_desc", "test model <Q4_0>"},
            {"conditions", "tg d512-640 t4 kv f16 no sampler"},
            {"threads", 4},
            {"duration_s", 120},
            {"interval_s", 5},
            {"pacing", nullptr},
            {"sensors", sensors},
            {"samples", samples},
            {"summary",
             {{"tokens", 2040},
              {"seconds", 120},
              {"tok_s", 17},
              {"window_s", 60},
              {"first_tok_s", 20},
              {"last_tok_s", 14},
              {"drop_pct", 30},
              {"energy_j", with_sensors ? json(540) : json(nullptr)},
              {"j_per_token", with_sensors ? json(0.2647) : json(nullptr)},
              {"mean_power_w", 4.5}}}};
}

TEST(Chart, SustainedBenchOverTime) {
    const std::string svg = chart_svg(sustained_doc(true).dump());
    // tok/s; two zones; two cores; power.
    EXPECT_EQ(test::count_of(svg, "<g class=\"series\">"), 1u + 2u + 2u + 1u);
    for (const char* label : {">decode (tok/s)<", ">temperature (°C)<", ">CPU frequency (MHz)<",
                              ">power (W)<", ">time since the start (s)<"}) {
        EXPECT_NE(svg.find(label), std::string::npos) << label;
    }
    EXPECT_NE(svg.find("first 60 s: 20.00 tok/s, last 60 s: 14.00 tok/s (-30.0 %)"),
              std::string::npos);
    EXPECT_NE(svg.find("0.265 J per token"), std::string::npos);
    EXPECT_NE(svg.find("<title>zone 0 cpu-thermal</title>"), std::string::npos);
    EXPECT_NE(svg.find("test model &lt;Q4_0&gt;"), std::string::npos);
    expect_renders(svg, "chart_sustained");

    // Without sensors: tok/s alone, and what was missing said under the chart.
    const std::string bare = chart_svg(sustained_doc(false).dump());
    EXPECT_EQ(test::count_of(bare, "<g class=\"series\">"), 1u);
    EXPECT_EQ(bare.find("temperature"), std::string::npos);
    EXPECT_NE(bare.find("missing: thermal: no class/thermal/thermal_zone*/temp under /sys"),
              std::string::npos);
    expect_renders(bare, "chart_sustained_no_sensors");
}

TEST(Chart, RooflineOfAPlan) {
    const json request = {{"models", {{{"catalogue", "llama-3.1-8b"}}}},
                          {"devices", {"phone-12g", {{"ram", "16G"}, {"bandwidth", "100G"}}}},
                          {"quants", {"Q8_0", "Q4_K_M", "Q2_K"}}};
    char* plan_c = mw_plan_json(request.dump().c_str());
    ASSERT_NE(plan_c, nullptr) << mw_last_error();
    json plan = json::parse(plan_c);
    mw_free_string(plan_c);
    ASSERT_EQ(plan["rows"].size(), 6u);
    EXPECT_NE(plan["rows"][0]["decode_conditions"].get<std::string>().find("tg d0 t"),
              std::string::npos);
    // A measured point, as `bench --record` leaves on the machine's own device.
    plan["devices"][1]["measured_decode_tok_s"] = 15.0;
    plan["devices"][1]["measured_decode_bytes_per_token"] = 4.9e9;
    const std::string svg = chart_svg(plan.dump());
    // Per device: the ceiling and the expected speeds; one measured point.
    EXPECT_EQ(test::count_of(svg, "<g class=\"series\">"), 2u * 2u + 1u);
    for (const char* quant : {">Q8_0<", ">Q4_K_M<", ">Q2_K<"}) {
        EXPECT_NE(svg.find(quant), std::string::npos) << quant;
    }
    EXPECT_NE(svg.find(">weight bytes read per decoded token (GB)<"), std::string::npos);
    EXPECT_NE(svg.find(">decode (tok/s)<"), std::string::npos);
    EXPECT_NE(svg.find("phone-12g: ceiling, 68.3 GB/s"), std::string::npos);
    EXPECT_NE(svg.find(">measured 15.0 tok/s<"), std::string::npos);
    EXPECT_NE(svg.find("<polygon"), std::string::npos);  // the diamond
    expect_renders(svg, "chart_roofline");
}

}  // namespace
}  // namespace mw
