// Where the forward pass finds a layer's weights when they are not all in memory: a dense model
// loaded under a memory budget smaller than its file streams its layers from storage (runtime/
// layer_stream.h). The forward pass holds one layer at a time, in order; what it computes does not
// depend on where the bytes come from.
#pragma once

#include <cstdint>

namespace mw {

struct Layer;

class LayerSource {
  public:
    virtual ~LayerSource() = default;
    // Layer il with its matrices in memory, valid until release(il); waits for their read.
    // Throws mw::Error (ErrorKind::io) when the file cannot be read.
    virtual const Layer& acquire(uint32_t il) = 0;
    virtual void release(uint32_t il) = 0;
};

// Holds layer il for one step of the forward pass (the model's own layer when nothing streams).
class LayerHold {
  public:
    LayerHold(LayerSource* source, const Layer& own, uint32_t il)
        : source_(source), il_(il), layer_(source ? &source->acquire(il) : &own) {}
    ~LayerHold() {
        if (source_) source_->release(il_);
    }
    LayerHold(const LayerHold&) = delete;
    LayerHold& operator=(const LayerHold&) = delete;
    const Layer& layer() const { return *layer_; }

  private:
    LayerSource* source_;
    uint32_t il_;
    const Layer* layer_;
};

}  // namespace mw
