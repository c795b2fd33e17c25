#include "plan/budget_plan.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "plan/planner.h"
#include "runtime/expert_cache.h"
#include "runtime/layer_stream.h"
#include "runtime/memory_budget.h"
#include "runtime/ple_reader.h"

namespace mw {

double skewed_hit_rate(double fraction, uint32_t n_expert, double skew) {
    fraction = std::clamp(fraction, 0.0, 1.0);
    if (n_expert == 0 || skew <= 0) return fraction;
    // The cache holds fraction x n experts of the layer: the whole ones most used, and a share of
    // the next one.
    const double held = fraction * double(n_expert);
    double hit = 0, all = 0;
    for (uint32_t k = 1; k <= n_expert; ++k) {
        const double p = std::pow(double(k), -skew);
        all += p;
        hit += p * std::clamp(held - double(k - 1), 0.0, 1.0);
    }
    return hit / all;
}

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
    r.reserve_bytes = process_reserve(budget, facts.model.hp.n_vocab);
    const Model& m = facts.model;
    r.expert_bytes = facts.runnable && m.hp.n_expert > 0 ? expert_tensor_bytes(m) : 0;
    r.moe = r.expert_bytes > 0;
    // A dense model streams its layers' matrices; the rest of the file is read into memory.
    uint64_t layer_bytes = 0;
    if (facts.runnable && !r.moe) {
        for (uint32_t il = 0; il < m.hp.n_layer; ++il) layer_bytes += layer_matrix_bytes(m, il);
    }
    r.streams_layers = layer_bytes > 0;
    // The runtime reads every byte of the file but the experts', the layers' and a per-layer
    // embedding table on storage (of that, only its reader's cached rows).
    const uint64_t ple_table =
        facts.runnable && ple_on_storage(m, run.ple_resident) ? ple_table_bytes(m) : 0;
    r.resident_bytes = r.file_bytes -
                       std::min(r.file_bytes, r.expert_bytes + layer_bytes + ple_table) +
                       (ple_table ? ple_cache_bytes(m) : 0);
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
    f.n_vocab = m.hp.n_vocab;
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
    } else if (r.streams_layers) {
        r.slot_bytes = f.slot_bytes = layer_slot_bytes(m);
        f.experts_per_token = 1;
        f.experts_total = m.hp.n_layer;
        f.layers = true;
        r.n_layer = m.hp.n_layer;
    }
    r.refusal = load_refusal(model, f);
    if (r.refusal.empty()) r.refusal = context_refusal(model, f, 0, 0, r.kv_bytes, r.scratch_bytes);
    r.fits = r.refusal.empty();
    if (!r.fits) return r;

    if (r.moe) {
        r.cache_slots = expert_cache_slots(f, r.kv_bytes, r.scratch_bytes);
        r.cache_fraction = std::min(1.0, double(r.cache_slots) / double(r.experts_total));
        r.hit_rate = r.cache_fraction;  // uniform routing (see the header)
        r.hit_rate_skewed = skewed_hit_rate(r.cache_fraction, m.hp.n_expert, kRouterSkew);
        r.misses_per_token = (1 - r.hit_rate) * double(r.experts_per_token);
        r.storage_bytes_per_token = r.misses_per_token * double(r.expert_read_bytes);
        // One pread per matrix: the rate of reads a third of an expert long.
        r.storage_bytes_per_s = dev.storage_random_bytes_per_s(r.expert_read_bytes / 3);
        r.storage_assumed = dev.storage_assumed;
        r.storage_source = dev.storage_source;
        if (r.storage_bytes_per_token > 0 && r.storage_bytes_per_s > 0)
            r.storage_seconds_per_token = r.storage_bytes_per_token / r.storage_bytes_per_s;
    } else if (r.streams_layers) {
        // As LayerStream::allocate shares its slots (with the I/O thread's prefetch): all
        // layers, or two taking turns and the rest holding the first layers.
        r.cache_slots = expert_cache_slots(f, r.kv_bytes, r.scratch_bytes);
        const uint32_t n_layer = m.hp.n_layer;
        const uint32_t turns = r.cache_slots >= n_layer ? 0 : std::min<uint32_t>(r.cache_slots, 2);
        r.layers_pinned = std::min(r.cache_slots, n_layer) - turns;
        r.cache_fraction = std::min(1.0, double(r.cache_slots) / double(n_layer));
        uint64_t read = 0, largest = 0;
        uint32_t matrices = 0;
        for (uint32_t il = 0; il < n_layer; ++il) {
            const uint64_t bytes = layer_matrix_bytes(m, il);
            largest = std::max(largest, bytes);
            if (turns > 0 && il >= r.layers_pinned) read += bytes;
        }
        for (const Layer& l : m.layers) {
            for (const LayerMatrixRole& role : kLayerMatrices)
                matrices += (l.*role.member).traits ? 1 : 0;
        }
        r.hit_rate = layer_bytes ? 1 - double(read) / double(layer_bytes) : 1;
        r.hit_rate_skewed = r.hit_rate;
        r.storage_bytes_per_token = double(read);
        // A layer is read in order, matrix after matrix: the device's rate in order (measured
        // here within 10 % of what the stream achieves), else its random rate at a matrix's size.
        const uint64_t per_read = matrices ? layer_bytes / matrices : largest;
        r.storage_bytes_per_s = dev.storage_seq_bytes_per_s > 0
                                    ? dev.storage_seq_bytes_per_s
                                    : dev.storage_random_bytes_per_s(per_read);
        r.storage_assumed = dev.storage_assumed;
        r.storage_source = dev.storage_source;
        if (r.storage_bytes_per_token > 0 && r.storage_bytes_per_s > 0)
            r.storage_seconds_per_token = r.storage_bytes_per_token / r.storage_bytes_per_s;
    }
    // The layer stream reads the next layer while the current one computes (docs/memory-
    // budget.md): the token takes as long as the slower of the two. An expert miss is waited for.
    const double seconds = r.streams_layers
                               ? std::max(r.ram_seconds_per_token, r.storage_seconds_per_token)
                               : r.ram_seconds_per_token + r.storage_seconds_per_token;
    const bool storage_unknown = r.storage_bytes_per_token > 0 && !(r.storage_bytes_per_s > 0);
    if (seconds > 0 && !storage_unknown) r.decode_tok_s = 1 / seconds;
    r.decode_tok_s_skewed = r.decode_tok_s;
    if (r.moe && r.decode_tok_s > 0 && r.storage_bytes_per_s > 0) {
        const double misses = (1 - r.hit_rate_skewed) * double(r.experts_per_token);
        r.decode_tok_s_skewed = 1 / (r.ram_seconds_per_token +
                                     misses * double(r.expert_read_bytes) / r.storage_bytes_per_s);
    }
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
        // A fraction above what the device has free cannot be used there (a size given
        // explicitly is still planned, with a note).
        if (uint64_t(f * double(file)) > dev.usable_bytes()) continue;
        rows.push_back(plan_budget(model, quant, facts, dev, run, uint64_t(f * double(file)), f));
    }
    for (uint64_t b : budgets) rows.push_back(plan_budget(model, quant, facts, dev, run, b, 0));
    return rows;
}

