// The HTTP server against hostile clients (issue 39), in-process on loopback: browser origins
// and Host names (cross-site requests, DNS rebinding), the auth scheme in any case, JSON routes
// refusing other content types, /metrics bounded under random paths, slot counts after a
// cancelled stream, keep-alive replies without Nagle's delay, large prompts refused by their
// bytes in bounded memory, slow headers, huge chunked bodies and header floods, connections per
// address. Peak RSS is the test process's (the client side sends from one buffer).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "memwall.h"
#include "runtime/loaded_model.h"
#include "support/test_server.h"
#include "support/test_support.h"
#include "template/text.h"

namespace {

using mw::test::post;
using mw::test::Server;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Sends raw bytes on a new connection and returns what the server answers before it closes
// (or until `wait_s`): for requests an HTTP client library would not send as given.
std::string raw_exchange(int port, const std::string& bytes, double wait_s = 10.0) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        return "";
    }
    timeval tv{int(wait_s), int((wait_s - int(wait_s)) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, size_t(n));
    close(fd);
    return out;
}

int status_of(const std::string& response) {
    return response.size() > 12 ? std::atoi(response.c_str() + 9) : -1;
}

std::string body_of(const std::string& response) {
    const size_t at = response.find("\r\n\r\n");
    return at == std::string::npos ? "" : response.substr(at + 4);
}

// A connection to the server from a loopback source address of our choice.
int connect_from(const std::string& source, int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source.c_str(), &from.sin_addr);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(uint16_t(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
        connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        bytes.remove_prefix(size_t(n));
    }
    return true;
}

// What the server answers until it closes (or 10 s pass).
std::string read_reply(int fd) {
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, size_t(n));
    return out;
}

// A POST sent from the caller's body without copying it (the test's own memory stays flat).
std::string raw_post(int port, const std::string& path, const std::string& body) {
    const int fd = connect_from("127.0.0.1", port);
    if (fd < 0) return "";
    send_all(fd, "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                     "Content-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n");
    send_all(fd, body);
    const std::string reply = read_reply(fd);
    close(fd);
    return reply;
}

std::string fmt_chunk(const std::string& piece) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
    return size + piece + "\r\n";
}

// The process's peak RSS is reset to its current RSS (returned), to measure a peak from here.
uint64_t reset_peak_rss() {
    std::ofstream("/proc/self/clear_refs") << "5";
    return mw::process_memory().rss_bytes;
}

uint64_t peak_rss() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    }
    return 0;
}

TEST(ServerHostile, HealthIsIdleAfterACancelledStream) {
    Server s(mw_server_default_params(), 1);
    {
        // A long stream, hung up after its first events; no request follows it.
        httplib::Client c("127.0.0.1", s.port);
        std::atomic<int> events{0};
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.headers = {{"Content-Type", "application/json"}};
        req.body = R"({"prompt": "Once", "max_tokens": 1000, "stream": true, "ignore_eos": true})";
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
            return ++events < 2;
        };
        httplib::Response res;
        httplib::Error err = httplib::Error::Success;
        c.send(req, res, err);
        ASSERT_GE(events.load(), 1);
    }
    // /health alone must come back to idle (it stayed "processing" until the next request).
    auto c = s.client();
    json health;
    for (int i = 0; i < 250; ++i) {
        health = json::parse(c.Get("/health")->body);
        if (health["slots_processing"] == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(health["slots_processing"], 0) << health.dump();
    EXPECT_EQ(health["slots_idle"], 1) << health.dump();
    const std::string metrics = c.Get("/metrics")->body;
    EXPECT_NE(metrics.find("\nmemwall_slots_busy 0\n"), std::string::npos) << metrics;
}

TEST(ServerHostile, BearerSchemeIsCaseInsensitive) {
    mw_server_params sp = mw_server_default_params();
    sp.api_key = "sesame";
    Server s(sp);
    auto c = s.client();
    for (const char* scheme : {"Bearer", "bearer", "BEARER", "bEaReR"}) {
        auto r = c.Get("/v1/models", {{"Authorization", std::string(scheme) + " sesame"}});
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << scheme;
    }
    for (const char* auth : {"Basic sesame", "Bearersesame", "Bearer sesamf", "sesame"}) {
        auto r = c.Get("/v1/models", {{"Authorization", auth}});
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 401) << auth;
    }
}

