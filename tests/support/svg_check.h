// Checking charts: XML well-formedness (a small checker, so the tests need no XML library),
// counting structure, and rendering to PNG with rsvg-convert (Debian librsvg2-bin), the PNG kept
// as a test artifact.
#pragma once

#include <string>

namespace mw::test {

// "" when text is well-formed XML with one root element; else the first problem and its offset.
std::string xml_problem(const std::string& text);

// Occurrences of needle in haystack.
size_t count_of(const std::string& haystack, const std::string& needle);

// build/<preset>/test-artifacts (created), where tests keep files for a person to look at.
std::string artifact_dir();

struct PngRender {
    bool available = false;  // rsvg-convert is installed
    int exit_code = 0;
    std::string err;  // rsvg-convert's stderr (warnings included)
    std::string png_path;
    int width = 0, height = 0;  // from the PNG header; 0 if not a PNG
};
// Writes svg to artifact_dir()/name.svg and renders artifact_dir()/name.png.
PngRender render_png(const std::string& svg, const std::string& name);

}  // namespace mw::test
