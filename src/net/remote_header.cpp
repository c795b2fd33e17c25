#include "net/remote_header.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/error.h"
#include "format/gguf.h"
#include "net/http.h"

namespace mw::net {
namespace {

constexpr uint64_t kFirstRead = uint64_t(64) << 10;
constexpr int kRetries = 3;  // dropped connections while reading the header

// A strong ETag (If-Range accepts no weak one).
std::string strong(const std::string& etag) {
    return etag.substr(0, 2) == "W/" ? std::string() : etag;
}

// Appends the file's bytes [first, last] to `bytes`; fills `file` from the first answer.
void read_range(RemoteHeader& h, uint64_t first, uint64_t last) {
    const RemoteUrl& name = h.file.name;
    const uint64_t length = last - first + 1;
    HttpRequest request;
    request.url = name.url;
    request.bearer_token = name.bearer_token;
    request.range_first = first;
    request.range_last = last;
    if (h.requests > 0) request.if_range = strong(h.file.etag);
    for (int attempt = 0;; ++attempt) {
        const size_t before = h.bytes.size();
        uint64_t received = 0;
        const HttpResult r = http_get(request, [&](const HttpHead& head, auto piece) {
            if (head.status != 206) return false;  // a whole file: not what was asked for
            const size_t take = size_t(std::min<uint64_t>(piece.size(), length - received));
            h.bytes.insert(h.bytes.end(), piece.begin(), piece.begin() + ptrdiff_t(take));
            received += take;
            return received < length || take == piece.size();
        });
        h.bytes_read += r.body_bytes;
        ++h.requests;
        if (r.outcome == HttpOutcome::failed) {
            h.bytes.resize(before);
            if (r.transient && attempt < kRetries) {
                std::this_thread::sleep_for(std::chrono::milliseconds(250 << attempt));
                continue;
            }
            fail(ErrorKind::io, "{}: cannot read bytes {}-{}: {}", name.text, first, last, r.error);
        }
        const HttpHead& head = r.head;
        if (head.status == 200) {
            if (h.requests > 1 && !request.if_range.empty()) {
                fail(ErrorKind::io,
                     "{}: the file changed on the server while its header was read (ETag {} is "
                     "no longer current); try again",
                     name.text, request.if_range);
            }
            fail(ErrorKind::unsupported,
                 "{}: the server does not support range requests (it answered {} with the whole "
                 "file to a request for bytes {}-{}); memwall reads only the header of a remote "
                 "file, so it stopped instead of downloading {}",
                 name.text, status_text(head), first, last,
                 head.content_length ? fmt::format("{} bytes", *head.content_length)
                                     : std::string("all of it"));
        }
        if (head.status != 206) fail_status(name.text, head);
        if (!head.range_first || *head.range_first != first || !head.range_total) {
            fail(ErrorKind::io,
                 "{}: the server answered a request for bytes {}-{} with Content-Range {}-{}/{}, "
                 "not the range asked for with the file's size",
                 name.text, first, last, head.range_first.value_or(0), head.range_last.value_or(0),
                 head.range_total ? fmt::format("{}", *head.range_total) : "*");
        }
        if (h.requests == 1) {
            h.file.size = *head.range_total;
            h.file.etag = head.etag;
            h.file.linked_etag = head.linked_etag;
            h.file.resolved_url = head.url;
            std::optional<std::string> sha = sha256_from_etag(head.linked_etag);
            if (!sha) sha = sha256_from_etag(head.etag);
            h.file.sha256 = sha.value_or("");
        } else if (*head.range_total != h.file.size) {
            fail(ErrorKind::io,
                 "{}: the file changed on the server while its header was read ({} bytes, now "
                 "{}); try again",
                 name.text, h.file.size, *head.range_total);
        }
        const uint64_t expected = std::min(length, *head.range_total - first);
        if (received < expected) {
            h.bytes.resize(before);
            if (attempt < kRetries) continue;
            fail(ErrorKind::io, "{}: the server sent {} of the {} bytes asked for", name.text,
                 received, expected);
        }
        return;
    }
}

}  // namespace

RemoteHeader fetch_gguf_header(const std::string& url_text) {
    RemoteHeader h;
    h.file.name = resolve_url(url_text);
    uint64_t want = kFirstRead;
    for (;;) {
        const uint64_t first = h.bytes.size();
        if (h.requests == 0 || first < h.file.size) {
            const uint64_t end = h.requests == 0 ? want : std::min(want, h.file.size);
            read_range(h, first, end - 1);
        }
        try {
            const gguf::GgufFile header = gguf::GgufFile::parse(
                h.bytes, url_text, {.header_only = true, .file_size = h.file.size});
            // The planner parses [0, data offset), as it does of a local file; a file cut off
            // in the padding before its data has only what is there.
            const uint64_t end = std::min(header.data_offset(), h.file.size);
            if (h.bytes.size() >= end) {
                h.bytes.resize(size_t(end));
                return h;
            }
            want = end;
        } catch (const gguf::NeedMoreBytes& more) {
            want = std::min(h.file.size, std::max<uint64_t>(more.needed(), 2 * h.bytes.size()));
            if (want <= h.bytes.size()) throw;  // cannot happen: a read past the file is an error
        }
    }
}

}  // namespace mw::net
