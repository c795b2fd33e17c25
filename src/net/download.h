// Downloading a remote file to disk so that nothing is lost or spliced: the bytes go to
// PATH.part (its server's validators beside it in PATH.part.json), a later call resumes it with
// a range request guarded by If-Range, a file that changed on the server starts again instead of
// being spliced, dropped connections are retried with back-off, the disk space is checked before
// starting, and the size and SHA-256 are checked before the file is renamed into place.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "net/remote_header.h"

namespace mw::net {

struct DownloadProgress {
    uint64_t done = 0;          // bytes of the file on disk (resumed bytes included)
    uint64_t total = 0;         // the file's size
    uint64_t resumed_from = 0;  // bytes already there when this download started
    double elapsed_s = 0;
    double bytes_per_s = 0;  // over the last few seconds
    int attempt = 1;         // of the current request
    std::string note;        // an event to tell (a retry, a restart), else empty
};

struct DownloadOptions {
    std::string sha256;        // expected, lowercase hex; empty: the server's, when it gives one
    uint64_t max_bytes = 0;    // refuse files larger than this (0: no limit but the disk's)
    int retries = 5;           // attempts in a row without progress before giving up
    double retry_delay_s = 1;  // before the first retry; doubled each time, at most 60 s
    long stall_timeout_s = 60;
    // About ten times a second, and for each note; false stops the download (the .part stays).
    std::function<bool(const DownloadProgress&)> progress;
};

struct DownloadResult {
    std::string path;
    uint64_t size = 0;
    uint64_t downloaded = 0;  // bytes received in this call
    uint64_t resumed_from = 0;
    int restarts = 0;  // times the .part was thrown away (the file changed on the server)
    int retries = 0;
    std::string sha256;             // of the file, when computed (always, unless cancelled)
    std::string sha256_source;      // "given", "server" (an ETag) or "" (size checked only)
    bool already_complete = false;  // the file was there with the expected size and hash
    bool cancelled = false;         // stopped by the progress callback; the .part stays
    double seconds = 0;
};

// Downloads `file` (its header already read, so its size and validators are known) to `path`.
// Throws mw::Error naming the file and what went wrong; the .part is kept whenever it holds
// good bytes. A cancelled download returns with `cancelled` set.
DownloadResult download(const RemoteFile& file, const std::string& path,
                        const DownloadOptions& options);

}  // namespace mw::net