uint64_t device_stream_budget(const DeviceProfile& dev) {
    const uint64_t usable = dev.usable_bytes();
    const uint64_t step = usable >= (uint64_t(2) << 30) ? uint64_t(256) << 20 : uint64_t(16) << 20;
    return uint64_t(0.95 * double(usable)) / step * step;
}

std::string budget_arg(uint64_t bytes) {
    constexpr uint64_t MiB = uint64_t(1) << 20, GiB = uint64_t(1) << 30;
    if (bytes % (GiB / 4) == 0) {
        std::string s = fmt::format("{:.2f}", double(bytes) / double(GiB));
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
        return s + "G";
    }
    if (bytes % MiB == 0) return fmt::format("{}M", bytes / MiB);
    return std::to_string(bytes);
}

std::optional<StreamPlan> plan_streaming(
    const std::string& model, const std::vector<std::pair<std::string, const ModelFacts*>>& quants,
    const DeviceProfile& dev, const RunSettings& run) {
    StreamPlan s;
    s.budget_bytes = device_stream_budget(dev);
    s.budget_arg = budget_arg(s.budget_bytes);
    RunSettings r = run;
    if (r.n_threads <= 0 && dev.n_threads > 0) r.n_threads = dev.n_threads;
    for (const auto& [label, facts] : quants) {
        BudgetRow row = plan_budget(model, label, *facts, dev, r, s.budget_bytes, 0);
        if (row.fits && row.decode_tok_s > 0) s.options.push_back(std::move(row));
    }
    if (s.options.empty()) return std::nullopt;
    std::stable_sort(
        s.options.begin(), s.options.end(),
        [](const BudgetRow& a, const BudgetRow& b) { return a.decode_tok_s > b.decode_tok_s; });
    return s;
}

std::string stream_run_command(const std::string& file, const StreamPlan& plan, uint32_t n_ctx) {
    // Quoted for a POSIX shell when the path needs it.
    const bool plain = file.find_first_of(" '\"$`\\;&|<>()*?!#~") == std::string::npos;
    std::string quoted = "'";
    for (char c : file) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    return fmt::format("memwall run -m {} --mem-budget {} -c {} -p \"Hello\"",
                       plain ? file : quoted, plan.budget_arg, n_ctx);
}

}  // namespace mw
