#include "support/test_support.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace mw::test {

// The GPU tests run the shaders on Mesa's lavapipe (a Vulkan device of type CPU, which -ngl
// leaves alone unless asked): the test binary, and the memwall it starts, opt in. A test that
// checks the refusal sets it to 0 for its command.
[[maybe_unused]] const bool kGpuAllowCpuDevice =
    setenv("MEMWALL_GPU_ALLOW_CPU_DEVICE", "1", 0) == 0;

std::string shared_dir() {
    const char* env = std::getenv("MEMWALL_SHARED_DIR");
    std::string dir = env && *env ? env : MEMWALL_SHARED_DIR;
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        ADD_FAILURE() << "shared test data folder not found at '" << dir
                      << "': the tests need ../shared beside the project root (or set "
                         "MEMWALL_SHARED_DIR)";
        throw std::runtime_error("missing ../shared");
    }
    return dir;
}

std::string shared_path(const std::string& relative) {
    std::string path = shared_dir() + "/" + relative;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        ADD_FAILURE() << "shared test file missing: " << path;
        throw std::runtime_error("missing shared file " + path);
    }
    return path;
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

namespace {

// The temporary directories this process made, removed with their contents when it exits: a
// whole suite wrote gigabytes of model files that stayed in /tmp. Only the process that made
// them removes them (a forked child that exits must not), and MEMWALL_KEEP_TEST_TMP=1 keeps
// them for a post-mortem.
class TempDirs {
  public:
    void add(std::string dir) {
        std::lock_guard<std::mutex> lock(mutex_);
        dirs_.push_back(std::move(dir));
    }
    ~TempDirs() {
        const char* keep = std::getenv("MEMWALL_KEEP_TEST_TMP");
        if (::getpid() != owner_ || (keep && std::string(keep) == "1")) return;
        for (const std::string& dir : dirs_) {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    }

  private:
    std::mutex mutex_;
    std::vector<std::string> dirs_;
    const pid_t owner_ = ::getpid();
};

TempDirs& temp_dirs() {
    static TempDirs dirs;
    return dirs;
}

}  // namespace

std::string temp_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/memwall-test-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    temp_dirs().add(buf.data());
    return buf.data();
}

std::string cli_path() {
    return MEMWALL_CLI_PATH;
}

CommandResult run_command(const std::string& command_line) {
    const std::string dir = temp_dir();
    const std::string out_path = dir + "/stdout";
    const std::string err_path = dir + "/stderr";
    const std::string full = command_line + " >" + out_path + " 2>" + err_path;
    const int status = std::system(full.c_str());
    CommandResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = read_text(out_path);
    result.err = read_text(err_path);
    std::remove(out_path.c_str());
    std::remove(err_path.c_str());
    ::rmdir(dir.c_str());
    return result;
}

double rel_rms(const float* a, const float* b, size_t n) {
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; ++i) {
        diff += double(a[i] - b[i]) * double(a[i] - b[i]);
        norm += double(b[i]) * double(b[i]);
    }
    return std::sqrt(diff / norm);
}

}  // namespace mw::test
