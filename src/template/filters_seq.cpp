// Jinja2's filters over sequences and mappings: first/last, join, map, select/reject, sort,
// unique, groupby, batch, slice, sum, min/max, ... Those Jinja2 writes as generators (map,
// select, unique, batch, slice, items, reverse of a list) return one-pass generators here too:
// they are always true, have no len() and are consumed by reading them.
#include <random>
#include <unordered_set>

#include "template/filter_support.h"
#include "template/library.h"
#include "template/objects.h"
#include "template/ops.h"

namespace mw::tmpl::filters {

namespace {

List reversed_items(Evaluator& ev, const Value& v);
Value min_max(Evaluator& ev, const Value& v, const CallArgs& args, bool is_max);
Value select_or_reject(Evaluator& ev, const Value& v, const CallArgs& args, bool select,
                       bool lookup_attr);

}  // namespace

Value f_batch(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("batch", args, {"linecount", "fill_with"}, 1);
    const int64_t n = int_of(*a[0], "batch");
    List out, tmp;
    for (Value& item : to_list(ev, v)) {
        if (int64_t(tmp.size()) == n) {
            out.push_back(Value::list(std::move(tmp)));
            tmp.clear();
        }
        tmp.push_back(std::move(item));
    }
    if (!tmp.empty()) {
        if (a[1] && !a[1]->is_none())
            while (int64_t(tmp.size()) < n) tmp.push_back(*a[1]);
        out.push_back(Value::list(std::move(tmp)));
    }
    return make_list_iterator(std::move(out), "generator");
}

Value f_dictsort(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("dictsort", args, {"case_sensitive", "by", "reverse"}, 0);
    if (v.is_undefined()) v.fail_undefined();
    if (!v.is_dict())
        throw_error(ErrorKind::type, "'{}' object has no attribute 'items'", type_name(v));
    const std::string by = a[1] ? to_str(*a[1]) : "key";
    if (by != "key" && by != "value")
        throw_error(ErrorKind::runtime, "You can only sort by either \"key\" or \"value\"");
    const size_t pos = by == "key" ? 0 : 1;
    const bool ignore_case = !opt_bool(a[0], false);
    List items;
    for (const auto& [k, val] : v.dict().entries) items.push_back(Value::tuple({k, val}));
    const auto key = [&](const Value& item) {
        const Value& x = item.items()[pos];
        return ignore_case && x.is_string() ? Value::string(text::lower(x.str())) : x;
    };
    const bool reverse = opt_bool(a[2], false);
    tick_sort(ev, items.size());
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        return reverse ? less(key(y), key(x)) : less(key(x), key(y));
    });
    return Value::list(std::move(items));
}

Value f_first(Evaluator& ev, const Value& v, const CallArgs& args) {
    bind_args("first", args, {}, 0);
    Iter it(ev, v);
    Value item;
    if (it.next(item)) return item;
    return Value::undefined("No first item, sequence was empty.");
}

Value f_groupby(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("groupby", args, {"attribute", "default", "case_sensitive"}, 1);
    const bool ignore_case = !opt_bool(a[2], false);
    const AttrGetter key(a[0], ignore_case, a[1]);
    const AttrGetter plain(a[0], false, a[1]);
    List items = to_list(ev, v);
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& item : items) keyed.emplace_back(key(ev, item), std::move(item));
    tick_sort(ev, keyed.size());
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& x, const auto& y) { return less(x.first, y.first); });
    List out;
    for (size_t i = 0; i < keyed.size();) {
        size_t j = i;
        List group;
        while (j < keyed.size() && equal(keyed[j].first, keyed[i].first))
            group.push_back(keyed[j++].second);
        const Value grouper = ignore_case ? plain(ev, group[0]) : keyed[i].first;
        out.push_back(Value::tuple({grouper, Value::list(std::move(group))}));
        i = j;
    }
    return Value::list(std::move(out));
}

Value f_items(Evaluator& ev, const Value& v, const CallArgs& args) {
    bind_args("items", args, {}, 0);
    if (v.is_undefined()) return make_list_iterator({}, "generator");
    if (!v.is_dict()) throw_error(ErrorKind::type, "Can only get item pairs from a mapping.");
    List items;
    for (const auto& [k, val] : v.dict().entries) items.push_back(Value::tuple({k, val}));
    (void)ev;
    return make_list_iterator(std::move(items), "generator");
}

