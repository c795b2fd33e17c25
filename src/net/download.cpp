#include "net/download.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "net/http.h"
#include "net/sha256.h"

namespace mw::net {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string mib(uint64_t bytes) {
    return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
}

// Where a .part came from: the server's validators when it was started.
struct PartRecord {
    std::string url;
    uint64_t size = 0;
    std::string etag;
    std::string sha256;
};

std::optional<PartRecord> read_record(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    try {
        const nlohmann::json j = nlohmann::json::parse(text.str());
        return PartRecord{j.at("url").get<std::string>(), j.at("size").get<uint64_t>(),
                          j.at("etag").get<std::string>(), j.at("sha256").get<std::string>()};
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;  // unreadable: as good as none
    }
}

void write_record(const std::string& path, const PartRecord& r) {
    const nlohmann::json j = {
        {"url", r.url}, {"size", r.size}, {"etag", r.etag}, {"sha256", r.sha256}};
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << j.dump(1) << "\n";
        if (!out) fail(ErrorKind::io, "{}: cannot write: {}", tmp, std::strerror(errno));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        fail(ErrorKind::io, "{}: cannot rename to {}: {}", tmp, path, std::strerror(errno));
    }
}

std::optional<uint64_t> file_size(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return uint64_t(st.st_size);
}

