#include "model/kv_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/error.h"

namespace mw {
namespace {

const TypeTraits& kv_traits(GgmlType type, uint32_t head_dim, const char* which) {
    const TypeTraits* t = type_traits(type);
    const auto layout = ggml_layout(static_cast<uint32_t>(type));
    const char* name = layout ? layout->name.data() : "?";
    if (!t || !t->from_float || !t->to_float) {
        fail(ErrorKind::invalid_argument, "KV cache type {} for {} is not supported", name, which);
    }
    if (head_dim % t->block_size != 0) {
        fail(ErrorKind::invalid_argument,
             "KV cache type {} for {} needs a head size that is a multiple of {}, this model's is "
             "{}",
             name, which, t->block_size, head_dim);
    }
    return *t;
}

uint32_t pages_for(uint32_t n_positions) {
    return (n_positions + kKvPageSize - 1) / kKvPageSize;
}

// Pages of the pool: n_ctx positions, plus a partly filled last page for each further sequence.
uint32_t pool_pages(uint32_t n_ctx, uint32_t n_seq_max) {
    return pages_for(n_ctx) + (n_seq_max - 1);
}

// Which layers keep a ring, and how large: the sliding-window layers, when a ring of window +
// batch positions per sequence is smaller than their share of the pool.
struct Layout {
    uint32_t pool_pages;  // paged layers
    uint32_t ring_pages;  // per sequence, ringed layers (0: none)
    uint32_t n_ringed;
};

Layout layout_of(const HParams& hp, uint32_t n_ctx, uint32_t n_seq, uint32_t max_batch) {
    Layout l{pool_pages(n_ctx, n_seq), 0, 0};
    uint32_t n_swa_layers = 0;
    for (uint32_t il = 0; il < hp.n_layer; ++il)
        n_swa_layers += hp.has_kv(il) && hp.swa_layer(il) ? 1 : 0;
    if (n_swa_layers == 0) return l;
    const uint32_t batch = std::clamp<uint32_t>(max_batch, 1, n_ctx);
    const uint32_t ring =
        pages_for(uint32_t(std::min<uint64_t>(uint64_t(hp.n_swa) + batch, n_ctx)));
    if (uint64_t(ring) * n_seq < l.pool_pages) {
        l.ring_pages = ring;
        l.n_ringed = n_swa_layers;
    }
    return l;
}

// MLA caches one row per position, the latent (the values) followed by the rope key: the values
// are read from the keys' rows, so both need the same type.
void check_latent_types(const HParams& hp, GgmlType k_type, GgmlType v_type) {
    if (hp.mla() && k_type != v_type) {
        const auto k = ggml_layout(static_cast<uint32_t>(k_type));
        const auto v = ggml_layout(static_cast<uint32_t>(v_type));
        fail(ErrorKind::invalid_argument,
             "KV cache types: {} keys and {} values, but this {} model caches one latent row per "
             "position that serves as both (multi-head latent attention): give -ctk and -ctv "
             "the same type",
             k ? k->name.data() : "?", v ? v->name.data() : "?", hp.arch);
    }
}

}  // namespace

namespace {

// Bytes of one position of one sequence in layer il (keys and values of all its KV heads).
uint64_t layer_position_bytes(const HParams& hp, uint32_t il, GgmlType k_type, GgmlType v_type) {
    const TypeTraits& kt = kv_traits(k_type, hp.head_dim_k_of(il), "keys");
    const TypeTraits& vt = kv_traits(v_type, hp.head_dim_v_of(il), "values");
    const uint64_t v = hp.mla() ? 0 : row_bytes(vt, hp.head_dim_v_of(il));
    return (row_bytes(kt, hp.head_dim_k_of(il)) + v) * hp.n_head_kv_of(il);
}

}  // namespace

uint64_t KvCache::bytes_per_position(const HParams& hp, GgmlType k_type, GgmlType v_type) {
    check_latent_types(hp, k_type, v_type);
    uint64_t bytes = 0;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (hp.has_kv(il)) bytes += layer_position_bytes(hp, il, k_type, v_type);
    }
    return bytes;
}

uint64_t KvCache::bytes_needed(const HParams& hp, uint32_t n_ctx, GgmlType k_type, GgmlType v_type,
                               uint32_t n_seq_max, uint32_t max_batch) {
    n_ctx = std::max(1u, n_ctx);
    n_seq_max = std::max(1u, n_seq_max);
    check_latent_types(hp, k_type, v_type);
    const Layout l = layout_of(hp, n_ctx, n_seq_max, max_batch);
    uint64_t bytes = 0;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (!hp.has_kv(il)) continue;
        const bool ring = l.n_ringed > 0 && hp.swa_layer(il);
        const uint64_t positions =
            (ring ? uint64_t(n_seq_max) * l.ring_pages : l.pool_pages) * kKvPageSize;
        bytes += layer_position_bytes(hp, il, k_type, v_type) * positions;
    }
    return bytes;
}

