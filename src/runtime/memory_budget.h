// A model's memory budget (--mem-budget, mw_model_params.mem_budget): the weights kept in memory,
// the KV caches and scratch of its contexts, the expert cache and the process itself must fit
// in it together (docs/memory-budget.md). The expert cache gets what the first context leaves.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "model/model.h"

namespace mw {

class ExpertCache;
class LayerStream;

// What the process takes besides weights, caches and scratch: code, libraries, thread stacks,
// the allocator's slack (kProcessReserve); the tokenizer's tables, which grow with the vocabulary
// (kReservePerToken); and the kernel's page tables for all of it, which a memory cgroup charges
// too: 8 bytes per 4 KiB page, 1/512 of the budget. qwen3-30b-a3b (151,936 tokens) under 4.3 GiB
// took 18 MiB more of its own than a 512-token model, grew by 10 MiB after its first context,
// and its group charged 14 MiB of kernel memory: it was OOM-killed with the reserve of 41 MiB
// that a fixed 32 MiB and the page tables gave.
inline constexpr uint64_t kProcessReserve = uint64_t(32) << 20;
inline constexpr uint64_t kReservePerToken = 192;
inline constexpr uint64_t process_reserve(uint64_t budget, uint32_t n_vocab = 0) {
    return kProcessReserve + uint64_t(n_vocab) * kReservePerToken + budget / 512;
}
// The smallest budget that leaves `bytes` beside its process reserve.
uint64_t budget_leaving(uint64_t bytes, uint32_t n_vocab = 0);

// The weight bytes of a model's expert tensors (ffn_*_exps), from shapes alone.
uint64_t expert_tensor_bytes(const Model& m);

// The budget's arithmetic, without files or allocations: MemoryBudget checks with it, and the
// planner's rows under a budget (plan/budget_plan.h) predict with it, so the two cannot disagree.
struct BudgetFigures {
    uint64_t budget = 0;
    uint64_t resident = 0;  // weight bytes kept in memory
    // The slots of what streams from storage: experts (a MoE model's expert cache) or, for a
    // dense model, whole layers (its layer stream). 0: nothing streams.
    uint64_t slot_bytes = 0;         // one slot
    uint32_t experts_per_token = 0;  // slots a token needs at least (n_expert_used; 1 layer)
    uint64_t experts_total = 0;      // slots that hold everything (layers x experts; layers)
    bool layers = false;             // the slots hold layers
    uint32_t n_vocab = 0;            // the process reserve grows with it
};
// What the model holds besides its contexts: the resident weights, the process, and the expert
// cache (`n_slots` once allocated, before that the experts one token needs in a layer).
uint64_t committed_bytes(const BudgetFigures& f, uint32_t n_slots);
// Why the model cannot be loaded under the budget, with the numbers; "" when it can.
std::string load_refusal(const std::string& path, const BudgetFigures& f);
// Why a context's KV cache and scratch do not fit beside the model (its expert cache of `n_slots`,
// 0 when not allocated yet) and `other_contexts`, with the numbers; "" when they fit.
std::string context_refusal(const std::string& path, const BudgetFigures& f, uint32_t n_slots,
                            uint64_t other_contexts, uint64_t kv_bytes, uint64_t scratch_bytes);
// The slots the expert cache (or layer stream) gets when the first context takes kv + scratch:
// what is left, at most every expert (layer). Only for a context that fits.
uint32_t expert_cache_slots(const BudgetFigures& f, uint64_t kv_bytes, uint64_t scratch_bytes);

class MemoryBudget {
  public:
    // `resident`: weight bytes kept in memory (all but the experts when `experts` serves them,
    // all but the layers' matrices when `layers` does). Throws ErrorKind::out_of_memory, with the
    // numbers, when those and the experts one token needs in a layer (or one layer) do not fit.
    MemoryBudget(std::string path, uint64_t budget, uint64_t resident, uint32_t n_vocab,
                 std::unique_ptr<ExpertCache> experts, uint32_t experts_per_token,
                 std::unique_ptr<LayerStream> layers = nullptr);
    ~MemoryBudget();
    MemoryBudget(const MemoryBudget&) = delete;
    MemoryBudget& operator=(const MemoryBudget&) = delete;

    // A context's KV cache and scratch join the budget; the first one sizes the expert cache to
    // what is left. Throws ErrorKind::out_of_memory, with the numbers, when they do not fit.
    void admit(uint64_t kv_bytes, uint64_t scratch_bytes);
    void leave(uint64_t bytes);

    uint64_t budget() const { return figures_.budget; }
    uint64_t resident() const { return figures_.resident; }
    ExpertCache* experts() const { return experts_.get(); }
    LayerStream* layers() const { return layers_.get(); }

  private:
    std::string path_;
    BudgetFigures figures_;
    std::unique_ptr<ExpertCache> experts_;
    std::unique_ptr<LayerStream> layers_;
    std::mutex mu_;
    uint64_t contexts_ = 0;
};

// A context's share of its model's budget, returned when the context goes.
class BudgetLease {
  public:
    BudgetLease() = default;
    BudgetLease(MemoryBudget* budget, uint64_t kv_bytes, uint64_t scratch_bytes);
    BudgetLease(const BudgetLease&) = delete;
    BudgetLease& operator=(const BudgetLease&) = delete;
    ~BudgetLease();

  private:
    MemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
};

}  // namespace mw
