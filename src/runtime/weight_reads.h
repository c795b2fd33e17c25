// Reads of weight bytes from a model file into the process's own memory that leave no second copy
// in the page cache (pread then posix_fadvise(DONTNEED), or O_DIRECT of the enclosing blocks): how
// the expert cache and the layer stream of a model under a memory budget fill their slots.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

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

// A thread kept for the life of its owner that takes a share of a read (storage serves two reads
// in flight faster than one), so that a read of many pieces starts no thread of its own. One
// share at a time: a second reader that finds it busy reads all its pieces itself.
class ReadPartner {
  public:
    ReadPartner();
    ~ReadPartner();
    ReadPartner(const ReadPartner&) = delete;
    ReadPartner& operator=(const ReadPartner&) = delete;

    // Starts `share` on the partner thread and returns true, or returns false at once when the
    // partner is busy with another's share. After true, finish() must follow.
    bool try_start(std::function<void()> share);
    // Waits for the share started by try_start; rethrows what it threw.
    void finish();

  private:
    void loop();

    std::mutex mu_;
    std::condition_variable cv_;
    std::function<void()> share_;
    std::exception_ptr failed_;
    bool busy_ = false;     // from try_start to finish
    bool running_ = false;  // share_ is set and not done
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace mw