KvCache::KvCache(const HParams& hp, uint32_t n_ctx, uint32_t n_seq_max, GgmlType k_type,
                 GgmlType v_type, uint32_t max_batch)
    : n_ctx_(n_ctx),
      n_layer_(hp.n_layer),
      n_pages_(0),
      k_traits_(&kv_traits(k_type, hp.head_dim_k, "keys")),
      v_traits_(&kv_traits(v_type, hp.head_dim_v, "values")),
      values_in_keys_(hp.mla()),
      rope_offset_(hp.mla() ? hp.kv_lora_rank : 0) {
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        swa_layers_.push_back(hp.swa_layer(il));
        rotated_.push_back(hp.rope_layer(il));
        src_.push_back(hp.kv_layer(il));
    }
    check_latent_types(hp, k_type, v_type);
    if (n_ctx == 0) fail(ErrorKind::invalid_argument, "context size must be at least 1");
    if (n_seq_max == 0) fail(ErrorKind::invalid_argument, "a context needs at least 1 sequence");
    const Layout lay = layout_of(hp, n_ctx, n_seq_max, max_batch);
    n_pages_ = lay.pool_pages;
    ring_pages_ = lay.ring_pages;
    window_ = hp.n_swa;
    // Each layer's region, one after the other: keys, then values.
    uint64_t offset = 0;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        has_kv_.push_back(hp.has_kv(il));
        LayerRows r;
        const bool ring = hp.has_kv(il) && lay.n_ringed > 0 && hp.swa_layer(il);
        ringed_.push_back(ring);
        if (hp.has_kv(il)) {
            r.n_head_kv = hp.n_head_kv_of(il);
            r.head_dim_k = hp.head_dim_k_of(il);
            r.k_row = row_bytes(kv_traits(k_type, r.head_dim_k, "keys"), r.head_dim_k);
            const uint32_t hd_v = hp.head_dim_v_of(il);
            r.v_row = values_in_keys_ ? 0 : row_bytes(kv_traits(v_type, hd_v, "values"), hd_v);
            const uint64_t rows = uint64_t(r.n_head_kv) * kKvPageSize *
                                  (ring ? uint64_t(n_seq_max) * ring_pages_ : uint64_t(n_pages_));
            r.k_base = size_t(offset);
            offset += rows * r.k_row;
            r.v_base = size_t(offset);
            offset += rows * r.v_row;
        }
        lay_.push_back(r);
    }
    bytes_ = offset;
    // calloc: pages are only touched (and counted in RSS) as positions are filled; ring rows
    // never written are zeros, which attention may read (masked) but never as NaN.
    void* p = std::calloc(1, size_t(std::max<uint64_t>(bytes_, 1)));
    if (!p) {
        fail(ErrorKind::out_of_memory, "cannot allocate {:.1f} MiB for a KV cache of {} tokens",
             double(bytes_) / (1 << 20), n_ctx);
    }
    storage_ = {static_cast<uint8_t*>(p), std::free};
    base_ = storage_.get();
    seqs_.resize(n_seq_max);
    if (ring_pages_ > 0) {
        for (uint32_t q = 0; q < n_seq_max; ++q) {
            for (uint32_t i = 0; i < pages_for(n_ctx); ++i)
                seqs_[q].ring_table.push_back(q * ring_pages_ + i % ring_pages_);
        }
    }
    refs_.assign(n_pages_, 0);
    // Taken from the back: page 0 first, and a freed page is the next one reused (already
    // touched memory rather than new).
    free_.resize(n_pages_);
    for (uint32_t i = 0; i < n_pages_; ++i) free_[i] = n_pages_ - 1 - i;
}

uint32_t KvCache::check(uint32_t seq) const {
    if (seq >= seqs_.size()) {
        fail(ErrorKind::invalid_argument, "sequence {} does not exist: this context has {} (0..{})",
             seq, seqs_.size(), seqs_.size() - 1);
    }
    return seq;
}

uint32_t KvCache::take_page() {
    const uint32_t page = free_.back();
    free_.pop_back();
    refs_[page] = 1;
    return page;
}

void KvCache::release_page(uint32_t page) {
    if (--refs_[page] == 0) free_.push_back(page);
}

