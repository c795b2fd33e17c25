// Helpers shared by the tests: where ../shared is, reading files, building GGUF bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// Defined in ASan builds (GCC and clang), whose memory use and speed differ from a release
// build: tests of RSS or of long runs scale themselves down or skip.
#if defined(__SANITIZE_ADDRESS__)
#define MW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MW_TEST_SANITIZED 1
#endif
#endif

namespace mw::test {

// The shared data folder (../shared beside the project, or $MEMWALL_SHARED_DIR). Fails the
// calling test with a clear message when it is missing.
std::string shared_dir();
// shared_dir() + "/" + relative; fails the test if the file does not exist.
std::string shared_path(const std::string& relative);
std::vector<uint8_t> read_file(const std::string& path);
std::string read_text(const std::string& path);
// A fresh temporary directory for this test, removed with its contents when the test process
// exits (MEMWALL_KEEP_TEST_TMP=1 keeps it).
std::string temp_dir();
// sqrt(sum (a - b)^2 / sum b^2) over n values: how far a is from the reference b.
double rel_rms(const float* a, const float* b, size_t n);
// Path of the memwall CLI binary built with the tests.
std::string cli_path();

struct CommandResult {
    int exit_code;
    std::string out;
    std::string err;
};
// Runs the shell command line and captures stdout and stderr.
CommandResult run_command(const std::string& command_line);

}  // namespace mw::test
