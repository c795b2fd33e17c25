#include "runtime/weight_reads.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/error.h"

namespace mw {
namespace {

uint64_t round_up(uint64_t n, uint64_t to) {
    return (n + to - 1) / to * to;
}

}  // namespace

uint64_t weight_buffer_bytes(uint64_t bytes) {
    return round_up(bytes + kWeightReadAlign, kWeightReadAlign);
}

int open_for_weight_reads(const std::string& path, bool want_direct, bool& direct) {
    int fd = -1;
    direct = false;
    if (want_direct) {
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
        direct = fd >= 0;  // tmpfs and some file systems refuse O_DIRECT: pread then
    }
    if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fail(ErrorKind::io, "{}: cannot open for reading weights: {}", path, std::strerror(errno));
    }
    // No read-ahead: it would bring in pages beyond what is read, which stay in the page cache
    // (charged to the budget) until the kernel reclaims them.
    if (!direct) ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    return fd;
}

void read_weight_bytes(int fd, bool direct, const std::string& path, const std::string& what,
                       uint64_t off, uint64_t len, uint8_t* block) {
    const uint64_t head = off % kWeightReadAlign;
    // pread: exactly the bytes; direct: the whole blocks around them.
    const uint64_t from = direct ? off - head : off;
    const uint64_t want = direct ? round_up(head + len, kWeightReadAlign) : len;
    const uint64_t need = direct ? head + len : len;
    uint8_t* at = direct ? block : block + head;
    uint64_t done = 0;
    while (done < want) {
        const ssize_t n = ::pread(fd, at + done, size_t(want - done), off_t(from + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            fail(ErrorKind::io, "{}: cannot read {} ({} bytes at offset {}): {}", path, what, len,
                 off, std::strerror(errno));
        }
        if (n == 0) {
            if (done >= need) break;  // direct: the last block ends the file
            fail(ErrorKind::io,
                 "{}: cannot read {}: the file ends at byte {}, before its last byte {} (was it "
                 "truncated or replaced after loading?)",
                 path, what, from + done, off + len);
        }
        done += uint64_t(n);
    }
    // The bytes are ours now: the page cache's copy would only count twice against the budget
    // (and push out what the process needs).
    if (!direct) ::posix_fadvise(fd, off_t(off), off_t(len), POSIX_FADV_DONTNEED);
}

ReadPartner::ReadPartner() : thread_([this] { loop(); }) {}

ReadPartner::~ReadPartner() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

bool ReadPartner::try_start(std::function<void()> share) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (busy_) return false;
        busy_ = running_ = true;
        share_ = std::move(share);
        failed_ = nullptr;
    }
    cv_.notify_all();
    return true;
}

void ReadPartner::finish() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !running_; });
    busy_ = false;
    if (std::exception_ptr e = std::exchange(failed_, nullptr)) std::rethrow_exception(e);
}

void ReadPartner::loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        cv_.wait(lock, [&] { return stop_ || (running_ && share_); });
        if (stop_) return;
        std::function<void()> share = std::move(share_);
        share_ = nullptr;
        lock.unlock();
        std::exception_ptr failed;
        try {
            share();
        } catch (...) {
            failed = std::current_exception();
        }
        lock.lock();
        failed_ = failed;
        running_ = false;
        cv_.notify_all();
    }
}

}  // namespace mw
