#include "server/http_guard.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace mw::server {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool is_ip_literal(const std::string& host) {
    unsigned char buf[16];
    if (inet_pton(AF_INET, host.c_str(), buf) == 1) return true;
    const std::string v6 = host.size() >= 2 && host.front() == '[' && host.back() == ']'
                               ? host.substr(1, host.size() - 2)
                               : host;
    return inet_pton(AF_INET6, v6.c_str(), buf) == 1;
}

// "host[:port]" or "[v6][:port]" -> the host, lower case (brackets kept for v6).
std::string host_of(std::string_view authority) {
    if (!authority.empty() && authority.front() == '[') {
        const size_t close = authority.find(']');
        return lower(close == std::string_view::npos ? authority : authority.substr(0, close + 1));
    }
    const size_t colon = authority.find(':');
    return lower(colon == std::string_view::npos ? authority : authority.substr(0, colon));
}

// "scheme://authority[/...]" -> the host of its authority; "" when it is not such a URL.
std::string origin_host(std::string_view origin) {
    const size_t sep = origin.find("://");
    if (sep == std::string_view::npos) return "";
    std::string_view authority = origin.substr(sep + 3);
    authority = authority.substr(0, authority.find('/'));
    return host_of(authority);
}

std::string normalized_origin(std::string_view origin) {
    std::string o = lower(trim(origin));
    while (!o.empty() && o.back() == '/') o.pop_back();
    return o;
}

// Printable for a message: header values may hold any byte.
std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 200)) {
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    return out;
}

}  // namespace

bool is_loopback_host(std::string_view host) {
    std::string h = lower(host);
    if (h == "localhost" || (h.size() > 10 && h.ends_with(".localhost"))) return true;
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    in_addr v4{};
    if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
        static const in6_addr loopback = IN6ADDR_LOOPBACK_INIT;
        return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr),
                          std::begin(loopback.s6_addr));
    }
    return false;
}

std::optional<std::string> origin_refusal(std::string_view origin, std::string_view host,
                                          const OriginPolicy& policy) {
    const bool any_origin = std::find(policy.allowed_origins.begin(), policy.allowed_origins.end(),
                                      "*") != policy.allowed_origins.end();
    auto listed = [&](std::string_view o) {
        const std::string n = normalized_origin(o);
        return std::any_of(policy.allowed_origins.begin(), policy.allowed_origins.end(),
                           [&](const std::string& a) { return normalized_origin(a) == n; });
    };
    if (!origin.empty() && !any_origin && !listed(origin)) {
        const std::string scheme = lower(origin.substr(0, origin.find("://")));
        const bool web = scheme == "http" || scheme == "https";
        if (!web || !is_loopback_host(origin_host(origin))) {
            return fmt::format(
                "requests from the web page at origin '{}' are not allowed (only loopback "
                "origins are by default; start the server with --cors-origin {} to allow it)",
                printable(origin), printable(normalized_origin(origin)));
        }
    }
    // DNS rebinding: a name the attacker controls, resolving to 127.0.0.1, makes the browser
    // treat the server as that name's origin. A loopback server answers only names that cannot
    // be rebound, and those of the origins it was told to allow.
    if (policy.loopback_bind && !host.empty() && !any_origin) {
        const std::string h = host_of(trim(host));
        const bool allowed_name =
            std::any_of(policy.allowed_origins.begin(), policy.allowed_origins.end(),
                        [&](const std::string& a) { return origin_host(lower(a)) == h; });
        if (!is_ip_literal(h) && h != "localhost" && !h.ends_with(".localhost") && !allowed_name) {
            return fmt::format(
                "the Host '{}' is not an address of this loopback server (only IP addresses and "
                "localhost are answered, against DNS rebinding; --cors-origin http://{} allows "
                "that name)",
                printable(host), printable(h));
        }
    }
    return std::nullopt;
}

std::string bearer_token(std::string_view authorization) {
    authorization = trim(authorization);
    const size_t space = authorization.find(' ');
    if (space == std::string_view::npos) return "";
    if (lower(authorization.substr(0, space)) != "bearer") return "";
    return std::string(trim(authorization.substr(space + 1)));
}

bool is_json_content_type(std::string_view content_type) {
    const std::string_view media = trim(content_type.substr(0, content_type.find(';')));
    return lower(media) == "application/json";
}

const char* route_label(std::string_view path) {
    static constexpr const char* routes[] = {
        "/",          "/index.html",          "/health",        "/metrics",
        "/v1/models", "/v1/chat/completions", "/v1/completions"};
    for (const char* r : routes) {
        if (path == r) return r;
    }
    return "other";
}

}  // namespace mw::server
