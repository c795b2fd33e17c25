// The conditions behind a tok/s figure, stated compactly beside it ("pp512 d0 t2 kv f16 no
// sampler", "tg64 d12 t2 kv q8_0 temp 0.8 top-k 40 top-p 0.95 min-p 0.05"): a speed means little
// without the prompt length, the context depth, the threads, the KV cache type and the sampling.
#pragma once

#include <optional>
#include <string>

#include "format/ggml_types.h"
#include "model/sampler.h"

namespace mw {

struct SpeedConditions {
    int n_prompt = 0;   // prompt tokens processed in batches ("pp"), 0 if none
    int n_gen = 0;      // tokens generated one by one ("tg"); < 0: an open-ended run
    int depth = 0;      // tokens in the KV cache when the measurement began
    int depth_max = 0;  // > depth: the cache went up to this (a run, context shifts)
    int threads = 0;
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    std::optional<SamplerParams> sampling;  // nullopt: token ids fed, no sampler
};

std::string speed_label(const SpeedConditions& c);
// "f16", "q8_0": a KV cache type as -ctk/-ctv name it.
std::string kv_type_label(GgmlType type);

}  // namespace mw
