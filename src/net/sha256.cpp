#include "net/sha256.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "net/libraries.h"

namespace mw::net {

struct Sha256::State {
    const CryptoLibrary& lib = crypto_library();
    EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
    state_->ctx = state_->lib.md_ctx_new();
    if (!state_->ctx) fail(ErrorKind::out_of_memory, "SHA-256: cannot allocate a digest context");
    reset();
}

Sha256::~Sha256() {
    state_->lib.md_ctx_free(state_->ctx);
}

void Sha256::reset() {
    if (state_->lib.digest_init_ex(state_->ctx, state_->lib.sha256(), nullptr) != 1) {
        fail(ErrorKind::unsupported, "SHA-256: OpenSSL refused to start a digest");
    }
}

void Sha256::update(std::span<const uint8_t> bytes) {
    if (bytes.empty()) return;
    if (state_->lib.digest_update(state_->ctx, bytes.data(), bytes.size()) != 1) {
        fail(ErrorKind::unsupported, "SHA-256: OpenSSL refused to hash");
    }
}

std::string Sha256::finish() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (state_->lib.digest_final_ex(state_->ctx, digest, &n) != 1 || n != 32) {
        fail(ErrorKind::unsupported, "SHA-256: OpenSSL refused to finish the digest");
    }
    std::string hex;
    for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", digest[i]);
    reset();
    return hex;
}

namespace {

struct FileDescriptor {
    int fd;
    ~FileDescriptor() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

bool hash_file(Sha256& hash, const std::string& path, uint64_t length,
               const std::function<bool(uint64_t done)>& progress) {
    const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    const int fd = file.fd;
    if (fd < 0) fail(ErrorKind::io, "{}: cannot open: {}", path, std::strerror(errno));
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    std::vector<uint8_t> buffer(size_t(4) << 20);
    uint64_t done = 0;
    while (done < length) {
        const size_t want = size_t(std::min<uint64_t>(buffer.size(), length - done));
        const ssize_t n = ::read(fd, buffer.data(), want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            fail(ErrorKind::io, "{}: read failed at byte {}: {}", path, done, std::strerror(errno));
        }
        if (n == 0) break;
        hash.update({buffer.data(), size_t(n)});
        done += uint64_t(n);
        if (progress && !progress(done)) return false;
    }
    if (length != UINT64_MAX && done != length) {
        fail(ErrorKind::io, "{}: has {} bytes, expected at least {}", path, done, length);
    }
    return true;
}

std::string sha256_file(const std::string& path, uint64_t length,
                        const std::function<void(uint64_t done)>& progress) {
    Sha256 hash;
    hash_file(hash, path, length, [&](uint64_t done) {
        if (progress) progress(done);
        return true;
    });
    return hash.finish();
}

}  // namespace mw::net
