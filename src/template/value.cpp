#include "template/value.h"

#include <algorithm>

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

}  // namespace

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
    Value v;
    v.kind_ = Kind::list;
    v.p_ = std::make_shared<List>(std::move(items));
    return v;
}

Value Value::tuple(List items) {
    Value v = list(std::move(items));
    v.kind_ = Kind::tuple;
    return v;
}

Value Value::dict(Dict d) {
    Value v;
    v.kind_ = Kind::dict;
    v.p_ = std::make_shared<Dict>(std::move(d));
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

const std::string& Value::str() const { return *static_cast<const std::string*>(p_.get()); }
const List& Value::items() const { return *static_cast<const List*>(p_.get()); }
const Dict& Value::dict() const { return *static_cast<const Dict*>(p_.get()); }
Object* Value::object() const { return static_cast<Object*>(p_.get()); }

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

const Value* Dict::find(const Value& key) const {
    if (key.is_string()) return find(std::string_view(key.str()));
    for (const auto& [k, v] : entries)
        if (equal(k, key)) return &v;
    return nullptr;
}

const Value* Dict::find(std::string_view key) const {
    for (const auto& [k, v] : entries)
        if (k.is_string() && k.str() == key) return &v;
    return nullptr;
}

void Dict::set(Value key, Value value) {
    for (auto& [k, v] : entries) {
        if (equal(k, key)) {
            v = std::move(value);
            return;
        }
    }
    entries.emplace_back(std::move(key), std::move(value));
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
        const auto it = std::find_if(names.begin(), names.end(),
                                     [&](const char* n) { return key == n; });
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

std::string Object::repr() const { return fmt::format("<{} object>", type_name()); }

Value Object::call(Evaluator&, const CallArgs&) {
    throw_error(ErrorKind::type, "'{}' object is not callable", type_name());
}

std::optional<Value> Object::attribute(Evaluator&, std::string_view) { return std::nullopt; }

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
            return true;
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
            return v.object()->is_iterator();
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
