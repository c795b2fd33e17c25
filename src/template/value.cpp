#include "template/value.h"

#include <algorithm>
#include <cmath>

#include "template/evaluator.h"
#include "template/format.h"
#include "template/text.h"

namespace mw::tmpl {

// ---- errors --------------------------------------------------------------------------------

const char* error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::syntax:
            return "TemplateSyntaxError";
        case ErrorKind::undefined:
            return "UndefinedError";
        case ErrorKind::type:
            return "TypeError";
        case ErrorKind::value:
            return "ValueError";
        case ErrorKind::key:
            return "KeyError";
        case ErrorKind::index:
            return "IndexError";
        case ErrorKind::zero_division:
            return "ZeroDivisionError";
        case ErrorKind::overflow:
            return "OverflowError";
        case ErrorKind::security:
            return "SecurityError";
        case ErrorKind::raised:
            return "TemplateError";
        case ErrorKind::runtime:
            return "TemplateRuntimeError";
        case ErrorKind::limit:
            return "LimitError";
    }
    return "Error";
}

const char* TemplateError::what() const noexcept {
    what_.clear();
    if (!name_.empty()) what_ += "template '" + name_ + "'";
    if (line_ > 0) what_ += (what_.empty() ? "line " : ", line ") + std::to_string(line_);
    if (!construct_.empty()) what_ += ", in " + construct_;
    if (!what_.empty()) what_ += ": ";
    what_ += error_kind_name(kind_);
    what_ += ": ";
    what_ += message_;
    return what_.c_str();
}

// ---- values --------------------------------------------------------------------------------

namespace {

struct UndefinedInfo {
    std::string hint;
    ErrorKind kind;
};

// Containers nested deeper than this are refused (their destruction and comparison recurse).
constexpr uint32_t kMaxDepth = 512;

struct ListBox {
    List items;
    uint32_t depth = 0;
    ~ListBox() { bury(items); }
};

struct DictBox {
    Dict dict;
    uint32_t depth = 0;
    ~DictBox() {
        List values;
        values.reserve(dict.entries.size() * 2);
        for (auto& [k, v] : dict.entries) {
            values.push_back(std::move(k));
            values.push_back(std::move(v));
        }
        bury(values);
    }
};

uint32_t depth_of(const Value& v);

uint32_t checked_depth(uint32_t child_depth) {
    if (child_depth + 1 > kMaxDepth)
        throw_error(ErrorKind::limit, "lists and dicts nested deeper than {} levels", kMaxDepth);
    return child_depth + 1;
}

// While a value is being destroyed, the values it held wait here: destroying a long chain of
// containers and namespaces is a loop, not a recursion.
thread_local List* t_graveyard = nullptr;

}  // namespace

void bury(List& values) {
    if (t_graveyard) {
        for (Value& v : values)
            if (v.is_object() || v.is_sequence() || v.is_dict())
                t_graveyard->push_back(std::move(v));
        return;
    }
    List pending;
    t_graveyard = &pending;
    for (Value& v : values) pending.push_back(std::move(v));
    while (!pending.empty()) {
        Value last = std::move(pending.back());
        pending.pop_back();
    }  // `last` dies each round; what it held is appended to `pending`
    t_graveyard = nullptr;
}

Value Value::none() {
    Value v;
    v.kind_ = Kind::none;
    return v;
}

Value Value::boolean(bool b) {
    Value v;
    v.kind_ = Kind::boolean;
    v.b_ = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v;
    v.kind_ = Kind::integer;
    v.i_ = i;
    return v;
}

Value Value::number(double d) {
    Value v;
    v.kind_ = Kind::floating;
    v.f_ = d;
    return v;
}

Value Value::string(std::string s) {
    Value v;
    v.kind_ = Kind::string;
    v.p_ = std::make_shared<std::string>(std::move(s));
    return v;
}

Value Value::markup(std::string s) {
    Value v = string(std::move(s));
    v.markup_ = true;
    return v;
}

Value Value::list(List items) {
    uint32_t depth = 0;
    for (const Value& item : items) depth = std::max(depth, depth_of(item));
    auto box = std::make_shared<ListBox>();
    box->depth = checked_depth(depth);
    box->items = std::move(items);
    Value v;
    v.kind_ = Kind::list;
    v.p_ = std::move(box);
    return v;
}

