// A model loaded from a file: the mapping (or buffer) of its bytes, its parsed GGUF header, the
// bound weights and the vocabulary. Everything a context needs, immutable after loading and
// shareable between contexts.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "format/gguf.h"
#include "model/model.h"
#include "runtime/gpu_placement.h"
#include "runtime/memory_budget.h"
#include "sys/mapped_file.h"
#include "vocab/vocab.h"

namespace mw {

struct LoadOptions {
    MapOptions map;
    bool vocab_only = false;  // the tokenizer only: no weights bound
    // Rewrite the weights the kernels have a faster layout for in place (tensor/repack.h), as
    // llama.cpp's repacking does; off (--no-repack) keeps every page shared with the page cache.
    bool repack = true;
    // Bytes the process may use (0: no budget). A MoE model's experts are then served from an
    // expert cache (runtime/expert_cache.h) and the rest of the file read into memory.
    uint64_t mem_budget = 0;
    bool expert_prefetch = true;  // the expert cache's I/O thread reads ahead
    // Expert reads with O_DIRECT where the file system allows (MEMWALL_EXPERT_IO=pread for
    // pread + DONTNEED: 2.2-3.2x slower on moe-750m at 50 %, 13-19 vs 42 tok/s).
    bool direct_io = true;
    // A dense model's layer reads with O_DIRECT where the file system allows (MEMWALL_LAYER_IO=
    // pread: through the page cache, dropped after): twice as fast here for whole layers.
    bool layer_direct_io = true;
    // A model whose experts or layers stream from storage keeps the file's layout throughout
    // (its logits are the --no-repack path's), unless this asks for every fill to be repacked
    // (MEMWALL_STREAM_REPACK=on): repacking costs more than the read (at 50 %: mixtral-small-dense
    // 1.5 tok/s repacked on fill, 13 in the file's layout; moe-750m 6.4-7.4 against 17-18).
    bool repack_streamed = false;
    GpuPlacementOptions gpu;  // -ngl, --main-gpu, --gpu-required
    // Gemma 4's per-layer embedding table stays on storage, each token reading its row
    // (runtime/ple_reader.h), unless this keeps it resident (also MEMWALL_PLE=resident).
    bool ple_resident = false;
};

struct LoadedModel {
    MappedFile file;
    gguf::GgufFile gguf;
    Model model;
    std::optional<Vocab> vocab;  // always set once loaded
    double load_ms = 0.0;
    std::string warning;  // non-fatal problems (mlock refused)
    std::string desc;
    bool vocab_only = false;               // no weights bound: tokenizer use only
    uint64_t repacked_bytes = 0;           // weight bytes rewritten into the kernels' layouts
    std::unique_ptr<MemoryBudget> budget;  // set when loaded with a memory budget
    // After `file`, so that it goes first: the device may use the mapping's pages in place.
    std::unique_ptr<gpu::Offload> offload;
    std::string gpu_report;               // what went to the GPU and what stayed ("" without -ngl)
    uint64_t gpu_host_bytes_dropped = 0;  // host pages of weights copied to the GPU, given back
    // Gemma 4's per-layer embedding table on storage (model.ple_source), and the bytes of its
    // pages given back after loading.
    std::unique_ptr<PleSource> ple_source;
    uint64_t ple_bytes_dropped = 0;

    static std::unique_ptr<LoadedModel> load(const std::string& path, const LoadOptions& options);
    // The same from bytes the caller keeps alive as long as the model (`file` stays empty);
    // `name` stands for the path in messages. For fuzzing and tests.
    static std::unique_ptr<LoadedModel> load_from_bytes(std::span<const uint8_t> bytes,
                                                        const std::string& name,
                                                        bool vocab_only = false);
};

// Process-wide memory figures from the OS.
struct ProcessMemory {
    uint64_t rss_bytes = 0;
    uint64_t peak_rss_bytes = 0;
    uint64_t major_faults = 0;
    uint64_t minor_faults = 0;
};
ProcessMemory process_memory();

}  // namespace mw
