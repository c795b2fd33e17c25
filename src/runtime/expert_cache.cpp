#include "runtime/expert_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <tuple>

#include "base/error.h"
#include "runtime/slot_io.h"
#include "runtime/weight_reads.h"
#include "tensor/repack.h"

namespace mw {
namespace {

constexpr uint64_t kAlign = kWeightReadAlign;

// Reads in flight at once on the I/O threads (an SSD serves two about twice as fast as one).
constexpr int kIoThreads = 2;

uint64_t matrix_bytes(const WeightMatrix& w) {
    return w.row_bytes * uint64_t(w.n_rows);
}

uint64_t part_slot_bytes(const WeightMatrix& w) {
    return weight_buffer_bytes(matrix_bytes(w));
}

}  // namespace

namespace {

// The largest sum over one expert's gate, up and down parts of per_part(part), across the MoE
// layers.
template <class PerPart>
uint64_t largest_expert(const Model& m, PerPart per_part) {
    uint64_t most = 0;
    for (const Layer& l : m.layers) {
        if (!l.moe) continue;
        uint64_t at = 0;
        for (const ExpertWeights* x : {&l.exp_gate, &l.exp_up, &l.exp_down})
            at += per_part(x->first);
        most = std::max(most, at);
    }
    return most;
}

}  // namespace

uint64_t expert_slot_bytes(const Model& m) {
    return largest_expert(m, [](const WeightMatrix& w) { return part_slot_bytes(w); });
}

uint64_t expert_read_bytes(const Model& m) {
    return largest_expert(m, [](const WeightMatrix& w) { return matrix_bytes(w); });
}

ExpertCache::ExpertCache(const std::string& path, const Model& m, const uint8_t* file_base,
                         const Options& options)
    : path_(path), options_(options), n_layer_(m.hp.n_layer), n_expert_(m.hp.n_expert) {
    parts_.resize(n_layer_);
    for (uint32_t il = 0; il < n_layer_; ++il) {
        const Layer& l = m.layers[il];
        if (!l.moe) continue;
        uint64_t at = 0;
        for (const ExpertWeights* x : {&l.exp_gate, &l.exp_up, &l.exp_down}) {
            Part p;
            p.offset = uint64_t(x->first.data - file_base);
            p.stride = x->expert_stride;
            p.matrix = x->first;
            p.file_traits = x->first.traits;
            if (options_.repack) {
                if (const TypeTraits* packed =
                        packed_traits(x->first.traits->type, x->first.n_rows, x->first.n_cols)) {
                    p.matrix.traits = packed;
                }
            }
            p.slot_offset = at;
            at += part_slot_bytes(x->first);
            parts_[il].push_back(p);
        }
    }
    slot_bytes_ = expert_slot_bytes(m);
    expert_bytes_ = expert_read_bytes(m);
    if (slot_bytes_ == 0) {
        fail(ErrorKind::invalid_argument, "{}: an expert cache for a model without experts", path);
    }
    fd_ = open_for_weight_reads(path, options_.direct_io, direct_);
    const size_t keys = size_t(n_layer_) * n_expert_;
    where_.assign(keys, -1);
    uses_.assign(keys, 0);
    predicted_.assign(keys, 0);
    steps_.assign(n_layer_, 0);
    predictable_.assign(n_layer_, false);
    guessed_.assign(n_layer_, {});
    for (uint32_t il = 1; il < n_layer_; ++il) predictable_[il] = m.layers[il - 1].moe;
    for (const Layer& l : m.layers) uses_per_token_ += l.moe ? m.hp.n_expert_used : 0;
    stats_.slot_bytes = slot_bytes_;
    stats_.experts_total = experts_total();
    stats_.direct_io = direct_;
}

ExpertCache::~ExpertCache() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    io_cv_.notify_all();
    for (std::thread& t : io_) t.join();
    if (memory_) ::munmap(memory_, memory_bytes_);
    if (fd_ >= 0) ::close(fd_);
}

void ExpertCache::allocate(uint32_t n_slots) {
    std::lock_guard<std::mutex> lock(mu_);
    if (memory_) fail(ErrorKind::invalid_argument, "ExpertCache::allocate called twice");
    n_slots = uint32_t(std::min<uint64_t>(n_slots, experts_total()));
    memory_bytes_ = size_t(n_slots) * slot_bytes_;
    // At a 2 MiB boundary, with transparent huge pages where the OS allows: the kernels stream
    // each expert, and with 4 KiB pages every 4 KiB is a TLB miss (as for the resident weights).
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t span = memory_bytes_ + kHuge;
    void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        memory_bytes_ = 0;
        fail(ErrorKind::out_of_memory, "{}: cannot allocate the expert cache ({} slots, {} bytes)",
             path_, n_slots, size_t(n_slots) * slot_bytes_);
    }
    auto* base = static_cast<uint8_t*>(p);
    auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) &
                                               ~uintptr_t(kHuge - 1));
    if (aligned > base) ::munmap(base, size_t(aligned - base));
    if (base + span > aligned + memory_bytes_) {
        ::munmap(aligned + memory_bytes_, size_t(base + span - aligned - memory_bytes_));
    }
    memory_ = aligned;
