#include "runtime/memory_budget.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/expert_cache.h"
#include "runtime/layer_stream.h"

namespace mw {
namespace {

std::string mib(uint64_t bytes) {
    return fmt::format("{:.1f} MiB", double(bytes) / (1 << 20));
}

uint64_t expert_cache_bytes(const BudgetFigures& f, uint32_t n_slots) {
    return uint64_t(n_slots > 0 ? n_slots : f.experts_per_token) * f.slot_bytes;
}

}  // namespace

uint64_t expert_tensor_bytes(const Model& m) {
    uint64_t bytes = 0;
    for (const Layer& l : m.layers) {
        if (!l.moe) continue;
        for (const ExpertWeights* x : {&l.exp_gate, &l.exp_up, &l.exp_down}) {
            bytes += x->first.row_bytes * uint64_t(x->first.n_rows) * m.hp.n_expert;
        }
    }
    return bytes;
}

uint64_t committed_bytes(const BudgetFigures& f, uint32_t n_slots) {
    return f.resident + process_reserve(f.budget, f.n_vocab) + expert_cache_bytes(f, n_slots);
}

uint64_t budget_leaving(uint64_t bytes, uint32_t n_vocab) {
    const auto left = [&](uint64_t b) { return b - std::min(b, process_reserve(b, n_vocab)); };
    const uint64_t fixed = process_reserve(0, n_vocab);
    uint64_t b = bytes + fixed + (bytes + fixed) / 511;
    while (left(b) < bytes) ++b;
    while (b > 0 && left(b - 1) >= bytes) --b;
    return b;
}

std::string load_refusal(const std::string& path, const BudgetFigures& f) {
    const uint64_t need = committed_bytes(f, 0);
    if (need <= f.budget) return "";
    if (f.slot_bytes > 0 && f.layers) {
        return fmt::format(
            "{}: a memory budget of {} is too small: the weights outside the layers' matrices "
            "(embeddings, output, norms) take {}, one layer streamed from storage {}, and the "
            "process itself about {}: at least {}, before any context's KV cache and scratch",
            path, mib(f.budget), mib(f.resident), mib(f.slot_bytes),
            mib(process_reserve(f.budget, f.n_vocab)), mib(need));
    }
    if (f.slot_bytes > 0) {
        return fmt::format(
            "{}: a memory budget of {} is too small: the dense part of the model (everything "
            "but the experts) takes {}, the {} experts one token needs in a layer {} ({} each), "
            "and the process itself about {}: at least {}, before any context's KV cache and "
            "scratch",
            path, mib(f.budget), mib(f.resident), f.experts_per_token,
            mib(expert_cache_bytes(f, 0)), mib(f.slot_bytes),
            mib(process_reserve(f.budget, f.n_vocab)), mib(need));
    }
    return fmt::format(
        "{}: a memory budget of {} is too small: the model's weights take {} and the process "
        "itself about {}: at least {}",
        path, mib(f.budget), mib(f.resident), mib(process_reserve(f.budget, f.n_vocab)), mib(need));
}

std::string context_refusal(const std::string& path, const BudgetFigures& f, uint32_t n_slots,
                            uint64_t other_contexts, uint64_t kv_bytes, uint64_t scratch_bytes) {
    const uint64_t ctx = kv_bytes + scratch_bytes;
    const uint64_t need = committed_bytes(f, n_slots) + other_contexts + ctx;
    if (need <= f.budget) return "";
    return fmt::format(
        "{}: a memory budget of {} is too small for this context: it needs {} (KV cache {} "
        "+ scratch {}), the model's weights in memory {}, {} {}, other contexts {} and the "
        "process itself about {}: at least {} (a smaller context size -c needs less)",
        path, mib(f.budget), mib(ctx), mib(kv_bytes), mib(scratch_bytes), mib(f.resident),
        f.layers ? (n_slots > 0 ? "the layer stream" : "one layer streamed from storage")
        : f.slot_bytes > 0 && n_slots > 0 ? "the expert cache"
                                          : "the experts one token needs in a layer",
        mib(f.slot_bytes > 0 ? expert_cache_bytes(f, n_slots) : 0), mib(other_contexts),
        mib(process_reserve(f.budget, f.n_vocab)), mib(need));
}

uint32_t expert_cache_slots(const BudgetFigures& f, uint64_t kv_bytes, uint64_t scratch_bytes) {
    const uint64_t used =
        f.resident + process_reserve(f.budget, f.n_vocab) + kv_bytes + scratch_bytes;
    if (f.slot_bytes == 0 || used >= f.budget) return 0;
    const uint64_t slots = std::min((f.budget - used) / f.slot_bytes, f.experts_total);
    return uint32_t(std::min<uint64_t>(slots, UINT32_MAX));
}

MemoryBudget::MemoryBudget(std::string path, uint64_t budget, uint64_t resident, uint32_t n_vocab,
                           std::unique_ptr<ExpertCache> experts, uint32_t experts_per_token,
                           std::unique_ptr<LayerStream> layers)
    : path_(std::move(path)), experts_(std::move(experts)), layers_(std::move(layers)) {
    figures_.budget = budget;
    figures_.resident = resident;
    figures_.n_vocab = n_vocab;
    figures_.experts_per_token = experts_per_token;
    if (experts_) {
        figures_.slot_bytes = experts_->slot_bytes();
        figures_.experts_total = experts_->experts_total();
    } else if (layers_) {
        figures_.slot_bytes = layers_->slot_bytes();
        figures_.experts_per_token = 1;
        figures_.experts_total = layers_->n_layer();
        figures_.layers = true;
    }
    if (const std::string why = load_refusal(path_, figures_); !why.empty())
        fail(ErrorKind::out_of_memory, "{}", why);
}

MemoryBudget::~MemoryBudget() = default;

void MemoryBudget::admit(uint64_t kv_bytes, uint64_t scratch_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint32_t n_slots = experts_ ? experts_->n_slots() : layers_ ? layers_->n_slots() : 0;
    if (const std::string why =
            context_refusal(path_, figures_, n_slots, contexts_, kv_bytes, scratch_bytes);
        !why.empty()) {
        fail(ErrorKind::out_of_memory, "{}", why);
    }
    // The first context: the expert cache takes what is left.
    if (experts_ && n_slots == 0)
        experts_->allocate(expert_cache_slots(figures_, kv_bytes, scratch_bytes));
    if (layers_ && n_slots == 0)
        layers_->allocate(expert_cache_slots(figures_, kv_bytes, scratch_bytes));
    contexts_ += kv_bytes + scratch_bytes;
}

void MemoryBudget::leave(uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    contexts_ -= std::min(bytes, contexts_);
}

BudgetLease::BudgetLease(MemoryBudget* budget, uint64_t kv_bytes, uint64_t scratch_bytes) {
    if (!budget) return;
    budget->admit(kv_bytes, scratch_bytes);
    budget_ = budget;
    bytes_ = kv_bytes + scratch_bytes;
}

BudgetLease::~BudgetLease() {
    if (budget_) budget_->leave(bytes_);
}

}  // namespace mw
