#include "runtime/layer_stream.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <exception>

#include "base/error.h"
#include "runtime/slot_io.h"
#include "runtime/weight_reads.h"
#include "tensor/repack.h"

namespace mw {
namespace {

constexpr uint64_t kAlign = kWeightReadAlign;
constexpr uint64_t kPiece = uint64_t(4) << 20;  // the largest read (a multiple of kAlign)

// A layer's matrices (present when bound: traits set; a model bound from a header alone has no
// data to point at): each a tensor of `count` matrices `stride` bytes apart (k_b and v_b hold
// one per head), in a fixed order, so that index i names the same matrix in every copy.
struct MatrixRef {
    WeightMatrix* w;
    int64_t count;
    size_t stride;
};
// Dense layers only: the routed experts are an expert cache's (kLayerStacks' per-head stacks
// are streamed with the layer).
constexpr size_t kStreamedMatrices = std::size(kLayerMatrices) + 2;

template <class L>
std::array<MatrixRef, kStreamedMatrices> layer_matrices(L& l, uint32_t n_head) {
    auto* x = const_cast<Layer*>(&l);
    std::array<MatrixRef, kStreamedMatrices> out{};
    size_t i = 0;
    for (const LayerMatrixRole& r : kLayerMatrices) out[i++] = {&(x->*r.member), 1, 0};
    for (const LayerStackRole& r : kLayerStacks) {
        if (r.experts) continue;
        ExpertWeights& e = x->*r.member;
        out[i++] = {&e.first, n_head, e.expert_stride};
    }
    return out;
}

uint64_t tensor_bytes(const MatrixRef& r) {
    const uint64_t one = r.w->row_bytes * uint64_t(r.w->n_rows);
    return r.count > 1 ? uint64_t(r.count - 1) * r.stride + one : one;
}

}  // namespace

uint64_t layer_matrix_bytes(const Model& m, uint32_t il) {
    uint64_t bytes = 0;
    for (const MatrixRef& r : layer_matrices(m.layers[il], m.hp.n_head)) {
        if (r.w->traits) bytes += tensor_bytes(r);
    }
    return bytes;
}

uint64_t layer_slot_bytes(const Model& m) {
    uint64_t most = 0;
    for (const Layer& l : m.layers) {
        uint64_t at = 0;
        for (const MatrixRef& r : layer_matrices(l, m.hp.n_head)) {
            if (r.w->traits) at += weight_buffer_bytes(tensor_bytes(r));
        }
        most = std::max(most, at);
    }
    return most;
}

LayerStream::LayerStream(const std::string& path, const Model& m, const uint8_t* file_base,
                         const Options& options)
    : path_(path), options_(options), model_(m), file_base_(file_base) {
    if (m.hp.n_expert > 0) {
        fail(ErrorKind::invalid_argument,
             "{}: a layer stream is for dense models (an expert cache serves a MoE model)", path);
    }
    layers_.resize(m.layers.size());
    for (uint32_t il = 0; il < m.layers.size(); ++il) {
        uint64_t at = 0;
        const auto refs = layer_matrices(m.layers[il], m.hp.n_head);
        for (size_t i = 0; i < refs.size(); ++i) {
            const MatrixRef& r = refs[i];
            if (!r.w->traits) continue;
            Part p;
            p.member = i;
            p.count = r.count;
            p.stride = r.stride;
            p.offset = uint64_t(r.w->data - file_base);
            p.bytes = tensor_bytes(r);
            p.file_traits = r.w->traits;
            p.slot_offset = at;
            at += weight_buffer_bytes(p.bytes);
            streamed_bytes_ += p.bytes;
            ranges_.push_back({p.offset, p.offset + p.bytes});
            layers_[il].push_back(p);
        }
    }
    std::sort(ranges_.begin(), ranges_.end());
    slot_bytes_ = layer_slot_bytes(m);
    where_.assign(layers_.size(), -1);
    fd_ = open_for_weight_reads(path, options_.direct_io, direct_);
    stats_.slot_bytes = slot_bytes_;
    stats_.n_layer = n_layer();
    stats_.direct_io = direct_;
}

LayerStream::~LayerStream() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    io_cv_.notify_all();
    if (io_.joinable()) io_.join();
    if (memory_) ::munmap(memory_, memory_bytes_);
    if (fd_ >= 0) ::close(fd_);
}

