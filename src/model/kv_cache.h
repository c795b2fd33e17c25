// The key/value cache of every sequence of a context: for every layer and KV head, the key and
// the value of every position each sequence has seen, one row of head_dim elements per position
// in the cache's element type.
//
// Paged: positions are stored in pages of kKvPageSize consecutive positions, and each sequence
// has a page table (its positions 0, 1, ... in pages[0], pages[1], ...). Storage is head-major
// ([layer][KV head][page][slot], each layer with its own head count and head size: gemma4's
// sliding and full layers differ; a KV-sharing layer reads an earlier layer's rows and has none)
// so that attention, which reads one head at a time, streams contiguous rows within a page. Pages
// are shared between sequences by reference count: copying a sequence's prefix to another shares
// its pages (nothing is recomputed or copied), and a page is copied only when a sequence writes
// into one that another sequence also holds (copy-on-write). The pool holds n_ctx positions, plus
// one page per extra sequence for the partly filled last pages. Multi-head latent attention
// (deepseek2) caches one row per position, the KV latent then the rope key, and reads the values
// from the latent part of that row.
//
// Sliding-window layers (gemma) keep only a ring of each sequence's last positions: window +
// the largest batch, in whole pages, whatever n_ctx (position p in slot p mod ring). Their rows
// are addressed through a periodic page table, so attention reads them like any paged rows.
// Positions that fell out of a ring are gone: truncating or copying a sequence to a length whose
// window they were in is refused (keepable() says how far back a sequence can go).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/hparams.h"
#include "tensor/attention.h"
#include "tensor/ops.h"
#include "tensor/parallel.h"
#include "tensor/types.h"

namespace mw {

class KvCache {
  public:
    // Throws ErrorKind::invalid_argument for a type that cannot hold a head (block size must
    // divide the head size) or no sequence, and out_of_memory when the allocation fails.
    KvCache(const HParams& hp, uint32_t n_ctx, uint32_t n_seq_max, GgmlType k_type, GgmlType v_type,
            uint32_t max_batch = kDefaultBatch);
    static constexpr uint32_t kDefaultBatch = 512;

    // Positions the cache holds in all, and the most one sequence may hold.
    uint32_t n_ctx() const { return n_ctx_; }
    uint32_t n_seq_max() const { return uint32_t(seqs_.size()); }
    const TypeTraits& k_traits() const { return *k_traits_; }
    const TypeTraits& v_traits() const { return *v_traits_; }
    uint64_t bytes() const { return bytes_; }

    // Positions sequence `seq` holds (the position of its next token).
    uint32_t seq_len(uint32_t seq) const { return seqs_[check(seq)].len; }
    // Pages in use (shared pages once) and in the pool, for reports of KV use.
    uint32_t pages_used() const { return n_pages_ - uint32_t(free_.size()); }
    uint32_t n_pages() const { return n_pages_; }
    // Pages that appending n positions to `seq` would take from the pool (new pages, and a copy
    // of a shared page it would write into).
    uint32_t pages_needed(uint32_t seq, uint32_t n) const;
    uint32_t pages_free() const { return uint32_t(free_.size()); }

    // Makes room for positions [seq_len, seq_len + n) of `seq` and owns every page they fall in
    // (copying a shared one first); the length grows when the rows are written, by set_len.
    // Throws context_full when the sequence would exceed n_ctx or the pool has no pages left
    // (the cache is then unchanged).
    void reserve(uint32_t seq, uint32_t n);
    void set_len(uint32_t seq, uint32_t len);

    // The key or value of one head at one position of a sequence (the layer's head_dim elements).
    uint8_t* k_row(uint32_t layer, uint32_t head, uint32_t seq, uint32_t pos) {
        return base_ + lay_[layer].k_base + row_index(layer, head, seq, pos) * lay_[layer].k_row;
    }
    // (MLA: the values are the keys' first head_dim_v elements; there is no value row to write.)
    uint8_t* v_row(uint32_t layer, uint32_t head, uint32_t seq, uint32_t pos) {
        return base_ + lay_[layer].v_base + row_index(layer, head, seq, pos) * lay_[layer].v_row;
    }
    // A layer's keys or values of one sequence, as attention reads them (a KV-sharing layer's
    // are those of the layer it shares: HParams::kv_layer).
    KvRows keys(uint32_t layer, uint32_t seq) const;
    KvRows values(uint32_t layer, uint32_t seq) const;

    // The largest length <= n that `seq` can be truncated (or copied) to: n itself, unless a
    // sliding-window layer's ring no longer holds the window of position n (then 0).
    uint32_t keepable(uint32_t seq, uint32_t n) const;
    // Positions a sliding-window layer keeps per sequence (0: no layer is ringed).
    uint32_t ring_positions() const { return ring_pages_ * kKvPageSize; }

