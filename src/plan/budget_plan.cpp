#include "plan/budget_plan.h"

#include <algorithm>

#include "base/error.h"
#include "plan/planner.h"
#include "runtime/expert_cache.h"
#include "runtime/memory_budget.h"

namespace mw {

BudgetRow plan_budget(const std::string& model, const std::string& quant, const ModelFacts& facts,
                      const DeviceProfile& dev, const RunSettings& run, uint64_t budget,
                      double fraction) {
    BudgetRow r;
    r.model = model;
    r.device = dev.id;
    r.quant = quant;
    r.budget_bytes = budget;
    r.budget_fraction = fraction;
    r.file_bytes = facts.file_bytes;
    r.runnable = facts.runnable;
    r.reserve_bytes = kProcessReserve;
    const Model& m = facts.model;
    r.expert_bytes = facts.runnable && m.hp.n_expert > 0 ? expert_tensor_bytes(m) : 0;
    r.moe = r.expert_bytes > 0;
    // The runtime reads every byte of the file but the experts' (a dense model: all of it).
    r.resident_bytes = r.file_bytes - std::min(r.file_bytes, r.expert_bytes);
    const MemoryPlan memory = plan_memory(facts, run);
    r.kv_bytes = memory.kv_bytes;
    r.scratch_bytes = memory.compute_bytes;
    r.ram_bytes_per_token = facts.bytes_per_token;
    r.ram_bytes_per_s = dev.bandwidth_bytes_per_s * dev.decode_efficiency;
    if (r.ram_bytes_per_token > 0 && r.ram_bytes_per_s > 0) {
        r.ram_seconds_per_token = double(r.ram_bytes_per_token) / r.ram_bytes_per_s;
        r.in_ram_decode_tok_s = 1 / r.ram_seconds_per_token;
    }
    if (budget > dev.usable_bytes()) {
        r.note = fmt::format("the budget is more than the {:.2f} GiB this device has free",
                             double(dev.usable_bytes()) / double(1 << 30));
    }
    if (!facts.runnable) {
        r.refusal = "memwall cannot run this model yet";
        return r;
    }

    BudgetFigures f;
    f.budget = budget;
    f.resident = r.resident_bytes;
    uint64_t moe_layers = 0;
    for (const Layer& l : m.layers) moe_layers += l.moe ? 1 : 0;
    if (r.moe) {
        r.slot_bytes = f.slot_bytes = expert_slot_bytes(m);
        r.expert_read_bytes = expert_read_bytes(m);
        f.experts_per_token = m.hp.n_expert_used;
        // As ExpertCache::experts_total() counts them (the cache's upper bound on slots).
        f.experts_total = uint64_t(m.hp.n_layer) * m.hp.n_expert;
        r.experts_total = moe_layers * m.hp.n_expert;
        r.experts_per_token = moe_layers * m.hp.n_expert_used;
    }
    r.refusal = load_refusal(model, f);
    if (r.refusal.empty()) r.refusal = context_refusal(model, f, 0, 0, r.kv_bytes, r.scratch_bytes);
    r.fits = r.refusal.empty();
    if (!r.fits) return r;

    if (r.moe) {
        r.cache_slots = expert_cache_slots(f, r.kv_bytes, r.scratch_bytes);
        r.cache_fraction = std::min(1.0, double(r.cache_slots) / double(r.experts_total));
        r.hit_rate = r.cache_fraction;  // uniform routing (see the header)
        r.misses_per_token = (1 - r.hit_rate) * double(r.experts_per_token);
        r.storage_bytes_per_token = r.misses_per_token * double(r.expert_read_bytes);
        // One pread per matrix: the rate of reads a third of an expert long.
        r.storage_bytes_per_s = dev.storage_random_bytes_per_s(r.expert_read_bytes / 3);
        r.storage_assumed = dev.storage_assumed;
        r.storage_source = dev.storage_source;
        if (r.storage_bytes_per_token > 0 && r.storage_bytes_per_s > 0)
            r.storage_seconds_per_token = r.storage_bytes_per_token / r.storage_bytes_per_s;
    } else {
        r.hit_rate = 1;  // a dense model that fits whole: nothing read from storage
    }
    const double seconds = r.ram_seconds_per_token + r.storage_seconds_per_token;
    const bool storage_unknown = r.storage_bytes_per_token > 0 && !(r.storage_bytes_per_s > 0);
    if (seconds > 0 && !storage_unknown) r.decode_tok_s = 1 / seconds;
    return r;
}

std::vector<BudgetRow> plan_budgets(const std::string& model, const std::string& quant,
                                    const ModelFacts& facts, const DeviceProfile& dev,
                                    RunSettings run, const std::vector<double>& fractions,
                                    const std::vector<uint64_t>& budgets) {
    if (run.n_threads <= 0 && dev.n_threads > 0) run.n_threads = dev.n_threads;
    const uint64_t file = facts.file_bytes;
    std::vector<BudgetRow> rows;
    for (double f : fractions) {
        if (!(f > 0 && f <= 1)) {
            fail(ErrorKind::invalid_argument,
                 "plan: a budget fraction of the file must be in (0, 1], not {}", f);
        }
        rows.push_back(plan_budget(model, quant, facts, dev, run, uint64_t(f * double(file)), f));
    }
    for (uint64_t b : budgets) rows.push_back(plan_budget(model, quant, facts, dev, run, b, 0));
    return rows;
}

}  // namespace mw