std::string directory_of(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

uint64_t free_bytes(const std::string& dir) {
    struct statvfs vfs {};
    if (::statvfs(dir.c_str(), &vfs) != 0) {
        fail(ErrorKind::io, "{}: cannot find the free disk space: {}", dir, std::strerror(errno));
    }
    return uint64_t(vfs.f_bavail) * uint64_t(vfs.f_frsize);
}

struct FileDescriptor {
    int fd = -1;
    ~FileDescriptor() {
        if (fd >= 0) ::close(fd);
    }
};

// write(2) until all is written; the errno of the failure, else 0.
int write_all(int fd, const uint8_t* p, size_t n, size_t& written) {
    written = 0;
    while (written < n) {
        const ssize_t w = ::write(fd, p + written, n - written);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        written += size_t(w);
    }
    return 0;
}

// A strong ETag (If-Range accepts no weak one).
std::string strong(const std::string& etag) {
    return etag.substr(0, 2) == "W/" ? std::string() : etag;
}

// Bytes per second over the last few seconds.
class RateMeter {
  public:
    void add(double t, uint64_t done) {
        samples_.push_back({t, done});
        while (samples_.size() > 2 && samples_.front().first < t - 5) samples_.pop_front();
    }
    double rate() const {
        if (samples_.size() < 2) return 0;
        const double dt = samples_.back().first - samples_.front().first;
        return dt > 0 ? double(samples_.back().second - samples_.front().second) / dt : 0;
    }

  private:
    std::deque<std::pair<double, uint64_t>> samples_;
};

class Download {
  public:
    Download(const RemoteFile& file, const std::string& path, const DownloadOptions& options)
        : file_(file),
          o_(options),
          what_(file.name.text),
          part_(path + ".part"),
          record_(path + ".part.json") {
        r_.path = path;
        r_.size = file.size;
    }

    DownloadResult run();

  private:
    bool tell(const std::string& note = {}, bool force = false);
    void restart(const std::string& why);
    // One request for the rest of the file; an empty string when it ended as it should (the
    // file complete, or cancelled), else why a retry may help.
    std::string attempt(int n);
    void finish();

    const RemoteFile& file_;
    const DownloadOptions& o_;
    const std::string& what_;
    const std::string part_, record_;
    DownloadResult r_;
    std::string expected_;
    FileDescriptor out_;
    Sha256 hash_;
    uint64_t have_ = 0;
    int attempt_ = 1;
    Clock::time_point start_ = Clock::now(), last_tell_{};
    RateMeter rate_;
};

bool Download::tell(const std::string& note, bool force) {
    const auto now = Clock::now();
    if (!force && note.empty() && now - last_tell_ < std::chrono::milliseconds(100)) {
        return !r_.cancelled;
    }
    last_tell_ = now;
    const double t = since(start_);
    rate_.add(t, have_);
    if (!o_.progress) return true;
    DownloadProgress p;
    p.done = have_;
    p.total = file_.size;
    p.resumed_from = r_.resumed_from;
    p.elapsed_s = t;
    p.bytes_per_s = rate_.rate();
    p.attempt = attempt_;
    p.note = note;
    if (!o_.progress(p)) r_.cancelled = true;
    return !r_.cancelled;
}

void Download::restart(const std::string& why) {
    if (::ftruncate(out_.fd, 0) != 0 || ::lseek(out_.fd, 0, SEEK_SET) != 0) {
        fail(ErrorKind::io, "{}: cannot truncate: {}", part_, std::strerror(errno));
    }
    hash_.reset();
    have_ = 0;
    r_.resumed_from = 0;
    ++r_.restarts;
    tell(fmt::format("starting again from byte 0: {}", why), true);
}

std::string Download::attempt(int n) {
    attempt_ = n;
    HttpRequest request;
    request.url = file_.name.url;
    request.bearer_token = file_.name.bearer_token;
    request.range_first = have_;
    request.if_range = strong(file_.etag);
    request.stall_timeout_s = o_.stall_timeout_s;

    uint64_t received = 0;
    std::string refused;  // why the answer cannot be used (not worth a retry)
    int write_errno = 0;
    const HttpResult res = http_get(
        request,
        [&](const HttpHead& head, std::span<const uint8_t> piece) {
            if (received == 0) {
                const bool changed =
                    (!head.etag.empty() && !file_.etag.empty() && head.etag != file_.etag) ||
                    (head.range_total && *head.range_total != file_.size) ||
                    (head.status == 200 && head.content_length &&
                     *head.content_length != file_.size);
                if (changed) {
                    refused = fmt::format(
                        "the file changed on the server after its header was read (ETag {}, now "
                        "{}; {} bytes, now {}); pull again to start over",
                        file_.etag, head.etag, file_.size,
                        head.range_total.value_or(head.content_length.value_or(0)));
                    return false;
                }
                if (head.status == 206 && head.range_first != have_) {
                    refused = fmt::format("asked for bytes from {}, the server sent from {}", have_,
                                          head.range_first.value_or(0));
                    return false;
                }
                if (head.status == 200 && have_ > 0) {
                    restart("the server sent the whole file instead of the rest");
                }
            }
            size_t written = 0;
            write_errno = write_all(out_.fd, piece.data(), piece.size(), written);
            hash_.update(piece.first(written));
            have_ += written;
            received += written;
            r_.downloaded += written;
            if (write_errno != 0) return false;
            if (have_ > file_.size) {
                refused =
                    fmt::format("the server sent more than the {} bytes of the file", file_.size);
                return false;
            }
            return true;
        },
        [&] { return tell(); });
    if (write_errno != 0) {
        fail(ErrorKind::io,
             "{}: cannot write: {} ({} of {} bytes written); {} is kept: make room and pull "
             "again to continue",
             part_, std::strerror(write_errno), have_, file_.size, part_);
    }
    if (!refused.empty()) fail(ErrorKind::io, "{}: {}", what_, refused);
    if (res.outcome == HttpOutcome::cancelled || r_.cancelled) return {};
    if (res.outcome == HttpOutcome::failed) {
        if (!res.transient) fail(ErrorKind::io, "{}: {}", what_, res.error);
        return res.error;
    }
    const long status = res.head.status;
    if (status == 416 && have_ == file_.size) return {};  // nothing was left to send
    if (status == 408 || status == 429 || status >= 500) return status_text(res.head);
    if (status != 200 && status != 206) fail_status(what_, res.head);
    if (have_ < file_.size) {
        return fmt::format("the response ended after {} bytes, at {} of {}", received, have_,
                           file_.size);
    }
    return {};
}

DownloadResult Download::run() {
    r_.sha256_source = o_.sha256.empty() ? (file_.sha256.empty() ? "" : "server") : "given";
    expected_ = o_.sha256.empty() ? file_.sha256 : o_.sha256;
    for (char& c : expected_) c = char(std::tolower(static_cast<unsigned char>(c)));

    // A finished file is not downloaded again, nor overwritten.
    if (const auto size = file_size(r_.path)) {
        if (*size == file_.size && !expected_.empty()) {
            tell(fmt::format("{} is there already: checking its SHA-256", r_.path), true);
            if (!hash_file(hash_, r_.path, UINT64_MAX, [&](uint64_t) { return tell(); })) {
                r_.seconds = since(start_);
                return r_;  // cancelled
            }
            r_.sha256 = hash_.finish();
            if (r_.sha256 == expected_) {
                r_.already_complete = true;
                r_.seconds = since(start_);
                return r_;
            }
        }
        fail(ErrorKind::invalid_argument,
             "{}: already exists ({} bytes{}); remove it or choose another name", r_.path, *size,
             *size == file_.size
                 ? (expected_.empty() ? ", no SHA-256 known to check it" : ", with another SHA-256")
                 : fmt::format(", the file on the server has {}", file_.size));
    }

    // A .part resumes only when it is a prefix of this very file.
    const std::optional<uint64_t> part_size = file_size(part_);
    std::string stale;
    if (part_size) {
        const std::optional<PartRecord> rec = read_record(record_);
        if (!rec) {
            stale = fmt::format("{} does not say where {} came from", record_, part_);
        } else if (rec->url != what_) {
            stale = fmt::format("{} came from {}", part_, rec->url);
        } else if (rec->size != file_.size || rec->etag != file_.etag) {
            stale = fmt::format(
                "the file changed on the server since {} was started (ETag {}, now {}; {} "
                "bytes, now {})",
                part_, rec->etag.empty() ? "none" : rec->etag,
                file_.etag.empty() ? "none" : file_.etag, rec->size, file_.size);
        } else if (*part_size > file_.size) {
            stale = fmt::format("{} is larger than the file", part_);
        } else {
            have_ = *part_size;
        }
    }

    // Room for the rest, before anything is written.
    const uint64_t need = file_.size - have_;
    if (o_.max_bytes > 0 && file_.size > o_.max_bytes) {
        fail(ErrorKind::invalid_argument,
             "{}: the file has {} bytes ({}), more than the {} bytes allowed (--max-bytes); "
             "nothing was downloaded",
             what_, file_.size, mib(file_.size), o_.max_bytes);
    }
    const std::string dir = directory_of(r_.path);
    const uint64_t free = free_bytes(dir);
    if (need > free) {
        fail(ErrorKind::io,
             "{}: not enough disk space for {}: {} more bytes ({}) are needed, {} has {} free; "
             "nothing was downloaded",
             r_.path, what_, need, mib(need), dir, mib(free));
    }

    write_record(record_, {what_, file_.size, file_.etag, file_.sha256});
    out_.fd = ::open(part_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (out_.fd < 0) fail(ErrorKind::io, "{}: cannot open: {}", part_, std::strerror(errno));
    if (!stale.empty()) restart(stale);
    if (have_ > 0) {
        tell(fmt::format("resuming {} at byte {} of {}: checking the bytes already there", part_,
                         have_, file_.size),
             true);
        if (!hash_file(hash_, part_, have_, [&](uint64_t) { return tell(); })) {
            r_.seconds = since(start_);
            return r_;  // cancelled
        }
        if (::lseek(out_.fd, off_t(have_), SEEK_SET) != off_t(have_)) {
            fail(ErrorKind::io, "{}: cannot seek: {}", part_, std::strerror(errno));
        }
    }
    r_.resumed_from = have_;

    int failures = 0;  // in a row, without a byte of progress
    for (int n = 1; have_ < file_.size && !r_.cancelled; ++n) {
        const uint64_t before = have_;
        const std::string why = attempt(n);
        if (why.empty()) break;
        if (have_ > before) failures = 0;
        if (++failures > o_.retries) {
            fail(ErrorKind::io,
                 "{}: {} at byte {} of {}, and no retry is left ({} in a row without progress "
                 "allowed); {} keeps {} of {} bytes: pull again to continue",
                 what_, why, have_, file_.size, o_.retries, part_, have_, file_.size);
        }
        ++r_.retries;
        const double delay = std::min(60.0, o_.retry_delay_s * std::pow(2.0, failures - 1));
        tell(
            fmt::format("{} at byte {} of {}: retrying in {:.1f} s", why, have_, file_.size, delay),
            true);
        const auto until = Clock::now() + std::chrono::duration<double>(delay);
        while (Clock::now() < until && tell()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    if (::fsync(out_.fd) != 0) {
        fail(ErrorKind::io, "{}: cannot sync: {}", part_, std::strerror(errno));
    }
    if (!r_.cancelled) finish();
    r_.seconds = since(start_);
    return r_;
}

void Download::finish() {
    tell({}, true);
    const uint64_t size = file_size(part_).value_or(0);
    if (size != file_.size || have_ != file_.size) {
        fail(ErrorKind::io, "{}: has {} bytes, the file on the server {}; {} is kept", part_, size,
             file_.size, part_);
    }
    r_.sha256 = hash_.finish();
    if (!expected_.empty() && r_.sha256 != expected_) {
        fail(ErrorKind::bad_file,
             "{}: SHA-256 mismatch: expected {} ({}), the download has {}; {} was not created "
             "and {} is kept for inspection (remove it to download again)",
             what_, expected_, r_.sha256_source == "given" ? "given" : "the server's ETag",
             r_.sha256, r_.path, part_);
    }
    ::close(out_.fd);
    out_.fd = -1;
    if (std::rename(part_.c_str(), r_.path.c_str()) != 0) {
        fail(ErrorKind::io, "{}: cannot rename to {}: {}", part_, r_.path, std::strerror(errno));
    }
    std::remove(record_.c_str());
    // The rename itself reaches the disk.
    const FileDescriptor dir{::open(directory_of(r_.path).c_str(), O_RDONLY | O_DIRECTORY)};
    if (dir.fd >= 0) ::fsync(dir.fd);
}

}  // namespace

DownloadResult download(const RemoteFile& file, const std::string& path,
                        const DownloadOptions& options) {
    Download d(file, path, options);
    return d.run();
}

}  // namespace mw::net