Value f_join(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("join", args, {"d", "attribute"}, 0);
    const std::string sep = a[0] ? to_str(*a[0]) : "";
    const AttrGetter getter(a[1], false);
    std::string out;
    Iter it(ev, v);
    Value item;
    bool first = true;
    while (it.next(item)) {
        ev.tick();
        if (!first) out += sep;
        first = false;
        out += to_str(a[1] ? getter(ev, item) : item);
        ev.check_size(out.size());
    }
    ev.charge(out.size());
    return Value::string(std::move(out));
}

namespace {
List reversed_items(Evaluator& ev, const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return {};
        case Kind::list:
        case Kind::tuple:
        case Kind::dict:
        case Kind::string: {
            List items = to_list(ev, v);
            std::reverse(items.begin(), items.end());
            return items;
        }
        case Kind::object:
            if (v.object()->sequence()) {
                List items = to_list(ev, v);
                std::reverse(items.begin(), items.end());
                return items;
            }
            [[fallthrough]];
        default:
            throw_error(ErrorKind::type, "'{}' object is not reversible", type_name(v));
    }
}

}  // namespace

Value f_last(Evaluator& ev, const Value& v, const CallArgs& args) {
    bind_args("last", args, {}, 0);
    const List items = reversed_items(ev, v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items[0];
}

Value f_list(Evaluator& ev, const Value& v, const CallArgs& args) {
    bind_args("list", args, {}, 0);
    return Value::list(to_list(ev, v));
}

Value f_map(Evaluator& ev, const Value& v, const CallArgs& args) {
    if (!truthy(v)) return make_list_iterator({}, "generator");
    if (args.positional.empty()) {
        const Value* attribute = nullptr;
        std::optional<Value> fallback;
        for (const auto& [k, val] : args.keywords) {
            if (k == "attribute") {
                attribute = &val;
            } else if (k == "default") {
                fallback = val;
            } else {
                throw_error(ErrorKind::runtime, "Unexpected keyword argument '{}'", k);
            }
        }
        if (!attribute) throw_error(ErrorKind::runtime, "map requires a filter argument");
        const AttrGetter getter(*attribute, false, fallback);
        return make_generator(ev, v, [getter](Evaluator& e, Value& item) {
            item = getter(e, item);
            return true;
        });
    }
    const std::string name = to_str(args.positional[0]);
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keywords = args.keywords;
    if (!find_filter(name)) throw_error(ErrorKind::runtime, "No filter named '{}'.", name);
    return make_generator(ev, v, [name, rest](Evaluator& e, Value& item) {
        item = e.apply_filter(name, item, rest);
        return true;
    });
}

namespace {
Value min_max(Evaluator& ev, const Value& v, const CallArgs& args, bool is_max) {
    const Bound a = bind_args(is_max ? "max" : "min", args, {"case_sensitive", "attribute"}, 0);
    const AttrGetter key(a[1], !opt_bool(a[0], false));
    const List items = to_list(ev, v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    Value best_key = key(ev, items[0]);
    for (size_t i = 1; i < items.size(); ++i) {
        Value k = key(ev, items[i]);
        if (is_max ? less(best_key, k) : less(k, best_key)) {
            best = i;
            best_key = std::move(k);
        }
    }
    return items[best];
}

}  // namespace

Value f_max(Evaluator& ev, const Value& v, const CallArgs& args) {
    return min_max(ev, v, args, true);
}
Value f_min(Evaluator& ev, const Value& v, const CallArgs& args) {
    return min_max(ev, v, args, false);
}

Value f_random(Evaluator& ev, const Value& v, const CallArgs& args) {
    bind_args("random", args, {}, 0);
    const List items = to_list(ev, v);
    if (items.empty()) return Value::undefined("No random item, sequence was empty.");
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    return items[size_t(rng() % items.size())];
}

namespace {
// select / reject / selectattr / rejectattr
Value select_or_reject(Evaluator& ev, const Value& v, const CallArgs& args, bool select,
                       bool lookup_attr) {
    if (!truthy(v)) return make_list_iterator({}, "generator");
    size_t off = 0;
    std::optional<AttrGetter> getter;
    if (lookup_attr) {
        if (args.positional.empty())
            throw_error(ErrorKind::runtime, "Missing parameter for attribute name");
        getter.emplace(args.positional[0], false);
        off = 1;
    }
    std::optional<std::string> test;
    CallArgs rest;
    if (args.positional.size() > off) {
        test = to_str(args.positional[off]);
        rest.positional.assign(args.positional.begin() + long(off) + 1, args.positional.end());
        rest.keywords = args.keywords;
        if (!find_test(*test)) throw_error(ErrorKind::runtime, "No test named '{}'.", *test);
    }
    return make_generator(ev, v, [=](Evaluator& e, Value& item) {
        const Value x = getter ? (*getter)(e, item) : item;
        const bool passed = test ? e.apply_test(*test, x, rest) : truthy(x);
        return passed == select;
    });
}

}  // namespace

Value f_select(Evaluator& ev, const Value& v, const CallArgs& a) {
    return select_or_reject(ev, v, a, true, false);
}
Value f_reject(Evaluator& ev, const Value& v, const CallArgs& a) {
    return select_or_reject(ev, v, a, false, false);
}
Value f_selectattr(Evaluator& ev, const Value& v, const CallArgs& a) {
    return select_or_reject(ev, v, a, true, true);
}
Value f_rejectattr(Evaluator& ev, const Value& v, const CallArgs& a) {
    return select_or_reject(ev, v, a, false, true);
}

Value f_reverse(Evaluator& ev, const Value& v, const CallArgs& args) {
    bind_args("reverse", args, {}, 0);
    if (v.is_string()) {
        std::u32string u = text::decode(v.str());
        std::reverse(u.begin(), u.end());
        return Value::string(text::encode(u));
    }
    if (v.is_object() && v.object()->is_iterator()) {
        List items = to_list(ev, v);
        std::reverse(items.begin(), items.end());
        return Value::list(std::move(items));
    }
    const char* type = v.is_dict()    ? "dict_reversekeyiterator"
                       : v.is_tuple() ? "reversed"
                                      : "list_reverseiterator";
    return make_list_iterator(reversed_items(ev, v), type);
}

Value f_slice(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("slice", args, {"slices", "fill_with"}, 1);
    const int64_t slices = int_of(*a[0], "slice");
    if (slices == 0) throw_error(ErrorKind::zero_division, "integer division or modulo by zero");
    const List seq = to_list(ev, v);
    const int64_t len = int64_t(seq.size());
    const int64_t per = len / slices, extra = len % slices;
    List out;
    int64_t offset = 0;
    for (int64_t n = 0; n < slices && n < (1 << 20); ++n) {
        const int64_t start = offset + n * per;
        if (n < extra) ++offset;
        const int64_t end = offset + (n + 1) * per;
        List tmp;
        for (int64_t i = std::max<int64_t>(start, 0); i < std::min(end, len); ++i)
            tmp.push_back(seq[size_t(i)]);
        if (a[1] && !a[1]->is_none() && n >= extra) tmp.push_back(*a[1]);
        out.push_back(Value::list(std::move(tmp)));
        ev.tick();
    }
    return make_list_iterator(std::move(out), "generator");
}

Value f_sort(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("sort", args, {"reverse", "case_sensitive", "attribute"}, 0);
    const bool reverse = opt_bool(a[0], false), ignore_case = !opt_bool(a[1], false);
    List items = to_list(ev, v);
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& item : items)
        keyed.emplace_back(multi_key(ev, a[2], ignore_case, item), std::move(item));
    tick_sort(ev, keyed.size());
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return reverse ? less(y.first, x.first) : less(x.first, y.first);
    });
    List out;
    for (auto& [k, item] : keyed) out.push_back(std::move(item));
    return Value::list(std::move(out));
}

Value f_sum(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("sum", args, {"attribute", "start"}, 0);
    const AttrGetter getter(a[0], false);
    Value total = a[1] ? *a[1] : Value::integer(0);
    if (total.is_string())
        throw_error(ErrorKind::type, "sum() can't sum strings [use ''.join(seq) instead]");
    Iter it(ev, v);
    Value item;
    while (it.next(item)) {
        ev.tick();
        total = binary_op(ev, BinaryOp::add, total, a[0] ? getter(ev, item) : item);
    }
    return total;
}

Value f_unique(Evaluator& ev, const Value& v, const CallArgs& args) {
    const Bound a = bind_args("unique", args, {"case_sensitive", "attribute"}, 0);
    const AttrGetter getter(a[1], !opt_bool(a[0], false));
    auto seen = std::make_shared<std::unordered_set<std::string>>();
    return make_generator(ev, v, [getter, seen](Evaluator& e, Value& item) {
        const Value key = getter(e, item);
        check_hashable(key);
        return seen->insert(*hash_key(key)).second;
    });
}

}  // namespace mw::tmpl::filters
