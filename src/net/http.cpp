#include "net/http.h"

#include <cctype>
#include <charconv>

#include "base/error.h"
#include "net/libraries.h"

namespace mw::net {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) !=
            std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    }
    return true;
}

std::optional<uint64_t> parse_u64(std::string_view s) {
    s = trim(s);
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

// "bytes 0-99/1234" or "bytes 0-99/*".
void parse_content_range(std::string_view v, HttpHead& head) {
    v = trim(v);
    if (v.substr(0, 6) != "bytes ") return;
    v.remove_prefix(6);
    const size_t dash = v.find('-'), slash = v.find('/');
    if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) return;
    head.range_first = parse_u64(v.substr(0, dash));
    head.range_last = parse_u64(v.substr(dash + 1, slash - dash - 1));
    head.range_total = parse_u64(v.substr(slash + 1));
}

struct Transfer {
    const BodySink* body;
    const KeepGoing* keep_going;
    CURL* curl;
    HttpHead head;
    // Validators that a redirect carries (Hugging Face's X-Linked-*) survive the next head.
    std::string linked_etag;
    std::optional<uint64_t> linked_size;
    uint64_t body_bytes = 0;
    bool stopped = false;
    bool cancelled = false;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::string_view line(data, size * n);
    if (line.substr(0, 5) == "HTTP/") {
        // A new response (after a redirect or a 100 Continue): its own head.
        t->head = HttpHead{};
        const size_t sp = line.find(' ');
        if (sp != std::string_view::npos) {
            const std::string_view rest = line.substr(sp + 1);
            const size_t sp2 = rest.find(' ');
            if (const auto code = parse_u64(rest.substr(0, sp2))) t->head.status = long(*code);
            if (sp2 != std::string_view::npos) t->head.reason = trim(rest.substr(sp2 + 1));
        }
        return size * n;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return size * n;
    const std::string_view name = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "etag")) {
        t->head.etag = value;
    } else if (iequals(name, "x-linked-etag")) {
        t->linked_etag = value;
    } else if (iequals(name, "x-linked-size")) {
        t->linked_size = parse_u64(value);
    } else if (iequals(name, "content-length")) {
        t->head.content_length = parse_u64(value);
    } else if (iequals(name, "accept-ranges")) {
        t->head.accept_ranges = value;
    } else if (iequals(name, "content-range")) {
        parse_content_range(value, t->head);
    }
    return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    if (t->head.status < 200 || t->head.status >= 300) {
        t->stopped = true;  // an error page: its head says enough
        return 0;
    }
    if (t->body_bytes == 0) {
        t->head.linked_etag = t->linked_etag;
        t->head.linked_size = t->linked_size;
        char* url = nullptr;
        if (curl_library().easy_getinfo(t->curl, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK && url) {
            t->head.url = url;
        }
    }
    t->body_bytes += size * n;
    if (*t->body && !(*t->body)(t->head, {reinterpret_cast<const uint8_t*>(data), size * n})) {
        t->stopped = true;
        return 0;
    }
    return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    if (*t->keep_going && !(*t->keep_going)()) {
        t->cancelled = true;
        return 1;
    }
    return 0;
}

bool is_transient(CURLcode code) {
    switch (code) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_CONNECT:
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_SSL_CONNECT_ERROR:
            return true;
        default:
            return false;
    }
}

struct EasyHandle {
    const CurlLibrary& lib = curl_library();
    CURL* curl = lib.easy_init();
    curl_slist* headers = nullptr;
    ~EasyHandle() {
        lib.slist_free_all(headers);
        if (curl) lib.easy_cleanup(curl);
    }
    void add_header(const std::string& h) {
        curl_slist* next = lib.slist_append(headers, h.c_str());
        if (!next) fail(ErrorKind::out_of_memory, "libcurl: cannot add a header");
        headers = next;
    }
};

}  // namespace

HttpResult http_get(const HttpRequest& request, const BodySink& body, const KeepGoing& keep_going) {
    const CurlLibrary& lib = curl_library();
    EasyHandle easy;
    CURL* curl = easy.curl;
    if (!curl) fail(ErrorKind::out_of_memory, "libcurl: cannot create a transfer");
    Transfer t{&body, &keep_going, curl};
    char error[CURL_ERROR_SIZE] = {};

    lib.easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    lib.easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    lib.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    lib.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    lib.easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    lib.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    lib.easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    lib.easy_setopt(curl, CURLOPT_USERAGENT, "memwall");
    lib.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, request.connect_timeout_s);
    // Fewer than 1 byte/s for stall_timeout_s: the connection is dead.
    lib.easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    lib.easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, request.stall_timeout_s);
    lib.easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    lib.easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    lib.easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    lib.easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    lib.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    lib.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    lib.easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
    if (request.range_first) {
        const std::string range =
            request.range_last ? fmt::format("{}-{}", *request.range_first, *request.range_last)
                               : fmt::format("{}-", *request.range_first);
        lib.easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    }
    if (!request.if_range.empty()) easy.add_header("If-Range: " + request.if_range);
    if (!request.bearer_token.empty()) {
        easy.add_header("Authorization: Bearer " + request.bearer_token);
    }
    if (easy.headers) lib.easy_setopt(curl, CURLOPT_HTTPHEADER, easy.headers);

    const CURLcode code = lib.easy_perform(curl);

    HttpResult r;
    r.head = std::move(t.head);
    if (r.head.linked_etag.empty()) r.head.linked_etag = t.linked_etag;
    if (!r.head.linked_size) r.head.linked_size = t.linked_size;
    if (r.head.url.empty()) {
        char* url = nullptr;
        if (lib.easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK && url) {
            r.head.url = url;
        }
    }
    r.body_bytes = t.body_bytes;
    if (code == CURLE_OK) {
        r.outcome = HttpOutcome::done;
    } else if (t.cancelled) {
        r.outcome = HttpOutcome::cancelled;
    } else if (t.stopped) {
        // An error page stopped at its head is a complete answer; a sink's stop is not.
        const bool error_page = r.head.status < 200 || r.head.status >= 300;
        r.outcome = error_page ? HttpOutcome::done : HttpOutcome::stopped;
    } else {
        r.outcome = HttpOutcome::failed;
        r.error = error[0] ? std::string(error) : std::string(lib.easy_strerror(code));
        r.transient = is_transient(code);
    }
    return r;
}

std::string status_text(const HttpHead& head) {
    if (head.reason.empty()) return fmt::format("HTTP {}", head.status);
    return fmt::format("HTTP {} ({})", head.status, head.reason);
}

void fail_status(const std::string& what, const HttpHead& head) {
    std::string hint;
    if (head.status == 404) {
        hint =
            ": no such file on the server (check the name; a private Hugging Face repository "
            "also answers 404 without HF_TOKEN)";
    } else if (head.status == 401 || head.status == 403) {
        hint = ": access denied (a gated or private Hugging Face repository needs HF_TOKEN)";
    } else if (head.status >= 500) {
        hint = ": the server failed; try again later";
    } else if (head.status >= 300 && head.status < 400) {
        hint = ": a redirect memwall did not follow (too many, or to another protocol)";
    }
    fail(ErrorKind::io, "{}: the server answered {}{}", what, status_text(head), hint);
}

}  // namespace mw::net
