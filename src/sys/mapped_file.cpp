#include "sys/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "base/error.h"
#include "sys/mapping_guard.h"

namespace mw {
namespace {

class Fd {
  public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }

  private:
    int fd_;
};

std::string describe_lock_failure(int err, size_t size) {
    struct rlimit limit {};
    std::string msg =
        fmt::format("mlock of {:.1f} MiB failed: {}", double(size) / (1 << 20), std::strerror(err));
    if ((err == ENOMEM || err == EPERM || err == EAGAIN) &&
        getrlimit(RLIMIT_MEMLOCK, &limit) == 0) {
        if (limit.rlim_cur == RLIM_INFINITY) {
            msg += " (RLIMIT_MEMLOCK is unlimited: not enough free RAM to lock the model)";
        } else {
            msg += fmt::format(
                " (RLIMIT_MEMLOCK is {:.1f} MiB; raise it with `ulimit -l unlimited` or in "
                "/etc/security/limits.conf); continuing without the lock",
                double(limit.rlim_cur) / (1 << 20));
        }
    }
    return msg;
}

constexpr size_t kHugePage = size_t(2) << 20;

size_t page_round(size_t n) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return (n + page - 1) / page * page;
}

// `size` bytes of address space at a 2 MiB boundary (PROT_NONE until mapped over), or null.
uint8_t* reserve_aligned(size_t size) {
    const size_t len = page_round(size), span = len + kHugePage;
    void* p = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    auto* base = static_cast<uint8_t*>(p);
    auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHugePage - 1) &
                                               ~uintptr_t(kHugePage - 1));
    if (aligned > base) ::munmap(base, size_t(aligned - base));
    if (base + span > aligned + len) ::munmap(aligned + len, size_t(base + span - aligned - len));
    return aligned;
}

// Anonymous read-write memory at a 2 MiB boundary that the OS may back with transparent huge
// pages (MADV_HUGEPAGE): a decode step streams every weight, and with 4 KiB pages every 4 KiB is
// a TLB miss and a page walk, which a virtual machine pays twice over. Null if refused.
uint8_t* map_anonymous(size_t size) {
    uint8_t* at = reserve_aligned(size);
    if (!at) return nullptr;
    void* p = ::mmap(at, page_round(size), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) {
        ::munmap(at, page_round(size));
        return nullptr;
    }
#ifdef MADV_HUGEPAGE
    ::madvise(at, page_round(size), MADV_HUGEPAGE);
#endif
    return at;
}

}  // namespace

