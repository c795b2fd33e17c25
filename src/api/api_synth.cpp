// C API: synthetic models (synth/).
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "memwall.h"
#include "synth/synth.h"

extern "C" {

mw_status mw_synth(const char* preset, const char* type, uint64_t seed, const char* path,
                   mw_progress_fn progress, void* user_data) {
    return mw_synth_skewed(preset, type, seed, 0.0f, path, progress, user_data);
}

mw_status mw_synth_skewed(const char* preset, const char* type, uint64_t seed, float router_skew,
                          const char* path, mw_progress_fn progress, void* user_data) {
    return mw::guarded([&] {
        if (!(router_skew >= 0.0f && router_skew <= 16.0f)) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "synth: --router-skew {}: expected a value from 0 (uniform) to 16",
                     router_skew);
        }
        if (!preset || !type || !path) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "mw_synth: preset, type and path are required");
        }
        const auto recipe = mw::recipe_from_name(type);
        if (!recipe) {
            std::string names;
            for (mw::QuantRecipe r : mw::all_recipes())
                names += std::string(names.empty() ? "" : ", ") + mw::recipe_name(r);
            mw::fail(mw::ErrorKind::invalid_argument, "synth: unknown type \"{}\" (types: {})",
                     type, names);
        }
        mw::SynthOptions options;
        options.preset = preset;
        options.recipe = *recipe;
        options.seed = seed;
        options.router_skew = router_skew;
        mw::write_synth_model(options, path, [&](const mw::SynthProgress& p) {
            if (progress) progress(user_data, p.bytes_done, p.bytes_total);
        });
    });
}

char* mw_synth_presets_json(void) {
    std::string text;
    const mw_status st = mw::guarded([&] {
        nlohmann::json list = nlohmann::json::array();
        for (const mw::SynthPreset& p : mw::synth_presets()) {
            list.push_back({{"id", p.id},
                            {"description", p.description},
                            {"arch", p.spec.arch},
                            {"params", mw::count_params(mw::spec_tensors(p.spec))}});
        }
        text = list.dump();
    });
    if (st != MW_OK) return nullptr;
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    if (!out) {
        mw::set_api_last_error("out of memory");
        return nullptr;
    }
    std::memcpy(out, text.c_str(), text.size() + 1);
    return out;
}

}  // extern "C"
