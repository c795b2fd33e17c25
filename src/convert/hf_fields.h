// Typed, range-checked reading of config.json fields, shared by the architecture readers; every
// error names the file and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "base/error.h"
#include "format/json_text.h"

namespace mw::convert {

// Typed, range-checked access to the fields of one JSON object; null counts as absent, as
// transformers writes optional fields.
class Fields {
  public:
    using json = nlohmann::json;

    Fields(const json& object, const std::string& file, std::string prefix = "")
        : j_(object), file_(file), prefix_(std::move(prefix)) {}

    const json* get(const char* key) const {
        const auto it = j_.find(key);
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }
    bool has(const char* key) const { return get(key) != nullptr; }
    // Written as null (where null means something other than the default).
    bool is_null(const char* key) const {
        const auto it = j_.find(key);
        return it != j_.end() && it->is_null();
    }
    const std::string& file() const { return file_; }

    std::optional<uint32_t> opt_count(const char* key, uint64_t lo, uint64_t hi) const {
        const json* v = get(key);
        if (!v) return std::nullopt;
        if (!v->is_number_integer()) {
            bad(key,
                fmt::format("is {} ({}), expected an integer", json_type_word(*v), json_brief(*v)));
        }
        const bool negative = !v->is_number_unsigned() && v->get<int64_t>() < 0;
        if (negative || v->get<uint64_t>() < lo || v->get<uint64_t>() > hi) {
            bad(key, fmt::format("= {} is out of range [{}, {}]", v->dump(), lo, hi));
        }
        return uint32_t(v->get<uint64_t>());
    }

    uint32_t count(const char* key, uint64_t lo, uint64_t hi) const {
        const auto v = opt_count(key, lo, hi);
        if (!v) missing(key);
        return *v;
    }

    uint32_t count_or(const char* key, uint32_t fallback, uint64_t lo, uint64_t hi) const {
        return opt_count(key, lo, hi).value_or(fallback);
    }

    double number(const char* key, double fallback, double lo, double hi) const {
        const json* v = get(key);
        if (!v) return fallback;
        if (!v->is_number()) {
            bad(key,
                fmt::format("is {} ({}), expected a number", json_type_word(*v), json_brief(*v)));
        }
        const double x = v->get<double>();
        if (!(x >= lo && x <= hi))
            bad(key, fmt::format("= {} is out of range [{}, {}]", x, lo, hi));
        return x;
    }

    bool flag(const char* key, bool fallback) const {
        const json* v = get(key);
        if (!v) return fallback;
        if (!v->is_boolean()) {
            bad(key, fmt::format("is {} ({}), expected true or false", json_type_word(*v),
                                 json_brief(*v)));
        }
        return v->get<bool>();
    }

    std::optional<std::string> text(const char* key) const {
        const json* v = get(key);
        if (!v) return std::nullopt;
        if (!v->is_string()) {
            bad(key,
                fmt::format("is {} ({}), expected a string", json_type_word(*v), json_brief(*v)));
        }
        return v->get<std::string>();
    }

    // A special token id: transformers writes a list for several EOS tokens; only a plain
    // non-negative integer names one token (as llama.cpp reads it).
    std::optional<uint32_t> token_id(const char* key) const {
        const json* v = get(key);
        if (!v || !v->is_number_integer() || v->get<int64_t>() < 0 ||
            v->get<int64_t>() > INT32_MAX) {
            return std::nullopt;
        }
        return uint32_t(v->get<int64_t>());
    }

    [[noreturn]] void bad(const char* key, const std::string& what) const {
        fail(ErrorKind::bad_file, "{}: \"{}{}\" {}", file_, prefix_, key, what);
    }
    [[noreturn]] void missing(const char* key) const {
        fail(ErrorKind::bad_file, "{}: required field \"{}{}\" is missing", file_, prefix_, key);
    }
    [[noreturn]] void unsupported(const char* key, const std::string& what) const {
        fail(ErrorKind::unsupported, "{}: \"{}{}\" {}", file_, prefix_, key, what);
    }

  private:
    const json& j_;
    const std::string& file_;
    std::string prefix_;
};

struct HfConfig;

// The fields of the architectures beyond llama and qwen (granite, cohere, gemma2, gemma3_text,
// phi3, deepseek_v2/v3, qwen3_5, lfm2, lfm2_moe, smollm3, gemma4, gpt_oss), read after the
// common ones (hf_config_arch.cpp).
void read_arch_fields(const Fields& f, HfConfig& c);

}  // namespace mw::convert