#ifdef MADV_HUGEPAGE
    ::madvise(memory_, memory_bytes_, MADV_HUGEPAGE);
#endif
    // Committed now (touched, locked if asked), so that a run which cannot fit fails before its
    // first token rather than at token N.
    if (options_.lock) ::mlock(memory_, memory_bytes_);
    std::memset(memory_, 0, memory_bytes_);
    slots_.resize(n_slots);
    for (uint32_t i = 0; i < n_slots; ++i) slots_[i].mem = memory_ + size_t(i) * slot_bytes_;
    stats_.n_slots = n_slots;
    next_aging_ = 4 * uint64_t(n_slots) + 64;
    if (options_.prefetch) {
        for (int i = 0; i < kIoThreads; ++i) io_.emplace_back([this] { io_loop(); });
    }
}

int ExpertCache::victim(bool take_fresh) const {
    int best = -1;
    for (int i = 0; i < int(slots_.size()); ++i) {
        const Slot& s = slots_[size_t(i)];
        if (s.state == State::empty) return i;
        if (s.pins > 0 || s.state == State::loading || (s.fresh && !take_fresh)) continue;
        if (best < 0) {
            best = i;
            continue;
        }
        const Slot& b = slots_[size_t(best)];
        // Unused prefetches go last; then the least used (aged counts), then the least recent.
        const auto rank = [&](const Slot& x) {
            return std::tuple(x.fresh, uses_[size_t(x.key)], x.last_use);
        };
        if (rank(s) < rank(b)) best = i;
    }
    return best;
}

void ExpertCache::assign(int slot, int64_t k) {
    Slot& s = slots_[size_t(slot)];
    if (s.key >= 0) where_[size_t(s.key)] = -1;
    s.key = k;
    s.state = State::loading;
    s.fresh = false;
    s.ahead = false;
    s.last_use = 0;  // the new expert's, not the slot's last occupant's
    where_[size_t(k)] = int32_t(slot);
}

void ExpertCache::touch(Slot& s, int64_t k) {
    ++s.pins;
    s.last_use = ++tick_;
    ++uses_[size_t(k)];
    if (tick_ >= next_aging_) {
        // Frequencies decay, so that experts popular long ago give way to today's.
        for (uint32_t& u : uses_) u /= 2;
        next_aging_ = tick_ + 4 * uint64_t(slots_.size()) + 64;
    }
}

ExpertSlices ExpertCache::slices(const Slot& s) const {
    const uint32_t il = uint32_t(s.key / n_expert_);
    const uint64_t e = uint64_t(s.key % n_expert_);
    const std::vector<Part>& parts = parts_[il];
    WeightMatrix w[3];
    for (int i = 0; i < 3; ++i) {
        const Part& p = parts[size_t(i)];
        w[i] = p.matrix;
        w[i].data = s.mem + p.slot_offset + (p.offset + e * p.stride) % kAlign;
    }
    return {w[0], w[1], w[2]};
}

void ExpertCache::read(uint8_t* mem, int64_t k) {
    const uint32_t il = uint32_t(k / n_expert_);
    const uint64_t e = uint64_t(k % n_expert_);
    for (const Part& p : parts_[il]) {
        const uint64_t off = p.offset + e * p.stride, len = matrix_bytes(p.matrix);
        const uint64_t head = off % kAlign;
        uint8_t* dst = mem + p.slot_offset;
        read_weight_bytes(fd_, direct_, path_, fmt::format("expert {} of layer {}", e, il), off,
                          len, dst);
        if (p.matrix.traits != p.file_traits) {
            repack_in_place(*p.matrix.traits, dst + head, p.matrix.n_rows, p.matrix.n_cols);
        }
    }
}