TEST(ServerHostile, JsonRoutesRefuseOtherContentTypes) {
    Server s;
    const std::string body = R"({"prompt": "Once", "max_tokens": 2})";
    auto c = s.client();
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded",
                             "multipart/form-data; boundary=x", "application/jsonx"}) {
        auto r = c.Post("/v1/completions", body, type);
        ASSERT_TRUE(r) << type;
        EXPECT_EQ(r->status, 415) << type;
        const json j = json::parse(r->body, nullptr, false);
        ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
        EXPECT_NE(j["error"]["message"].get<std::string>().find("application/json"),
                  std::string::npos);
    }
    // No Content-Type at all (what a bare form post or curl -d without -H can look like).
    const std::string raw = raw_exchange(s.port,
                                         "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "Connection: close\r\nContent-Length: " +
                                             std::to_string(body.size()) + "\r\n\r\n" + body);
    EXPECT_EQ(status_of(raw), 415) << raw.substr(0, 200);
    for (const char* type : {"application/json", "Application/JSON; charset=utf-8"}) {
        auto r = c.Post("/v1/completions", body, type);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << type << " " << r->body;
    }
}

TEST(ServerHostile, CrossOriginRequestsAndReboundHostsAreRefused) {
    const std::string body = R"({"prompt": "Once", "max_tokens": 2})";
    {
        Server s;
        auto c = s.client();
        // A page of another site posting to the keyless local server.
        auto evil = c.Post("/v1/completions", {{"Origin", "https://evil.example"}}, body,
                           "application/json");
        ASSERT_TRUE(evil);
        EXPECT_EQ(evil->status, 403);
        const json j = json::parse(evil->body, nullptr, false);
        ASSERT_TRUE(j.is_object() && j.contains("error")) << evil->body;
        EXPECT_NE(j["error"]["message"].get<std::string>().find("--cors-origin"),
                  std::string::npos);
        EXPECT_TRUE(evil->get_header_value("Access-Control-Allow-Origin").empty());
        for (const char* origin : {"null", "file://", "http://127.0.0.1.evil.example"}) {
            auto r = c.Get("/v1/models", {{"Origin", origin}});
            ASSERT_TRUE(r);
            EXPECT_EQ(r->status, 403) << origin;
        }
        // DNS rebinding: a same-origin GET carries no Origin, only the attacker's Host name.
        auto rebound = c.Get("/v1/models", {{"Host", "evil.example:8080"}});
        ASSERT_TRUE(rebound);
        EXPECT_EQ(rebound->status, 403);
        // Loopback origins and names are the server's own.
        for (const char* origin :
             {"http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]"}) {
            auto r = c.Post("/v1/completions", {{"Origin", origin}}, body, "application/json");
            ASSERT_TRUE(r);
            EXPECT_EQ(r->status, 200) << origin;
            EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), origin);
        }
        auto named = c.Get("/v1/models", {{"Host", "localhost:8080"}});
        ASSERT_TRUE(named);
        EXPECT_EQ(named->status, 200);
    }
    {
        mw_server_params sp = mw_server_default_params();
        sp.cors_origins = "https://app.example, http://tools.example:3000";
        sp.api_key = "sesame";
        Server s(sp);
        auto c = s.client();
        // The browser's preflight carries no key.
        auto pre = c.Options("/v1/chat/completions", {{"Origin", "https://app.example"},
                                                      {"Access-Control-Request-Method", "POST"}});
        ASSERT_TRUE(pre);
        EXPECT_EQ(pre->status, 204);
        EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
        EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"),
                  std::string::npos);
        auto ok =
            c.Post("/v1/completions",
                   {{"Origin", "http://tools.example:3000"}, {"Authorization", "Bearer sesame"}},
                   body, "application/json");
        ASSERT_TRUE(ok);
        EXPECT_EQ(ok->status, 200);
        auto other =
            c.Post("/v1/completions",
                   {{"Origin", "https://evil.example"}, {"Authorization", "Bearer sesame"}}, body,
                   "application/json");
        ASSERT_TRUE(other);
        EXPECT_EQ(other->status, 403);
    }
}

TEST(ServerHostile, MetricsStayBoundedUnderRandomPaths) {
    Server s;
    httplib::Client c("127.0.0.1", s.port);
    c.set_keep_alive(true);
    std::mt19937 rng(39);
    int answered = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::string path = "/p" + std::to_string(rng()) + "/" + std::to_string(i);
        auto r = c.Get(path.c_str());
        if (r && r->status == 404) ++answered;
    }
    EXPECT_EQ(answered, 20000);
    // Bytes that are not UTF-8 in the path, as a raw request line.
    const std::string raw = raw_exchange(
        s.port, "GET /\xff\xfe\xc3 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(raw), 404) << raw.substr(0, 100);
    auto metrics = c.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_LT(metrics->body.size(), 64u * 1024);
    EXPECT_EQ(mw::tmpl::text::repair_utf8(metrics->body), metrics->body);
    EXPECT_NE(metrics->body.find("memwall_requests_total{route=\"other\",status=\"404\"} 20001"),
              std::string::npos)
        << metrics->body;
}

