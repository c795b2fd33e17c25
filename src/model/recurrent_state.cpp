#include "model/recurrent_state.h"

#include <algorithm>

#include "base/error.h"

namespace mw {

uint64_t RecurrentState::bytes_per_sequence(const HParams& hp) {
    return uint64_t(hp.n_recurrent_layers()) * hp.recurrent_state_floats() * sizeof(float);
}

uint64_t RecurrentState::bytes_needed(const HParams& hp, uint32_t n_seq_max,
                                      uint32_t max_checkpoints) {
    return bytes_per_sequence(hp) * std::max(1u, n_seq_max) * (1 + uint64_t(max_checkpoints));
}

RecurrentState::RecurrentState(const HParams& hp, uint32_t n_seq_max, uint32_t max_checkpoints)
    : max_checkpoints_(max_checkpoints) {
    n_seq_max = std::max(1u, n_seq_max);
    slot_.assign(hp.n_layer, 0);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (hp.kind(il) != LayerKind::attention) slot_[il] = n_recurrent_++;
    }
    if (n_recurrent_ == 0) return;
    conv_floats_ = size_t(hp.recurrent_conv_floats());
    layer_floats_ = size_t(hp.recurrent_state_floats());
    seq_floats_ = layer_floats_ * n_recurrent_;
    try {
        live_.assign(seq_floats_ * n_seq_max, 0.0f);
    } catch (const std::bad_alloc&) {
        fail(ErrorKind::out_of_memory, "cannot allocate {:.1f} MiB of recurrent state",
             double(seq_floats_ * n_seq_max * sizeof(float)) / (1 << 20));
    }
    checkpoints_.resize(n_seq_max);
}

void RecurrentState::reset(uint32_t seq) {
    if (empty()) return;
    std::fill(seq_begin(seq), seq_begin(seq) + seq_floats_, 0.0f);
}

const RecurrentState::Checkpoint* RecurrentState::find(uint32_t seq, uint32_t len) const {
    for (const Checkpoint& c : checkpoints_[seq]) {
        if (c.len == len) return &c;
    }
    return nullptr;
}

void RecurrentState::checkpoint(uint32_t seq, uint32_t len) {
    if (empty() || max_checkpoints_ == 0 || len == 0) return;
    std::vector<Checkpoint>& list = checkpoints_[seq];
    Checkpoint* slot = nullptr;
    for (Checkpoint& c : list) {
        if (c.len == len) slot = &c;
    }
    if (!slot && list.size() < max_checkpoints_) {
        list.push_back({len, 0, std::vector<float>(seq_floats_)});
        checkpoint_bytes_ += seq_floats_ * sizeof(float);
        slot = &list.back();
    }
    if (!slot) {
        slot = &*std::min_element(list.begin(), list.end(),
                                  [](const auto& a, const auto& b) { return a.age < b.age; });
    }
    slot->len = len;
    slot->age = ++age_;
    std::copy(seq_begin(seq), seq_begin(seq) + seq_floats_, slot->floats.begin());
}

uint32_t RecurrentState::keepable(uint32_t seq, uint32_t len, uint32_t n) const {
    if (empty() || len <= n) return std::min(len, n);
    uint32_t best = 0;
    for (const Checkpoint& c : checkpoints_[seq]) {
        if (c.len <= n) best = std::max(best, c.len);
    }
    return best;
}

void RecurrentState::truncate(uint32_t seq, uint32_t len, uint32_t n) {
    if (empty() || n >= len) return;
    if (n == 0) {
        reset(seq);
    } else if (const Checkpoint* c = find(seq, n)) {
        std::copy(c->floats.begin(), c->floats.end(), seq_begin(seq));
    } else {
        fail(ErrorKind::invalid_argument,
             "cannot go back to {} tokens of sequence {} (it holds {}): its recurrent layers keep "
             "the state of its last token and of checkpoints only (ask keepable() first)",
             n, seq, len);
    }
    drop_checkpoints_above(seq, n);
}

void RecurrentState::drop_checkpoints_above(uint32_t seq, uint32_t n) {
    std::vector<Checkpoint>& list = checkpoints_[seq];
    for (size_t i = list.size(); i-- > 0;) {
        if (list[i].len > n) {
            checkpoint_bytes_ -= seq_floats_ * sizeof(float);
            list.erase(list.begin() + long(i));
        }
    }
}

void RecurrentState::copy(uint32_t src, uint32_t src_len, uint32_t dst, uint32_t n) {
    if (empty()) return;
    if (src == dst) {
        truncate(src, src_len, n);
        return;
    }
    if (n == 0) {
        reset(dst);
    } else if (n == src_len) {
        std::copy(seq_begin(src), seq_begin(src) + seq_floats_, seq_begin(dst));
    } else if (const Checkpoint* c = find(src, n)) {
        std::copy(c->floats.begin(), c->floats.end(), seq_begin(dst));
    } else {
        fail(ErrorKind::invalid_argument,
             "cannot copy the first {} tokens of sequence {} (it holds {}): its recurrent state "
             "exists at its last token and its checkpoints only",
             n, src, src_len);
    }
    checkpoint_bytes_ -= checkpoints_[dst].size() * seq_floats_ * sizeof(float);
    checkpoints_[dst].clear();
    for (const Checkpoint& c : checkpoints_[src]) {
        if (c.len < n) {
            checkpoints_[dst].push_back({c.len, c.age, c.floats});
            checkpoint_bytes_ += seq_floats_ * sizeof(float);
        }
    }
}

void RecurrentState::save(uint32_t seq) {
    if (empty()) return;
    if (saved_.empty()) {
        try {
            saved_.assign(live_.size(), 0.0f);
        } catch (const std::bad_alloc&) {
            fail(ErrorKind::out_of_memory,
                 "cannot allocate {:.1f} MiB of recurrent state for speculative decoding",
                 double(live_.size() * sizeof(float)) / (1 << 20));
        }
    }
    std::copy(seq_begin(seq), seq_begin(seq) + seq_floats_,
              saved_.begin() + long(seq * seq_floats_));
}

void RecurrentState::restore(uint32_t seq, uint32_t len) {
    if (empty()) return;
    if (saved_.empty()) {
        fail(ErrorKind::invalid_argument, "restore: sequence {} has no saved state", seq);
    }
    const auto from = saved_.begin() + long(seq * seq_floats_);
    std::copy(from, from + long(seq_floats_), seq_begin(seq));
    drop_checkpoints_above(seq, len);
}

}  // namespace mw
