// Storage read bandwidth of a folder: what a model run under a memory budget reads its experts at
// (docs/memory-budget.md). A temporary file is written there, its page cache dropped, and read
// back with the page cache bypassed (O_DIRECT; where that is refused, pread followed by
// posix_fadvise(DONTNEED) on every range read), sequentially in large reads and at random in
// blocks of 256 KiB to 4 MiB, several passes of each summarised as robust statistics (the
// median and spread of plan/measure.h). The file is unlinked as soon as it is created: nothing
// is left behind, even when the measurement is interrupted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/measure.h"

namespace mw {

struct StorageOptions {
    std::string dir;                            // the folder to measure (must exist, writable)
    uint64_t file_bytes = uint64_t(256) << 20;  // the temporary file (rounded to 4 MiB)
    double seconds = 1.5;                       // reading budget (at least 3 passes of each kind)
};

struct StorageRandom {
    uint64_t block_bytes = 0;  // each read
    RateStats rate;            // bytes/s, two reads in flight (the expert cache's I/O threads)
};

struct StorageResult {
    std::string dir;
    uint64_t file_bytes = 0;
    bool direct_io = false;             // O_DIRECT; false: pread + posix_fadvise(DONTNEED)
    std::string note;                   // why not O_DIRECT, or that the folder is in memory (tmpfs)
    RateStats sequential;               // bytes/s, one reader, 4 MiB reads in order
    std::vector<StorageRandom> random;  // 256 KiB, 1 MiB, 4 MiB
    double write_seconds = 0;           // writing and syncing the file
    double seconds = 0;                 // everything, the write included
    int64_t measured_at = 0;            // unix time

    bool measured() const { return sequential.median > 0; }
};

// Throws ErrorKind::io naming the folder when it does not exist, is not a folder, cannot hold a
// file of that size, or refuses the writes or reads.
StorageResult measure_storage(const StorageOptions& options);

}  // namespace mw
