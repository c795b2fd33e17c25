#include "report/svg.h"

#include <fmt/format.h>

#include <cmath>

namespace mw::svg {

std::string escape(std::string_view text) {
    std::string s;
    s.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                s += "&amp;";
                break;
            case '<':
                s += "&lt;";
                break;
            case '>':
                s += "&gt;";
                break;
            case '"':
                s += "&quot;";
                break;
            case '\'':
                s += "&apos;";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') break;
                s += c;
        }
    }
    return s;
}

std::string num(double v) {
    if (!std::isfinite(v)) return "0";
    std::string s = fmt::format("{:.2f}", v);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    if (s == "-0") s = "0";
    return s;
}

Writer::Writer(double width, double height, std::string_view title) {
    out_ = fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\">\n"
        "<title>{2}</title>\n",
        num(width), num(height), escape(title));
    open_.push_back("svg");
}

void Writer::attrs_out(const Attr* begin, const Attr* end) {
    for (const Attr* a = begin; a != end; ++a) {
        out_ += fmt::format(" {}=\"{}\"", a->name, escape(a->value));
    }
}

void Writer::open(std::string_view tag, std::initializer_list<Attr> attrs) {
    out_ += fmt::format("<{}", tag);
    attrs_out(attrs.begin(), attrs.end());
    out_ += ">\n";
    open_.emplace_back(tag);
}

void Writer::close() {
    if (open_.empty()) return;
    out_ += fmt::format("</{}>\n", open_.back());
    open_.pop_back();
}

void Writer::leaf(std::string_view tag, std::initializer_list<Attr> attrs) {
    out_ += fmt::format("<{}", tag);
    attrs_out(attrs.begin(), attrs.end());
    out_ += "/>\n";
}

void Writer::leaf(std::string_view tag, const std::vector<Attr>& attrs) {
    out_ += fmt::format("<{}", tag);
    attrs_out(attrs.data(), attrs.data() + attrs.size());
    out_ += "/>\n";
}

void Writer::text(double x, double y, std::string_view content, std::initializer_list<Attr> attrs) {
    out_ += fmt::format("<text x=\"{}\" y=\"{}\"", num(x), num(y));
    attrs_out(attrs.begin(), attrs.end());
    out_ += fmt::format(">{}</text>\n", escape(content));
}

void Writer::element(std::string_view tag, std::string_view content) {
    out_ += fmt::format("<{0}>{1}</{0}>\n", tag, escape(content));
}

std::string Writer::finish() {
    while (!open_.empty()) close();
    return std::move(out_);
}

}  // namespace mw::svg