Value Value::tuple(List items) {
    Value v = list(std::move(items));
    v.kind_ = Kind::tuple;
    return v;
}

Value Value::dict(Dict d) {
    uint32_t depth = 0;
    for (const auto& [k, val] : d.entries) depth = std::max({depth, depth_of(k), depth_of(val)});
    auto box = std::make_shared<DictBox>();
    box->depth = checked_depth(depth);
    box->dict = std::move(d);
    Value v;
    v.kind_ = Kind::dict;
    v.p_ = std::move(box);
    return v;
}

Value Value::object(std::shared_ptr<Object> o) {
    Value v;
    v.kind_ = Kind::object;
    v.p_ = std::move(o);
    return v;
}

Value Value::undefined(std::string hint, ErrorKind kind) {
    Value v;
    v.p_ = std::make_shared<UndefinedInfo>(UndefinedInfo{std::move(hint), kind});
    return v;
}

double Value::as_double() const {
    if (kind_ == Kind::floating) return f_;
    return double(as_int());
}

const std::string& Value::str() const {
    return *static_cast<const std::string*>(p_.get());
}
const List& Value::items() const {
    return static_cast<const ListBox*>(p_.get())->items;
}
const Dict& Value::dict() const {
    return static_cast<const DictBox*>(p_.get())->dict;
}

namespace {
uint32_t depth_of(const Value& v) {
    if (v.is_sequence()) return static_cast<const ListBox*>(v.p_for_depth())->depth;
    if (v.is_dict()) return static_cast<const DictBox*>(v.p_for_depth())->depth;
    return 0;
}
}  // namespace
Object* Value::object() const {
    return static_cast<Object*>(p_.get());
}

const std::string& Value::undefined_hint() const {
    static const std::string none = "undefined value";
    if (kind_ != Kind::undefined || !p_) return none;
    return static_cast<const UndefinedInfo*>(p_.get())->hint;
}

void Value::fail_undefined() const {
    const ErrorKind kind = (kind_ == Kind::undefined && p_)
                               ? static_cast<const UndefinedInfo*>(p_.get())->kind
                               : ErrorKind::undefined;
    throw TemplateError(kind, undefined_hint());
}

std::optional<std::string> hash_key(const Value& v) {
    // Built by appending (GCC 12 warns about `"i" + std::to_string(...)`).
    std::string key;
    switch (v.kind()) {
        case Kind::string:
            key = 's';
            key += v.str();
            return key;
        case Kind::none:
            return std::string("n");
        case Kind::undefined:
            return std::string("u");
        case Kind::boolean:
        case Kind::integer:
            key = 'i';
            key += std::to_string(v.as_int());
            return key;
        case Kind::floating: {
            const double d = v.as_double();
            const bool integral = d == std::floor(d) && std::fabs(d) < 9.2e18;
            key = integral ? 'i' : 'f';
            key += integral ? std::to_string(int64_t(d)) : float_repr(d);
            return key;
        }
        case Kind::tuple:
            key = 't';
            for (const Value& item : v.items()) {
                const std::optional<std::string> k = hash_key(item);
                if (!k) return std::nullopt;
                key += std::to_string(k->size());
                key += ':';
                key += *k;
            }
            return key;
        case Kind::object:
            return fmt::format("o{}", v.p_for_depth());
        default:
            return std::nullopt;
    }
}

namespace {
constexpr size_t kIndexFrom = 8;  // dicts smaller than this are searched
}

std::optional<size_t> Dict::position(const Value* key, std::string_view string_key) const {
    if (entries.size() < kIndexFrom) {
        for (size_t i = 0; i < entries.size(); ++i) {
            const Value& k = entries[i].first;
            if (key ? equal(k, *key) : (k.is_string() && k.str() == string_key)) return i;
        }
        return std::nullopt;
    }
    std::optional<std::string> h;
    if (key) {
        h = hash_key(*key);
        if (!h) return std::nullopt;  // unhashable: never a key
    } else {
        h.emplace(1, 's');
        h->append(string_key);
    }
    if (indexed_ > entries.size()) {
        index_.clear();
        indexed_ = 0;
    }
    for (; indexed_ < entries.size(); ++indexed_)
        if (const auto k = hash_key(entries[indexed_].first)) index_.emplace(*k, indexed_);
    const auto it = index_.find(*h);
    if (it == index_.end() || it->second >= entries.size()) return std::nullopt;
    return it->second;
}

