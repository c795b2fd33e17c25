// The expert cache of a MoE model loaded under a memory budget (docs/memory-budget.md): a fixed
// number of slots in the process's own memory, each holding one (layer, expert)'s gate, up and
// down matrices, filled by reads from the file that leave no copy in the page cache (pread then
// posix_fadvise(DONTNEED), or O_DIRECT), repacked on fill into the kernels' layout when the
// dense weights were. Eviction by frequency (aged) then recency; pinned and in-flight slots stay.
// An I/O thread reads what the forward pass says it will need (this layer's routed experts, and
// the next layer's router applied ahead of time); a miss reads on the caller's thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/expert_source.h"
#include "model/model.h"

namespace mw {

struct ExpertCacheStats {
    uint32_t n_slots = 0;
    uint64_t slot_bytes = 0;
    uint64_t experts_total = 0;  // MoE layers x experts
    uint64_t acquires = 0;       // experts the forward pass asked for
    uint64_t hits = 0;           // already in memory (from earlier use)
    uint64_t prefetched = 0;     // in memory because the next-layer prediction had read it
    uint64_t waited = 0;         // the prediction's read was still in flight: waited for it
    uint64_t misses = 0;         // read for its own layer (on the I/O threads or the caller's)
    uint64_t bytes_read = 0;     // from storage, demand and prefetch together
    uint64_t reads = 0;          // expert reads (demand and prefetch)
    uint64_t predictable = 0;    // acquires in layers whose experts a prediction could name
    uint64_t predicted = 0;      // acquires the next-layer router prediction had named
    uint64_t predictions = 0;    // experts it named
    bool direct_io = false;
};

// From shapes alone (a model bound from a header will do): the bytes one cache slot takes (an
// expert's three matrices, each 4 KiB aligned with a block to spare for direct reads), and one
// expert's weight bytes (what filling a slot reads); the largest over the MoE layers, 0 without.
uint64_t expert_slot_bytes(const Model& m);
uint64_t expert_read_bytes(const Model& m);

class ExpertCache final : public ExpertSource {
  public:
    struct Options {
        bool repack = true;      // the dense weights were repacked: repack experts on fill
        bool prefetch = true;    // an I/O thread reads ahead
        bool direct_io = false;  // O_DIRECT instead of pread + posix_fadvise(DONTNEED)
        bool lock = false;       // mlock the slots
    };

    // The experts of `m`, whose bytes lie at `file_base` + offset in `path` (the model was bound
    // to a mapping of the whole file at file_base). No slots until allocate().
    ExpertCache(const std::string& path, const Model& m, const uint8_t* file_base,
                const Options& options);
    ~ExpertCache() override;
    ExpertCache(const ExpertCache&) = delete;
    ExpertCache& operator=(const ExpertCache&) = delete;

    // Bytes one slot takes (one expert's three matrices, aligned for direct I/O).
    uint64_t slot_bytes() const { return slot_bytes_; }
    // One expert's weight bytes (what one read brings in).
    uint64_t expert_bytes() const { return expert_bytes_; }
    uint64_t experts_total() const { return uint64_t(n_layer_) * n_expert_; }
    // Allocates and touches n_slots slots (at most experts_total()); once.
    void allocate(uint32_t n_slots);
    uint32_t n_slots() const { return uint32_t(slots_.size()); }

    ExpertSlices acquire(uint32_t il, int32_t e) override;
    void release(uint32_t il, int32_t e) override;
    void prefetch(uint32_t il, std::span<const int32_t> experts, bool predicted) override;
    bool wants_predictions() const override { return options_.prefetch; }

    ExpertCacheStats stats() const;

  private:
    enum class State { empty, loading, ready };
    struct Slot {
        uint8_t* mem = nullptr;
        int64_t key = -1;  // layer * n_expert + expert
        State state = State::empty;
        uint32_t pins = 0;
        bool fresh = false;  // read by a prefetch, not used yet
        bool ahead = false;  // that prefetch was a prediction (a layer ahead), not its own layer
        uint64_t last_use = 0;
    };
    struct Part {             // one of an expert's matrices in the file
        uint64_t offset = 0;  // of expert 0
        uint64_t stride = 0;  // between experts
        WeightMatrix matrix;  // shape, traits (packed when repacking), row_bytes
        const TypeTraits* file_traits = nullptr;
        uint64_t slot_offset = 0;  // in a slot, 4 KiB aligned
    };

    int64_t key(uint32_t il, int32_t e) const { return int64_t(il) * n_expert_ + e; }
    // The slot to (re)use, or -1: empty first, then the lowest (aged use count, last use) among
    // slots neither pinned nor loading; fresh prefetched slots only when `take_fresh`.
    int victim(bool take_fresh) const;
    void assign(int slot, int64_t k);
    ExpertSlices slices(const Slot& s) const;
    // Reads expert k into slot memory and repacks it; throws ErrorKind::io.
    void read(uint8_t* mem, int64_t k);
    void io_loop();
    void touch(Slot& s, int64_t k);

    std::string path_;
    int fd_ = -1;
    bool direct_ = false;
    Options options_;
    uint32_t n_layer_ = 0;
    uint32_t n_expert_ = 0;
    std::vector<std::vector<Part>> parts_;  // per layer: gate, up, down (empty: not MoE)
    uint64_t slot_bytes_ = 0;
    uint64_t expert_bytes_ = 0;
    uint8_t* memory_ = nullptr;
    size_t memory_bytes_ = 0;

    mutable std::mutex mu_;
    std::condition_variable cv_;     // a slot changed state (for acquire)
    std::condition_variable io_cv_;  // the queue has work (for the I/O threads)
    std::vector<Slot> slots_;
    std::vector<int32_t> where_;       // per key: its slot or -1
    std::vector<uint32_t> uses_;       // per key: aged use count
    std::vector<uint64_t> predicted_;  // per key: the step of its layer it was predicted for
    std::vector<uint64_t> steps_;      // per layer: forward steps that reached its FFN
    std::vector<bool> predictable_;    // per layer: the layer before it routes (predicts it)
    // Per layer: the slots its predictions were read into, until its FFN begins. Those it does
    // not use then were wrong guesses and lose a prefetch's protection from eviction: kept, they
    // filled a small cache with experts nobody used (moe-750m at 50 %: 4.8 % hits, not 67 %).
    std::vector<std::vector<int>> guessed_;
    uint64_t tick_ = 0;
    uint64_t uses_per_token_ = 0;  // MoE layers x experts used: the ticks one token takes
    uint64_t next_aging_ = 0;
    std::deque<int> queue_;  // slots the I/O thread is to fill
    bool stop_ = false;
    std::vector<std::thread> io_;  // reads in flight at once: storage serves several faster
    ExpertCacheStats stats_;
};

}  // namespace mw
