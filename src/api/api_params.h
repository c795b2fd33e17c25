// The C API's parameter structs across versions (docs/c-api.md): each begins with struct_size,
// which the app's own mw_*_default_params() (an inline function of memwall.h) sets to sizeof the
// struct it was compiled with. The library fills and reads only that many bytes: a struct of an
// older known size gets this library's defaults for the fields appended since, and an unknown
// size (a newer header than the library, or a struct not filled by mw_*_default_params) is
// refused with MW_ERR_INVALID_ARGUMENT naming the struct and the size.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>

#include "api/api_error.h"
#include "memwall.h"

namespace mw {

// The layouts a struct has had since API 8 (the first with struct_size), oldest first, the last
// this header's: its size, and the bytes of it that are fields (an older layout's tail padding
// may be where a later field now is: it is not read). A field appended to a struct adds a layout.
struct ParamsLayout {
    size_t size;
    size_t bytes;
};
constexpr size_t round_up(size_t n, size_t align) {
    return (n + align - 1) / align * align;
}
template <typename P>
struct ParamsLayouts {
    static constexpr ParamsLayout all[] = {{sizeof(P), sizeof(P)}};
};
// API 11 appended ple_resident (after a padding field: the size grows).
template <>
struct ParamsLayouts<mw_model_params> {
    static constexpr ParamsLayout all[] = {
        {round_up(offsetof(mw_model_params, api11_padding), alignof(mw_model_params)),
         offsetof(mw_model_params, api11_padding)},
        {sizeof(mw_model_params), sizeof(mw_model_params)}};
};
// API 9 appended log_format, log and log_user; API 8's struct ended before them. API 11
// appended speculative and draft_model.
template <>
struct ParamsLayouts<mw_server_params> {
    static constexpr ParamsLayout all[] = {
        {round_up(offsetof(mw_server_params, log_format), alignof(mw_server_params)),
         offsetof(mw_server_params, log_format)},
        {round_up(offsetof(mw_server_params, speculative), alignof(mw_server_params)),
         offsetof(mw_server_params, speculative)},
        // API 14 appended template_kwargs and reasoning_format.
        {round_up(offsetof(mw_server_params, template_kwargs), alignof(mw_server_params)),
         offsetof(mw_server_params, template_kwargs)},
        {sizeof(mw_server_params), sizeof(mw_server_params)}};
};

// API 10 appended speculator (mw_generate_params) and speculative, draft_model (mw_chat_params).
template <>
struct ParamsLayouts<mw_generate_params> {
    static constexpr ParamsLayout all[] = {
        {round_up(offsetof(mw_generate_params, speculator), alignof(mw_generate_params)),
         offsetof(mw_generate_params, speculator)},
        {sizeof(mw_generate_params), sizeof(mw_generate_params)}};
};
template <>
struct ParamsLayouts<mw_chat_params> {
    static constexpr ParamsLayout all[] = {
        {round_up(offsetof(mw_chat_params, speculative), alignof(mw_chat_params)),
         offsetof(mw_chat_params, speculative)},
        // API 14 appended template_kwargs, on_reasoning and reasoning_user_data.
        {round_up(offsetof(mw_chat_params, template_kwargs), alignof(mw_chat_params)),
         offsetof(mw_chat_params, template_kwargs)},
        {sizeof(mw_chat_params), sizeof(mw_chat_params)}};
};

// mw_*_params_init: the caller's `size` bytes of `defaults`, struct_size set to `size` (bytes
// past this library's struct, from a newer header, are zeroed: reading the struct refuses it).
template <typename P>
void init_params(P* out, size_t size, const P& defaults) {
    static_assert(std::is_trivially_copyable_v<P> && offsetof(P, struct_size) == 0);
    if (!out || size < sizeof(size_t)) return;
    std::memcpy(static_cast<void*>(out), &defaults, std::min(size, sizeof(P)));
    if (size > sizeof(P))
        std::memset(reinterpret_cast<char*>(out) + sizeof(P), 0, size - sizeof(P));
    out->struct_size = size;
}

// The caller's struct (NULL: the defaults) as this library's, or false with mw_last_error()
// naming the struct and its size.
template <typename P>
bool read_params(const P* given, const P& defaults, P* out, const char* name) {
    *out = defaults;
    if (!given) return true;
    const size_t size = given->struct_size;
    const auto& known = ParamsLayouts<P>::all;
    const ParamsLayout* layout = nullptr;
    std::string sizes;
    for (const ParamsLayout& l : known) {
        if (l.size == size) layout = &l;
        sizes += fmt::format("{}{}", sizes.empty() ? "" : ", ", l.size);
    }
    if (!layout) {
        std::string defaults_fn(name);  // mw_server_params -> mw_server_default_params
        defaults_fn.replace(defaults_fn.size() - 7, 7, "_default_params");
        set_api_last_error(fmt::format(
            "{}.struct_size is {}: this library (API {}) knows {} {}; fill the struct with {}() "
            "first{}",
            name, size, MEMWALL_API_VERSION, std::size(known) > 1 ? "the sizes" : "the size", sizes,
            defaults_fn,
            size > sizeof(P) ? " (the app was built against a newer memwall.h than this library)"
                             : ""));
        return false;
    }
    std::memcpy(static_cast<void*>(out), given, layout->bytes);
    out->struct_size = sizeof(P);
    return true;
}

}  // namespace mw