void KvCache::copy_page(uint32_t from, uint32_t to) {
    for (uint32_t il = 0; il < n_layer_; ++il) {
        if (ringed(il) || !has_kv_[il]) continue;
        const LayerRows& r = lay_[il];
        for (uint32_t h = 0; h < r.n_head_kv; ++h) {
            std::memcpy(base_ + r.k_base + page_index(h, to) * r.k_row,
                        base_ + r.k_base + page_index(h, from) * r.k_row, kKvPageSize * r.k_row);
            if (values_in_keys_) continue;
            std::memcpy(base_ + r.v_base + page_index(h, to) * r.v_row,
                        base_ + r.v_base + page_index(h, from) * r.v_row, kKvPageSize * r.v_row);
        }
    }
}

uint32_t KvCache::pages_needed(uint32_t seq, uint32_t n) const {
    const Seq& s = seqs_[check(seq)];
    if (n == 0) return 0;
    const uint32_t first = s.len / kKvPageSize;  // the page position s.len falls in
    const uint32_t last = (s.len + n - 1) / kKvPageSize;
    uint32_t needed = 0;
    for (uint32_t p = first; p <= last; ++p) {
        if (p >= s.pages.size()) {
            ++needed;
        } else if (refs_[s.pages[p]] > 1) {
            ++needed;  // a shared page written into is copied first
        }
    }
    return needed;
}

void KvCache::reserve(uint32_t seq, uint32_t n) {
    Seq& s = seqs_[check(seq)];
    if (uint64_t(s.len) + n > n_ctx_) {
        fail(ErrorKind::context_full,
             "context full: {} tokens cached + {} new exceed the context size of {} tokens", s.len,
             n, n_ctx_);
    }
    const uint32_t needed = pages_needed(seq, n);
    if (needed > free_.size()) {
        fail(ErrorKind::context_full,
             "context full: the KV cache has room for {} more tokens, sequence {} needs {}; "
             "{} sequences share {} positions",
             uint32_t(free_.size()) * kKvPageSize, seq, n, seqs_.size(), n_pages_ * kKvPageSize);
    }
    if (n == 0) return;
    const uint32_t first = s.len / kKvPageSize;
    const uint32_t last = (s.len + n - 1) / kKvPageSize;
    for (uint32_t p = first; p <= last; ++p) {
        if (p >= s.pages.size()) {
            s.pages.push_back(take_page());
        } else if (refs_[s.pages[p]] > 1) {
            const uint32_t own = take_page();
            copy_page(s.pages[p], own);
            release_page(s.pages[p]);
            s.pages[p] = own;
        }
    }
}

void KvCache::set_len(uint32_t seq, uint32_t len) {
    Seq& s = seqs_[check(seq)];
    if (pages_for(len) > s.pages.size()) {
        throw std::logic_error(fmt::format("KV cache: sequence {} set to {} positions, {} reserved",
                                           seq, len, s.pages.size() * kKvPageSize));
    }
    s.len = len;
}

KvRows KvCache::rows(uint32_t layer, uint32_t seq, size_t base, size_t row,
                     const TypeTraits* traits) const {
    const Seq& s = seqs_[check(seq)];
    if (ringed(layer)) {
        return {base_ + base,
                row,
                seqs_.size() * ring_pages_ * kKvPageSize * row,
                traits,
                s.ring_table.data(),
                kKvPageSize * row};
    }
    return {base_ + base,     row, size_t(n_pages_) * kKvPageSize * row, traits, s.pages.data(),
            kKvPageSize * row};
}

KvRows KvCache::keys(uint32_t layer, uint32_t seq) const {
    layer = src_[layer];
    return rows(layer, seq, lay_[layer].k_base, lay_[layer].k_row, k_traits_);
}

KvRows KvCache::values(uint32_t layer, uint32_t seq) const {
    if (values_in_keys_) return keys(layer, seq);  // the first head_dim_v elements of each row
    layer = src_[layer];
    return rows(layer, seq, lay_[layer].v_base, lay_[layer].v_row, v_traits_);
}

uint32_t KvCache::lowest_held(const Seq& s) const {
    const uint32_t ring = ring_positions();
    return std::max(s.ring_from, s.len > ring ? s.len - ring : 0);
}

uint32_t KvCache::keepable(uint32_t seq, uint32_t n) const {
    const Seq& s = seqs_[check(seq)];
    if (ring_pages_ == 0 || n == 0 || n >= s.len) return n;
    // The next token, at position n, attends to n - window + 1 .. n.
    const uint32_t need = n + 1 > window_ ? n + 1 - window_ : 0;
    return need >= lowest_held(s) ? n : 0;
}

