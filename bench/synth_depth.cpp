// A synth preset at fewer layers: every tensor of a layer at the real model's shape, the file
// shorter. For budget runs of a model larger than the disk at hand: the per-token reads, the
// expert-cache behaviour per layer and a budget's fraction of the file scale with the depth.
//   synth_depth PRESET TYPE N_LAYER OUT.gguf [ROUTER_SKEW]
// (the memwall CLI's `synth` writes presets at their full depth).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "plan/quant_mix.h"
#include "synth/synth.h"

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        std::fprintf(stderr, "usage: synth_depth PRESET TYPE N_LAYER OUT.gguf [ROUTER_SKEW]\n");
        return 2;
    }
    try {
        mw::SynthOptions options;
        mw::ModelSpec spec = mw::synth_preset(argv[1]);
        const auto recipe = mw::recipe_from_name(argv[2]);
        const long n_layer = std::strtol(argv[3], nullptr, 10);
        if (!recipe) {
            std::fprintf(stderr, "synth_depth: unknown type %s\n", argv[2]);
            return 2;
        }
        if (n_layer < 1 || n_layer > long(spec.n_layer)) {
            std::fprintf(stderr, "synth_depth: N_LAYER %s: expected 1 to %u\n", argv[3],
                         spec.n_layer);
            return 2;
        }
        if (!spec.recurrent_layers.empty()) spec.recurrent_layers.resize(size_t(n_layer));
        spec.n_layer = uint32_t(n_layer);
        options.spec = spec;
        options.recipe = *recipe;
        if (argc == 6) options.router_skew = std::strtof(argv[5], nullptr);
        mw::write_synth_model(options, argv[4]);
        std::printf("synth_depth: wrote %s (%s, %ld of its layers, %s)\n", argv[4], argv[1],
                    n_layer, argv[2]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "synth_depth: %s\n", e.what());
        return 1;
    }
    return 0;
}
