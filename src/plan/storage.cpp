#include "plan/storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "base/error.h"

namespace mw {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t MiB = uint64_t(1) << 20;
// Direct I/O wants offsets, lengths and buffers aligned to the device's logical block; 4 KiB
// covers every common device (as in runtime/expert_cache.cpp).
constexpr uint64_t kAlign = 4096;
constexpr uint64_t kSequentialRead = 4 * MiB;
constexpr uint64_t kPassBytes = 32 * MiB;  // per pass of each kind: long enough to time
constexpr uint64_t kMinFileBytes = 64 * MiB;
constexpr uint64_t kRandomBlocks[] = {256 << 10, 1 * MiB, 4 * MiB};
// The expert cache has two I/O threads reading at once (an SSD serves two about twice as fast).
constexpr int kRandomReaders = 2;
constexpr int kMinPasses = 3, kMaxPasses = 9;
// statfs f_type of the file systems that keep files in memory.
constexpr long kTmpfsMagic = 0x01021994, kRamfsMagic = 0x858458f6;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string mib(uint64_t bytes) {
    return fmt::format("{:.0f} MiB", double(bytes) / double(MiB));
}

struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

Buffer aligned_buffer(uint64_t bytes) {
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlign, bytes));
    if (!p) fail(ErrorKind::out_of_memory, "storage probe: cannot allocate {}", mib(bytes));
    return Buffer(p);
}

class Fd {
  public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

  private:
    int fd_;
};

// Not compressible and not all zeros: a file system that compresses or deduplicates would
// otherwise read less than it claims.
void fill_pattern(uint8_t* p, uint64_t bytes, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint64_t i = 0; i + 8 <= bytes; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::memcpy(p + i, &x, 8);
    }
}

class Reader {
  public:
    Reader(int fd, bool direct, std::string dir) : fd_(fd), direct_(direct), dir_(std::move(dir)) {}

    // Reads [offset, offset + bytes) into buf; without O_DIRECT the range is dropped from the
    // page cache at once, so that no later read of it is served from memory.
    void read(uint8_t* buf, uint64_t bytes, uint64_t offset) const {
        uint64_t done = 0;
        while (done < bytes) {
            const ssize_t r = ::pread(fd_, buf + done, bytes - done, off_t(offset + done));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0)
                fail(ErrorKind::io, "storage probe in {}: read: {}", dir_, std::strerror(errno));
            if (r == 0) fail(ErrorKind::io, "storage probe in {}: the test file ended early", dir_);
            done += uint64_t(r);
        }
        if (!direct_) ::posix_fadvise(fd_, off_t(offset), off_t(bytes), POSIX_FADV_DONTNEED);
    }

  private:
    int fd_;
    bool direct_;
    std::string dir_;
};

// The test file: created, unlinked at once (nothing is left behind whatever happens next), filled
// and synced, its pages dropped from the page cache.
int create_test_file(const std::string& dir, uint64_t bytes, double* write_seconds) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
        fail(ErrorKind::io, "storage probe: {}: {}", dir, std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) fail(ErrorKind::io, "storage probe: {} is not a folder", dir);
    struct statvfs vfs {};
    if (::statvfs(dir.c_str(), &vfs) == 0) {
        const uint64_t free_bytes = uint64_t(vfs.f_bavail) * vfs.f_frsize;
        if (free_bytes < bytes + 64 * MiB) {
            fail(ErrorKind::io,
                 "storage probe: {} has {} free; the test file needs {} and 64 MiB to spare (a "
                 "smaller test file needs less)",
                 dir, mib(free_bytes), mib(bytes));
        }
    }
    const std::string path = fmt::format("{}/.memwall-storage-probe-{}.tmp", dir, ::getpid());
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fail(ErrorKind::io, "storage probe: cannot create a test file in {}: {}", dir,
             std::strerror(errno));
    }
    ::unlink(path.c_str());
    const auto start = Clock::now();
    const Buffer buf = aligned_buffer(kSequentialRead);
    for (uint64_t at = 0; at < bytes; at += kSequentialRead) {
        fill_pattern(buf.get(), kSequentialRead, at / kSequentialRead);
        uint64_t done = 0;
        while (done < kSequentialRead) {
            const ssize_t w =
                ::pwrite(fd, buf.get() + done, kSequentialRead - done, off_t(at + done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                const int e = errno;
                ::close(fd);
                fail(ErrorKind::io, "storage probe: cannot write the test file in {}: {}", dir,
                     std::strerror(e));
            }
            done += uint64_t(w);
        }
    }
    if (::fdatasync(fd) != 0) {
        const int e = errno;
        ::close(fd);
        fail(ErrorKind::io, "storage probe: cannot sync the test file in {}: {}", dir,
             std::strerror(e));
    }
    ::posix_fadvise(fd, 0, off_t(bytes), POSIX_FADV_DONTNEED);
    *write_seconds = seconds_since(start);
    return fd;
}