const Value* Dict::find(const Value& key) const {
    const std::optional<size_t> i =
        key.is_string() ? position(nullptr, key.str()) : position(&key, {});
    return i ? &entries[*i].second : nullptr;
}

const Value* Dict::find(std::string_view key) const {
    const std::optional<size_t> i = position(nullptr, key);
    return i ? &entries[*i].second : nullptr;
}

void Dict::set(Value key, Value value) {
    const std::optional<size_t> i =
        key.is_string() ? position(nullptr, key.str()) : position(&key, {});
    if (i) {
        entries[*i].second = std::move(value);
    } else {
        entries.emplace_back(std::move(key), std::move(value));
    }
}

std::vector<std::optional<Value>> bind_args(const char* function, const CallArgs& args,
                                            std::initializer_list<const char*> names,
                                            size_t n_required) {
    std::vector<std::optional<Value>> out(names.size());
    if (args.positional.size() > names.size())
        throw_error(ErrorKind::type, "{}() takes at most {} arguments ({} given)", function,
                    names.size(), args.positional.size());
    for (size_t i = 0; i < args.positional.size(); ++i) out[i] = args.positional[i];
    for (const auto& [key, value] : args.keywords) {
        const std::string& k = key;  // clang 14 cannot capture a structured binding
        const auto it =
            std::find_if(names.begin(), names.end(), [&](const char* n) { return k == n; });
        if (it == names.end())
            throw_error(ErrorKind::type, "{}() got an unexpected keyword argument '{}'", function,
                        key);
        auto& slot = out[size_t(it - names.begin())];
        if (slot)
            throw_error(ErrorKind::type, "{}() got multiple values for argument '{}'", function,
                        key);
        slot = value;
    }
    for (size_t i = 0; i < n_required; ++i)
        if (!out[i])
            throw_error(ErrorKind::type, "{}() missing required argument '{}'", function,
                        *(names.begin() + i));
    return out;
}

std::string Object::repr() const {
    return fmt::format("<{} object>", type_name());
}

Value Object::call(Evaluator&, const CallArgs&) {
    throw_error(ErrorKind::type, "'{}' object is not callable", type_name());
}

std::optional<Value> Object::attribute(Evaluator&, std::string_view) {
    return std::nullopt;
}

bool Object::next(Evaluator&, Value&) {
    throw_error(ErrorKind::type, "'{}' object is not an iterator", type_name());
}

// ---- Python semantics ----------------------------------------------------------------------

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
        case Kind::none:
            return false;
        case Kind::boolean:
            return v.as_bool();
        case Kind::integer:
            return v.as_int() != 0;
        case Kind::floating:
            return v.as_double() != 0.0;
        case Kind::string:
            return !v.str().empty();
        case Kind::list:
        case Kind::tuple:
            return !v.items().empty();
        case Kind::dict:
            return v.dict().size() > 0;
        case Kind::object:
            return v.object()->truthy();
    }
    return false;
}

const char* type_name(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return "Undefined";
        case Kind::none:
            return "NoneType";
        case Kind::boolean:
            return "bool";
        case Kind::integer:
            return "int";
        case Kind::floating:
            return "float";
        case Kind::string:
            return "str";
        case Kind::list:
            return "list";
        case Kind::tuple:
            return "tuple";
        case Kind::dict:
            return "dict";
        case Kind::object:
            return v.object()->type_name();
    }
    return "object";
}

namespace {

void repr_into(std::string& out, const Value& v, int depth) {
    if (depth > 200) throw_error(ErrorKind::limit, "value nested deeper than 200 levels");
    switch (v.kind()) {
        case Kind::undefined:
            out += "Undefined";
            return;
        case Kind::string:
            if (v.is_markup()) {
                out += "Markup(" + text::py_repr(v.str()) + ")";
            } else {
                out += text::py_repr(v.str());
            }
            return;
        case Kind::list:
        case Kind::tuple: {
            const List& items = v.items();
            out += v.is_list() ? '[' : '(';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += ", ";
                repr_into(out, items[i], depth + 1);
            }
            if (v.is_tuple() && items.size() == 1) out += ',';
            out += v.is_list() ? ']' : ')';
            return;
        }
        case Kind::dict: {
            out += '{';
            bool first = true;
            for (const auto& [k, val] : v.dict().entries) {
                if (!first) out += ", ";
                first = false;
                repr_into(out, k, depth + 1);
                out += ": ";
                repr_into(out, val, depth + 1);
            }
            out += '}';
            return;
        }
        case Kind::object:
            out += v.object()->repr();
            return;
        default:
            out += to_str(v);
    }
}

}  // namespace

