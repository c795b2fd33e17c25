#include "support/http_test_server.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/test_support.h"

extern char** environ;

namespace mw::test {

std::string HttpTestServer::unavailable() {
#if !MEMWALL_NET
    return "memwall was built with MEMWALL_NET=OFF (no libcurl): no remote files";
#else
    static const bool have_python =
        std::system("python3 -c 'import http.server' >/dev/null 2>&1") == 0;
    if (!have_python) {
        return "python3 (with http.server) is not installed: scripts/install-deps --test installs "
               "it";
    }
    return "";
#endif
}

HttpTestServer::HttpTestServer(const std::string& root) {
    dir_ = temp_dir();
    control_ = dir_ + "/control.json";
    log_ = dir_ + "/requests.log";
    const std::string port_file = dir_ + "/port";
    set_control(nlohmann::json::object());
    std::ofstream(log_).flush();
    // Loopback only, whatever proxy the environment names.
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    const std::string script = std::string(MEMWALL_TESTS_DIR) + "/http_test_server.py";
    std::vector<std::string> args = {"python3", script,        "--root",  root,    "--control",
                                     control_,  "--port-file", port_file, "--log", log_};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawnp(&pid_, "python3", nullptr, nullptr, argv.data(), environ) != 0) {
        ADD_FAILURE() << "cannot start python3 " << script;
        pid_ = -1;
        return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
        std::ifstream in(port_file);
        if (in >> port_ && port_ > 0) return;
        port_ = 0;
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            ADD_FAILURE() << "the test HTTP server exited at start";
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the test HTTP server did not start within 15 s";
}

HttpTestServer::~HttpTestServer() {
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
}

std::string HttpTestServer::endpoint() const {
    return "http://127.0.0.1:" + std::to_string(port_);
}

std::string HttpTestServer::url(const std::string& name) const {
    return endpoint() + "/" + name;
}

void HttpTestServer::set_control(const nlohmann::json& control) {
    const std::string tmp = control_ + ".tmp";
    std::ofstream(tmp) << control.dump();
    std::rename(tmp.c_str(), control_.c_str());
}

std::vector<nlohmann::json> HttpTestServer::requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    }
    return out;
}

void HttpTestServer::clear_requests() {
    std::ofstream(log_, std::ios::trunc).flush();
}

}  // namespace mw::test
