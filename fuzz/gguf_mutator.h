// Structure-aware mutation of GGUF files for libFuzzer (LLVMFuzzerCustomMutator).
//
// Byte flips rarely get past the first length check of a GGUF file, so most mutations here
// understand the format: a tolerant scanner finds where every count, type tag, string length,
// dimension, tensor type and offset lies, and the mutator writes boundary values into those
// fields, or edits whole key-value pairs and tensor infos and rebuilds a consistent file (padding,
// counts and tensor offsets recomputed) so that the checks deep in the parser are reached.
// Inputs that do not scan as GGUF fall back to libFuzzer's byte mutations.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mw::fuzz {

// Mutates data[0, size) in place; the result has at most max_size bytes. Returns its size.
// All random choices come from `seed`, so a mutation can be replayed.
size_t mutate_gguf(uint8_t* data, size_t size, size_t max_size, unsigned seed);

// Combines two inputs: key-value pairs and tensor infos of `other` spliced into `data` when both
// scan as GGUF, otherwise a byte-level splice. Writes at most max_size bytes to `out`.
size_t cross_over_gguf(const uint8_t* data, size_t size, const uint8_t* other, size_t other_size,
                       uint8_t* out, size_t max_size, unsigned seed);

}  // namespace mw::fuzz
