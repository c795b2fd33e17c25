// Reads of weight bytes from a model file into the process's own memory that leave no second copy
// in the page cache (pread then posix_fadvise(DONTNEED), or O_DIRECT of the enclosing blocks): how
// the expert cache and the layer stream of a model under a memory budget fill their slots.
#pragma once

#include <cstdint>
#include <string>

namespace mw {

// Direct I/O wants offsets, lengths and buffers aligned to the device's logical block; 4 KiB
// covers every common device. Buffers keep that alignment for both kinds of read.
inline constexpr uint64_t kWeightReadAlign = 4096;

// Room for `bytes` read at any offset: the bytes wherever they start within a block, and a whole
// block more at the end (a direct read covers whole blocks). A multiple of the alignment.
uint64_t weight_buffer_bytes(uint64_t bytes);

// The file opened for such reads: with O_DIRECT when `want_direct` and the file system allows it
// (`direct` says which), without read-ahead otherwise. Throws ErrorKind::io naming the file.
int open_for_weight_reads(const std::string& path, bool want_direct, bool& direct);

// Reads `len` bytes at offset `off` of the file to `block + off % kWeightReadAlign`, where `block`
// is aligned and weight_buffer_bytes(len) long. Throws ErrorKind::io naming the file and `what`
// (e.g. "expert 3 of layer 5") on a read error or a file shorter than the bytes.
void read_weight_bytes(int fd, bool direct, const std::string& path, const std::string& what,
                       uint64_t off, uint64_t len, uint8_t* block);

}  // namespace mw