bool LayerStream::serves(const uint8_t* data) const {
    if (data < file_base_) return false;
    const uint64_t at = uint64_t(data - file_base_);
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(),
                               std::pair<uint64_t, uint64_t>{at, UINT64_MAX});
    return it != ranges_.begin() && at < std::prev(it)->second;
}

void LayerStream::allocate(uint32_t n_slots) {
    std::lock_guard<std::mutex> lock(mu_);
    if (memory_) fail(ErrorKind::invalid_argument, "LayerStream::allocate called twice");
    n_slots = std::clamp<uint32_t>(n_slots, 1, n_layer());
    memory_bytes_ = size_t(n_slots) * slot_bytes_;
    void* p =
        ::mmap(nullptr, memory_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        memory_bytes_ = 0;
        fail(ErrorKind::out_of_memory, "{}: cannot allocate the layer stream ({} slots, {} bytes)",
             path_, n_slots, size_t(n_slots) * slot_bytes_);
    }
    memory_ = static_cast<uint8_t*>(p);
#ifdef MADV_HUGEPAGE
    ::madvise(memory_, memory_bytes_, MADV_HUGEPAGE);
#endif
    // Committed now, so that a run which cannot fit fails before its first token.
    if (options_.lock) ::mlock(memory_, memory_bytes_);
    std::memset(memory_, 0, memory_bytes_);
    slots_.resize(n_slots);
    for (uint32_t i = 0; i < n_slots; ++i) slots_[i].mem = memory_ + size_t(i) * slot_bytes_;
    // Every layer fits: all stay. Otherwise two slots take turns (one computes while the I/O
    // thread reads the next layer into the other), one without that thread, and the rest hold
    // the first layers for good.
    const uint32_t turns = n_slots >= n_layer() ? 0 : options_.prefetch && n_slots >= 2 ? 2 : 1;
    pinned_ = n_slots - turns;
    stats_.n_slots = n_slots;
    stats_.pinned = pinned_;
    if (options_.prefetch && turns != 1) io_ = std::thread([this] { io_loop(); });
}

int LayerStream::pick_slot(uint32_t il, bool take_fresh) const {
    if (il < pinned_) return slots_[il].state == State::empty ? int(il) : -1;
    // A turn slot neither in use nor in flight; one holding a layer read ahead only when
    // `take_fresh` (a forward pass that would otherwise wait behind another's read-ahead).
    int best = -1;
    for (int i = int(pinned_); i < int(slots_.size()); ++i) {
        const Slot& s = slots_[size_t(i)];
        if (s.pins > 0 || s.state == State::loading || (s.fresh && !take_fresh)) continue;
        if (s.state == State::empty) return i;
        if (best < 0) best = i;
    }
    return best;
}

void LayerStream::assign(int slot, uint32_t il, bool fresh) {
    Slot& s = slots_[size_t(slot)];
    if (s.layer >= 0) where_[size_t(s.layer)] = -1;
    s.layer = int32_t(il);
    s.state = State::loading;
    s.fresh = fresh;
    where_[il] = int32_t(slot);
}

void LayerStream::read(Slot& s, uint32_t il) {
    // Pieces of at most kPiece bytes, cut at block boundaries of the file, shared out between
    // two readers: storage serves two reads in flight faster than one (as the probe measures).
    struct Piece {
        uint64_t off, len;
        uint8_t* block;
    };
    std::vector<Piece> pieces;
    for (const Part& p : layers_[il]) {
        uint8_t* block = s.mem + p.slot_offset;
        const uint64_t from = p.offset - p.offset % kAlign, end = p.offset + p.bytes;
        for (uint64_t at = p.offset; at < end;) {
            const uint64_t next = std::min(end, (at - at % kAlign) + kPiece);
            pieces.push_back({at, next - at, block + (at - at % kAlign - from)});
            at = next;
        }
    }
    const std::string what = fmt::format("layer {}", il);
    const auto read_share = [&](size_t first, size_t step) {
        for (size_t i = first; i < pieces.size(); i += step) {
            read_weight_bytes(fd_, direct_, path_, what, pieces[i].off, pieces[i].len,
                              pieces[i].block);
        }
    };
    // Every other piece to the partner when it is free (the I/O thread and a forward pass may
    // both be reading), else all of them here.
    const bool shared = pieces.size() > 1 && partner_.try_start([&] { read_share(1, 2); });
    try {
        read_share(0, shared ? 2 : 1);
    } catch (...) {
        if (shared) {
            try {
                partner_.finish();
            } catch (...) {  // the first error is the one reported
            }
        }
        throw;
    }
    if (shared) partner_.finish();

    // The copy of the layer that the forward pass reads: the model's, its matrices moved (and
    // repacked when the model's were).
    s.view = model_.layers[il];
    const auto refs = layer_matrices(s.view, model_.hp.n_head);
    for (const Part& p : layers_[il]) {
        uint8_t* data = s.mem + p.slot_offset + p.offset % kAlign;
        WeightMatrix& w = *refs[p.member].w;
        w.data = data;
        if (w.traits != p.file_traits) {
            for (int64_t k = 0; k < p.count; ++k) {
                repack_in_place(*w.traits, data + size_t(k) * p.stride, w.n_rows, w.n_cols);
            }
        }
    }
}

