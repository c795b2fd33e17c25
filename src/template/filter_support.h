// Shared by the filter files: argument helpers and Jinja2's attribute getter.
#pragma once

#include <bit>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "template/evaluator.h"
#include "template/text.h"
#include "template/value.h"

namespace mw::tmpl::filters {

using Bound = std::vector<std::optional<Value>>;

inline bool opt_bool(const std::optional<Value>& v, bool otherwise) {
    return v ? truthy(*v) : otherwise;
}

inline int64_t int_of(const Value& v, const char* what) {
    if (v.is_undefined()) v.fail_undefined();
    if (v.is_integral()) return v.as_int();
    if (v.is_float() && std::isfinite(v.as_double()) && std::fabs(v.as_double()) < 9e18)
        return int64_t(v.as_double());
    throw_error(ErrorKind::type, "{}: an integer is required, not {}", what, type_name(v));
}

// jinja2.filters._prepare_attribute_parts + make_attrgetter: "a.b.0" looked up item by item.
struct AttrGetter {
    std::vector<Value> parts;
    bool lower = false;
    std::optional<Value> fallback;

    AttrGetter(const std::optional<Value>& attribute, bool ignore_case,
               std::optional<Value> default_value = std::nullopt)
        : lower(ignore_case), fallback(std::move(default_value)) {
        if (!attribute || attribute->is_none()) return;
        if (!attribute->is_string()) {
            parts.push_back(*attribute);
            return;
        }
        for (const std::string& p : text::split(attribute->str(), std::string("."), -1)) {
            const bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) {
                return c >= '0' && c <= '9';
            });
            parts.push_back(digits && p.size() < 18 ? Value::integer(std::stoll(p))
                                                    : Value::string(p));
        }
    }

    Value operator()(Evaluator& ev, Value item) const {
        for (const Value& part : parts) {
            item = ev.get_item(item, part);
            if (fallback && !fallback->is_none() && item.is_undefined()) item = *fallback;
        }
        if (lower && item.is_string()) item = Value::string(text::lower(item.str()));
        return item;
    }
};

// A string result with the Markup-ness of the filter's input (soft_str keeps Markup).
inline Value like(const Value& input, std::string s) {
    return input.is_markup() ? Value::markup(std::move(s)) : Value::string(std::move(s));
}

// A sort of n items counts its comparisons (n x log2 n) against the iteration limit: a list that
// is sorted again and again costs no loop iterations otherwise (fuzz_template: an 8 KiB template
// of chained sorts took 0.45 s in the release build, 17 s under the sanitizers).
inline void tick_sort(Evaluator& ev, size_t n) {
    ev.tick(uint64_t(n) * (1 + uint64_t(std::bit_width(n))));
}

// Sort keys (make_multi_attrgetter): always a list, one value per comma-separated attribute,
// so that undefined keys compare equal (list comparison checks == first) instead of raising.
inline Value multi_key(Evaluator& ev, const std::optional<Value>& attribute, bool ignore_case,
                       const Value& item) {
    List keys;
    if (attribute && attribute->is_string()) {
        for (const std::string& a : text::split(attribute->str(), std::string(","), -1))
            keys.push_back(AttrGetter(Value::string(a), ignore_case)(ev, item));
    } else {
        keys.push_back(AttrGetter(attribute, ignore_case)(ev, item));
    }
    return Value::list(std::move(keys));
}

// Filters over sequences (filters_seq.cpp).
Value f_batch(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_dictsort(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_first(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_groupby(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_items(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_join(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_last(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_list(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_map(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_max(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_min(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_random(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_select(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_reject(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_selectattr(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_rejectattr(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_reverse(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_slice(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_sort(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_sum(Evaluator& ev, const Value& v, const CallArgs& args);
Value f_unique(Evaluator& ev, const Value& v, const CallArgs& args);

}  // namespace mw::tmpl::filters
