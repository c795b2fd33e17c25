// Gemma 4's per-layer embedding table kept on storage (model/ple_source.h): each row a token
// needs is read from the file with pread (through no mapping, dropped from the page cache after),
// recent tokens' rows kept in a small cache. The table is 1.94 GB of a 4.96 GB E4B Q4_K_M file,
// and a token reads one row of it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "model/ple_source.h"
#include "tensor/types.h"

namespace mw {

struct Model;

// Rows of the table a PleReader keeps: recent tokens' (the planner counts these).
inline constexpr uint32_t kPleCacheRows = 16;

// Whether a model's per-layer embedding table stays on storage: it has one, and neither
// `resident` (--ple-resident, LoadOptions::ple_resident) nor MEMWALL_PLE=resident keeps it.
bool ple_on_storage(const Model& m, bool resident);
// The table's bytes in the file, and what a reader keeps of it in memory (its cached rows).
uint64_t ple_table_bytes(const Model& m);
uint64_t ple_cache_bytes(const Model& m);

class PleReader final : public PleSource {
  public:
    // The table's rows of `row_bytes` in `traits`' encoding, `width` floats each, from byte
    // `offset` of the file at `path`; `cache_rows` recent rows kept.
    PleReader(const std::string& path, uint64_t offset, uint64_t row_bytes, int64_t width,
              const TypeTraits& traits, uint32_t cache_rows = kPleCacheRows);
    ~PleReader() override;
    PleReader(const PleReader&) = delete;
    PleReader& operator=(const PleReader&) = delete;

    void row(int64_t token, float* out) override;
    uint64_t bytes_read() const override;
    uint64_t cache_hits() const override;

  private:
    std::string path_;
    uint64_t offset_, row_bytes_;
    int64_t width_;
    const TypeTraits& traits_;
    int fd_ = -1;
    bool direct_ = false;
    mutable std::mutex mu_;
    std::vector<int64_t> tokens_;  // per cache slot (-1: empty)
    std::vector<uint64_t> used_;   // per slot: when last used
    std::vector<uint8_t> rows_;    // the slots' encoded rows
    uint8_t* block_ = nullptr;     // an aligned read buffer
    uint64_t clock_ = 0, bytes_read_ = 0, hits_ = 0;
};

}  // namespace mw
