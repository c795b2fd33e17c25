#include "plan/speed_label.h"

#include <fmt/format.h>

#include <cctype>

namespace mw {

std::string kv_type_label(GgmlType type) {
    const auto layout = ggml_layout(static_cast<uint32_t>(type));
    std::string s = layout ? std::string(layout->name) : "?";
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string speed_label(const SpeedConditions& c) {
    std::string s;
    auto add = [&s](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
    if (c.n_prompt > 0) add(fmt::format("pp{}", c.n_prompt));
    if (c.n_gen > 0) add(fmt::format("tg{}", c.n_gen));
    if (c.n_gen < 0) add("tg");
    add(c.depth_max > c.depth ? fmt::format("d{}-{}", c.depth, c.depth_max)
                              : fmt::format("d{}", c.depth));
    add(fmt::format("t{}", c.threads));
    add(c.type_k == c.type_v ? "kv " + kv_type_label(c.type_k)
                             : "kv " + kv_type_label(c.type_k) + "/" + kv_type_label(c.type_v));
    if (!c.sampling) {
        add("no sampler");
    } else if (c.sampling->temperature <= 0) {
        add("greedy");
    } else {
        const SamplerParams& p = *c.sampling;
        add(fmt::format("temp {:g}", p.temperature));
        if (p.top_k > 0) add(fmt::format("top-k {}", p.top_k));
        if (p.top_p < 1) add(fmt::format("top-p {:g}", p.top_p));
        if (p.min_p > 0) add(fmt::format("min-p {:g}", p.min_p));
    }
    if (c.sampling && c.sampling->repeat_penalty != 1.0f) {
        add(fmt::format("repeat {:g}/{}", c.sampling->repeat_penalty, c.sampling->repeat_last_n));
    }
    return s;
}

}  // namespace mw
