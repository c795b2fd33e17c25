// The C API of remote models and file integrity (include/memwall.h, "Remote models and file
// integrity"): mw_pull plans a remote file from its header, then downloads it resumably;
// mw_verify_json checks a file on disk.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/api_error.h"
#include "api/api_fit.h"
#include "api/api_params.h"
#include "base/error.h"
#include "format/gguf.h"
#include "memwall.h"
#include "net/download.h"
#include "net/remote_header.h"
#include "plan/planner.h"
#include "runtime/verify.h"

namespace {

using mw::guarded;

template <size_t N>
void copy_text(char (&dst)[N], const std::string& src) {
    const size_t n = std::min(src.size(), N - 1);
    std::memcpy(dst, src.data(), n);
    dst[n] = '\0';
}

// The output name a URL implies: its last path segment, which must be a plain file name.
std::string default_path(const mw::net::RemoteUrl& url) {
    const std::string& name = url.file_name;
    if (name.empty() || name == "." || name == "..") {
        mw::fail(mw::ErrorKind::invalid_argument,
                 "{}: the URL does not end in a file name; give the output file", url.text);
    }
    return name;
}

}  // namespace

extern "C" {

void mw_pull_params_init(mw_pull_params* out, size_t struct_size) {
    mw_pull_params p{};
    p.sha256 = nullptr;
    p.check_fit = true;
    p.force = false;
    p.fit_params = mw_context_default_params();
    p.max_bytes = 0;
    p.retries = 5;
    p.retry_delay_s = 1.0;
    p.progress = nullptr;
    p.user_data = nullptr;
    mw::init_params(out, struct_size, p);
}

mw_status mw_pull(const char* url, const char* out_path, const mw_pull_params* params,
                  mw_pull_result* out) {
    if (!url) {
        mw::set_api_last_error("mw_pull: url is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
    mw_pull_params p;
    if (!mw::read_params(params, mw_pull_default_params(), &p, "mw_pull_params"))
        return MW_ERR_INVALID_ARGUMENT;
    mw_pull_result local;
    mw_pull_result* res = out ? out : &local;
    std::memset(res, 0, sizeof *res);
    bool cancelled = false;
    const mw_status st = guarded([&] {
        std::string sha = p.sha256 ? p.sha256 : "";
        if (!sha.empty() && !mw::net::is_sha256_hex(sha)) {
            mw::fail(mw::ErrorKind::invalid_argument, "--sha256 {}: not a SHA-256 (64 hex digits)",
                     sha);
        }
        // Plan first: the header, read with range requests, says what the file needs.
        mw::net::RemoteHeader header = mw::net::fetch_gguf_header(url);
        const std::string path = out_path && *out_path ? out_path : default_path(header.file.name);
        copy_text(res->path, path);
        res->file_bytes = header.file.size;
        res->header_bytes_read = header.bytes_read;
        auto note = [&](const std::string& text) {
            if (!p.progress) return;
            mw_pull_progress c{};
            c.total = header.file.size;
            c.attempt = 1;
            c.note = text.c_str();
            p.progress(&c, p.user_data);
        };
        note(fmt::format("read the header: {} bytes in {} request{} (the file has {} bytes)",
                         header.bytes_read, header.requests, header.requests == 1 ? "" : "s",
                         header.file.size));
        const mw::gguf::GgufFile gguf =
            mw::gguf::GgufFile::parse(header.bytes, url, {.header_only = true});
        // A file shorter than its own tensor table is refused before downloading it: with an
        // ETag that is no SHA-256 nothing else would notice, and the name would be taken.
        if (gguf.data_end() > header.file.size) {
            mw::fail(mw::ErrorKind::bad_file,
                     "not downloaded: {}: the file on the server has {} bytes, but its header's "
                     "tensor table needs {} ({} missing): the file is truncated",
                     url, header.file.size, gguf.data_end(), gguf.data_end() - header.file.size);
        }
        if (p.check_fit) {
            const mw::FitCheck fit = mw::check_fit(gguf, mw::run_settings_from(p.fit_params));
            mw::fit_to_c(fit, &res->fit);
            if (fit.fit == mw::Fit::no && !p.force) {
                mw::fail(mw::ErrorKind::out_of_memory,
                         "not downloaded: {}\nUse --force to download anyway.", fit.message);
            }
            note(fmt::format("plan: {}{}{}", fit.fit == mw::Fit::no ? "(forced) " : "", fit.message,
                             fit.fit == mw::Fit::tight ? " (tight: less than 10 % to spare)" : ""));
        }

        mw::net::DownloadOptions o;
        o.sha256 = sha;
        o.max_bytes = p.max_bytes;
        o.retries = std::max(0, p.retries);
        o.retry_delay_s = std::max(0.0, p.retry_delay_s);
        if (p.progress) {
            o.progress = [&](const mw::net::DownloadProgress& d) {
                mw_pull_progress c;
                c.done = d.done;
                c.total = d.total;
                c.resumed_from = d.resumed_from;
                c.elapsed_s = d.elapsed_s;
                c.bytes_per_s = d.bytes_per_s;
                c.attempt = d.attempt;
                c.note = d.note.empty() ? nullptr : d.note.c_str();
                return p.progress(&c, p.user_data);
            };
        }
        const mw::net::DownloadResult r = mw::net::download(header.file, path, o);
        res->downloaded_bytes = r.downloaded;
        res->resumed_from = r.resumed_from;
        res->retries = r.retries;
        res->restarts = r.restarts;
        copy_text(res->sha256, r.sha256);
        copy_text(res->sha256_source, r.sha256_source);
        res->already_complete = r.already_complete;
        res->cancelled = cancelled = r.cancelled;
        res->seconds = r.seconds;
        if (r.cancelled) {
            mw::fail(mw::ErrorKind::io,
                     "interrupted: {}.part is kept ({} of {} bytes): pull again to continue", path,
                     r.resumed_from + r.downloaded, r.size);
        }
    });
    res->cancelled = cancelled;
    return st;
}

void mw_verify_params_init(mw_verify_params* out, size_t struct_size) {
    mw_verify_params p{};
    p.sha256 = nullptr;
    p.n_threads = 0;
    p.progress = nullptr;
    p.user_data = nullptr;
    mw::init_params(out, struct_size, p);
}

char* mw_verify_json(const char* path, const mw_verify_params* params) {
    if (!path) {
        mw::set_api_last_error("mw_verify_json: path is NULL");
        return nullptr;
    }
    mw_verify_params p;
    if (!mw::read_params(params, mw_verify_default_params(), &p, "mw_verify_params"))
        return nullptr;
    std::string text;
    const mw_status st = guarded([&] {
        mw::VerifyOptions o;
        o.sha256 = p.sha256 ? p.sha256 : "";
        o.n_threads = p.n_threads;
        if (p.progress) {
            o.progress = [&](uint64_t done, uint64_t total, const char* pass) {
                p.progress(pass, done, total, p.user_data);
            };
        }
        text = mw::verify_report_to_json(mw::verify_file(path, o));
    });
    if (st != MW_OK) return nullptr;
    char* c = static_cast<char*>(std::malloc(text.size() + 1));
    if (!c) {
        mw::set_api_last_error("out of memory");
        return nullptr;
    }
    std::memcpy(c, text.c_str(), text.size() + 1);
    return c;
}

}  // extern "C"
