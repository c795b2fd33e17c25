#include "model/seq_memory.h"

#include "base/error.h"

namespace mw {

SeqMemory::SeqMemory(const HParams& hp, uint32_t n_ctx, uint32_t n_seq_max, GgmlType k_type,
                     GgmlType v_type, uint32_t max_batch)
    : kv_(hp, n_ctx, n_seq_max, k_type, v_type, max_batch),
      state_(hp, n_seq_max),
      marks_(kv_.n_seq_max(), kNoMark) {}

uint64_t SeqMemory::bytes_needed(const HParams& hp, uint32_t n_ctx, GgmlType k_type,
                                 GgmlType v_type, uint32_t n_seq_max, uint32_t max_batch) {
    return KvCache::bytes_needed(hp, n_ctx, k_type, v_type, n_seq_max, max_batch) +
           RecurrentState::bytes_needed(hp, n_seq_max);
}

uint32_t SeqMemory::keepable(uint32_t seq, uint32_t n) const {
    return kv_.keepable(seq, state_.keepable(seq, kv_.seq_len(seq), n));
}

void SeqMemory::truncate(uint32_t seq, uint32_t n_keep) {
    const uint32_t len = kv_.seq_len(seq);
    state_.truncate(seq, len, n_keep);  // first: it throws for a length it cannot restore
    kv_.truncate(seq, n_keep);
    clear_mark_above(seq, n_keep);
}

void SeqMemory::mark(uint32_t seq) {
    state_.save(seq);
    marks_[seq] = kv_.seq_len(seq);
}

uint32_t SeqMemory::rollback(uint32_t seq, uint32_t n_keep) {
    const uint32_t len = kv_.seq_len(seq), mark = marks_[seq];
    if (mark == kNoMark || n_keep < mark || n_keep > len) {
        fail(ErrorKind::invalid_argument,
             "rollback: sequence {} holds {} tokens{}; cannot go back to {}", seq, len,
             mark == kNoMark ? ", no mark" : fmt::format(", marked at {}", mark), n_keep);
    }
    if (n_keep == len) return n_keep;
    if (state_.empty()) {
        kv_.truncate(seq, n_keep);
        return n_keep;
    }
    kv_.truncate(seq, mark);
    state_.restore(seq, mark);
    return mark;
}

void SeqMemory::copy(uint32_t src, uint32_t dst, uint32_t n) {
    const uint32_t len = kv_.seq_len(src);
    if (n > len) {
        fail(ErrorKind::invalid_argument, "cannot copy {} tokens of sequence {}, it holds {}", n,
             src, len);
    }
    state_.copy(src, len, dst, n);
    kv_.copy(src, dst, n);
    marks_[dst] = kNoMark;
}

void SeqMemory::discard(uint32_t seq, uint32_t n_keep, uint32_t n_discard, const RopeParams& rope,
                        const RopeParams& rope_swa, Parallel& par) {
    if (!can_shift()) {
        fail(ErrorKind::unsupported,
             "context shift: this model's recurrent layers hold the whole history in a state "
             "that cannot forget tokens {}..{} in the middle; start again from the kept part "
             "instead (or give a larger -c)",
             n_keep, n_keep + n_discard);
    }
    kv_.discard(seq, n_keep, n_discard, rope, rope_swa, par);
    clear_mark_above(seq, n_keep);
}

}  // namespace mw
