// A model file's bytes: memory-mapped (default, pages load on demand and are shared with the page
// cache) or read into an owned buffer (--no-mmap). Optionally locked in RAM (--mlock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace mw {

struct MapOptions {
    bool use_mmap = true;
    bool lock = false;  // mlock the bytes; a refusal is reported in lock_error(), not thrown
    // Read at most this many bytes (0 = whole file). For header-only reads of partial downloads.
    uint64_t max_bytes = 0;
};

class MappedFile {
  public:
    static MappedFile open(const std::string& path, const MapOptions& options = {});

    MappedFile() = default;
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    // The same bytes, to rewrite in place (repacking tensors for the kernels) until seal(). A
    // mapping's bytes are copied into anonymous memory backed by huge pages where the OS allows,
    // at the same address (or, failing that, the mapping becomes copy-on-write): the file never
    // changes, and the pages become the process's own (counted in its RSS like the mapped pages
    // they replace, but no longer page cache the OS may drop). An mprotect refusal is an `io`
    // error. Read into memory (--no-mmap), the bytes already are the process's own. The byte
    // ranges in `skip` (sorted, disjoint; pages wholly inside them) are not copied: nothing reads
    // them through the mapping any more (Gemma 4's per-layer embeddings, read row by row from the
    // file), and they read as zeros afterwards (or as the file's bytes where the mapping became
    // copy-on-write), costing no memory.
    std::span<uint8_t> make_writable(std::span<const std::pair<uint64_t, uint64_t>> skip = {});
    // A mapping's byte ranges [first, second) (sorted, disjoint; rounded out to whole pages)
    // read into the process's own memory at the same addresses (pread, so nothing else of the
    // file is read ahead), locked if `lock`, writable until seal(); then the file's pages are
    // dropped from the page cache: the rest of the mapping is never touched and costs nothing.
    // Returns the bytes made resident. For a model under a memory budget: its dense part.
    uint64_t make_resident(std::span<const std::pair<uint64_t, uint64_t>> ranges, bool lock);
    // Read-only again (a mapping is protected, so a stray write faults).
    void seal();
    // Byte ranges [first, second) nothing reads any more (weights copied to a GPU): the whole
    // pages inside them are given back (unlocked, madvise(DONTNEED); a mapped file's pages also
    // leave the page cache). Reading them afterwards would give the file's bytes again through a
    // mapping, zeros from the process's own memory. Returns the bytes given back.
    uint64_t drop(std::span<const std::pair<uint64_t, uint64_t>> ranges);
    const std::string& path() const { return path_; }
    uint64_t file_size() const { return file_size_; }
    bool is_mapped() const { return mapped_; }
    bool is_locked() const { return locked_; }
    // Why --mlock failed (empty when it succeeded or was not asked for).
    const std::string& lock_error() const { return lock_error_; }
    // Bytes of this file currently resident in RAM (mincore for a mapping; all of it otherwise).
    uint64_t resident_bytes() const;

  private:
    void release();

    std::string path_;
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
    uint64_t file_size_ = 0;
    bool mapped_ = false;
    bool locked_ = false;
    std::string lock_error_;
};

}  // namespace mw
