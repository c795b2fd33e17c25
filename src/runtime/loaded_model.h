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
#include "runtime/mapped_file.h"
#include "vocab/vocab.h"

namespace mw {

struct LoadedModel {
    MappedFile file;
    gguf::GgufFile gguf;
    Model model;
    std::optional<Vocab> vocab;  // always set once loaded
    double load_ms = 0.0;
    std::string warning;  // non-fatal problems (mlock refused)
    std::string desc;
    bool vocab_only = false;  // no weights bound: tokenizer use only

    static std::unique_ptr<LoadedModel> load(const std::string& path, const MapOptions& options,
                                             bool vocab_only = false);
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
