#include "report/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/svg.h"

namespace mw::chart {
namespace {

using svg::num;

// Okabe-Ito: distinguishable with the common colour-vision deficiencies; yellow left out (too
// pale on white).
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#8C564B", "#444444"};
const char* palette(int i) {
    return kPalette[((i % 8) + 8) % 8];
}

constexpr double kLeft = 86;        // y tick labels and the y axis title
constexpr double kLegendMin = 170;  // right margin for the legend, at least
constexpr double kLegendMax = 330;  // and at most
constexpr double kTop = 14;         // above the title
constexpr double kTitle = 26;       // title line
constexpr double kLine = 16;        // a subtitle or footer line
constexpr double kPanelTitle = 20;  // a panel's own title
constexpr double kPanelGap = 44;    // under a panel: its x tick labels and space
constexpr double kXLabel = 22;      // the x axis title
constexpr double kLegendRow = 18;   // one legend entry
constexpr double kCharWidth = 0.6;  // average glyph width / font size (DejaVu Sans)

bool usable(double v, bool log) {
    return std::isfinite(v) && (!log || v > 0);
}

double nice_step(double range, int target) {
    if (!(range > 0) || !std::isfinite(range)) return 1.0;
    const double raw = range / target;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / mag;
    return (norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0) * mag;
}

struct Range {
    double lo = 0, hi = 1;
};

// The axis ends: the data's extent (or the forced ends), rounded outwards to ticks; pad: with
// some room beyond the data, so that no line runs along the frame (value axes).
Range axis_range(const Axis& a, double dmin, double dmax, bool pad) {
    if (!(dmin <= dmax)) {  // no data
        dmin = a.log ? 1.0 : 0.0;
        dmax = a.log ? 10.0 : 1.0;
    }
    double lo = a.min.value_or(dmin), hi = a.max.value_or(dmax);
    if (a.log) {
        if (!(lo > 0)) lo = dmin > 0 ? dmin : 1.0;
        if (!(hi > lo)) hi = lo * 10;
        Range r{a.min ? lo : std::pow(10.0, std::floor(std::log10(lo) + 1e-9)),
                a.max ? hi : std::pow(10.0, std::ceil(std::log10(hi) - 1e-9))};
        if (!(r.hi > r.lo)) r.hi = r.lo * 10;
        return r;
    }
    if (!(hi > lo)) hi = lo + (lo == 0 ? 1.0 : std::abs(lo) * 0.1);
    if (pad && !a.max) hi += 0.04 * (hi - lo);
    if (pad && !a.min) lo -= 0.04 * (hi - lo);
    const double step = nice_step(hi - lo, 5);
    Range r{a.min ? lo : std::floor(lo / step + 1e-9) * step,
            a.max ? hi : std::ceil(hi / step - 1e-9) * step};
    if (!(r.hi > r.lo)) r.hi = r.lo + step;
    return r;
}

// Value -> pixel along one axis.
struct Scale {
    Range r;
    bool log = false;
    double p0 = 0, p1 = 1;
    double operator()(double v) const {
        const double t =
            log ? (std::log10(v) - std::log10(r.lo)) / (std::log10(r.hi) - std::log10(r.lo))
                : (v - r.lo) / (r.hi - r.lo);
        return p0 + t * (p1 - p0);
    }
};

std::string fit_text(const std::string& s, double max_width, double font) {
    const size_t max_chars = size_t(std::max(4.0, max_width / (kCharWidth * font)));
    if (s.size() <= max_chars) return s;
    // Cut on a UTF-8 character boundary.
    size_t cut = max_chars - 1;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return s.substr(0, cut) + "\u2026";
}

// Lines broken at spaces to fit max_width (a word longer than that is cut by fit_text later).
std::vector<std::string> wrap(const std::vector<std::string>& lines, double max_width,
                              double font) {
    const size_t max_chars = size_t(std::max(8.0, max_width / (kCharWidth * font)));
    std::vector<std::string> out;
    for (const std::string& line : lines) {
        std::string rest = line;
        while (rest.size() > max_chars) {
            size_t cut = rest.rfind(' ', max_chars);
            if (cut == std::string::npos || cut == 0) break;
            out.push_back(rest.substr(0, cut));
            rest = "  " + rest.substr(cut + 1);
        }
        out.push_back(rest);
    }
    return out;
}

// The right margin the longest legend entry needs.
double legend_margin(size_t longest_name) {
    // The swatch (28), the gaps (16 + 24 + a few) and the text.
    return std::clamp(72.0 + kCharWidth * 12 * double(longest_name), kLegendMin, kLegendMax);
}

void title_block(svg::Writer& w, double& y, const std::string& title,
                 const std::vector<std::string>& subtitle, double width) {
    y += kTitle;
    w.text(kLeft, y - 8, fit_text(title, width - kLeft - 20, 17),
           {{"class", "title"}, {"font-size", "17"}, {"font-weight", "bold"}, {"fill", "#111"}});
    for (const std::string& line : subtitle) {
        y += kLine;
        w.text(kLeft, y - 4, fit_text(line, width - kLeft - 20, 12),
               {{"class", "subtitle"}, {"font-size", "12"}, {"fill", "#444"}});
    }
    y += 10;
}

void footer_block(svg::Writer& w, double& y, const std::vector<std::string>& footer, double width) {
    for (const std::string& line : footer) {
        y += kLine;
        w.text(kLeft, y - 4, fit_text(line, width - kLeft - 20, 11),
               {{"class", "footer"}, {"font-size", "11"}, {"fill", "#555"}});
    }
}

void marker(svg::Writer& w, Marker m, double x, double y, double r, const char* color,
            bool hollow) {
    const std::string fill = hollow ? "#ffffff" : color;
    switch (m) {
        case Marker::circle:
            w.leaf("circle", {{"cx", num(x)},
                              {"cy", num(y)},
                              {"r", num(r)},
                              {"fill", fill},
                              {"stroke", color},
                              {"stroke-width", "1.5"}});
            break;
        case Marker::square:
            w.leaf("rect", {{"x", num(x - r)},
                            {"y", num(y - r)},
                            {"width", num(2 * r)},
                            {"height", num(2 * r)},
                            {"fill", fill},
                            {"stroke", color},
                            {"stroke-width", "1.5"}});
            break;
        case Marker::diamond: {
            const double d = r * 1.5;
            w.leaf("polygon", {{"points", fmt::format("{},{} {},{} {},{} {},{}", num(x), num(y - d),
                                                      num(x + d), num(y), num(x), num(y + d),
                                                      num(x - d), num(y))},
                               {"fill", fill},
                               {"stroke", color},
                               {"stroke-width", "1.5"}});
            break;
        }
    }
}

bool has_line(Style s) {
    return s != Style::points;
}
bool has_markers(Style s) {
    return s == Style::points || s == Style::line_points || s == Style::dashed_points;
}

void line_attrs_out(std::vector<svg::Attr>& a, Style s, const char* color) {
    a.push_back({"fill", "none"});
    a.push_back({"stroke", color});
    a.push_back({"stroke-width", "2"});
    a.push_back({"stroke-linejoin", "round"});
    if (s == Style::dashed || s == Style::dashed_points) a.push_back({"stroke-dasharray", "7 5"});
}

// Grid, ticks and tick labels of both axes of one plot area.
void axes(svg::Writer& w, const Scale& xs, const Scale& ys, bool x_log, bool y_log, double x0,
          double x1, double y0, double y1) {
    w.open("g", {{"class", "axis y"}, {"font-size", "11"}, {"fill", "#333"}});
    for (double v : ticks(ys.r.lo, ys.r.hi, y_log)) {
        const double y = ys(v);
        w.leaf("line", {{"x1", num(x0)},
                        {"x2", num(x1)},
                        {"y1", num(y)},
                        {"y2", num(y)},
                        {"stroke", "#e3e3e3"},
                        {"stroke-width", "1"}});
        w.text(x0 - 6, y + 4, tick_text(v), {{"text-anchor", "end"}});
    }
    w.close();
    w.open("g", {{"class", "axis x"}, {"font-size", "11"}, {"fill", "#333"}});
    for (double v : ticks(xs.r.lo, xs.r.hi, x_log)) {
        const double x = xs(v);
        w.leaf("line", {{"x1", num(x)},
                        {"x2", num(x)},
                        {"y1", num(y0)},
                        {"y2", num(y1)},
                        {"stroke", "#e3e3e3"},
                        {"stroke-width", "1"}});
        w.text(x, y1 + 15, tick_text(v), {{"text-anchor", "middle"}});
    }
    w.close();
    w.leaf("rect", {{"x", num(x0)},
                    {"y", num(y0)},
                    {"width", num(x1 - x0)},
                    {"height", num(y1 - y0)},
                    {"fill", "none"},
                    {"stroke", "#888"},
                    {"stroke-width", "1"}});
}

void y_axis_label(svg::Writer& w, const std::string& label, double y0, double y1) {
    const double x = 20, y = (y0 + y1) / 2;
    w.text(x, y, fit_text(label, y1 - y0, 12),
           {{"class", "axis-label"},
            {"font-size", "12"},
            {"fill", "#222"},
            {"text-anchor", "middle"},
            {"transform", fmt::format("rotate(-90 {} {})", num(x), num(y))}});
}

struct LegendEntry {
    std::string name;
    const char* color;
    Style style;
    Marker marker;
    bool bar = false;
};

void legend(svg::Writer& w, const std::vector<LegendEntry>& entries, double x, double y0, double y1,
            double width) {
    w.open("g", {{"class", "legend"}, {"font-size", "12"}, {"fill", "#222"}});
    const size_t room = size_t(std::max(1.0, std::floor((y1 - y0 - 6) / kLegendRow)));
    const size_t shown = entries.size() <= room ? entries.size() : room - 1;
    for (size_t i = 0; i < shown; ++i) {
        const LegendEntry& e = entries[i];
        const double y = y0 + 12 + double(i) * kLegendRow;
        w.open("g", {{"class", "legend-item"}});
        if (e.bar) {
            w.leaf("rect", {{"x", num(x)},
                            {"y", num(y - 6)},
                            {"width", "22"},
                            {"height", "11"},
                            {"fill", e.color}});
        } else {
            if (has_line(e.style)) {
                std::vector<svg::Attr> a = {
                    {"x1", num(x)}, {"x2", num(x + 22)}, {"y1", num(y)}, {"y2", num(y)}};
                line_attrs_out(a, e.style, e.color);
                w.leaf("line", a);
            }
            if (has_markers(e.style)) marker(w, e.marker, x + 11, y, 3.5, e.color, false);
        }
        w.text(x + 28, y + 4, fit_text(e.name, width - 34, 12));
        w.close();
    }
    if (shown < entries.size()) {
        w.text(x, y0 + 12 + double(shown) * kLegendRow + 4,
               fmt::format("+ {} more not listed", entries.size() - shown), {{"fill", "#666"}});
    }
    w.close();
}

}  // namespace

std::vector<double> ticks(double lo, double hi, bool log) {
    std::vector<double> t;
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return t;
    if (log) {
        if (!(lo > 0)) return t;
        const double decades = std::log10(hi / lo);
        const int stride = decades > 8 ? 2 : 1;
        for (int e = int(std::floor(std::log10(lo))); e <= int(std::ceil(std::log10(hi)));
             e += stride) {
            for (double m : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}) {
                if (m > 1 && decades > 2.5) continue;
                if (m != 2 && m != 5 && m > 1 && decades > 1.2) continue;
                const double v = m * std::pow(10.0, e);
                if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
            }
        }
        return t;
    }
    const double step = nice_step(hi - lo, 5);
    for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1) {
        const double v = k * step;
        t.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
        if (t.size() > 50) break;
    }
    return t;
}