// Without TCP_NODELAY a reply written as headers then body waited for the client's delayed
// ACK (~40 ms each).
TEST(ServerHostile, KeepAliveRepliesAreNotDelayed) {
    Server s;
    httplib::Client c("127.0.0.1", s.port);
    c.set_keep_alive(true);
    ASSERT_TRUE(c.Get("/health"));
    const auto start = Clock::now();
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(c.Get("/health"));
    const double s_per_100 = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_LT(s_per_100, 1.0);  // 100 x 40 ms = 4 s with the delay; ~10 ms without
}

// A prompt whose bytes cannot fit in a slot's context is refused before it is tokenized, and
// large bodies share a budget: 8 of 7 MB at once (a slot holds 256 tokens) are all refused
// quickly, 400 by their bytes or 503 while others are read, within 64 MB of memory.
TEST(ServerHostile, LargePromptsAtOnceAreRefusedInBoundedMemory) {
    Server s;
    const std::string text(7u << 20, 'a');
    const std::string completion = json{{"prompt", text}, {"max_tokens", 1}}.dump();
    const std::string chat =
        json{{"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", 1}}.dump();
    const uint64_t before = reset_peak_rss();
    const auto start = Clock::now();
    std::vector<std::thread> clients;
    std::atomic<int> by_bytes{0}, busy{0};
    for (int i = 0; i < 8; ++i) {
        clients.emplace_back([&, i] {
            const std::string reply =
                raw_post(s.port, i % 2 ? "/v1/chat/completions" : "/v1/completions",
                         i % 2 ? chat : completion);
            const json r = json::parse(body_of(reply), nullptr, false);
            if (status_of(reply) == 400 && r.is_object() &&
                r["error"]["code"] == "context_length_exceeded" &&
                r["error"]["message"].get<std::string>().find("bytes") != std::string::npos) {
                ++by_bytes;
            } else if (status_of(reply) == 503 &&
                       reply.find("Retry-After: 1") != std::string::npos) {
                ++busy;
            } else {
                ADD_FAILURE() << reply.substr(0, 300);
            }
        });
    }
    for (auto& t : clients) t.join();
    const uint64_t peak = peak_rss();
    EXPECT_GE(by_bytes.load(), 1);
    EXPECT_EQ(by_bytes + busy, 8);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 20.0);
#ifdef MW_TEST_SANITIZED
    // ASan's quarantine keeps every freed buffer resident (each body's growth steps, its parsed
    // copy: 130 MB seen), so only a bound far below reading and tokenizing all 56 MB holds there;
    // the 64 MB bound is the release build's.
    constexpr uint64_t kGrowth = 256u << 20;
#else
    constexpr uint64_t kGrowth = 64u << 20;
#endif
    EXPECT_LT(peak - before, kGrowth) << "peak RSS grew by " << (peak - before) / 1e6 << " MB";
}

