// The values a template computes with, and the Python semantics Jinja2 gives them: truthiness,
// equality, ordering, str() and repr(), len() and iteration. Strings are UTF-8 (always valid:
// the template and its inputs are checked or repaired on the way in) and Python counts them in
// code points, so indexing and lengths here do too.
//
// Lists, tuples and dicts are immutable once built (the sandbox refuses to mutate them), so
// values share them. Namespaces, loops, macros, generators and functions are Objects.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "template/error.h"

namespace mw::tmpl {

class Value;
class Object;
class Evaluator;
struct Dict;
using List = std::vector<Value>;

enum class Kind : uint8_t {
    undefined,  // jinja2.Undefined: prints empty, falsy, iterates empty; most uses raise
    none,
    boolean,
    integer,  // Python int, limited here to 64 bits (overflow raises)
    floating,
    string,
    list,
    tuple,
    dict,
    object,  // namespace, macro, loop, generator, function, ...
};

class Value {
  public:
    Value() = default;  // undefined
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value number(double d);
    static Value string(std::string s);
    // markupsafe.Markup: a string marked safe (the `safe` and `escape` filters make them).
    // Concatenating or %-formatting plain strings into one escapes them, as in Jinja2.
    static Value markup(std::string s);
    static Value list(List items);
    static Value tuple(List items);
    static Value dict(Dict d);
    static Value object(std::shared_ptr<Object> o);
    // An undefined value that knows why: the message of the error raised when it is used.
    // `kind` is security for the sandbox's refusals (calling list.append), else undefined.
    static Value undefined(std::string hint, ErrorKind kind = ErrorKind::undefined);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::undefined; }
    bool is_none() const { return kind_ == Kind::none; }
    bool is_bool() const { return kind_ == Kind::boolean; }
    bool is_int() const { return kind_ == Kind::integer; }
    bool is_float() const { return kind_ == Kind::floating; }
    bool is_string() const { return kind_ == Kind::string; }
    bool is_markup() const { return kind_ == Kind::string && markup_; }
    bool is_list() const { return kind_ == Kind::list; }
    bool is_tuple() const { return kind_ == Kind::tuple; }
    bool is_sequence() const { return kind_ == Kind::list || kind_ == Kind::tuple; }
    bool is_dict() const { return kind_ == Kind::dict; }
    bool is_object() const { return kind_ == Kind::object; }
    // Python's int includes bool.
    bool is_integral() const { return kind_ == Kind::integer || kind_ == Kind::boolean; }
    bool is_number() const { return is_integral() || kind_ == Kind::floating; }

    bool as_bool() const { return b_; }
    int64_t as_int() const { return kind_ == Kind::boolean ? int64_t(b_) : i_; }
    double as_double() const;  // of bool, int or float
    const std::string& str() const;
    const List& items() const;  // list or tuple
    const Dict& dict() const;
    Object* object() const;
    template <typename T>
    T* object_as() const {
        return kind_ == Kind::object ? dynamic_cast<T*>(object()) : nullptr;
    }

    // Raises the error this undefined value stands for.
    [[noreturn]] void fail_undefined() const;
    const std::string& undefined_hint() const;
    // Same heap object (Python's `is` for containers and objects).
    bool same_object(const Value& other) const { return p_ && p_ == other.p_; }
    const void* p_for_depth() const { return p_.get(); }

  private:
    Kind kind_ = Kind::undefined;
    bool markup_ = false;
    union {
        bool b_;
        int64_t i_ = 0;
        double f_;
    };
    std::shared_ptr<void> p_;
};

// A Python dict: insertion-ordered; keys compare with Python equality (1 == 1.0 == True).
// Lookups in dicts of more than a few entries go through a hash index (built as needed), so
// that a template building a big dict stays linear.
struct Dict {
    std::vector<std::pair<Value, Value>> entries;

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    // Replaces the value of an existing key (keeping its place) or appends.
    void set(Value key, Value value);
    size_t size() const { return entries.size(); }

  private:
    std::optional<size_t> position(const Value* key, std::string_view string_key) const;
    mutable std::unordered_map<std::string, size_t> index_;
    mutable size_t indexed_ = 0;
};

// A text equal for keys Python's hash and == consider the same (1, 1.0 and True; a string and
// its Markup), nullopt for unhashable values (lists, dicts).
std::optional<std::string> hash_key(const Value& v);

// Arguments of a call, as Python passes them.
struct CallArgs {
    List positional;
    std::vector<std::pair<std::string, Value>> keywords;

    bool empty() const { return positional.empty() && keywords.empty(); }
};

// Binds CallArgs to a Python signature: `names` in order, the first `n_required` without
// defaults. Unknown keywords, duplicates, too many or missing arguments raise TypeError naming
// `function`. A parameter not passed is nullopt.
std::vector<std::optional<Value>> bind_args(const char* function, const CallArgs& args,
                                            std::initializer_list<const char*> names,
                                            size_t n_required);

// Functions, methods, macros, namespaces, loops, generators.
class Object : public std::enable_shared_from_this<Object> {
  public:
    virtual ~Object() = default;
    virtual const char* type_name() const = 0;  // Python's type name, for messages
    virtual std::string repr() const;
    virtual bool callable() const { return false; }
    virtual Value call(Evaluator& ev, const CallArgs& args);
    // The attribute, or nullopt when there is none (Jinja2 then tries the item, then gives an
    // undefined value).
    virtual std::optional<Value> attribute(Evaluator& ev, std::string_view name);
    // Generators and iterators: one pass, consumed as they are read.
    virtual bool is_iterator() const { return false; }
    virtual bool next(Evaluator& ev, Value& out);
    // Re-iterable collections that are not lists (dict views): their items, else nullptr.
    virtual const List* sequence() const { return nullptr; }
    virtual bool truthy() const { return true; }
    // Drops what this object holds that can lead back to it (scopes), so that reference
    // cycles (a macro stored in the scope it closes over) end with the render.
    virtual void release() {}
};

// Destroys `values` without recursing through the containers and objects they hold (see
// value.cpp); destructors of objects holding values call it.
void bury(List& values);

// ---- Python semantics ------------------------------------------------------------------------

bool truthy(const Value& v);
// type(v).__name__: "int", "str", "dict", "NoneType", "Undefined", ...
const char* type_name(const Value& v);
// str(v) and repr(v). An undefined value prints as "" (repr "Undefined").
std::string to_str(const Value& v);
std::string repr(const Value& v);
// ==, and < for sorting and comparisons (TypeError between unordered types; an undefined
// operand raises its UndefinedError).
bool equal(const Value& a, const Value& b);
bool less(const Value& a, const Value& b);
// TypeError "unhashable type: 'list'" for values that cannot be dict keys or set members.
void check_hashable(const Value& v);
// len(v): code points of a string, items of a container, 0 for undefined; TypeError otherwise.
size_t length(const Value& v);
// markupsafe.escape(v): a Markup string; Markup passes through unchanged.
Value escape(const Value& v);

// Iterates any iterable the way Python's iter() does: a string by code point, a dict by key,
// undefined as empty, a generator by consuming it. TypeError for values that are not iterable.
class Iter {
  public:
    Iter(Evaluator& ev, const Value& v);
    bool next(Value& out);

  private:
    Evaluator& ev_;
    Value value_;
    size_t pos_ = 0;
};
bool iterable(const Value& v);
List to_list(Evaluator& ev, const Value& v);

}  // namespace mw::tmpl
