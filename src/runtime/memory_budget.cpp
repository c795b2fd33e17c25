#include "runtime/memory_budget.h"

#include "base/error.h"
#include "runtime/expert_cache.h"

namespace mw {
namespace {

std::string mib(uint64_t bytes) {
    return fmt::format("{:.1f} MiB", double(bytes) / (1 << 20));
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

MemoryBudget::MemoryBudget(std::string path, uint64_t budget, uint64_t resident,
                           std::unique_ptr<ExpertCache> experts, uint32_t experts_per_token)
    : path_(std::move(path)),
      budget_(budget),
      resident_(resident),
      experts_(std::move(experts)),
      experts_per_token_(experts_per_token) {
    const uint64_t need = committed();
    if (need <= budget_) return;
    if (experts_) {
        fail(ErrorKind::out_of_memory,
             "{}: a memory budget of {} is too small: the dense part of the model (everything "
             "but the experts) takes {}, the {} experts one token needs in a layer {} ({} each), "
             "and the process itself about {}: at least {}, before any context's KV cache and "
             "scratch",
             path_, mib(budget_), mib(resident_), experts_per_token_,
             mib(uint64_t(experts_per_token_) * experts_->slot_bytes()),
             mib(experts_->slot_bytes()), mib(kProcessReserve), mib(need));
    }
    fail(ErrorKind::out_of_memory,
         "{}: a memory budget of {} is too small for this dense model: its weights take {} and "
         "the process itself about {} (at least {}); running a dense model larger than its "
         "budget (layers streamed from storage) is not implemented yet",
         path_, mib(budget_), mib(resident_), mib(kProcessReserve), mib(need));
}

MemoryBudget::~MemoryBudget() = default;

uint64_t MemoryBudget::committed() const {
    const uint64_t slots =
        experts_ ? (experts_->n_slots() > 0 ? experts_->n_slots() : experts_per_token_) : 0;
    return resident_ + kProcessReserve + (experts_ ? slots * experts_->slot_bytes() : 0);
}

void MemoryBudget::admit(uint64_t kv_bytes, uint64_t scratch_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t ctx = kv_bytes + scratch_bytes;
    const uint64_t need = committed() + contexts_ + ctx;
    if (need > budget_) {
        fail(ErrorKind::out_of_memory,
             "{}: a memory budget of {} is too small for this context: it needs {} (KV cache {} "
             "+ scratch {}), the model's weights in memory {}, {} {}, other contexts {} and the "
             "process itself about {}: at least {} (a smaller context size -c needs less)",
             path_, mib(budget_), mib(ctx), mib(kv_bytes), mib(scratch_bytes), mib(resident_),
             experts_ && experts_->n_slots() > 0 ? "the expert cache"
                                                 : "the experts one token needs in a layer",
             mib(experts_ ? (experts_->n_slots() > 0 ? experts_->n_slots() : experts_per_token_) *
                                experts_->slot_bytes()
                          : 0),
             mib(contexts_), mib(kProcessReserve), mib(need));
    }
    if (experts_ && experts_->n_slots() == 0) {
        // The first context: the expert cache takes what is left.
        const uint64_t left = budget_ - resident_ - kProcessReserve - ctx;
        experts_->allocate(uint32_t(std::min<uint64_t>(left / experts_->slot_bytes(), UINT32_MAX)));
    }
    contexts_ += ctx;
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
