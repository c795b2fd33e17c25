// Built instead of the network code when MEMWALL_NET is OFF (the static ARM64 test build, which
// has no libcurl or OpenSSL): every entry point says so.
#include "base/error.h"
#include "net/download.h"
#include "net/remote_header.h"
#include "net/sha256.h"

namespace mw::net {
namespace {

[[noreturn]] void disabled(const std::string& what) {
    fail(ErrorKind::unsupported,
         "{}: this memwall was built without libcurl and OpenSSL (MEMWALL_NET=OFF)", what);
}

}  // namespace

struct Sha256::State {};
Sha256::Sha256() {
    disabled("SHA-256");
}
Sha256::~Sha256() = default;
void Sha256::update(std::span<const uint8_t>) {}
std::string Sha256::finish() {
    return {};
}
void Sha256::reset() {}

bool hash_file(Sha256&, const std::string& path, uint64_t, const std::function<bool(uint64_t)>&) {
    disabled(path);
}

std::string sha256_file(const std::string& path, uint64_t, const std::function<void(uint64_t)>&) {
    disabled(path);
}

RemoteHeader fetch_gguf_header(const std::string& url_text) {
    disabled(url_text);
}

DownloadResult download(const RemoteFile& file, const std::string&, const DownloadOptions&) {
    disabled(file.name.text);
}

}  // namespace mw::net