MappedFile MappedFile::open(const std::string& path, const MapOptions& options) {
    MappedFile file;
    file.path_ = path;
    const int raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (raw_fd < 0) {
        fail(ErrorKind::io, "{}: cannot open: {}", path, std::strerror(errno));
    }
    Fd fd(raw_fd);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        fail(ErrorKind::io, "{}: cannot stat: {}", path, std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) fail(ErrorKind::io, "{}: is a directory, not a model file", path);
    if (!S_ISREG(st.st_mode)) fail(ErrorKind::io, "{}: is not a regular file", path);
    file.file_size_ = uint64_t(st.st_size);
    uint64_t size = file.file_size_;
    if (options.max_bytes != 0 && options.max_bytes < size) size = options.max_bytes;
    file.size_ = size_t(size);
    if (size == 0) return file;

    if (options.use_mmap) {
        // At a 2 MiB boundary, so that make_writable() can put huge pages in its place.
        uint8_t* at = reserve_aligned(file.size_);
        void* p =
            ::mmap(at, file.size_, PROT_READ, MAP_PRIVATE | (at ? MAP_FIXED : 0), fd.get(), 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            if (at) ::munmap(at, page_round(file.size_));
            fail(ErrorKind::io, "{}: mmap of {} bytes failed: {}", path, file.size_,
                 std::strerror(err));
        }
        file.data_ = static_cast<uint8_t*>(p);
        file.mapped_ = true;
        guard_mapping(file.data_, file.size_, path);
    } else {
        file.data_ = map_anonymous(file.size_);
        if (!file.data_) {
            fail(ErrorKind::out_of_memory, "{}: cannot allocate {} bytes to read the file", path,
                 file.size_);
        }
        size_t done = 0;
        while (done < file.size_) {
            const ssize_t n = ::pread(fd.get(), file.data_ + done, file.size_ - done, off_t(done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                const std::string why = n == 0 ? "unexpected end of file" : std::strerror(errno);
                fail(ErrorKind::io, "{}: read failed at byte {}: {}", path, done, why);
            }
            done += size_t(n);
        }
    }

    if (options.lock) {
        if (::mlock(file.data_, file.size_) == 0) {
            file.locked_ = true;
        } else {
            file.lock_error_ = describe_lock_failure(errno, file.size_);
        }
    }
    return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept {
    *this = std::move(other);
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        release();
        path_ = std::move(other.path_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        file_size_ = other.file_size_;
        mapped_ = other.mapped_;
        locked_ = std::exchange(other.locked_, false);
        lock_error_ = std::move(other.lock_error_);
    }
    return *this;
}

MappedFile::~MappedFile() {
    release();
}

std::span<uint8_t> MappedFile::make_writable(std::span<const std::pair<uint64_t, uint64_t>> skip) {
    if (!mapped_ || !data_) return {data_, size_};
    // Whether byte `at` of the file lies in a page wholly inside one of the ranges to skip.
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const auto skipped = [&](size_t at) {
        for (const auto& [begin, end] : skip) {
            if (at >= page_round(size_t(begin)) && at + page <= size_t(end)) return true;
        }
        return false;
    };
    // The file's bytes into anonymous memory with huge pages, moved over the mapping at the same
    // address (2 MiB aligned on both sides, so the huge pages move whole). Copied a chunk at a
    // time, each chunk of the mapping dropped after it (the file's pages stay in the page cache,
    // out of this process's RSS), so that the peak RSS stays that of one copy.
    if (uint8_t* anon = map_anonymous(size_)) {
        constexpr size_t kChunk = size_t(64) << 20;
        for (size_t off = 0; off < size_; off += kChunk) {
            const size_t n = std::min(kChunk, size_ - off);
            if (skip.empty()) {
                std::memcpy(anon + off, data_ + off, n);
            } else {  // page by page, leaving the skipped pages untouched (never allocated)
                for (size_t p = off; p < off + n; p += page) {
                    if (!skipped(p)) std::memcpy(anon + p, data_ + p, std::min(page, off + n - p));
                }
            }
            ::madvise(data_ + off, page_round(n), MADV_DONTNEED);
        }
        void* moved = ::mremap(anon, page_round(size_), page_round(size_),
                               MREMAP_MAYMOVE | MREMAP_FIXED, data_);
        if (moved != MAP_FAILED) {
            if (locked_) ::mlock(data_, size_);
            return {data_, size_};
        }
        ::munmap(anon, page_round(size_));
    }
    // Without that: the mapping itself, copy-on-write.
    if (::mprotect(data_, size_, PROT_READ | PROT_WRITE) != 0) {
        fail(ErrorKind::io, "{}: cannot make the mapping copy-on-write (mprotect): {}", path_,
             std::strerror(errno));
    }
#ifdef MADV_POPULATE_WRITE
    // Copy every page now in one call: faulting them one by one as they are written costs three
    // times the repacking itself. Kernels before 5.14 refuse; the writes then fault as usual.
    // The skipped ranges stay shared with the page cache (never written, never copied).
    size_t from = 0;
    for (const auto& [begin, end] : skip) {
        const size_t a = page_round(size_t(begin)), b = std::min(size_t(end), size_) / page * page;
        if (a >= b) continue;
        if (a > from) ::madvise(data_ + from, a - from, MADV_POPULATE_WRITE);
        from = b;
    }
    if (from < size_) ::madvise(data_ + from, size_ - from, MADV_POPULATE_WRITE);
#endif
    return {data_, size_};
}

uint64_t MappedFile::make_resident(std::span<const std::pair<uint64_t, uint64_t>> ranges,
                                   bool lock) {
    if (!mapped_ || !data_) return size_;
    const int raw_fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (raw_fd < 0) fail(ErrorKind::io, "{}: cannot open: {}", path_, std::strerror(errno));
    Fd fd(raw_fd);
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    // Whole pages, merged where rounding makes neighbours meet.
    std::vector<std::pair<size_t, size_t>> pages;
    for (const auto& [begin, end] : ranges) {
        const size_t a = size_t(begin) / page * page;
        const size_t b = std::min(page_round(size_t(end)), page_round(size_));
        if (a >= b) continue;
        if (!pages.empty() && a <= pages.back().second) {
            pages.back().second = std::max(pages.back().second, b);
        } else {
            pages.push_back({a, b});
        }
    }
    uint64_t resident = 0;
    for (const auto& [a, b] : pages) {
        const size_t len = b - a;
        void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            fail(ErrorKind::out_of_memory, "{}: cannot allocate {} bytes for the model's weights",
                 path_, len);
        }
        auto* buf = static_cast<uint8_t*>(p);
        const size_t want = std::min(len, size_ - a);
        size_t done = 0;
        while (done < want) {
            const ssize_t n = ::pread(fd.get(), buf + done, want - done, off_t(a + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                const std::string why = n == 0 ? "unexpected end of file" : std::strerror(errno);
                ::munmap(buf, len);
                fail(ErrorKind::io, "{}: read failed at byte {}: {}", path_, a + done, why);
            }
            done += size_t(n);
        }
        if (::mremap(buf, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, data_ + a) == MAP_FAILED) {
            const int err = errno;
            ::munmap(buf, len);
            fail(ErrorKind::io, "{}: cannot move the weights into place (mremap): {}", path_,
                 std::strerror(err));
        }
        if (lock && ::mlock(data_ + a, len) != 0 && lock_error_.empty()) {
            lock_error_ = describe_lock_failure(errno, len);
        }
        resident += len;
    }
    locked_ = false;  // only the ranges are locked; release() unmaps them with the rest
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
    return resident;
}

uint64_t MappedFile::drop(std::span<const std::pair<uint64_t, uint64_t>> ranges) {
    if (!data_) return 0;
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const int fd = mapped_ ? ::open(path_.c_str(), O_RDONLY | O_CLOEXEC) : -1;
    uint64_t dropped = 0;
    for (const auto& [begin, end] : ranges) {
        const size_t a = page_round(size_t(begin));  // only pages wholly inside the range
        const size_t b = std::min(size_t(end), size_) / page * page;
        if (a >= b) continue;
        ::munlock(data_ + a, b - a);  // a locked page cannot be given back
        if (::madvise(data_ + a, b - a, MADV_DONTNEED) == 0) dropped += b - a;
        if (fd >= 0) ::posix_fadvise(fd, off_t(a), off_t(b - a), POSIX_FADV_DONTNEED);
    }
    if (fd >= 0) ::close(fd);
    return dropped;
}

void MappedFile::seal() {
    if (mapped_ && data_) ::mprotect(data_, size_, PROT_READ);
}

void MappedFile::release() {
    if (!data_) return;
    if (mapped_) unguard_mapping(data_);
    if (locked_) ::munlock(data_, size_);
    ::munmap(data_, page_round(size_));
    data_ = nullptr;
    size_ = 0;
    locked_ = false;
}

uint64_t MappedFile::resident_bytes() const {
    if (!data_) return 0;
    if (!mapped_) return size_;
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t pages = (size_ + page - 1) / page;
    std::vector<unsigned char> vec(pages);
    if (::mincore(data_, size_, vec.data()) != 0) return 0;
    uint64_t resident = 0;
    for (unsigned char v : vec) resident += (v & 1) ? page : 0;
    return resident < size_ ? resident : size_;
}

}  // namespace mw
