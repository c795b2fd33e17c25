#include "line_reader.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#if MEMWALL_LIBEDIT
#include <dlfcn.h>
#endif

namespace cli {
namespace {

#if MEMWALL_LIBEDIT
// libedit's readline interface, opened at run time (as the Vulkan loader is): only `chat` on a
// terminal loads it, so no other command carries its pages (and libtinfo's, libbsd's) in its
// RSS, and a machine without it still runs memwall, reading plain lines.
struct Editline {
    char* (*readline)(const char*) = nullptr;
    int (*add_history)(const char*) = nullptr;
    void (*using_history)() = nullptr;
    void (*clear_history)() = nullptr;
    FILE** outstream = nullptr;  // rl_outstream

    bool open() {
        void* lib = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return false;
        readline = reinterpret_cast<char* (*)(const char*)>(dlsym(lib, "readline"));
        add_history = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "add_history"));
        using_history = reinterpret_cast<void (*)()>(dlsym(lib, "using_history"));
        clear_history = reinterpret_cast<void (*)()>(dlsym(lib, "clear_history"));
        outstream = static_cast<FILE**>(dlsym(lib, "rl_outstream"));
        return readline && add_history && using_history && clear_history && outstream;
    }
};

Editline& editline() {
    static Editline e;
    return e;
}
#endif

}  // namespace

LineReader::LineReader(bool interactive) : interactive_(interactive) {
#if MEMWALL_LIBEDIT
    if (interactive_ && editline().open()) {
        editing_ = true;
        *editline().outstream = stderr;  // stdout carries only the replies
        editline().using_history();
    }
#endif
}

LineReader::~LineReader() {
#if MEMWALL_LIBEDIT
    if (editing_) editline().clear_history();
#endif
}

bool LineReader::read(const char* prompt, std::string& line) {
#if MEMWALL_LIBEDIT
    if (editing_) {
        char* got = editline().readline(prompt);
        if (!got) return false;
        line = got;
        std::free(got);
        if (!line.empty()) editline().add_history(line.c_str());
        return true;
    }
#endif
    if (interactive_) {
        std::fputs(prompt, stderr);
        std::fflush(stderr);
    }
    return static_cast<bool>(std::getline(std::cin, line));
}

}  // namespace cli
