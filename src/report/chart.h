// Charts as SVG documents, drawn with report/svg.h: line charts in stacked panels sharing one x
// axis (the sustained bench over time, the roofline of a plan), and grouped bar charts (memwall
// against llama.cpp). Axes with ticks and units, a legend per panel, readable text.
//
// Structure the tests rely on: each series is a <g class="series"> whose <title> is its name;
// axes are <g class="axis x"> / <g class="axis y"> with one <text> per tick; the axis titles
// are <text class="axis-label">; legends are <g class="legend"> with one <g class="legend-item">
// per series.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mw::chart {

struct Axis {
    std::string label;               // with its unit: "decode (tok/s)"
    bool log = false;                // log10 scale (values <= 0 are not drawn)
    std::optional<double> min, max;  // forced ends; else from the data, rounded to ticks
};

enum class Style { line, dashed, points, line_points, dashed_points };
enum class Marker { circle, diamond, square };

struct Series {
    std::string name;
    std::vector<double> x, y;  // a NaN y leaves a gap in a line
    Style style = Style::line;
    Marker marker = Marker::circle;
    std::vector<std::string> labels;  // optional text beside each point
    std::vector<bool> hollow;         // optional: points drawn unfilled
    int color = -1;                   // palette index; -1: the series' position in the panel
};

struct Panel {
    Axis y;
    std::vector<Series> series;
    std::string title;  // above the panel (optional)
    std::string note;   // shown in the plot area when there is nothing to draw
};

struct LineChart {
    std::string title;
    std::vector<std::string> subtitle;  // lines under the title
    Axis x;
    std::vector<Panel> panels;
    std::vector<std::string> footer;  // lines under the chart
    double width = 960;
    double panel_height = 230;
};

std::string render(const LineChart& chart);

struct BarPanel {
    std::string title;
    Axis y;                                   // linear, from 0
    std::vector<std::string> groups;          // '\n' splits a label over lines
    std::vector<std::string> series;          // one bar per series in each group
    std::vector<std::vector<double>> values;  // [series][group]; NaN: no bar
};

struct BarChart {
    std::string title;
    std::vector<std::string> subtitle;
    std::vector<BarPanel> panels;
    std::vector<std::string> footer;
    double width = 960;
    double panel_height = 260;
};

std::string render(const BarChart& chart);

// The tick positions an axis from lo to hi gets (inclusive ends rounded outwards): 1-2-5 steps
// on a linear axis, powers of ten (and 2, 5 within them over few decades) on a log axis.
std::vector<double> ticks(double lo, double hi, bool log);
// A tick's text: the shortest of a few significant digits ("0.5", "20", "1500", "0.02").
std::string tick_text(double v);

}  // namespace mw::chart
