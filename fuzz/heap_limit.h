// The heap a fuzz input may use: a file that claims huge sizes must not make memwall allocate
// more than the file could justify. While a HeapLimit is alive, the bytes live on the heap (as
// the sanitizer allocator reports them, all threads) are counted from zero; the allocation that
// takes them over the limit aborts the run with its stack, which libFuzzer reports as a finding.
// libFuzzer's -malloc_limit_mb catches one huge block; this catches many moderate ones.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mw::fuzz {

class HeapLimit {
  public:
    // At most `limit_bytes` live at any time. One HeapLimit at a time.
    explicit HeapLimit(uint64_t limit_bytes);
    ~HeapLimit();
    HeapLimit(const HeapLimit&) = delete;
    HeapLimit& operator=(const HeapLimit&) = delete;

    // The most bytes live at once so far.
    uint64_t peak() const;
};

// The limit the targets use for an input of `size` bytes: what the loaded structures may
// reasonably cost per byte of file, plus a fixed allowance (Unicode tables, regexes, scratch).
inline uint64_t heap_limit_for(size_t size) {
    return uint64_t(size) * 16 + (uint64_t(8) << 20);
}

}  // namespace mw::fuzz
