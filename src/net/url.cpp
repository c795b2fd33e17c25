#include "net/url.h"

#include <cctype>
#include <cstdlib>

#include "base/error.h"

namespace mw::net {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

// Unreserved characters stay, everything else is %XX: a revision like "refs/pr/1" is one path
// segment of the resolve URL.
std::string escape_segment(std::string_view s) {
    std::string out;
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += c;
        } else {
            out += fmt::format("%{:02X}", u);
        }
    }
    return out;
}

// The last segment of a URL's path, without query or fragment.
std::string last_segment(std::string_view url) {
    std::string_view path = url;
    if (const size_t scheme = path.find("://"); scheme != std::string_view::npos) {
        path = path.substr(scheme + 3);
    }
    path = path.substr(0, path.find_first_of("?#"));
    const size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? std::string() : std::string(path.substr(slash + 1));
}

}  // namespace

bool is_remote(std::string_view text) {
    return starts_with(text, "http://") || starts_with(text, "https://") ||
           starts_with(text, "hf://");
}

RemoteUrl resolve_url(const std::string& text) {
    RemoteUrl r;
    r.text = text;
    if (starts_with(text, "http://") || starts_with(text, "https://")) {
        r.url = text;
        r.file_name = last_segment(text);
        return r;
    }
    if (!starts_with(text, "hf://")) {
        fail(ErrorKind::invalid_argument,
             "{}: not a URL memwall fetches (http://, https:// or hf://OWNER/REPO/FILE)", text);
    }
    // hf://owner/repo[@revision]/path/in/repo
    const std::string_view rest = std::string_view(text).substr(5);
    const size_t owner_end = rest.find('/');
    const size_t repo_end =
        owner_end == std::string_view::npos ? owner_end : rest.find('/', owner_end + 1);
    if (owner_end == 0 || owner_end == std::string_view::npos ||
        repo_end == std::string_view::npos || repo_end == owner_end + 1 ||
        repo_end + 1 >= rest.size()) {
        fail(ErrorKind::invalid_argument,
             "{}: a Hugging Face name is hf://OWNER/REPO/FILE or hf://OWNER/REPO@REVISION/FILE",
             text);
    }
    const std::string_view owner = rest.substr(0, owner_end);
    std::string_view repo = rest.substr(owner_end + 1, repo_end - owner_end - 1);
    const std::string_view path = rest.substr(repo_end + 1);
    std::string_view revision = "main";
    if (const size_t at = repo.find('@'); at != std::string_view::npos) {
        revision = repo.substr(at + 1);
        repo = repo.substr(0, at);
        if (repo.empty() || revision.empty()) {
            fail(ErrorKind::invalid_argument, "{}: empty repository or revision around '@'", text);
        }
    }
    for (std::string_view part : {owner, repo, path}) {
        if (part.find_first_of("?#") != std::string_view::npos || part.find("..") == 0 ||
            part.find("/../") != std::string_view::npos) {
            fail(ErrorKind::invalid_argument, "{}: unexpected characters in \"{}\"", text, part);
        }
    }
    std::string endpoint = env("MEMWALL_HF_ENDPOINT");
    if (endpoint.empty()) endpoint = env("HF_ENDPOINT");
    if (endpoint.empty()) endpoint = "https://huggingface.co";
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    r.url = fmt::format("{}/{}/{}/resolve/{}/{}", endpoint, owner, repo, escape_segment(revision),
                        path);
    r.bearer_token = env("HF_TOKEN");
    r.file_name = last_segment(r.url);
    return r;
}

bool is_sha256_hex(std::string_view text) {
    if (text.size() != 64) return false;
    for (char c : text) {
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
}

std::optional<std::string> sha256_from_etag(std::string_view etag) {
    while (!etag.empty() && std::isspace(static_cast<unsigned char>(etag.front())))
        etag.remove_prefix(1);
    while (!etag.empty() && std::isspace(static_cast<unsigned char>(etag.back())))
        etag.remove_suffix(1);
    if (starts_with(etag, "W/")) return std::nullopt;
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
        etag = etag.substr(1, etag.size() - 2);
    }
    if (!is_sha256_hex(etag)) return std::nullopt;
    std::string out(etag);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace mw::net