std::string tick_text(double v) {
    if (v == 0) return "0";
    const double a = std::abs(v);
    if (a >= 1e4) return fmt::format("{:.0f}", v);
    if (a < 1e-3) return fmt::format("{:.1e}", v);
    return fmt::format("{:.4g}", v);
}

std::string render(const LineChart& c) {
    const double W = c.width, H = c.panel_height;
    const std::vector<std::string> subtitle = wrap(c.subtitle, W - kLeft - 20, 12);
    const std::vector<std::string> footer = wrap(c.footer, W - kLeft - 20, 11);
    size_t longest = 0;
    for (const Panel& p : c.panels) {
        for (const Series& s : p.series) longest = std::max(longest, s.name.size());
    }
    const double right = legend_margin(longest);
    double height = kTop + kTitle + kLine * double(subtitle.size()) + 10;
    for (const Panel& p : c.panels) height += (p.title.empty() ? 0 : kPanelTitle) + H + kPanelGap;
    height += kXLabel + kLine * double(footer.size()) + 12;

    svg::Writer w(W, height, c.title);
    w.leaf("rect", {{"width", num(W)}, {"height", num(height)}, {"fill", "#ffffff"}});
    double y = kTop;
    title_block(w, y, c.title, subtitle, W);

    // One x range for every panel.
    double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin;
    for (const Panel& p : c.panels) {
        for (const Series& s : p.series) {
            for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
                if (!usable(s.x[i], c.x.log) || !usable(s.y[i], p.y.log)) continue;
                xmin = std::min(xmin, s.x[i]);
                xmax = std::max(xmax, s.x[i]);
            }
        }
    }
    const double x0 = kLeft, x1 = W - right;
    const Scale xs{axis_range(c.x, xmin, xmax, false), c.x.log, x0, x1};

    int clip_id = 0;
    for (const Panel& p : c.panels) {
        if (!p.title.empty()) {
            y += kPanelTitle;
            w.text(x0, y - 6, fit_text(p.title, x1 - x0, 13),
                   {{"class", "panel-title"},
                    {"font-size", "13"},
                    {"font-weight", "bold"},
                    {"fill", "#222"}});
        }
        const double y0 = y, y1 = y + H;
        double ymin = std::numeric_limits<double>::infinity(), ymax = -ymin;
        for (const Series& s : p.series) {
            for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
                if (!usable(s.x[i], c.x.log) || !usable(s.y[i], p.y.log)) continue;
                ymin = std::min(ymin, s.y[i]);
                ymax = std::max(ymax, s.y[i]);
            }
        }
        const Scale ys{axis_range(p.y, ymin, ymax, true), p.y.log, y1, y0};
        w.open("g", {{"class", "panel"}});
        axes(w, xs, ys, c.x.log, p.y.log, x0, x1, y0, y1);
        y_axis_label(w, p.y.label, y0, y1);
        if (!(ymin <= ymax) && !p.note.empty()) {
            w.text((x0 + x1) / 2, (y0 + y1) / 2, p.note,
                   {{"class", "note"},
                    {"font-size", "13"},
                    {"fill", "#777"},
                    {"text-anchor", "middle"}});
        }
        const std::string clip = fmt::format("clip{}", clip_id++);
        w.open("clipPath", {{"id", clip}});
        w.leaf("rect",
               {{"x", num(x0)}, {"y", num(y0)}, {"width", num(x1 - x0)}, {"height", num(y1 - y0)}});
        w.close();

        std::vector<LegendEntry> entries;
        for (size_t si = 0; si < p.series.size(); ++si) {
            const Series& s = p.series[si];
            const char* color = palette(s.color >= 0 ? s.color : int(si));
            entries.push_back({s.name, color, s.style, s.marker});
            w.open("g", {{"class", "series"}});
            w.element("title", s.name);
            w.open("g", {{"clip-path", fmt::format("url(#{})", clip)}});
            const size_t n = std::min(s.x.size(), s.y.size());
            auto ok = [&](size_t i) { return usable(s.x[i], c.x.log) && usable(s.y[i], p.y.log); };
            if (has_line(s.style)) {
                std::string points;
                auto flush = [&] {
                    if (points.find(' ') != std::string::npos) {
                        std::vector<svg::Attr> a = {{"points", points}};
                        line_attrs_out(a, s.style, color);
                        w.leaf("polyline", a);
                    }
                    points.clear();
                };
                for (size_t i = 0; i < n; ++i) {
                    if (!ok(i)) {
                        flush();
                        continue;
                    }
                    if (!points.empty()) points += ' ';
                    points += num(xs(s.x[i])) + "," + num(ys(s.y[i]));
                }
                flush();
            }
            if (has_markers(s.style)) {
                for (size_t i = 0; i < n; ++i) {
                    if (!ok(i)) continue;
                    const bool hollow = i < s.hollow.size() && s.hollow[i];
                    marker(w, s.marker, xs(s.x[i]), ys(s.y[i]),
                           s.style == Style::points ? 4.5 : 3.0, color, hollow);
                }
            }
            w.close();
            for (size_t i = 0; i < n && i < s.labels.size(); ++i) {
                if (!ok(i) || s.labels[i].empty()) continue;
                const double px = xs(s.x[i]), py = ys(s.y[i]);
                const double tw = kCharWidth * 11 * double(s.labels[i].size());
                const bool left = px + 8 + tw > x1;
                w.text(left ? px - 8 : px + 8, std::max(y0 + 11, py - 7), s.labels[i],
                       {{"class", "point-label"},
                        {"font-size", "11"},
                        {"fill", "#222"},
                        {"text-anchor", left ? "end" : "start"}});
            }
            w.close();
        }
        legend(w, entries, x1 + 16, y0, y1, right - 24);
        w.close();
        y = y1 + kPanelGap;
    }
    y += kXLabel - 18;
    w.text((x0 + x1) / 2, y, c.x.label,
           {{"class", "axis-label"},
            {"font-size", "12"},
            {"fill", "#222"},
            {"text-anchor", "middle"}});
    y += 8;
    footer_block(w, y, footer, W);
    return w.finish();
}

