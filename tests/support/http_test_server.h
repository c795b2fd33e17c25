// The loopback HTTP server of the remote-file tests (tests/http_test_server.py), run as a child
// process on 127.0.0.1 with an ephemeral port, with the faults a test asks for.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mw::test {

class HttpTestServer {
  public:
    // Why the server cannot run here (no python3, or memwall built without the network), or "".
    static std::string unavailable();

    // Serves the files of `root` (symbolic links are followed). Fails the test if it does not
    // start within a few seconds.
    explicit HttpTestServer(const std::string& root);
    ~HttpTestServer();
    HttpTestServer(const HttpTestServer&) = delete;
    HttpTestServer& operator=(const HttpTestServer&) = delete;

    bool running() const { return port_ > 0; }
    std::string endpoint() const;                    // http://127.0.0.1:PORT
    std::string url(const std::string& name) const;  // endpoint() + "/" + name
    // The faults (see the script); read again by the server on every request.
    void set_control(const nlohmann::json& control);
    // Every request so far, in order: method, path, range, if_range, status, authorization.
    std::vector<nlohmann::json> requests() const;
    void clear_requests();

  private:
    std::string dir_, control_, log_;
    pid_t pid_ = -1;
    int port_ = 0;
};

}  // namespace mw::test