void LayerStream::prefetch_after(uint32_t il) {
    if (!io_.joinable() || queued_ >= 0) return;
    // The next layer not in memory, wrapping round to the next token's first layers.
    const uint32_t n = n_layer();
    for (uint32_t k = 1; k < n; ++k) {
        const uint32_t next = (il + k) % n;
        if (where_[next] >= 0) {
            if (next >= pinned_) return;  // already read ahead
            continue;                     // pinned and there
        }
        const int v = pick_slot(next, false);
        if (v < 0) return;
        assign(v, next, true);
        queued_ = v;
        io_cv_.notify_one();
        return;
    }
}

const Layer& LayerStream::acquire(uint32_t il) {
    std::unique_lock<std::mutex> lock(mu_);
    if (slots_.empty())
        fail(ErrorKind::invalid_argument, "{}: the layer stream has no slots", path_);
    ++stats_.acquires;
    bool counted = false;
    const auto t0 = std::chrono::steady_clock::now();
    const auto waited_ms = [&] {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
            .count();
    };
    for (;;) {
        const int32_t at = where_[il];
        if (at >= 0) {
            Slot& s = slots_[size_t(at)];
            if (s.state == State::ready) {
                if (!counted) ++(s.fresh ? stats_.prefetched : stats_.hits);
                s.fresh = false;
                ++s.pins;
                if (counted) stats_.wait_ms += waited_ms();
                prefetch_after(il);
                return s.view;
            }
            if (!counted) ++(s.fresh ? stats_.waited : stats_.misses);  // being read
            counted = true;
            cv_.wait(lock);
            continue;
        }
        int v = pick_slot(il, false);
        if (v < 0) v = pick_slot(il, true);
        if (v < 0) {
            cv_.wait(lock);  // both turn slots in use (another context): one is released soon
            continue;
        }
        if (!counted) ++stats_.misses;
        counted = true;
        assign(v, il, false);
        Slot& s = slots_[size_t(v)];
        s.pins = 1;
        lock.unlock();
        try {
            read(s, il);
        } catch (...) {
            lock.lock();
            s.pins = 0;
            s.state = State::empty;
            s.layer = -1;
            where_[il] = -1;
            cv_.notify_all();
            throw;
        }
        lock.lock();
        stats_.bytes_read += layer_matrix_bytes(model_, il);
        ++stats_.reads;
        stats_.wait_ms += waited_ms();
        s.state = State::ready;
        cv_.notify_all();
        prefetch_after(il);
        return s.view;
    }
}

void LayerStream::release(uint32_t il) {
    std::lock_guard<std::mutex> lock(mu_);
    const int32_t at = where_[il];
    if (at >= 0 && slots_[size_t(at)].pins > 0) --slots_[size_t(at)].pins;
    cv_.notify_all();
}

void LayerStream::io_loop() {
    struct Job {
        int slot;
        uint32_t layer;
    };
    // queued_ stays set during the read: one read ahead at a time (prefetch_after checks it).
    run_slot_io(
        mu_, io_cv_, cv_, stop_,
        [&]() -> std::optional<Job> {
            if (queued_ < 0) return std::nullopt;
            return Job{queued_, uint32_t(slots_[size_t(queued_)].layer)};
        },
        [&](const Job& job) { read(slots_[size_t(job.slot)], job.layer); },
        [&](const Job& job, bool ok) {
            Slot& s = slots_[size_t(job.slot)];
            queued_ = -1;
            if (ok) {
                stats_.bytes_read += layer_matrix_bytes(model_, job.layer);
                ++stats_.reads;
                s.state = State::ready;
            } else {
                where_[job.layer] = -1;
                s.layer = -1;
                s.state = State::empty;
                s.fresh = false;
            }
        });
}

LayerStreamStats LayerStream::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

}  // namespace mw