// 200 connections sending their header a byte a second (Slowloris) held every HTTP thread:
// every other request timed out. Now they hold no thread, and the header deadline (10 s) cuts
// them off.
TEST(ServerHostile, SlowHeadersDoNotStallOtherClients) {
    Server s;
    std::vector<int> slow;
    for (int i = 0; i < 200; ++i) {
        // From 127.0.0.2-5: the attackers' addresses, not the probes' 127.0.0.1.
        const int fd = connect_from("127.0.0." + std::to_string(2 + i % 4), s.port);
        ASSERT_GE(fd, 0) << i;
        const std::string start = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
        ASSERT_EQ(send(fd, start.data(), start.size(), MSG_NOSIGNAL), ssize_t(start.size()));
        slow.push_back(fd);
    }
    const auto attack_start = Clock::now();
    std::atomic<bool> attacking{true};
    std::thread trickle([&] {
        while (attacking) {
            for (int fd : slow) (void)!send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
    });
    double worst_ms = 0;
    int answered = 0, probes = 0;
    while (Clock::now() - attack_start < std::chrono::seconds(10)) {
        httplib::Client c("127.0.0.1", s.port);
        c.set_connection_timeout(1, 0);
        c.set_read_timeout(1, 0);
        const auto t0 = Clock::now();
        auto r = c.Get("/health");
        ++probes;
        if (r && r->status == 200) ++answered;
        worst_ms = std::max(worst_ms,
                            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    attacking = false;
    trickle.join();
    EXPECT_EQ(answered, probes);
    EXPECT_LT(worst_ms, 1000.0);
    // Past the header deadline every slow connection has been closed by the server.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    int closed = 0;
    for (int fd : slow) {
        char c;
        timeval tv{0, 100000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        const ssize_t n = recv(fd, &c, 1, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) ++closed;
        close(fd);
    }
    EXPECT_EQ(closed, 200);
}

// Stopping waited for the threads the slow connections held (SIGTERM took 22 s against a 10 s
// grace): now it closes them at once.
TEST(ServerHostile, StopIsPromptWithSlowConnectionsOpen) {
    auto s = std::make_unique<Server>();
    std::vector<int> slow;
    for (int i = 0; i < 100; ++i) {
        const int fd = connect_from("127.0.0." + std::to_string(2 + i % 4), s->port);
        ASSERT_GE(fd, 0);
        send_all(fd, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a");
        slow.push_back(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto start = Clock::now();
    s.reset();  // stop with a grace of 1 s, join the serving thread, free
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.5);
    for (int fd : slow) close(fd);
}

// A chunked body ignored the body limit (300 MB chunked: 1.25 GB resident); headers had no
// limit (100 MB of header lines: +195 MB, before the key was checked).
TEST(ServerHostile, HugeChunkedBodiesAndHeaderFloodsAreRefusedInBoundedMemory) {
#ifdef MW_TEST_SANITIZED
    // ASan's quarantine keeps freed buffers resident (22 MB seen): a looser bound there, still
    // far below what reading the whole body cost (1.25 GB).
    constexpr uint64_t kGrowth = 64u << 20;
#else
    constexpr uint64_t kGrowth = 16u << 20;
#endif
    mw_server_params sp = mw_server_default_params();
    sp.api_key = "sesame";
    Server s(sp);
    const std::string piece(64u << 10, 'a');
    const std::string chunk = fmt_chunk(piece);
    {
        const uint64_t before = reset_peak_rss();
        const int fd = connect_from("127.0.0.1", s.port);
        ASSERT_GE(fd, 0);
        const std::string head =
            "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sesame\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        send_all(fd, head);
        uint64_t sent = 0;
        while (sent < (300u << 20) && send_all(fd, chunk)) sent += piece.size();
        const std::string reply = read_reply(fd);
        close(fd);
        EXPECT_LT(sent, 300u << 20) << "the server read all of it";
        EXPECT_EQ(status_of(reply), 413) << reply.substr(0, 200);
        const uint64_t peak = peak_rss();
        EXPECT_LT(peak - before, kGrowth) << "peak RSS grew by " << (peak - before) / 1e6 << " MB";
    }
    {
        const uint64_t before = reset_peak_rss();
        const int fd = connect_from("127.0.0.1", s.port);
        ASSERT_GE(fd, 0);
        send_all(fd, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        const std::string line = "X-Flood: " + std::string(1000, 'b') + "\r\n";
        std::string block;
        for (int i = 0; i < 64; ++i) block += line;
        uint64_t sent = 0;
        while (sent < (100u << 20) && send_all(fd, block)) sent += block.size();
        const std::string reply = read_reply(fd);
        close(fd);
        EXPECT_LT(sent, 100u << 20) << "the server read all of it";
        if (!reply.empty()) {
            EXPECT_EQ(status_of(reply) / 100, 4) << reply.substr(0, 200);
        }
        const uint64_t peak = peak_rss();
        EXPECT_LT(peak - before, kGrowth) << "peak RSS grew by " << (peak - before) / 1e6 << " MB";
    }
    auto c = s.client();
    auto r = c.Get("/health");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
}

// Headers past the limit are refused (8 KiB by default, raised with max_header_bytes).
TEST(ServerHostile, HeaderSizeLimitIsEnforcedAndConfigurable) {
    auto get_with_pad = [](int port, size_t pad) {
        return raw_exchange(port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " +
                                      std::string(pad, 'p') + "\r\nConnection: close\r\n\r\n");
    };
    {
        Server s;
        EXPECT_EQ(status_of(get_with_pad(s.port, 6000)), 200);
        const std::string refused = get_with_pad(s.port, 12000);
        EXPECT_NE(status_of(refused), 200) << refused.substr(0, 100);
    }
    mw_server_params sp = mw_server_default_params();
    sp.max_header_bytes = 32768;
    Server s(sp);
    EXPECT_EQ(status_of(get_with_pad(s.port, 20000)), 200);
}

// A client address may hold only so many connections; the rest are closed at once, and others
// are still served.
TEST(ServerHostile, ConnectionsPerAddressAreLimited) {
    mw_server_params sp = mw_server_default_params();
    sp.max_connections_per_address = 50;
    Server s(sp);
    std::vector<int> held;
    for (int i = 0; i < 60; ++i) held.push_back(connect_from("127.0.0.2", s.port));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    int refused = 0;
    for (int fd : held) {
        char c;
        const ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) ++refused;
    }
    EXPECT_EQ(refused, 10);
    auto c = s.client();
    auto r = c.Get("/health");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    for (int fd : held) close(fd);
}

}  // namespace