    // Forgets positions [n_keep, seq_len) of a sequence.
    void truncate(uint32_t seq, uint32_t n_keep);
    // dst becomes the first n positions of src (what dst held is dropped); pages are shared.
    void copy(uint32_t src, uint32_t dst, uint32_t n);

    // Context shift: forgets positions [n_keep, n_keep + n_discard) of a sequence and moves the
    // later ones back by n_discard, re-rotating their keys by -n_discard positions (RoPE angles
    // are linear in the position, so the rotated key equals the key computed at the new
    // position). A quantized or F16 key is decoded, rotated and encoded again. Throws
    // invalid_argument when the range is not inside the cached positions.
    // Sliding-window layers rotate with rope_swa.
    void discard(uint32_t seq, uint32_t n_keep, uint32_t n_discard, const RopeParams& rope,
                 const RopeParams& rope_swa, Parallel& par);

    // Bytes the cache of n_ctx positions allocates (for planning before allocating): whole
    // pages, plus a page for each further sequence.
    static uint64_t bytes_needed(const HParams& hp, uint32_t n_ctx, GgmlType k_type,
                                 GgmlType v_type, uint32_t n_seq_max = 1,
                                 uint32_t max_batch = kDefaultBatch);
    // Bytes one position of one sequence takes in every layer (sliding-window layers included).
    static uint64_t bytes_per_position(const HParams& hp, GgmlType k_type, GgmlType v_type);

  private:
    struct Seq {
        uint32_t len = 0;
        std::vector<uint32_t> pages;
        std::vector<uint32_t> ring_table;  // page i -> its ring page (periodic)
        uint32_t ring_from = 0;            // the ring holds positions from here (and len - ring)
    };

    // Where each layer's rows live: its own region of the storage, head-major, ([KV head][page]
    // [slot] paged, [KV head][sequence][ring page][slot] ringed), with its own head count and row
    // sizes (gemma4's sliding and full layers differ). A layer without KV has no region.
    struct LayerRows {
        uint32_t n_head_kv = 0;
        uint32_t head_dim_k = 0;
        size_t k_row = 0, v_row = 0;    // bytes of one head's key / value row
        size_t k_base = 0, v_base = 0;  // offsets of its regions in the storage
    };

    uint32_t check(uint32_t seq) const;
    uint32_t page_of(uint32_t seq, uint32_t pos) const {
        return seqs_[seq].pages[pos / kKvPageSize];
    }
    bool ringed(uint32_t layer) const { return ringed_[layer]; }
    // The row of (head, pos) of a sequence within its layer's region, in rows.
    size_t row_index(uint32_t layer, uint32_t head, uint32_t seq, uint32_t pos) const {
        if (ringed(layer)) {
            const size_t ring_page = seqs_[seq].ring_table[pos / kKvPageSize];
            return (size_t(head) * seqs_.size() * ring_pages_ + ring_page) * kKvPageSize +
                   pos % kKvPageSize;
        }
        return (size_t(head) * n_pages_ + page_of(seq, pos)) * kKvPageSize + pos % kKvPageSize;
    }
    // The first row of a page of a paged layer's head, in rows.
    size_t page_index(uint32_t head, uint32_t page) const {
        return (size_t(head) * n_pages_ + page) * kKvPageSize;
    }
    KvRows rows(uint32_t layer, uint32_t seq, size_t base, size_t row,
                const TypeTraits* traits) const;
    uint32_t lowest_held(const Seq& s) const;
    void copy_ring(uint32_t from, uint32_t to);
    void drop_after(uint32_t seq, uint32_t n_keep);  // truncate without the ring check
    uint32_t take_page();
    void release_page(uint32_t page);
    void copy_page(uint32_t from, uint32_t to);

    uint32_t n_ctx_;
    uint32_t n_layer_;
    uint32_t n_pages_;
    const TypeTraits* k_traits_;
    const TypeTraits* v_traits_;
    bool values_in_keys_;   // MLA: one latent row per position serves as key and value
    uint32_t rope_offset_;  // where the rotated part of a key row starts (MLA: after the latent)
    std::vector<LayerRows> lay_;
    std::vector<uint32_t> src_;  // per layer: the layer whose rows it reads (KV sharing)
    std::vector<bool> swa_layers_;
    std::vector<bool> has_kv_;   // per layer: false for a recurrent or KV-sharing layer
    std::vector<bool> rotated_;  // per layer: its keys carry RoPE (false: a NoPE layer)
    std::vector<bool> ringed_;   // per layer: keeps a ring (sliding window) or pages
    uint32_t window_ = 0;        // positions a sliding-window layer attends to
    uint32_t ring_pages_ = 0;    // per sequence and ringed layer
    uint64_t bytes_ = 0;
    std::unique_ptr<uint8_t, void (*)(void*)> storage_{nullptr, nullptr};
    uint8_t* base_ = nullptr;
    std::vector<Seq> seqs_;
    std::vector<uint32_t> refs_;  // holders of each page
    std::vector<uint32_t> free_;  // free pages, the next one to take last
};

}  // namespace mw
