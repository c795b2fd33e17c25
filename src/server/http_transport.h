// HTTP/1.1 for the server on libmicrohttpd, event-driven: a few threads poll every connection
// (epoll), so a client that sends its header one byte a second holds no thread, and what a
// hostile client can make the server hold is bounded here, before any route runs:
//   - a header must be complete within header_timeout_s of the connection (or of the end of the
//     previous reply on a kept-alive one), and fit in max_header_bytes (else refused, closed);
//   - a body (plain or chunked) is refused with 413 once it passes max_body_bytes, and must be
//     complete within body_timeout_s; bodies over 1 MiB share a budget of bytes in memory;
//   - connections are limited in total and per client address; TCP_NODELAY on every one.
// Requests whose route may block (generation) run on a pool of worker threads while their
// connection is suspended; the rest are answered on the event threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mw::server {

struct HttpLimits {
    size_t max_body_bytes = 8u << 20;
    // The request line and header fields together, in a per-connection pool libmicrohttpd
    // zeroes for each request: every kept-alive connection keeps that much resident.
    size_t max_header_bytes = 8u << 10;
    double header_timeout_s = 10.0;   // connection (or previous reply) to a complete header
    double body_timeout_s = 60.0;     // complete header to complete body
    double write_timeout_s = 60.0;    // a reply that the client does not read
    unsigned max_connections = 1024;  // capped below the process's descriptor limit
    unsigned max_connections_per_address = 256;
    unsigned event_threads = 2;
    unsigned workers = 16;  // threads for blocking routes; requests beyond workers x 2 get 503
    int listen_backlog = 1024;
    // Bodies over 1 MiB being received or served, each counted 3 times (the body, its JSON, the
    // prompt rendered from it), in bytes at once (at least 3 x max_body_bytes): one more gets 503
    // with Retry-After.
    size_t large_body_budget = 32u << 20;
};

struct HttpRequest {
    std::string method;
    std::string path;  // without the query
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::string remote_addr;
    std::chrono::steady_clock::time_point arrived;  // when its header was complete
    // A header's value, the name matched in any case; "" when absent.
    std::string header(std::string_view name) const;
    // Whether the client has closed or reset the connection (for routes that wait).
    std::function<bool()> client_gone;
};

// Tokens a generation read and wrote, for the request's log line: set by the route (a streamed
// reply sets them as its stream ends, on a worker), read once the exchange is complete.
struct TokenCounts {
    std::atomic<int32_t> prompt{-1};  // -1: none (not a generation, or it did not finish)
    std::atomic<int32_t> completion{-1};
    std::atomic<int32_t> draft_n{-1};  // speculative decoding: -1 off
    std::atomic<int32_t> draft_accepted{0};
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    void set_header(std::string name, std::string value) {
        headers.emplace_back(std::move(name), std::move(value));
    }
    // Set for a streamed reply (chunked): run on the worker thread after the status and headers
    // went out; it writes the body through `write`, which returns false once the client is gone
    // (or has not read for write_timeout_s), and may block while the client reads slowly.
    std::function<void(const std::function<bool(std::string_view)>& write)> stream;
    std::shared_ptr<TokenCounts> tokens;  // may be null
};

struct HttpHandlers {
    // With the header only, on an event thread (must not block): answers (returns true) to
    // refuse the request before its body is read: origin, key, content type.
    std::function<bool(const HttpRequest&, HttpResponse&)> check;
    // Whether serve() may block for this request (then it runs on a worker thread).
    std::function<bool(const HttpRequest&)> blocking;
    std::function<void(const HttpRequest&, HttpResponse&)> serve;
    // After every answer, including the transport's own refusals (413, 503...).
    std::function<void(const HttpRequest&, const HttpResponse&)> answered;
    // The body of the transport's own refusals (OpenAI's error JSON).
    std::function<std::string(int status, const std::string& message)> error_body;
};

class HttpTransport {
  public:
    HttpTransport(std::string host, int port, HttpLimits limits, HttpHandlers handlers);
    ~HttpTransport();
    HttpTransport(const HttpTransport&) = delete;
    HttpTransport& operator=(const HttpTransport&) = delete;

    // Binds and listens (throws ErrorKind::io naming the address when it cannot).
    void bind();
    int port() const;
    // Starts serving on the event threads; returns at once.
    void start();
    // Stops accepting connections (the ones open go on).
    void stop_accepting();
    // Closes every connection and stops the threads, after waiting up to `wait_s` for the
    // workers to finish.
    void stop(double wait_s);

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace mw::server
