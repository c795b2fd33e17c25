// The header of a remote GGUF file, read with HTTP range requests: only the bytes up to the
// tensor data (typically a few MB of a multi-GB file), parsed by the one GGUF reader, so that a
// remote file is planned exactly like a local one. A server that ignores ranges is refused
// rather than downloaded from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/url.h"

namespace mw::net {

// What the server says about the file.
struct RemoteFile {
    RemoteUrl name;
    uint64_t size = 0;         // from Content-Range
    std::string etag;          // of the final response (empty when none)
    std::string linked_etag;   // Hugging Face's X-Linked-Etag (on the redirect)
    std::string sha256;        // lowercase hex, when an ETag is one; else empty
    std::string resolved_url;  // after redirects
};

struct RemoteHeader {
    RemoteFile file;
    std::vector<uint8_t> bytes;  // the file's bytes [0, data offset): the whole header
    uint64_t bytes_read = 0;     // body bytes received in all (at least bytes.size())
    int requests = 0;
};

// Reads ranges of growing size (64 KiB, then doubling) until the header parses; throws the
// reader's error (field and value) for a malformed header, ErrorKind::io for HTTP failures and
// ErrorKind::unsupported when the server does not honour ranges.
RemoteHeader fetch_gguf_header(const std::string& url_text);

}  // namespace mw::net