std::string render(const BarChart& c) {
    const double W = c.width, H = c.panel_height;
    std::vector<size_t> label_lines;
    for (const BarPanel& p : c.panels) {
        size_t lines = 1;
        for (const std::string& g : p.groups) {
            lines = std::max(lines, size_t(std::count(g.begin(), g.end(), '\n')) + 1);
        }
        label_lines.push_back(lines);
    }
    const std::vector<std::string> subtitle = wrap(c.subtitle, W - kLeft - 20, 12);
    const std::vector<std::string> footer = wrap(c.footer, W - kLeft - 20, 11);
    size_t longest = 0;
    for (const BarPanel& p : c.panels) {
        for (const std::string& s : p.series) longest = std::max(longest, s.size());
    }
    const double right = legend_margin(longest);
    double height = kTop + kTitle + kLine * double(subtitle.size()) + 10;
    for (size_t i = 0; i < c.panels.size(); ++i) {
        height += (c.panels[i].title.empty() ? 0 : kPanelTitle) + H + 18 +
                  13.0 * double(label_lines[i]) + 18;
    }
    height += kLine * double(footer.size()) + 12;

    svg::Writer w(W, height, c.title);
    w.leaf("rect", {{"width", num(W)}, {"height", num(height)}, {"fill", "#ffffff"}});
    double y = kTop;
    title_block(w, y, c.title, subtitle, W);
    const double x0 = kLeft, x1 = W - right;
    for (size_t pi = 0; pi < c.panels.size(); ++pi) {
        const BarPanel& p = c.panels[pi];
        if (!p.title.empty()) {
            y += kPanelTitle;
            w.text(x0, y - 6, fit_text(p.title, x1 - x0, 13),
                   {{"class", "panel-title"},
                    {"font-size", "13"},
                    {"font-weight", "bold"},
                    {"fill", "#222"}});
        }
        const double y0 = y, y1 = y + H;
        double vmax = 0;
        for (const auto& vs : p.values) {
            for (double v : vs) {
                if (std::isfinite(v)) vmax = std::max(vmax, v);
            }
        }
        Axis ya = p.y;
        ya.log = false;
        ya.min = 0.0;
        // Room above the tallest bar for its value.
        const Scale ys{axis_range(ya, 0, vmax > 0 ? vmax * 1.08 : 1.0, false), false, y1, y0};
        w.open("g", {{"class", "panel"}});
        w.open("g", {{"class", "axis y"}, {"font-size", "11"}, {"fill", "#333"}});
        for (double v : ticks(ys.r.lo, ys.r.hi, false)) {
            w.leaf("line", {{"x1", num(x0)},
                            {"x2", num(x1)},
                            {"y1", num(ys(v))},
                            {"y2", num(ys(v))},
                            {"stroke", "#e3e3e3"},
                            {"stroke-width", "1"}});
            w.text(x0 - 6, ys(v) + 4, tick_text(v), {{"text-anchor", "end"}});
        }
        w.close();
        y_axis_label(w, p.y.label, y0, y1);
        const size_t ng = std::max<size_t>(1, p.groups.size());
        const size_t ns = std::max<size_t>(1, p.series.size());
        const double gw = (x1 - x0) / double(ng), bw = gw * 0.76 / double(ns);
        w.open("g", {{"class", "axis x"}, {"font-size", "11"}, {"fill", "#333"}});
        for (size_t g = 0; g < p.groups.size(); ++g) {
            const double cx = x0 + gw * (double(g) + 0.5);
            size_t line = 0, start = 0;
            const std::string& label = p.groups[g];
            while (start <= label.size()) {
                const size_t end = std::min(label.find('\n', start), label.size());
                w.text(cx, y1 + 15 + 13.0 * double(line++),
                       fit_text(label.substr(start, end - start), gw - 4, 11),
                       {{"text-anchor", "middle"}});
                start = end + 1;
            }
        }
        w.close();
        std::vector<LegendEntry> entries;
        for (size_t s = 0; s < p.series.size(); ++s) {
            const char* color = palette(int(s));
            entries.push_back({p.series[s], color, Style::line, Marker::square, true});
            w.open("g", {{"class", "series"}});
            w.element("title", p.series[s]);
            for (size_t g = 0; g < p.groups.size(); ++g) {
                const double v = s < p.values.size() && g < p.values[s].size()
                                     ? p.values[s][g]
                                     : std::numeric_limits<double>::quiet_NaN();
                if (!std::isfinite(v) || v < 0) continue;
                const double bx = x0 + gw * double(g) + gw * 0.12 + bw * double(s);
                w.leaf("rect", {{"x", num(bx + 1)},
                                {"y", num(ys(v))},
                                {"width", num(std::max(1.0, bw - 2))},
                                {"height", num(y1 - ys(v))},
                                {"fill", color}});
                const std::string text = v >= 100  ? fmt::format("{:.0f}", v)
                                         : v >= 10 ? fmt::format("{:.1f}", v)
                                                   : fmt::format("{:.2f}", v);
                w.text(bx + bw / 2, ys(v) - 4, text,
                       {{"class", "bar-value"},
                        {"font-size", "10"},
                        {"fill", "#222"},
                        {"text-anchor", "middle"}});
            }
            w.close();
        }
        w.leaf("rect", {{"x", num(x0)},
                        {"y", num(y0)},
                        {"width", num(x1 - x0)},
                        {"height", num(y1 - y0)},
                        {"fill", "none"},
                        {"stroke", "#888"},
                        {"stroke-width", "1"}});
        legend(w, entries, x1 + 16, y0, y1, right - 24);
        w.close();
        y = y1 + 18 + 13.0 * double(label_lines[pi]) + 18;
    }
    footer_block(w, y, footer, W);
    return w.finish();
}

}  // namespace mw::chart
