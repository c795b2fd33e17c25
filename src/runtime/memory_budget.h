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

// What the process takes besides weights, caches and scratch: code, libraries, the tokenizer's
// tables, thread stacks, the allocator's slack.
inline constexpr uint64_t kProcessReserve = uint64_t(32) << 20;

// The weight bytes of a model's expert tensors (ffn_*_exps), from shapes alone.
uint64_t expert_tensor_bytes(const Model& m);

class MemoryBudget {
  public:
    // `resident`: weight bytes kept in memory (the whole file, or all but the experts when
    // `experts` serves them). Throws ErrorKind::out_of_memory, with the numbers, when those and
    // the experts one token needs in a layer do not fit.
    MemoryBudget(std::string path, uint64_t budget, uint64_t resident,
                 std::unique_ptr<ExpertCache> experts, uint32_t experts_per_token);
    ~MemoryBudget();
    MemoryBudget(const MemoryBudget&) = delete;
    MemoryBudget& operator=(const MemoryBudget&) = delete;

    // A context's KV cache and scratch join the budget; the first one sizes the expert cache to
    // what is left. Throws ErrorKind::out_of_memory, with the numbers, when they do not fit.
    void admit(uint64_t kv_bytes, uint64_t scratch_bytes);
    void leave(uint64_t bytes);

    uint64_t budget() const { return budget_; }
    uint64_t resident() const { return resident_; }
    ExpertCache* experts() const { return experts_.get(); }

  private:
    uint64_t committed() const;  // everything but the contexts

    std::string path_;
    uint64_t budget_;
    uint64_t resident_;
    std::unique_ptr<ExpertCache> experts_;
    uint32_t experts_per_token_;
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
