#include "runtime/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "base/error.h"

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
        void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
        if (p == MAP_FAILED) {
            fail(ErrorKind::io, "{}: mmap of {} bytes failed: {}", path, file.size_,
                 std::strerror(errno));
        }
        file.data_ = static_cast<uint8_t*>(p);
        file.mapped_ = true;
    } else {
        file.data_ = static_cast<uint8_t*>(std::malloc(file.size_));
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

std::span<uint8_t> MappedFile::make_writable() {
    if (mapped_ && data_ && ::mprotect(data_, size_, PROT_READ | PROT_WRITE) != 0) {
        fail(ErrorKind::io, "{}: cannot make the mapping copy-on-write (mprotect): {}", path_,
             std::strerror(errno));
    }
#ifdef MADV_POPULATE_WRITE
    // Copy every page now in one call: faulting them one by one as they are written costs three
    // times the repacking itself. Kernels before 5.14 refuse; the writes then fault as usual.
    if (mapped_ && data_) ::madvise(data_, size_, MADV_POPULATE_WRITE);
#endif
    return {data_, size_};
}

void MappedFile::seal() {
    if (mapped_ && data_) ::mprotect(data_, size_, PROT_READ);
}

void MappedFile::release() {
    if (!data_) return;
    if (locked_) ::munlock(data_, size_);
    if (mapped_) {
        ::munmap(data_, size_);
    } else {
        std::free(data_);
    }
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
