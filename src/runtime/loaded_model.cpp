#include "runtime/loaded_model.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "base/error.h"
#include "format/block_scales.h"
#include "format/ggml_types.h"
#include "runtime/expert_cache.h"
#include "runtime/layer_stream.h"
#include "runtime/ple_reader.h"
#include "sys/probe.h"
#include "sys/thread_pool.h"
#include "tensor/repack.h"
#include "tensor/types.h"

namespace mw {

namespace {

// Parses `bytes` (the mapped file's, or the caller's) and binds the vocabulary and weights.
void parse_and_bind(LoadedModel& m, std::span<const uint8_t> bytes, const std::string& name,
                    bool vocab_only) {
    m.gguf = gguf::GgufFile::parse(bytes, name);
    m.vocab = Vocab::from_gguf(m.gguf);
    if (vocab_only) {
        m.vocab_only = true;
        m.model.hp.n_vocab = uint32_t(m.vocab->n_tokens());
        if (const auto arch = m.gguf.get_string("general.architecture")) m.model.hp.arch = *arch;
        // The training context too: the default context, min(it, 4096), is decided from it.
        if (const auto ctx = m.gguf.get_u32(m.model.hp.arch + ".context_length"))
            m.model.hp.n_ctx_train = *ctx;
        m.desc = fmt::format("{} vocabulary ({} tokens)", m.model.hp.arch, m.vocab->n_tokens());
        return;
    }
    m.model = Model::bind(m.gguf);
    if (m.vocab->n_tokens() != int32_t(m.model.hp.n_vocab)) {
        fail(ErrorKind::bad_file,
             "{}: the vocabulary has {} tokens but token_embd.weight has {} rows", name,
             m.vocab->n_tokens(), m.model.hp.n_vocab);
    }
    if (!m.file.lock_error().empty()) m.warning = m.file.lock_error();
    const HParams& hp = m.model.hp;
    // A hybrid model says how its layers divide; MTP (next-n) heads run only as drafters.
    std::string layers = fmt::format("{} layers", hp.n_layer);
    if (const uint32_t r = hp.n_recurrent_layers(); r > 0) {
        const bool conv = std::find(hp.layer_kinds.begin(), hp.layer_kinds.end(),
                                    LayerKind::short_conv) != hp.layer_kinds.end();
        layers += fmt::format(" ({} {}, {} attention)", r, conv ? "short-conv" : "DeltaNet",
                              hp.n_layer - r);
    }
    if (hp.n_nextn_layers > 0)
        layers +=
            fmt::format(", {} MTP layer{}{}", hp.n_nextn_layers, hp.n_nextn_layers > 1 ? "s" : "",
                        m.model.nextn.empty() ? " (incomplete: not runnable)" : "");
    m.desc = fmt::format("{}{}{} ({}, {} embd, {:.2f} M params, {}, {:.2f} MiB)", hp.name,
                         hp.name.empty() ? "" : ": ", hp.arch, layers, hp.n_embd,
                         double(m.model.n_params) / 1e6, m.model.type_summary,
                         double(m.model.weight_bytes) / (1 << 20));
}

// A block scale that is inf or NaN makes the whole output NaN while the run goes on: refused at
// load, naming the tensor and the block (format/block_scales.h; `verify` decodes everything).
// A per-layer embedding table kept on storage is not read here (that would map all of it into
// the process's RSS): its reader checks each row it reads.
void check_block_scales(const gguf::GgufFile& g, const std::string& name,
                        const uint8_t* skip = nullptr) {
    for (const gguf::TensorInfo& t : g.tensors()) {
        if (!t.data || t.data == skip || !has_fp16_block_scales(t.type)) continue;
        const uint32_t block_bytes = ggml_layout(t.type)->type_size;
        if (const auto bad = first_nonfinite_scale(t.type, t.data, t.n_bytes / block_bytes)) {
            fail(ErrorKind::bad_file,
                 "{}: tensor '{}' ({}) has a block scale that is not finite (inf or NaN) in block "
                 "{} of {} (file byte {}): the file is corrupt (`memwall verify` lists every such "
                 "tensor)",
                 name, t.name, ggml_layout(t.type)->name, *bad, t.n_bytes / block_bytes,
                 g.data_offset() + t.offset + *bad * block_bytes);
        }
    }
}

// Repacking turns a mapping's pages into the process's own memory, which the OS cannot drop and
// read again under pressure as it does page cache: a mapped model larger than what is available
// still runs without it (slowly, paging), but would be killed with it. So only when the file
// takes at most 80 % of the memory available now; otherwise a warning says why not.
bool fits_as_own_memory(LoadedModel& m) {
    if (!m.file.is_mapped()) return true;  // read into memory: already the process's own
    const uint64_t available = memory_now().available_bytes;
    const uint64_t size = m.file.bytes().size();
    if (available == 0 || double(size) <= 0.8 * double(available)) return true;
    m.warning += fmt::format(
        "{}weights not repacked for the faster kernels: the {:.0f} MiB mapping "
        "would become unevictable memory, and {:.0f} MiB is available "
        "(--no-repack says this is intended)",
        m.warning.empty() ? "" : "; ", double(size) / (1 << 20), double(available) / (1 << 20));
    return false;
}

// The file bytes of Gemma 4's per-layer embedding table when it stays on storage (read row by row
// by a PleReader: never copied, never made resident, under a budget or not); none otherwise.
std::vector<std::pair<uint64_t, uint64_t>> ple_stored_range(const LoadedModel& m,
                                                            const LoadOptions& options) {
    const WeightMatrix& t = m.model.ple_embd;
    if (!ple_on_storage(m.model, options.ple_resident) || !t.data || !m.file.is_mapped()) return {};
    const uint64_t at = uint64_t(t.data - m.file.bytes().data());
    return {{at, at + ple_table_bytes(m.model)}};
}

// Under a memory budget: the file is mapped but read only where it must be. A MoE model's dense
// part (every byte but the expert tensors') is read into the process's own memory at its place in
// the mapping; the experts come from an expert cache sized by the budget, so their pages in the
// mapping are never touched. A dense model's layers are served likewise by a layer stream: only
// its embeddings, output and the bytes between its matrices are read into place.
void load_budgeted(LoadedModel& m, const std::string& path, const LoadOptions& options) {
    MapOptions map = options.map;
    map.use_mmap = true;  // the file's layout in memory; only the dense ranges become resident
    map.lock = false;     // locking a mapping reads all of it: the ranges are locked instead
    m.file = MappedFile::open(path, map);
    parse_and_bind(m, m.file.bytes(), path, false);
    const Model& model = m.model;
    const std::span<const uint8_t> bytes = m.file.bytes();
    std::vector<std::pair<uint64_t, uint64_t>> dense, stored;
    std::unique_ptr<ExpertCache> experts;
    std::unique_ptr<LayerStream> layers;
    if (model.hp.n_expert > 0 && expert_tensor_bytes(model) > 0) {
        std::vector<std::pair<uint64_t, uint64_t>> exps;
        for (const Layer& l : model.layers) {
            if (!l.moe) continue;
            for (const ExpertWeights* x : {&l.exp_gate, &l.exp_up, &l.exp_down}) {
                const uint64_t at = uint64_t(x->first.data - bytes.data());
                exps.push_back({at, at + x->expert_stride * model.hp.n_expert});
            }
        }
        stored = exps;
        ExpertCache::Options eo;
        eo.repack = options.repack && options.repack_streamed;
        eo.prefetch = options.expert_prefetch;
        eo.direct_io = options.direct_io;
        eo.lock = options.map.lock;
        experts = std::make_unique<ExpertCache>(path, model, bytes.data(), eo);
    } else {
        // A dense model: its layers' matrices stream from storage, as many staying as fit.
        LayerStream::Options lo;
        lo.prefetch = options.expert_prefetch;
        lo.direct_io = options.layer_direct_io;
        lo.lock = options.map.lock;
        layers = std::make_unique<LayerStream>(path, model, bytes.data(), lo);
        stored.assign(layers->ranges().begin(), layers->ranges().end());
    }
    // The dense part: every byte but the experts', the streamed layers' and a per-layer
    // embedding table on storage (of which only the reader's cached rows take memory).
    const auto ple = ple_stored_range(m, options);
    stored.insert(stored.end(), ple.begin(), ple.end());
    std::sort(stored.begin(), stored.end());
    uint64_t from = 0;
    for (const auto& [a, b] : stored) {
        if (a > from) dense.push_back({from, a});
        from = std::max(from, b);
    }
    if (from < bytes.size()) dense.push_back({from, bytes.size()});
    uint64_t resident = ple.empty() ? 0 : ple_cache_bytes(model);
    for (const auto& [a, b] : dense) resident += b - a;
    // Refused here, before the weights are read, when even the minimum does not fit.
    ExpertCache* cache = experts.get();
    LayerStream* stream = layers.get();
    m.budget = std::make_unique<MemoryBudget>(path, options.mem_budget, resident, model.hp.n_vocab,
                                              std::move(experts), model.hp.n_expert_used,
                                              std::move(layers));
    m.file.make_resident(dense, options.map.lock);
    if (!m.file.lock_error().empty()) m.warning = m.file.lock_error();
    if (options.repack && options.repack_streamed && has_faster_layouts(m.model)) {
        ThreadPool pool(default_thread_count());
        const std::span<uint8_t> writable(const_cast<uint8_t*>(bytes.data()), bytes.size());
        std::function<bool(const uint8_t*)> streamed;
        if (stream) streamed = [stream](const uint8_t* data) { return stream->serves(data); };
        m.repacked_bytes =
            repack_weights(m.model, bytes, writable, pool, cache == nullptr, streamed);
        m.desc.insert(m.desc.size() - 1,
                      fmt::format("; {:.2f} MiB repacked for {}",
                                  double(m.repacked_bytes) / (1 << 20), kernel_isa()));
    }
    m.file.seal();
    m.model.expert_source = cache;
    m.model.layer_source = stream;
    m.desc.insert(m.desc.size() - 1,
                  fmt::format("; budget {:.0f} MiB, {:.2f} MiB resident{}",
                              double(options.mem_budget) / (1 << 20), double(resident) / (1 << 20),
                              cache    ? ", experts from storage"
                              : stream ? ", layers from storage"
                                       : ""));
}

void add_warning(LoadedModel& m, const std::string& w) {
    if (!w.empty()) m.warning += (m.warning.empty() ? "" : "; ") + w;
}

// -ngl: before repacking, which leaves the placed matrices in the file's layout.
std::vector<std::pair<uint64_t, uint64_t>> apply_gpu(LoadedModel& m, const std::string& path,
                                                     const GpuPlacementOptions& options) {
    GpuPlacement p = place_on_gpu(m.model, path, options);
    m.offload = std::move(p.offload);
    m.model.offload = m.offload.get();
    m.gpu_report = std::move(p.report);
    add_warning(m, p.warning);
    if (!p.summary.empty()) m.desc.insert(m.desc.size() - 1, p.summary);
    // The copied matrices' file offsets: their host pages go once nothing rewrites the mapping.
    std::vector<std::pair<uint64_t, uint64_t>> copied;
    const uint8_t* base = m.file.bytes().data();
    for (const auto& [data, bytes] : p.copied) {
        const uint64_t at = uint64_t(data - base);
        copied.push_back({at, at + bytes});
    }
    return copied;
}

// Weights the GPU holds a copy of exist once: their host pages are given back (the file's
// pages leave the page cache too), and the report says how much.
void drop_copied_weights(LoadedModel& m, std::span<const std::pair<uint64_t, uint64_t>> copied) {
    if (copied.empty()) return;
    m.gpu_host_bytes_dropped = m.file.drop(copied);
    m.gpu_report += fmt::format("gpu: {:.1f} MiB of host pages of the copied weights given back\n",
                                double(m.gpu_host_bytes_dropped) / (1 << 20));
}

// Gemma 4's per-layer embedding table: each token reads one row of it, so it is read from the
// file row by row and its pages (made the process's own by repacking, or mapped) are given back.
void keep_ple_on_storage(LoadedModel& m, const LoadOptions& options) {
    const WeightMatrix& t = m.model.ple_embd;
    const auto range = ple_stored_range(m, options);
    if (range.empty() || is_packed(t.traits)) return;
    m.ple_source = std::make_unique<PleReader>(m.file.path(), range[0].first, t.row_bytes, t.n_cols,
                                               *t.traits);
    m.model.ple_source = m.ple_source.get();
    m.ple_bytes_dropped = m.file.drop(range);
}

}  // namespace

std::unique_ptr<LoadedModel> LoadedModel::load(const std::string& path,
                                               const LoadOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    auto m = std::make_unique<LoadedModel>();
    if (options.mem_budget > 0 && !options.vocab_only) {
        if (options.gpu.n_gpu_layers > 0) {
            if (options.gpu.required) {
                fail(ErrorKind::unsupported,
                     "{}: -ngl with --mem-budget is not supported yet (--gpu-required)", path);
            }
            add_warning(*m, "-ngl is not used under --mem-budget yet: everything runs on the CPU");
        }
        load_budgeted(*m, path, options);
        keep_ple_on_storage(*m, options);
        m->load_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        return m;
    }
    m->file = MappedFile::open(path, options.map);
    parse_and_bind(*m, m->file.bytes(), path, options.vocab_only);
    if (!options.vocab_only) {
        const bool ple_stored = !ple_stored_range(*m, options).empty();
        check_block_scales(m->gguf, path, ple_stored ? m->model.ple_embd.data : nullptr);
    }
    std::vector<std::pair<uint64_t, uint64_t>> copied;
    if (!options.vocab_only) copied = apply_gpu(*m, path, options.gpu);
    if (!options.vocab_only && options.repack && has_faster_layouts(m->model) &&
        fits_as_own_memory(*m)) {
        ThreadPool pool(default_thread_count());
        m->repacked_bytes = repack_weights(
            m->model, m->file.bytes(), m->file.make_writable(ple_stored_range(*m, options)), pool);
        m->file.seal();
        m->desc.insert(m->desc.size() - 1,
                       fmt::format("; {:.2f} MiB repacked for {}",
                                   double(m->repacked_bytes) / (1 << 20), kernel_isa()));
    }
    drop_copied_weights(*m, copied);
    if (!options.vocab_only) keep_ple_on_storage(*m, options);
    if (!options.vocab_only) {
        m->load_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
    }
    return m;
}

std::unique_ptr<LoadedModel> LoadedModel::load_from_bytes(std::span<const uint8_t> bytes,
                                                          const std::string& name,
                                                          bool vocab_only) {
    auto m = std::make_unique<LoadedModel>();
    parse_and_bind(*m, bytes, name, vocab_only);
    if (!vocab_only) check_block_scales(m->gguf, name);
    return m;
}

ProcessMemory process_memory() {
    ProcessMemory pm;
    struct rusage ru {};
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        pm.peak_rss_bytes = uint64_t(ru.ru_maxrss) * 1024;
        pm.major_faults = uint64_t(ru.ru_majflt);
        pm.minor_faults = uint64_t(ru.ru_minflt);
    }
    std::ifstream statm("/proc/self/statm");
    uint64_t size_pages = 0, resident_pages = 0;
    if (statm >> size_pages >> resident_pages) {
        pm.rss_bytes = resident_pages * uint64_t(sysconf(_SC_PAGESIZE));
    }
    return pm;
}

}  // namespace mw
