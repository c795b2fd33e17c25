// Renders a parsed template: statements, expressions and scopes with the semantics of Jinja2
// 3.1 in its ImmutableSandboxedEnvironment (attribute and item lookup with their fallbacks,
// undefined values, macros as closures, a fresh scope per loop iteration), under limits that
// keep an untrusted template from running away: loop iterations, call depth, output and value
// sizes. Each limit stops the render with a TemplateError (ErrorKind::limit).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace mw::tmpl {

struct Limits {
    size_t max_output_bytes = size_t(32) << 20;   // the render, and any one string or list built
    uint64_t max_iterations = 1'000'000;          // loop iterations and items filters produce
    int max_call_depth = 100;                     // nested macro calls and recursive loops
    uint64_t max_work_bytes = uint64_t(1) << 30;  // bytes of strings built during the render
};

// Everything a render sees besides the template: its variables and the environment's knobs.
struct RenderContext {
    Dict variables;
    // What strftime_now(format) returns whatever the format; nullopt: the current local date
    // formatted with strftime.
    std::optional<std::string> strftime_now;
    Limits limits;
};

// Variables of one scope (template, loop iteration, macro call, with block), chained to the
// enclosing one. Macros keep the scope they were defined in.
class Scope {
  public:
    explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
    const Value* find(std::string_view name) const;
    void set(std::string_view name, Value value);
    const std::shared_ptr<Scope>& parent() const { return parent_; }

  private:
    std::shared_ptr<Scope> parent_;
    std::vector<std::pair<std::string, Value>> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

class Evaluator {
  public:
    explicit Evaluator(const RenderContext& context);
    ~Evaluator();
    Evaluator(const Evaluator&) = delete;
    Evaluator& operator=(const Evaluator&) = delete;
    std::string render(const Body& body);
    // Objects whose references must be dropped when the render ends (Object::release).
    void track(const std::shared_ptr<Object>& object);

    // The sandbox's lookups and calls (jinja2.sandbox), for filters and methods too.
    Value get_attr(const Value& obj, std::string_view name);
    Value get_item(const Value& obj, const Value& key);
    Value call(const Value& callee, const CallArgs& args);
    Value apply_filter(std::string_view name, const Value& value, const CallArgs& args);
    bool apply_test(std::string_view name, const Value& value, const CallArgs& args);

    // Accounting against the limits.
    void charge(size_t bytes);
    void tick(uint64_t iterations = 1);
    void check_size(size_t bytes) const;
    const RenderContext& context() const { return context_; }

    // For macro and loop objects (objects.cpp).
    struct Frame;
    std::string call_macro(const Signature& sig, const Body& body, const std::string& name,
                           const ScopePtr& closure, const CallArgs& args, const Value& caller);
    std::string run_loop(const For& node, const ScopePtr& scope, const Value& iterable, int depth);

  private:
    enum class Flow { normal, break_, continue_ };
    struct Depth;

    Flow exec(const Body& body, const ScopePtr& scope, std::string& out);
    Flow exec_node(const Node& node, const ScopePtr& scope, std::string& out);
    void exec_for(const For& node, const ScopePtr& scope, std::string& out, const Value& iterable,
                  int depth);
    std::string render_block(const Body& body, const ScopePtr& scope);
    void assign(const Node& target, const Value& value, const ScopePtr& scope);
    void append(std::string& out, std::string_view text);

    Value eval(const Node& node, const ScopePtr& scope);
    Value eval_inner(const Node& node, const ScopePtr& scope);
    Value eval_filter(const FilterOrTest& node, const ScopePtr& scope, const Value* block_input);
    CallArgs eval_args(const Args& args, const ScopePtr& scope);
    Value lookup(std::string_view name, const ScopePtr& scope);
    Value make_macro(const Signature& sig, const Body& body, const std::string& name,
                     const ScopePtr& scope);

    const RenderContext& context_;
    uint64_t iterations_ = 0;
    uint64_t work_ = 0;
    int depth_ = 0;
    ScopePtr root_;
    std::vector<std::weak_ptr<Object>> tracked_;
    size_t tracked_live_ = 0;
};

}  // namespace mw::tmpl
