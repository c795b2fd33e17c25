// SHA-256 by OpenSSL (libcrypto's EVP interface), incrementally: a download hashes each piece as
// it is written, so the file is not read again to check it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace mw::net {

class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(std::span<const uint8_t> bytes);
    // The digest as 64 lowercase hex digits; the hash starts again empty.
    std::string finish();
    void reset();

  private:
    struct State;
    std::unique_ptr<State> state_;
};

// Adds the first `length` bytes of the file to `hash` (all of it when length is UINT64_MAX), read
// in large pieces; `progress(done)` after each, and false from it stops early (hash_file then
// returns false). Throws ErrorKind::io naming the file, also when it is shorter than `length`.
bool hash_file(Sha256& hash, const std::string& path, uint64_t length = UINT64_MAX,
               const std::function<bool(uint64_t done)>& progress = {});

// The SHA-256 of the first `length` bytes of the file (all of it when length is UINT64_MAX),
// read in large pieces; `progress(done)` after each. Throws ErrorKind::io naming the file.
std::string sha256_file(const std::string& path, uint64_t length = UINT64_MAX,
                        const std::function<void(uint64_t done)>& progress = {});

}  // namespace mw::net