void KvCache::copy_ring(uint32_t from, uint32_t to) {
    for (uint32_t il = 0; il < n_layer_; ++il) {
        if (!ringed(il)) continue;
        const LayerRows& r = lay_[il];
        for (uint32_t h = 0; h < r.n_head_kv; ++h) {
            for (uint32_t pg = 0; pg < ring_pages_; ++pg) {
                const uint32_t pos = pg * kKvPageSize;
                std::memcpy(k_row(il, h, to, pos), k_row(il, h, from, pos), kKvPageSize * r.k_row);
                if (!values_in_keys_) {
                    std::memcpy(v_row(il, h, to, pos), v_row(il, h, from, pos),
                                kKvPageSize * r.v_row);
                }
            }
        }
    }
}

void KvCache::truncate(uint32_t seq, uint32_t n_keep) {
    Seq& s = seqs_[check(seq)];
    if (n_keep > s.len) {
        fail(ErrorKind::invalid_argument,
             "truncate: cannot keep {} tokens of sequence {}, only {} are cached", n_keep, seq,
             s.len);
    }
    if (keepable(seq, n_keep) != n_keep) {
        fail(ErrorKind::invalid_argument,
             "truncate: sequence {} cannot go back to {} of its {} tokens: its sliding-window "
             "layers keep only its last {} positions (keep {} or more, or 0)",
             seq, n_keep, s.len, ring_positions(), s.len + window_ - ring_positions());
    }
    drop_after(seq, n_keep);
}

void KvCache::drop_after(uint32_t seq, uint32_t n_keep) {
    Seq& s = seqs_[seq];
    const uint32_t keep_pages = pages_for(n_keep);
    while (s.pages.size() > keep_pages) {
        release_page(s.pages.back());
        s.pages.pop_back();
    }
    // Rows past n_keep in a ring stay until rewritten; what they overwrote stays lost.
    s.ring_from = n_keep == 0 ? 0 : lowest_held(s);
    s.len = n_keep;
}

void KvCache::copy(uint32_t src, uint32_t dst, uint32_t n) {
    check(src);
    check(dst);
    if (n > seqs_[src].len) {
        fail(ErrorKind::invalid_argument,
             "copy: cannot copy {} tokens of sequence {}, only {} are cached", n, src,
             seqs_[src].len);
    }
    if (src == dst) {
        truncate(dst, n);
        return;
    }
    if (keepable(src, n) != n) {
        fail(ErrorKind::invalid_argument,
             "copy: {} tokens of sequence {} (of {}): its sliding-window layers keep only its "
             "last {} positions",
             n, src, seqs_[src].len, ring_positions());
    }
    truncate(dst, 0);
    Seq& d = seqs_[dst];
    const Seq& s = seqs_[src];
    d.pages.assign(s.pages.begin(), s.pages.begin() + pages_for(n));
    for (uint32_t page : d.pages) ++refs_[page];
    if (ring_pages_ > 0 && n > 0) copy_ring(src, dst);  // rings are not shared: copied
    d.ring_from = n == 0 ? 0 : lowest_held(s);
    d.len = n;
}