std::string to_str(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return "";
        case Kind::none:
            return "None";
        case Kind::boolean:
            return v.as_bool() ? "True" : "False";
        case Kind::integer:
            return fmt::format("{}", v.as_int());
        case Kind::floating:
            return float_repr(v.as_double());
        case Kind::string:
            return v.str();
        default:
            return repr(v);
    }
}

std::string repr(const Value& v) {
    std::string out;
    repr_into(out, v, 0);
    return out;
}

bool equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::undefined:
        case Kind::none:
            return true;
        case Kind::string:
            return a.str() == b.str();
        case Kind::list:
        case Kind::tuple: {
            const List& x = a.items();
            const List& y = b.items();
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!equal(x[i], y[i])) return false;
            return true;
        }
        case Kind::dict: {
            const Dict& x = a.dict();
            const Dict& y = b.dict();
            if (x.size() != y.size()) return false;
            for (const auto& [k, v] : x.entries) {
                const Value* other = y.find(k);
                if (!other || !equal(v, *other)) return false;
            }
            return true;
        }
        case Kind::object:
            return a.same_object(b);
        default:
            return false;
    }
}

bool less(const Value& a, const Value& b) {
    if (a.is_undefined()) a.fail_undefined();
    if (b.is_undefined()) b.fail_undefined();
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 keeps code point order
    if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
        const List& x = a.items();
        const List& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!equal(x[i], y[i])) return less(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    throw_error(ErrorKind::type, "'<' not supported between instances of '{}' and '{}'",
                type_name(a), type_name(b));
}

void check_hashable(const Value& v) {
    if (v.is_list() || v.is_dict())
        throw_error(ErrorKind::type, "unhashable type: '{}'", type_name(v));
    if (v.is_tuple())
        for (const Value& item : v.items()) check_hashable(item);
}

size_t length(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return 0;
        case Kind::string:
            return text::length(v.str());
        case Kind::list:
        case Kind::tuple:
            return v.items().size();
        case Kind::dict:
            return v.dict().size();
        case Kind::object:
            if (const List* items = v.object()->sequence()) return items->size();
            [[fallthrough]];
        default:
            throw_error(ErrorKind::type, "object of type '{}' has no len()", type_name(v));
    }
}

Value escape(const Value& v) {
    if (v.is_markup()) return v;
    return Value::markup(text::html_escape(to_str(v)));
}

Iter::Iter(Evaluator& ev, const Value& v) : ev_(ev), value_(v) {
    if (!iterable(v)) throw_error(ErrorKind::type, "'{}' object is not iterable", type_name(v));
}

bool Iter::next(Value& out) {
    switch (value_.kind()) {
        case Kind::string: {
            const std::string& s = value_.str();
            if (pos_ >= s.size()) return false;
            const uint8_t c = uint8_t(s[pos_]);
            const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
            out = Value::string(s.substr(pos_, n));
            pos_ += n;
            return true;
        }
        case Kind::list:
        case Kind::tuple:
            if (pos_ >= value_.items().size()) return false;
            out = value_.items()[pos_++];
            return true;
        case Kind::dict:
            if (pos_ >= value_.dict().size()) return false;
            out = value_.dict().entries[pos_++].first;
            return true;
        case Kind::object:
            if (const List* items = value_.object()->sequence()) {
                if (pos_ >= items->size()) return false;
                out = (*items)[pos_++];
                return true;
            }
            return value_.object()->next(ev_, out);
        default:
            return false;  // undefined
    }
}

bool iterable(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
        case Kind::string:
        case Kind::list:
        case Kind::tuple:
        case Kind::dict:
            return true;
        case Kind::object:
            return v.object()->is_iterator() || v.object()->sequence() != nullptr;
        default:
            return false;
    }
}

List to_list(Evaluator& ev, const Value& v) {
    if (v.is_list() || v.is_tuple()) return v.items();
    List out;
    Iter it(ev, v);
    Value item;
    while (it.next(item)) {
        ev.tick();
        out.push_back(std::move(item));
    }
    return out;
}

}  // namespace mw::tmpl
