// The checks the HTTP server makes on a request's headers before its route runs, as pure
// functions: which browser origins and Host names may use the server (a web page must not drive
// a keyless local server: cross-site requests and DNS rebinding), the API key's scheme, the
// Content-Type of JSON routes, and the bounded set of labels /metrics counts requests under.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mw::server {

struct OriginPolicy {
    // Origins a browser may call the server from besides loopback ones ("scheme://host[:port]",
    // or "*" for any); from --cors-origin.
    std::vector<std::string> allowed_origins;
    // Whether the server is bound to a loopback address: then only Host names that cannot be
    // rebound (IP literals, localhost) are answered.
    bool loopback_bind = true;
};

// Whether `host` (an address or a name, as given to bind) is a loopback one.
bool is_loopback_host(std::string_view host);

// Why a request with these Origin and Host headers ("" when absent) is refused, or nothing when
// it may be served. Without an Origin header (not a browser, or a same-origin GET) only the
// Host is checked.
std::optional<std::string> origin_refusal(std::string_view origin, std::string_view host,
                                          const OriginPolicy& policy);

// The token of "Authorization: Bearer TOKEN", the scheme matched case-insensitively as RFC 9110
// says; "" when the header is absent or has another scheme.
std::string bearer_token(std::string_view authorization);

// Whether a Content-Type header names JSON ("application/json", any parameters, any case).
bool is_json_content_type(std::string_view content_type);

// The label /metrics counts a request under: the route it names, or "other" (a label per raw
// path would let clients grow the metrics without bound, and paths need not be UTF-8).
const char* route_label(std::string_view path);

}  // namespace mw::server