void KvCache::discard(uint32_t seq, uint32_t n_keep, uint32_t n_discard, const RopeParams& rope,
                      const RopeParams& rope_swa, Parallel& par) {
    Seq& s = seqs_[check(seq)];
    if (uint64_t(n_keep) + n_discard > s.len) {
        fail(ErrorKind::invalid_argument,
             "context shift: cannot keep {} tokens and discard {} more, only {} are cached", n_keep,
             n_discard, s.len);
    }
    if (n_discard == 0) return;
    const uint32_t first_moved = n_keep + n_discard;
    const uint32_t n_moved = s.len - first_moved;
    const uint32_t new_len = s.len - n_discard;
    // Ringed layers: what they hold after the shift, the kept prefix (as far as the ring still
    // has it) and the moved positions the new ring can hold; the next token's window must be in it.
    const uint32_t ring = ring_positions();
    uint32_t ring_move_from = n_keep, ring_from = 0;
    if (ring_pages_ > 0) {
        const uint32_t held = lowest_held(s);
        ring_move_from = std::max(
            {n_keep, new_len > ring ? new_len - ring : 0, held > n_discard ? held - n_discard : 0});
        ring_from = held < n_keep && ring_move_from == n_keep ? held : ring_move_from;
        const uint32_t need = new_len + 1 > window_ ? new_len + 1 - window_ : 0;
        if (need < ring_from) {
            fail(ErrorKind::invalid_argument,
                 "context shift: keeping {} tokens needs positions from {} in the sliding-window "
                 "layers, which keep only the last {}",
                 n_keep, need, ring);
        }
    }
    // Every page from the one n_keep falls in is rewritten: own them first.
    for (uint32_t p = n_keep / kKvPageSize; p < pages_for(new_len); ++p) {
        if (refs_[s.pages[p]] > 1) {
            if (free_.empty()) {
                fail(ErrorKind::context_full,
                     "context shift: no free page to copy a page sequence {} shares", seq);
            }
            const uint32_t own = take_page();
            copy_page(s.pages[p], own);
            release_page(s.pages[p]);
            s.pages[p] = own;
        }
    }
    // Move the rows down: in order is safe for pages (destinations below their sources); a ring
    // goes through a copy (a destination slot may be a later source's).
    std::vector<uint8_t> moved;
    for (uint32_t il = 0; il < n_layer_; ++il) {
        if (!has_kv_[il]) continue;
        const size_t k_bytes = lay_[il].k_row, v_bytes = values_in_keys_ ? 0 : lay_[il].v_row;
        for (uint32_t h = 0; h < lay_[il].n_head_kv; ++h) {
            if (ringed(il)) {
                const uint32_t n = new_len - ring_move_from;
                const size_t row = k_bytes + v_bytes;
                moved.resize(size_t(n) * row);
                for (uint32_t j = 0; j < n; ++j) {
                    const uint32_t from = ring_move_from + j + n_discard;
                    std::memcpy(&moved[j * row], k_row(il, h, seq, from), k_bytes);
                    if (v_bytes)
                        std::memcpy(&moved[j * row + k_bytes], v_row(il, h, seq, from), v_bytes);
                }
                for (uint32_t j = 0; j < n; ++j) {
                    const uint32_t to = ring_move_from + j;
                    std::memcpy(k_row(il, h, seq, to), &moved[j * row], k_bytes);
                    if (v_bytes)
                        std::memcpy(v_row(il, h, seq, to), &moved[j * row + k_bytes], v_bytes);
                }
                continue;
            }
            for (uint32_t j = 0; j < n_moved; ++j) {
                std::memcpy(k_row(il, h, seq, n_keep + j), k_row(il, h, seq, first_moved + j),
                            k_bytes);
                if (!v_bytes) continue;
                std::memcpy(v_row(il, h, seq, n_keep + j), v_row(il, h, seq, first_moved + j),
                            v_bytes);
            }
        }
    }
    drop_after(seq, new_len);
    s.ring_from = ring_from;

    // Rotate every moved key back by n_discard positions (with its layer's RoPE, on the rotated
    // part of the row: all of it, or MLA's rope key after the latent).
    std::vector<float> cos_sin(size_t(rope.n_rot)), cos_sin_swa(size_t(rope_swa.n_rot));
    rope_rotation(rope, -float(n_discard), cos_sin.data());
    rope_rotation(rope_swa, -float(n_discard), cos_sin_swa.data());
    uint32_t max_heads = 0, max_dim = 0;
    for (const LayerRows& r : lay_) {
        max_heads = std::max(max_heads, r.n_head_kv);
        max_dim = std::max(max_dim, r.head_dim_k);
    }
    const int64_t n_rows = int64_t(n_layer_) * max_heads * n_moved;
    if (n_rows == 0) return;
    parallel_for_work(par, n_rows * max_dim, [&](int ith, int nth) {
        std::vector<float> key(max_dim);
        const Range r = split_range(n_rows, ith, nth);
        for (int64_t i = r.begin; i < r.end; ++i) {
            const int64_t layer_head = i / n_moved;
            const uint32_t layer = uint32_t(layer_head / max_heads);
            const uint32_t head = uint32_t(layer_head % max_heads);
            const uint32_t pos = n_keep + uint32_t(i % n_moved);
            if (!has_kv_[layer] || !rotated_[layer]) continue;    // no rows; no RoPE (NoPE)
            if (head >= lay_[layer].n_head_kv) continue;          // fewer heads in this layer
            if (ringed(layer) && pos < ring_move_from) continue;  // not in the ring any more
            const int hd = int(lay_[layer].head_dim_k);
            uint8_t* row = k_row(layer, head, seq, pos);
            k_traits_->to_float(row, key.data(), hd);
            const bool swa = swa_layers_[layer];
            const RopeParams& rp = swa ? rope_swa : rope;
            rope_apply(rp, swa ? cos_sin_swa.data() : cos_sin.data(), key.data() + rope_offset_, 1,
                       hd - int(rope_offset_));
            k_traits_->from_float(key.data(), row, hd);
        }
    });
}

}  // namespace mw