// O_DIRECT on the open file, checked by one read: some file systems accept the flag and refuse
// the reads. "" when it works, else why not.
std::string try_direct_io(int fd, uint8_t* buf) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_DIRECT) != 0)
        return fmt::format("O_DIRECT refused here ({})", std::strerror(errno));
    if (::pread(fd, buf, kAlign, 0) == ssize_t(kAlign)) return "";
    const std::string why = fmt::format("O_DIRECT reads refused here ({})", std::strerror(errno));
    ::fcntl(fd, F_SETFL, flags);
    return why;
}

// Seconds to read kPassBytes in order from `*position` (wrapping at the end of the file).
double sequential_pass(const Reader& reader, uint8_t* buf, uint64_t file_bytes,
                       uint64_t* position) {
    const auto start = Clock::now();
    for (uint64_t done = 0; done < kPassBytes; done += kSequentialRead) {
        if (*position + kSequentialRead > file_bytes) *position = 0;
        reader.read(buf, kSequentialRead, *position);
        *position += kSequentialRead;
    }
    return seconds_since(start);
}

// Seconds for kRandomReaders threads to read kPassBytes together in blocks at random block-aligned
// offsets.
double random_pass(const Reader& reader, const std::vector<Buffer>& bufs, uint64_t block,
                   uint64_t file_bytes, uint64_t seed) {
    const uint64_t n_blocks = file_bytes / block;
    const uint64_t reads_each = std::max<uint64_t>(1, kPassBytes / block / kRandomReaders);
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(kRandomReaders);
    for (int t = 0; t < kRandomReaders; ++t) {
        threads.emplace_back([&, t] {
            try {
                uint64_t x = seed * 0x9E3779B97F4A7C15ull + uint64_t(t) * 0xBF58476D1CE4E5B9ull + 1;
                for (uint64_t i = 0; i < reads_each; ++i) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    reader.read(bufs[size_t(t)].get(), block, (x % n_blocks) * block);
                }
            } catch (...) {
                errors[size_t(t)] = std::current_exception();
            }
        });
    }
    for (std::thread& th : threads) th.join();
    for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
    }
    return seconds_since(start);
}

}  // namespace

StorageResult measure_storage(const StorageOptions& options) {
    StorageResult r;
    r.dir = options.dir.empty() ? "." : options.dir;
    r.file_bytes = (options.file_bytes + kSequentialRead - 1) / kSequentialRead * kSequentialRead;
    if (r.file_bytes < kMinFileBytes) {
        fail(ErrorKind::invalid_argument,
             "storage probe: a test file of {} is too small to time reads (at least {})",
             mib(options.file_bytes), mib(kMinFileBytes));
    }
    r.measured_at = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    const auto start = Clock::now();
    const Fd fd(create_test_file(r.dir, r.file_bytes, &r.write_seconds));
    if (char* real = ::realpath(r.dir.c_str(), nullptr)) {  // where it was, for the saved figure
        r.dir = real;
        std::free(real);
    }

    std::vector<Buffer> bufs;
    for (int t = 0; t < kRandomReaders; ++t) bufs.push_back(aligned_buffer(kSequentialRead));
    const std::string refused = try_direct_io(fd.get(), bufs[0].get());
    r.direct_io = refused.empty();
    if (!r.direct_io) r.note = refused + ": pread + posix_fadvise(DONTNEED) instead";
    struct statfs fs {};
    if (::statfs(r.dir.c_str(), &fs) == 0 &&
        (long(fs.f_type) == kTmpfsMagic || long(fs.f_type) == kRamfsMagic)) {
        r.note += fmt::format(
            "{}the folder is in memory (tmpfs): these figures are memory's, "
            "not storage's",
            r.note.empty() ? "" : "; ");
    }
    const Reader reader(fd.get(), r.direct_io, r.dir);

    // Rounds of one pass of each kind, so that a disturbance spreads over all of them.
    std::vector<double> sequential;
    std::vector<std::vector<double>> random(std::size(kRandomBlocks));
    uint64_t position = 0;
    const auto reading = Clock::now();
    for (int round = 0; round < kMaxPasses; ++round) {
        if (round >= kMinPasses && seconds_since(reading) > options.seconds) break;
        const double s = sequential_pass(reader, bufs[0].get(), r.file_bytes, &position);
        sequential.push_back(double(kPassBytes) / s);
        for (size_t i = 0; i < std::size(kRandomBlocks); ++i) {
            const uint64_t block = kRandomBlocks[i];
            const uint64_t bytes =
                std::max<uint64_t>(1, kPassBytes / block / kRandomReaders) * kRandomReaders * block;
            const double t =
                random_pass(reader, bufs, block, r.file_bytes, uint64_t(round) * 16 + i);
            random[i].push_back(double(bytes) / t);
        }
    }
    r.sequential = robust_stats(sequential);
    for (size_t i = 0; i < std::size(kRandomBlocks); ++i)
        r.random.push_back({kRandomBlocks[i], robust_stats(random[i])});
    r.seconds = seconds_since(start);
    return r;
}

}  // namespace mw
