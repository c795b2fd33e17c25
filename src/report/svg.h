// A small SVG writer: nested elements with escaped attributes and text, nothing else. Charts are
// built on it (report/chart.h) so that no plotting runtime is needed to draw them.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace mw::svg {

// Text made safe for XML content and attribute values (& < > " ' escaped; control characters
// other than tab and newline dropped, since XML 1.0 cannot carry them).
std::string escape(std::string_view text);

// A coordinate or length: at most two decimals, no trailing zeros ("12.5", "3", "-0.25").
std::string num(double v);

struct Attr {
    std::string_view name;
    std::string value;
};

class Writer {
  public:
    // The document: width x height user units, with a <title> for screen readers and viewers.
    Writer(double width, double height, std::string_view title);

    // <tag attrs...> ... until the matching close().
    void open(std::string_view tag, std::initializer_list<Attr> attrs = {});
    void close();
    // <tag attrs.../>
    void leaf(std::string_view tag, std::initializer_list<Attr> attrs);
    void leaf(std::string_view tag, const std::vector<Attr>& attrs);
    // <text x y attrs...>content</text>
    void text(double x, double y, std::string_view content, std::initializer_list<Attr> attrs = {});
    // <tag>content</tag>, e.g. a <title> naming the group it is in.
    void element(std::string_view tag, std::string_view content);

    // Closes what is open and returns the document.
    std::string finish();

  private:
    void attrs_out(const Attr* begin, const Attr* end);

    std::string out_;
    std::vector<std::string> open_;
};

}  // namespace mw::svg
