// What the model-level tests feed a model: a model of ../shared loaded with default options,
// tokens of a real text, and small context parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plan/planner.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"

namespace mw::test {

// A model of ../shared (path relative to it) with default load options.
std::unique_ptr<LoadedModel> load_shared(const std::string& relative);

// Up to `n` tokens of War and Peace from character `start` (`chars` characters of it), with BOS
// where the text is the book's beginning unless `bos` says otherwise.
std::vector<int32_t> book_tokens(const LoadedModel& m, size_t start, size_t n, size_t chars = 800,
                                 int bos = -1);

// A 512-token context on 2 threads for `n_seq` sequences.
ContextParams small_context(uint32_t n_seq = 1);

// The GGUF file at `path` as the planner sees it: the facts of its header (`quant`: the file's
// label) and, when it is runnable, the plan of one context of n_ctx tokens on 2 threads.
struct PlannedFile {
    std::vector<uint8_t> bytes;  // the file: facts.model points into it
    ModelFacts facts;
    MemoryPlan plan;
};
PlannedFile plan_file(const std::string& path, const std::string& quant, uint32_t n_ctx);

// Loads the GGUF at `path` through the C API, decodes five tokens of ids below 512 and expects the
// first `n_checked` logits of the last one finite (GoogleTest failures name the file).
void expect_finite_logits(const std::string& path, int n_checked);

}  // namespace mw::test
