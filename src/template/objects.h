// The objects of a render that are not plain data: namespaces, functions and bound methods,
// generators (what Jinja2's map/select/... filters return: one pass, always true, no len()),
// macros, the `loop` variable, cycler and joiner.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "template/evaluator.h"
#include "template/library.h"
#include "template/value.h"

namespace mw::tmpl {

class Namespace : public Object {
  public:
    Dict attrs;
    ~Namespace() override { release(); }
    void release() override;
    const char* type_name() const override { return "Namespace"; }
    std::string repr() const override;
    std::optional<Value> attribute(Evaluator& ev, std::string_view name) override;
};

class Function : public Object {
  public:
    Function(const char* name, NativeFn fn, Value self)
        : name_(name), fn_(fn), self_(std::move(self)) {}
    ~Function() override {
        List held{std::move(self_)};
        bury(held);
    }
    const char* type_name() const override {
        return self_.is_undefined() ? "function" : "builtin_function_or_method";
    }
    std::string repr() const override;
    bool callable() const override { return true; }
    Value call(Evaluator& ev, const CallArgs& args) override { return fn_(ev, self_, args); }

  private:
    const char* name_;
    NativeFn fn_;
    Value self_;
};

class Generator : public Object {
  public:
    using NextFn = std::function<bool(Evaluator&, Value&)>;
    // depth: how many generators this one reads through (their chains are bounded: reading
    // one recurses through them).
    Generator(const char* type, NextFn next, int depth = 1)
        : type_(type), next_(std::move(next)), depth_(depth) {}
    int depth() const { return depth_; }
    static constexpr int max_depth = 200;
    const char* type_name() const override { return type_; }
    std::string repr() const override;
    bool is_iterator() const override { return true; }
    bool next(Evaluator& ev, Value& out) override;
    void release() override {
        next_ = nullptr;
        done_ = true;
    }

  private:
    const char* type_;
    NextFn next_;
    int depth_;
    bool done_ = false;
};
// A generator over `source` (anything iterable), each item mapped by `fn`; `fn` returning
// false skips the item.
Value make_generator(Evaluator& ev, const Value& source, std::function<bool(Evaluator&, Value&)> fn,
                     const char* type = "generator");
// A generator over the given items.
Value make_list_iterator(List items, const char* type);

// dict.keys(), .values(), .items(): iterable again and again, sized, not subscriptable, not
// JSON; printed as Python prints them ("dict_items([('a', 1)])").
class DictView : public Object {
  public:
    DictView(const char* type, List items) : type_(type), items_(std::move(items)) {}
    ~DictView() override { bury(items_); }
    const char* type_name() const override { return type_; }
    std::string repr() const override {
        return fmt::format("{}({})", type_, tmpl::repr(Value::list(items_)));
    }
    const List* sequence() const override { return &items_; }
    bool truthy() const override { return !items_.empty(); }

  private:
    const char* type_;
    List items_;
};

class Macro : public Object {
  public:
    Macro(const Signature& sig, const Body& body, std::string name, ScopePtr closure,
          Value caller = Value())
        : sig_(sig),
          body_(body),
          name_(std::move(name)),
          closure_(std::move(closure)),
          caller_(std::move(caller)) {}
    const char* type_name() const override { return "Macro"; }
    std::string repr() const override { return "<Macro '" + name_ + "'>"; }
    bool callable() const override { return true; }
    Value call(Evaluator& ev, const CallArgs& args) override;
    std::optional<Value> attribute(Evaluator& ev, std::string_view name) override;
    void release() override {
        closure_.reset();
        caller_ = Value();
    }

  private:
    const Signature& sig_;
    const Body& body_;
    std::string name_;
    ScopePtr closure_;
    Value caller_;
};

// jinja2.runtime.LoopContext.
class Loop : public Object {
  public:
    // `source` is what the loop iterates (the iterable, or the generator of a filtered loop);
    // `iterable` the value written after `in` (its length is used when it has one).
    Loop(Evaluator& ev, const Value& iterable, const Value& source, const For* recursive_node,
         ScopePtr outer, int depth0);
    bool advance(Value& item);
    const char* type_name() const override { return "LoopContext"; }
    std::string repr() const override;
    bool callable() const override { return recursive_ != nullptr; }
    Value call(Evaluator& ev, const CallArgs& args) override;
    std::optional<Value> attribute(Evaluator& ev, std::string_view name) override;
    void release() override;

  private:
    bool peek();
    int64_t length();

    Evaluator& ev_;
    Value iterable_;
    std::optional<Iter> it_;
    std::deque<Value> pending_;  // read ahead (loop.last, loop.nextitem, loop.length)
    bool exhausted_ = false;
    std::optional<int64_t> length_;
    int64_t index0_ = -1;
    Value current_, before_;
    std::optional<List> last_changed_;
    const For* recursive_;
    ScopePtr outer_;
    int depth0_;
};

class Cycler : public Object {
  public:
    explicit Cycler(List items) : items_(std::move(items)) {}
    ~Cycler() override { bury(items_); }
    const char* type_name() const override { return "Cycler"; }
    std::optional<Value> attribute(Evaluator& ev, std::string_view name) override;
    Value next_item();
    void reset() { pos_ = 0; }

  private:
    List items_;
    size_t pos_ = 0;
};

class Joiner : public Object {
  public:
    explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
    const char* type_name() const override { return "Joiner"; }
    bool callable() const override { return true; }
    Value call(Evaluator& ev, const CallArgs& args) override;

  private:
    std::string sep_;
    bool used_ = false;
};

}  // namespace mw::tmpl
