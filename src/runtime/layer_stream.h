// The layer stream of a dense model loaded under a memory budget smaller than its weights
// (docs/memory-budget.md): slots in the process's own memory, each holding one layer's matrices,
// filled by reads from the file that leave no copy in the page cache (runtime/weight_reads.h) and
// repacked on fill into the kernels' layout when the resident weights were. The forward pass
// visits the layers in order, every token, so recency says nothing: the first layers that fit
// stay (pinned, read once), and the rest take turns in two slots, an I/O thread reading the next
// layer while the current one computes (in one slot without the thread).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/layer_source.h"
#include "model/model.h"
#include "runtime/weight_reads.h"

namespace mw {

struct LayerStreamStats {
    uint32_t n_slots = 0;
    uint64_t slot_bytes = 0;
    uint32_t n_layer = 0;
    uint32_t pinned = 0;      // layers that stay once read (0 until the slots are allocated)
    uint64_t acquires = 0;    // layers the forward passes used
    uint64_t hits = 0;        // already in memory (pinned, or still there from an earlier use)
    uint64_t prefetched = 0;  // read ahead by the I/O thread, ready when needed
    uint64_t waited = 0;      // read ahead, but still in flight when needed
    uint64_t misses = 0;      // read when needed, on the forward pass's thread
    uint64_t bytes_read = 0;  // from storage
    uint64_t reads = 0;       // layer reads
    double wait_ms = 0;       // the forward pass waited for reads (its own and the I/O thread's)
    bool direct_io = false;
};

// From shapes alone (a model bound from a header will do): the matrices of layer il as byte
// ranges of the file, their bytes in a slot (each aligned for direct reads), and the largest slot.
uint64_t layer_matrix_bytes(const Model& m, uint32_t il);
uint64_t layer_slot_bytes(const Model& m);

class LayerStream final : public LayerSource {
  public:
    struct Options {
        bool prefetch = true;    // an I/O thread reads the next layer ahead
        bool direct_io = false;  // O_DIRECT instead of pread + posix_fadvise(DONTNEED)
        bool lock = false;       // mlock the slots
    };

    // The layers of `m`, bound to a mapping of the whole file `path` at file_base; made before
    // repacking (the matrices' traits are the file's), which sets the traits each copy read later
    // is repacked to. `m` outlives the stream. No slots until allocate().
    LayerStream(const std::string& path, const Model& m, const uint8_t* file_base,
                const Options& options);
    ~LayerStream() override;
    LayerStream(const LayerStream&) = delete;
    LayerStream& operator=(const LayerStream&) = delete;

    uint64_t slot_bytes() const { return slot_bytes_; }
    uint32_t n_layer() const { return uint32_t(layers_.size()); }
    // Bytes of the file the stream serves (the matrices of every layer).
    uint64_t streamed_bytes() const { return streamed_bytes_; }
    // The file's byte ranges the stream serves, sorted and disjoint.
    const std::vector<std::pair<uint64_t, uint64_t>>& ranges() const { return ranges_; }
    // Whether `data` (a matrix's bytes in the mapping) is one the stream serves.
    bool serves(const uint8_t* data) const;
    // Allocates and touches n_slots slots (at least 1, at most one per layer); once.
    void allocate(uint32_t n_slots);
    uint32_t n_slots() const { return uint32_t(slots_.size()); }

    const Layer& acquire(uint32_t il) override;
    void release(uint32_t il) override;

    LayerStreamStats stats() const;

  private:
    enum class State { empty, loading, ready };
    struct Slot {
        uint8_t* mem = nullptr;
        int32_t layer = -1;
        State state = State::empty;
        uint32_t pins = 0;
        bool fresh = false;  // read ahead, not used yet
        Layer view;          // the layer with its matrices pointing into mem
    };
    struct Part {             // one tensor of a layer in the file
        size_t member = 0;    // which matrix of a Layer (index into layer_matrices)
        int64_t count = 1;    // matrices in the tensor (per-head k_b/v_b: n_head)
        uint64_t stride = 0;  // bytes between them
        uint64_t offset = 0;  // in the file
        uint64_t bytes = 0;   // the tensor's bytes
        const TypeTraits* file_traits = nullptr;
        uint64_t slot_offset = 0;  // in a slot, aligned
    };

    int pick_slot(uint32_t il, bool take_fresh) const;  // where layer il goes now, or -1
    void assign(int slot, uint32_t il, bool fresh);
    void read(Slot& s, uint32_t il);   // throws ErrorKind::io
    void prefetch_after(uint32_t il);  // under mu_
    void io_loop();

    std::string path_;
    int fd_ = -1;
    bool direct_ = false;
    Options options_;
    const Model& model_;
    std::vector<std::vector<Part>> layers_;
    uint64_t slot_bytes_ = 0;
    uint64_t streamed_bytes_ = 0;
    std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // the served bytes, sorted, in the mapping
    const uint8_t* file_base_ = nullptr;
    uint8_t* memory_ = nullptr;
    size_t memory_bytes_ = 0;
    uint32_t pinned_ = 0;

    mutable std::mutex mu_;
    std::condition_variable cv_;     // a slot changed state
    std::condition_variable io_cv_;  // the I/O thread has work
    std::vector<Slot> slots_;
    std::vector<int32_t> where_;  // per layer: its slot or -1
    int queued_ = -1;             // the slot the I/O thread is to fill
    bool stop_ = false;
    ReadPartner partner_;  // takes half of each layer's pieces
    std::thread io_;
    LayerStreamStats stats_;
};

}  // namespace mw
