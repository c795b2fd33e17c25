// Plans under a memory budget smaller than the file (`--mem-budget`, docs/memory-budget.md): does
// the model load, how large is its expert cache, how many expert bytes come from storage per
// token, and how fast does it decode then.
//
// The memory arithmetic is the runtime's own (runtime/memory_budget.h: the same refusals, the
// same slot count for the first context). The speed model:
// - hit rate: routing taken as uniform and independent from token to token, so an LRU/LFU cache
//   holding a fraction f of the experts finds each routed expert with probability f (real routers
//   are skewed and repeat themselves: this is the cautious case, the low end of the range);
// - the high end: expert popularity in each layer following rank^-kRouterSkew, and the cache
//   holding each layer's most popular experts (skewed_hit_rate);
// - misses per token = (1 - hit) x MoE layers x experts used per token, each reading one expert's
//   three matrices (wrong next-layer predictions, also read, are not counted);
// - seconds per token = weight bytes per token / (RAM bandwidth x decode efficiency) (every
//   expert, hit or miss, is then read from memory by the kernels, as in RAM) + miss bytes /
//   the device's random-read rate at the size of one matrix (the expert cache's reads): a miss
//   is waited for. A dense model's streamed layers are read ahead, one layer while the one
//   before computes: the slower of the two rates, not their sum.
#pragma once

#include <cstdint>
#include <optional>
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
    double hit_rate = 0;         // uniform routing (the cautious end)
    double hit_rate_skewed = 0;  // popularity ~ rank^-kRouterSkew (the hopeful end)
    double misses_per_token = 0;
    double storage_bytes_per_token = 0;  // misses x expert_read_bytes
    uint64_t ram_bytes_per_token = 0;    // weight bytes the kernels read per token
    double ram_bytes_per_s = 0;          // bandwidth x decode efficiency
    double storage_bytes_per_s = 0;      // random reads of one matrix's size
    bool storage_assumed = true;
    std::string storage_source;
    double ram_seconds_per_token = 0, storage_seconds_per_token = 0;
    double decode_tok_s = 0;         // predicted under the budget (0 when refused)
    double decode_tok_s_skewed = 0;  // the same with skewed routing (a dense model: the same)
    double in_ram_decode_tok_s = 0;  // the same model without a budget
    std::string note;                // e.g. the budget is above the device's usable memory
};

// The skew of the range's high end: a layer's experts used in proportion to rank^-1.7, so that
// the two most used of 8 take ~75 % of the uses, as counted on synth's skewed routers
// (docs/memory-budget.md, "Measured here"); real routers repeat themselves besides.
inline constexpr double kRouterSkew = 1.7;
// The share of routed experts found in a cache holding the most popular `cache_fraction` of each
// layer's `n_expert` experts, when popularity follows rank^-skew (skew 0: the fraction itself).
double skewed_hit_rate(double cache_fraction, uint32_t n_expert, double skew);

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

// A model larger than a device's memory, run with --mem-budget at what the device has free.
struct StreamPlan {
    uint64_t budget_bytes = 0;
    std::string budget_arg;          // "7.5G": the --mem-budget value
    uint32_t n_ctx = 0;              // the context planned
    std::vector<BudgetRow> options;  // every quantization the runtime loads under it, fastest first
    std::string run_command;         // `memwall run ...` to paste (filled by the planner)
};

// The budget a device offers: 95 % of its usable memory (room for what the runtime does not
// count), rounded down to 256 MiB (to 16 MiB below 2 GiB).
uint64_t device_stream_budget(const DeviceProfile& device);
// 7.5 GiB -> "7.5G", 336 MiB -> "336M": a size --mem-budget reads back exactly.
std::string budget_arg(uint64_t bytes);

// Each (quantization label, facts) at the device's budget; nullopt when none loads there.
std::optional<StreamPlan> plan_streaming(
    const std::string& model, const std::vector<std::pair<std::string, const ModelFacts*>>& quants,
    const DeviceProfile& device, const RunSettings& run);
// `memwall run -m FILE --mem-budget X -c N -p "Hello"` for the fastest option.
std::string stream_run_command(const std::string& file, const StreamPlan& plan, uint32_t n_ctx);

}  // namespace mw
