#include "support/svg_check.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <set>
#include <vector>

#include "support/test_support.h"

namespace mw::test {
namespace {

bool name_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool name_char(char c) {
    return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
}

// A valid reference at text[i] == '&': the five predefined entities or a character reference.
bool entity_at(const std::string& t, size_t i) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
        if (t.compare(i, std::char_traits<char>::length(e), e) == 0) return true;
    }
    if (t.compare(i, 2, "&#") != 0) return false;
    size_t j = i + 2;
    const bool hex = j < t.size() && t[j] == 'x';
    if (hex) ++j;
    const size_t start = j;
    while (j < t.size() && (hex ? std::isxdigit(static_cast<unsigned char>(t[j]))
                                : std::isdigit(static_cast<unsigned char>(t[j])))) {
        ++j;
    }
    return j > start && j < t.size() && t[j] == ';';
}

}  // namespace

std::string xml_problem(const std::string& t) {
    size_t i = 0;
    std::vector<std::string> stack;
    int roots = 0;
    auto at = [&](const std::string& why) { return fmt::format("{} at offset {}", why, i); };
    auto skip_ws = [&] {
        while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
    };
    auto name = [&]() -> std::string {
        const size_t start = i;
        if (i >= t.size() || !name_start(t[i])) return "";
        while (i < t.size() && name_char(t[i])) ++i;
        return t.substr(start, i - start);
    };
    while (i < t.size()) {
        if (t[i] != '<') {
            const size_t start = i;
            while (i < t.size() && t[i] != '<') {
                if (t[i] == '&' && !entity_at(t, i)) return at("a bare '&'");
                if (t[i] == '>' && i >= 2 && t.compare(i - 2, 3, "]]>") == 0) return at("']]>'");
                ++i;
            }
            if (stack.empty()) {
                for (size_t k = start; k < i; ++k) {
                    if (!std::isspace(static_cast<unsigned char>(t[k]))) {
                        i = k;
                        return at("text outside the root element");
                    }
                }
            }
            continue;
        }
        if (t.compare(i, 4, "<!--") == 0) {
            const size_t end = t.find("-->", i + 4);
            if (end == std::string::npos) return at("an unterminated comment");
            i = end + 3;
        } else if (t.compare(i, 2, "<?") == 0) {
            const size_t end = t.find("?>", i + 2);
            if (end == std::string::npos) return at("an unterminated processing instruction");
            if (i != 0 && t.compare(i, 5, "<?xml") == 0) return at("an XML declaration not first");
            i = end + 2;
        } else if (t.compare(i, 2, "<!") == 0) {
            return at("a declaration (DOCTYPE, CDATA) the charts never write");
        } else if (t.compare(i, 2, "</") == 0) {
            i += 2;
            const std::string n = name();
            skip_ws();
            if (i >= t.size() || t[i] != '>') return at("a malformed end tag");
            if (stack.empty() || stack.back() != n) return at("end tag </" + n + "> not matching");
            stack.pop_back();
            ++i;
        } else {
            ++i;
            const std::string n = name();
            if (n.empty()) return at("a '<' not starting a tag");
            if (stack.empty() && ++roots > 1) return at("a second root element");
            std::set<std::string> attrs;
            for (;;) {
                const size_t before = i;
                skip_ws();
                if (i >= t.size()) return at("an unterminated tag");
                if (t[i] == '/' || t[i] == '>') break;
                if (i == before) return at("attributes not separated by space");
                const std::string a = name();
                if (a.empty()) return at("a malformed attribute");
                if (!attrs.insert(a).second) return at("a repeated attribute " + a);
                skip_ws();
                if (i >= t.size() || t[i] != '=') return at("an attribute without a value");
                ++i;
                skip_ws();
                if (i >= t.size() || (t[i] != '"' && t[i] != '\'')) return at("an unquoted value");
                const char q = t[i++];
                while (i < t.size() && t[i] != q) {
                    if (t[i] == '<') return at("a '<' in an attribute value");
                    if (t[i] == '&' && !entity_at(t, i)) return at("a bare '&' in an attribute");
                    ++i;
                }
                if (i >= t.size()) return at("an unterminated attribute value");
                ++i;
            }
            if (t[i] == '/') {
                if (i + 1 >= t.size() || t[i + 1] != '>') return at("a malformed empty tag");
                i += 2;
            } else {
                stack.push_back(n);
                ++i;
            }
        }
    }
    if (!stack.empty()) return fmt::format("<{}> is never closed", stack.back());
    if (roots != 1) return "no root element";
    return "";
}

size_t count_of(const std::string& haystack, const std::string& needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string::npos;
         at = haystack.find(needle, at + needle.size())) {
        ++n;
    }
    return n;
}

std::string artifact_dir() {
    const std::string dir = MEMWALL_ARTIFACT_DIR;
    ::mkdir(dir.c_str(), 0755);
    return dir;
}

PngRender render_png(const std::string& svg, const std::string& name) {
    PngRender r;
    if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) return r;
    r.available = true;
    const std::string dir = artifact_dir();
    const std::string svg_path = dir + "/" + name + ".svg";
    r.png_path = dir + "/" + name + ".png";
    std::ofstream(svg_path, std::ios::binary | std::ios::trunc) << svg;
    std::remove(r.png_path.c_str());
    const CommandResult c =
        run_command(fmt::format("rsvg-convert -f png -o '{}' '{}'", r.png_path, svg_path));
    r.exit_code = c.exit_code;
    r.err = c.err + c.out;
    std::ifstream png(r.png_path, std::ios::binary);
    unsigned char head[24] = {};
    if (png.read(reinterpret_cast<char*>(head), sizeof head) &&
        std::string(reinterpret_cast<char*>(head) + 1, 3) == "PNG") {
        r.width = (head[16] << 24) | (head[17] << 16) | (head[18] << 8) | head[19];
        r.height = (head[20] << 24) | (head[21] << 16) | (head[22] << 8) | head[23];
    }
    return r;
}

}  // namespace mw::test
