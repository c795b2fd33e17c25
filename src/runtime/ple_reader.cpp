#include "runtime/ple_reader.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "format/block_scales.h"
#include "model/model.h"
#include "runtime/weight_reads.h"

namespace mw {

bool ple_on_storage(const Model& m, bool resident) {
    const char* env = std::getenv("MEMWALL_PLE");
    return m.ple_embd.traits && !resident && !(env && std::string(env) == "resident");
}

uint64_t ple_table_bytes(const Model& m) {
    const WeightMatrix& t = m.ple_embd;
    return t.traits ? t.row_bytes * uint64_t(t.n_rows) : 0;
}

uint64_t ple_cache_bytes(const Model& m) {
    return std::min(ple_table_bytes(m), kPleCacheRows * m.ple_embd.row_bytes);
}

PleReader::PleReader(const std::string& path, uint64_t offset, uint64_t row_bytes, int64_t width,
                     const TypeTraits& traits, uint32_t cache_rows)
    : path_(path),
      offset_(offset),
      row_bytes_(row_bytes),
      width_(width),
      traits_(traits),
      tokens_(std::max(1u, cache_rows), -1),
      used_(tokens_.size(), 0),
      rows_(tokens_.size() * row_bytes) {
    // Without O_DIRECT: a row is far smaller than a block (pread, then dropped from the cache).
    fd_ = open_for_weight_reads(path, false, direct_);
    block_ = static_cast<uint8_t*>(
        std::aligned_alloc(kWeightReadAlign, size_t(weight_buffer_bytes(row_bytes))));
    if (!block_) {
        ::close(fd_);
        fail(ErrorKind::out_of_memory, "cannot allocate a read buffer of {} bytes", row_bytes);
    }
}

PleReader::~PleReader() {
    std::free(block_);
    if (fd_ >= 0) ::close(fd_);
}

void PleReader::row(int64_t token, float* out) {
    std::lock_guard<std::mutex> lock(mu_);
    ++clock_;
    size_t slot = 0;
    bool hit = false;
    for (size_t i = 0; i < tokens_.size(); ++i) {
        if (tokens_[i] == token) {
            slot = i;
            hit = true;
            break;
        }
        if (used_[i] < used_[slot]) slot = i;  // else the least recently used
    }
    uint8_t* bytes = rows_.data() + slot * row_bytes_;
    if (hit) {
        ++hits_;
    } else {
        const uint64_t off = offset_ + uint64_t(token) * row_bytes_;
        read_weight_bytes(fd_, direct_, path_, fmt::format("per-layer embedding row {}", token),
                          off, row_bytes_, block_);
        std::memcpy(bytes, block_ + off % kWeightReadAlign, row_bytes_);
        // Loading checks every other tensor's block scales; this table's, a row at a time.
        const uint32_t type = uint32_t(traits_.type);
        if (const auto bad = first_nonfinite_scale(type, bytes, row_bytes_ / traits_.type_size)) {
            fail(ErrorKind::bad_file,
                 "{}: tensor 'per_layer_token_embd.weight' ({}) has a block scale that is not "
                 "finite (inf or NaN) in block {} of row {}: the file is corrupt",
                 path_, traits_.name, *bad, token);
        }
        tokens_[slot] = token;
        bytes_read_ += row_bytes_;
    }
    used_[slot] = clock_;
    traits_.to_float(bytes, out, width_);
}

uint64_t PleReader::bytes_read() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_read_;
}

uint64_t PleReader::cache_hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
}

}  // namespace mw
