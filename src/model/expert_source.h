// Where the forward pass finds a layer's expert weights when they are not all in memory: a
// model loaded under a memory budget serves them from a cache filled from the file (runtime/
// expert_cache.h). The forward pass asks for one expert at a time and says which experts it
// expects to need next; what it computes does not depend on where the bytes come from.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/ops.h"

namespace mw {

// One expert's three FFN matrices, in the layout the installed kernels read.
struct ExpertSlices {
    WeightMatrix gate, up, down;
};

class ExpertSource {
  public:
    virtual ~ExpertSource() = default;
    // Expert e of layer il, valid until release(il, e); waits for its read if it is not in
    // memory. Throws mw::Error (ErrorKind::io) when the file cannot be read.
    virtual ExpertSlices acquire(uint32_t il, int32_t e) = 0;
    virtual void release(uint32_t il, int32_t e) = 0;
    // A hint: these experts of layer il will be asked for soon (`predicted`: guessed by applying
    // layer il's router ahead of time, rather than known). Never blocks on a read, never fails.
    virtual void prefetch(uint32_t il, std::span<const int32_t> experts, bool predicted) = 0;
    // Whether predicted experts are worth computing (an I/O thread is there to read them).
    virtual bool wants_predictions() const = 0;
};

}  // namespace mw
