// Plans under a memory budget smaller than the file (`--mem-budget`, docs/memory-budget.md): does
// the model load, how large is its expert cache, how many expert bytes come from storage per
// token, and how fast does it decode then.
//
// The memory arithmetic is the runtime's own (runtime/memory_budget.h: the same refusals, the
// same slot count for the first context). The speed model:
// - hit rate: routing taken as uniform and independent from token to token, so an LRU/LFU cache
//   holding a fraction f of the experts finds each routed expert with probability f (real routers
//   are skewed and repeat themselves: this is the cautious case);
// - misses per token = (1 - hit) x MoE layers x experts used per token, each reading one expert's
//   three matrices (wrong next-layer predictions, also read, are not counted);
// - seconds per token = weight bytes per token / (RAM bandwidth x decode efficiency) (every
//   expert, hit or miss, is then read from memory by the kernels, as in RAM) + miss bytes /
//   the device's random-read rate at the size of one matrix (the expert cache's reads): a miss
//   is waited for. A dense model's streamed layers are read ahead, one layer while the one
//   before computes: the slower of the two rates, not their sum.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/devices.h"

namespace mw {

struct ModelFacts;
struct RunSettings;

struct BudgetRow {
    std::string model, device, quant;
    uint64_t budget_bytes = 0;
    double budget_fraction = 0;   // of the file; 0 when the budget was given as a size
    uint64_t file_bytes = 0;      // header + data section (ModelFacts::file_bytes)
    bool moe = false;             // the runtime serves its experts from a cache
    bool streams_layers = false;  // a dense model: the runtime streams its layers' matrices
    bool runnable = false;

    // The budget's parts, as the runtime counts them.
    uint64_t resident_bytes = 0;     // weights kept in memory (MoE: the dense part)
    uint64_t expert_bytes = 0;       // all expert tensors
    uint64_t reserve_bytes = 0;      // the process (process_reserve)
    uint64_t kv_bytes = 0;           // the first context's KV cache
    uint64_t scratch_bytes = 0;      // and its scratch (+ a row of logits)
    uint64_t slot_bytes = 0;         // one expert cache slot
    uint64_t expert_read_bytes = 0;  // one expert's three matrices: what a miss reads
    uint64_t experts_total = 0;      // MoE layers x experts
    uint64_t experts_per_token = 0;  // MoE layers x experts used: routed experts per token
    bool fits = false;               // loads and takes its first context
    std::string refusal;             // the runtime's message when it does not

    uint32_t cache_slots = 0;    // expert slots, or a dense model's layer slots
    double cache_fraction = 0;   // slots / experts_total (dense: / n_layer; at most 1)
    uint32_t n_layer = 0;        // a dense model's layers
    uint32_t layers_pinned = 0;  // of its slots, those holding a layer for good
    double hit_rate = 0;
    double misses_per_token = 0;
    double storage_bytes_per_token = 0;  // misses x expert_read_bytes
    uint64_t ram_bytes_per_token = 0;    // weight bytes the kernels read per token
    double ram_bytes_per_s = 0;          // bandwidth x decode efficiency
    double storage_bytes_per_s = 0;      // random reads of one matrix's size
    bool storage_assumed = true;
    std::string storage_source;
    double ram_seconds_per_token = 0, storage_seconds_per_token = 0;
    double decode_tok_s = 0;         // predicted under the budget (0 when refused)
    double in_ram_decode_tok_s = 0;  // the same model without a budget
    std::string note;                // e.g. the budget is above the device's usable memory
};

// The rows of one model (its facts in one quantization) on one device: a budget per fraction
// of the file and per size given.
std::vector<BudgetRow> plan_budgets(const std::string& model, const std::string& quant,
                                    const ModelFacts& facts, const DeviceProfile& device,
                                    RunSettings run, const std::vector<double>& fractions,
                                    const std::vector<uint64_t>& budgets);

// One row (fraction 0 for a given size).
BudgetRow plan_budget(const std::string& model, const std::string& quant, const ModelFacts& facts,
                      const DeviceProfile& device, const RunSettings& run, uint64_t budget,
                      double fraction);

}  // namespace mw
