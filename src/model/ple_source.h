// Where the forward pass finds a token's row of Gemma 4's per-layer embedding table when the table
// is not read through the model's mapping: kept on storage, each token reads its one row (a
// small cache keeps recent tokens' rows). The row's floats do not depend on where its bytes come
// from. Internal to model/ and runtime/.
#pragma once

#include <cstdint>

namespace mw {

class PleSource {
  public:
    virtual ~PleSource() = default;
    // Row `token` of the table decoded to floats (n_layer x n_embd_per_layer). Called from the
    // forward pass's threads at once. Throws mw::Error (ErrorKind::io) when the file cannot be
    // read.
    virtual void row(int64_t token, float* out) = 0;
    // Bytes read from storage so far, and rows served from the cache.
    virtual uint64_t bytes_read() const = 0;
    virtual uint64_t cache_hits() const = 0;
};

}  // namespace mw