ExpertSlices ExpertCache::acquire(uint32_t il, int32_t e) {
    const int64_t k = key(il, e);
    std::unique_lock<std::mutex> lock(mu_);
    if (slots_.empty())
        fail(ErrorKind::invalid_argument, "{}: the expert cache has no slots", path_);
    ++stats_.acquires;
    if (predictable_[il] && options_.prefetch) {
        ++stats_.predictable;
        if (predicted_[size_t(k)] == steps_[il]) ++stats_.predicted;
    }
    bool counted_wait = false;
    for (;;) {
        const int32_t at = where_[size_t(k)];
        if (at >= 0) {
            Slot& s = slots_[size_t(at)];
            if (s.state == State::ready) {
                if (!counted_wait) {
                    ++(!s.fresh ? stats_.hits : s.ahead ? stats_.prefetched : stats_.misses);
                }
                s.fresh = false;
                touch(s, k);
                return slices(s);
            }
            if (!counted_wait) ++(s.ahead ? stats_.waited : stats_.misses);  // being read
            counted_wait = true;
            cv_.wait(lock);
            continue;
        }
        int v = victim(false);
        if (v < 0) v = victim(true);
        if (v < 0) {
            cv_.wait(lock);  // every slot pinned or in flight: one will be free soon
            continue;
        }
        if (!counted_wait) ++stats_.misses;  // (a failed prefetch was counted already)
        assign(v, k);
        Slot& s = slots_[size_t(v)];
        s.pins = 1;
        lock.unlock();
        try {
            read(s.mem, k);
        } catch (...) {
            lock.lock();
            s.pins = 0;
            s.state = State::empty;
            where_[size_t(k)] = -1;
            s.key = -1;
            cv_.notify_all();
            throw;
        }
        lock.lock();
        stats_.bytes_read += expert_bytes_;
        ++stats_.reads;
        s.state = State::ready;
        s.pins = 0;
        touch(s, k);
        cv_.notify_all();
        return slices(s);
    }
}

void ExpertCache::release(uint32_t il, int32_t e) {
    std::lock_guard<std::mutex> lock(mu_);
    const int32_t at = where_[size_t(key(il, e))];
    if (at >= 0 && slots_[size_t(at)].pins > 0) --slots_[size_t(at)].pins;
    cv_.notify_all();
}

void ExpertCache::prefetch(uint32_t il, std::span<const int32_t> experts, bool predicted) {
    bool queued = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (slots_.empty()) return;
        if (!predicted) {
            ++steps_[il];  // layer il's FFN begins: its predictions are now due
            for (const int v : guessed_[il]) {
                Slot& s = slots_[size_t(v)];
                if (!s.fresh || !s.ahead || s.key < 0 || uint32_t(s.key / n_expert_) != il)
                    continue;  // used already, or given to another expert since
                const int32_t e = int32_t(s.key % n_expert_);
                if (std::find(experts.begin(), experts.end(), e) == experts.end()) s.fresh = false;
            }
            guessed_[il].clear();
        }
        bool full = !options_.prefetch;
        for (int32_t e : experts) {
            if (e < 0 || uint32_t(e) >= n_expert_) continue;
            const int64_t k = key(il, e);
            if (predicted && predicted_[size_t(k)] != steps_[il] + 1) {
                predicted_[size_t(k)] = steps_[il] + 1;
                ++stats_.predictions;
            }
            if (full || where_[size_t(k)] >= 0) continue;
            const int v = victim(false);  // never displaces another unused prefetch
            if (v < 0) {
                full = true;  // the guesses are still recorded, for the hit rate of the guess
                continue;
            }
            // A guess does not push out an expert the last token used: that one is likelier to
            // be used again than the guess is to be right, and a miss costs no more than the
            // guess's read would have. The layer's own experts (not guesses) always go ahead.
            const Slot& out = slots_[size_t(v)];
            if (predicted && out.key >= 0 && tick_ - out.last_use < uses_per_token_) continue;
            assign(v, k);
            slots_[size_t(v)].fresh = true;
            slots_[size_t(v)].ahead = predicted;
            if (predicted) guessed_[il].push_back(v);
            queue_.push_back(v);
            queued = true;
        }
    }
    if (queued) io_cv_.notify_all();
}

void ExpertCache::io_loop() {
    struct Job {
        int slot;
        int64_t key;
    };
    run_slot_io(
        mu_, io_cv_, cv_, stop_,
        [&]() -> std::optional<Job> {
            if (queue_.empty()) return std::nullopt;
            const int v = queue_.front();
            queue_.pop_front();
            return Job{v, slots_[size_t(v)].key};
        },
        [&](const Job& job) { read(slots_[size_t(job.slot)].mem, job.key); },
        [&](const Job& job, bool ok) {
            Slot& s = slots_[size_t(job.slot)];
            if (ok) {
                stats_.bytes_read += expert_bytes_;
                ++stats_.reads;
                s.state = State::ready;
            } else {
                where_[size_t(job.key)] = -1;
                s.key = -1;
                s.state = State::empty;
                s.fresh = false;
            }
        });
}

ExpertCacheStats ExpertCache::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

}  // namespace mw
