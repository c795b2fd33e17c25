// HTTP GET over libcurl, the one HTTP client of memwall: ranges, redirects (Hugging Face answers
// with a redirect to its CDN), the validators the server sends, and transfers that can be
// stopped. It decides nothing about retries or files; remote_header and download do.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

namespace mw::net {

struct HttpRequest {
    std::string url;
    std::string bearer_token;  // "Authorization: Bearer ..." (not forwarded to another host)
    // Range: bytes=FIRST-[LAST] (LAST inclusive); no Range header without range_first.
    std::optional<uint64_t> range_first;
    std::optional<uint64_t> range_last;
    std::string if_range;  // an ETag: the range only if the file still has it, else all
    long connect_timeout_s = 30;
    long stall_timeout_s = 60;  // a transfer that receives nothing for this long fails
};

// The head of the final response (after redirects).
struct HttpHead {
    long status = 0;
    std::string reason;  // "Not Found" (HTTP/1.1 only)
    std::string url;     // where the redirects ended
    std::string etag;
    std::string linked_etag;              // X-Linked-Etag of any response on the way
    std::optional<uint64_t> linked_size;  // X-Linked-Size of any response on the way
    std::optional<uint64_t> content_length;
    std::string accept_ranges;
    // Content-Range: bytes FIRST-LAST/TOTAL (TOTAL absent when the server says "*").
    std::optional<uint64_t> range_first, range_last, range_total;
};

enum class HttpOutcome {
    done,       // the response is complete (any status: look at head.status)
    stopped,    // the body sink asked to stop
    cancelled,  // keep_going said no
    failed,     // no complete response: connection refused or dropped, timeout, bad URL
};

struct HttpResult {
    HttpOutcome outcome = HttpOutcome::failed;
    HttpHead head;
    uint64_t body_bytes = 0;  // body bytes received (of a 2xx response)
    std::string error;        // for `failed`: curl's words
    bool transient = false;   // for `failed`: a retry may succeed (dropped, refused, timed out)
};

// Pieces of the body of a 2xx response as they arrive; false stops the transfer. The bodies of
// other responses (error pages) are not passed on: the transfer ends at their head.
using BodySink = std::function<bool(const HttpHead& head, std::span<const uint8_t> piece)>;
// Asked at least once a second during a transfer; false cancels it.
using KeepGoing = std::function<bool()>;

HttpResult http_get(const HttpRequest& request, const BodySink& body,
                    const KeepGoing& keep_going = {});

// "HTTP 404 (Not Found)".
std::string status_text(const HttpHead& head);
// Fails with ErrorKind::io: what the status of a response that is not what was asked for means
// for `what` (the URL as the user gave it).
[[noreturn]] void fail_status(const std::string& what, const HttpHead& head);

}  // namespace mw::net
