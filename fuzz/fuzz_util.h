// Helpers the fuzz targets share: failing a run on a broken invariant, checking error messages,
// finding ../shared.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/error.h"

namespace mw::fuzz {

// Ends the run as a finding (libFuzzer saves the input).
[[noreturn]] inline void violated(const char* target, std::string_view what,
                                  std::string_view detail = {}) {
    std::fprintf(stderr, "%s: invariant violated: %.*s %.*s\n", target, int(what.size()),
                 what.data(), int(detail.size()), detail.data());
    std::abort();
}

// Errors about a file must start with its name: users see them as they are.
inline void check_message(const char* target, const Error& e, std::string_view file_name) {
    const std::string_view message = e.what();
    if (message.substr(0, file_name.size() + 2) != std::string(file_name) + ": ") {
        violated(target, "error message does not start with the file name:", message);
    }
}

// Strict UTF-8: no overlong forms, surrogates or code points above U+10FFFF.
inline bool is_valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = 0;
        uint32_t cp = 0, min = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (i + n >= s.size()) return false;  // cut off at the end
        for (size_t k = 1; k <= n; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = cp << 6 | (cc & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n + 1;
    }
    return true;
}

// ../shared beside the project (compiled in), or $MEMWALL_SHARED_DIR.
inline std::string shared_dir() {
    const char* env = std::getenv("MEMWALL_SHARED_DIR");
    return env && *env ? env : MEMWALL_SHARED_DIR;
}

}  // namespace mw::fuzz
