#include "template/evaluator.h"

#include <algorithm>

#include "template/library.h"
#include "template/objects.h"
#include "template/ops.h"
#include "template/text.h"

namespace mw::tmpl {

namespace {

// Nested statements and expressions being evaluated at once (C++ stack depth): recursion
// through macros or recursive loops stops here at the latest.
constexpr int kMaxNesting = 2000;

// "'dict object'", as jinja2.utils.object_type_repr writes the type of a value.
std::string object_type_repr(const Value& v) {
    if (v.is_none()) return "None";
    return fmt::format("{} object", type_name(v));
}

}  // namespace

const Value* Scope::find(std::string_view name) const {
    for (const Scope* s = this; s; s = s->parent_.get())
        for (const auto& [k, v] : s->vars_)
            if (k == name) return &v;
    return nullptr;
}

void Scope::set(std::string_view name, Value value) {
    for (auto& [k, v] : vars_) {
        if (k == name) {
            v = std::move(value);
            return;
        }
    }
    vars_.emplace_back(std::string(name), std::move(value));
}

struct Evaluator::Depth {
    Evaluator& ev;
    explicit Depth(Evaluator& e) : ev(e) {
        if (++ev.depth_ > ev.context_.limits.max_call_depth)
            throw_error(ErrorKind::limit, "macro calls or recursive loops nested deeper than {}",
                        ev.context_.limits.max_call_depth);
    }
    ~Depth() { --ev.depth_; }
};

// Counts C++ recursion through exec_node and eval.
struct Nesting {
    int& n;
    explicit Nesting(int& counter) : n(counter) {
        if (++n > kMaxNesting)
            throw_error(ErrorKind::limit, "evaluation nested deeper than {} levels", kMaxNesting);
    }
    ~Nesting() { --n; }
};

namespace {
thread_local int t_nesting = 0;
}

Evaluator::Evaluator(const RenderContext& context)
    : context_(context), root_(std::make_shared<Scope>(nullptr)) {}

Evaluator::~Evaluator() {
    // Hold every object while emptying them, so that none is destroyed full (a long chain of
    // namespaces would be destroyed recursively) and cycles through scopes are broken.
    std::vector<std::shared_ptr<Object>> alive;
    for (const auto& w : tracked_)
        if (std::shared_ptr<Object> o = w.lock()) alive.push_back(std::move(o));
    for (const auto& o : alive) o->release();
}

void Evaluator::track(const std::shared_ptr<Object>& object) {
    if (tracked_.size() >= 2 * tracked_live_ + 64) {
        std::erase_if(tracked_, [](const std::weak_ptr<Object>& w) { return w.expired(); });
        tracked_live_ = tracked_.size();
    }
    tracked_.push_back(object);
}

std::string Evaluator::render(const Body& body) {
    std::string out;
    exec(body, root_, out);
    return out;
}

void Evaluator::append(std::string& out, std::string_view text) {
    if (out.size() + text.size() > context_.limits.max_output_bytes)
        throw_error(ErrorKind::limit, "the output would exceed {} bytes",
                    context_.limits.max_output_bytes);
    out += text;
    charge(text.size());
}

void Evaluator::charge(size_t bytes) {
    work_ += bytes;
    if (work_ > context_.limits.max_work_bytes)
        throw_error(ErrorKind::limit, "the render built more than {} bytes of text",
                    context_.limits.max_work_bytes);
}

void Evaluator::tick(uint64_t n) {
    iterations_ += n;
    if (iterations_ > context_.limits.max_iterations)
        throw_error(ErrorKind::limit, "more than {} loop iterations",
                    context_.limits.max_iterations);
}

void Evaluator::check_size(size_t bytes) const {
    if (bytes > context_.limits.max_output_bytes)
        throw_error(ErrorKind::limit, "a value of more than {} bytes",
                    context_.limits.max_output_bytes);
}

// ---- statements --------------------------------------------------------------------------

Evaluator::Flow Evaluator::exec(const Body& body, const ScopePtr& scope, std::string& out) {
    for (const NodePtr& node : body) {
        const Flow f = exec_node(*node, scope, out);
        if (f != Flow::normal) return f;
    }
    return Flow::normal;
}

std::string Evaluator::render_block(const Body& body, const ScopePtr& scope) {
    std::string out;
    exec(body, scope, out);
    return out;
}

Evaluator::Flow Evaluator::exec_node(const Node& node, const ScopePtr& scope, std::string& out) {
    Nesting nesting(t_nesting);
    try {
        switch (node.kind) {
            case NodeKind::output:
                for (const auto& part : as<Output>(node).parts) {
                    if (part.expr) {
                        append(out, to_str(eval(*part.expr, scope)));
                    } else {
                        append(out, part.text);
                    }
                }
                return Flow::normal;
            case NodeKind::if_: {
                const If& n = as<If>(node);
                for (const auto& [test, body] : n.branches)
                    if (truthy(eval(*test, scope))) return exec(body, scope, out);
                return exec(n.otherwise, scope, out);
            }
            case NodeKind::for_: {
                const For& n = as<For>(node);
                exec_for(n, scope, out, eval(*n.iter, scope), 0);
                return Flow::normal;
            }
            case NodeKind::assign: {
                const Assign& n = as<Assign>(node);
                assign(*n.target, eval(*n.value, scope), scope);
                return Flow::normal;
            }
            case NodeKind::assign_block: {
                const AssignBlock& n = as<AssignBlock>(node);
                Value v = Value::string(render_block(n.body, std::make_shared<Scope>(scope)));
                if (n.filter) v = eval_filter(as<FilterOrTest>(*n.filter), scope, &v);
                assign(*n.target, v, scope);
                return Flow::normal;
            }
            case NodeKind::macro: {
                const MacroDef& n = as<MacroDef>(node);
                scope->set(n.name, make_macro(n.signature, n.body, n.name, scope));
                return Flow::normal;
            }
            case NodeKind::call_block: {
                const CallBlock& n = as<CallBlock>(node);
                const Value caller = make_macro(n.signature, n.body, "caller", scope);
                const Call& call = as<Call>(*n.call);
                const Value callee = eval(*call.callee, scope);
                CallArgs args = eval_args(call.args, scope);
                args.keywords.emplace_back("caller", caller);
                append(out, to_str(this->call(callee, args)));
                return Flow::normal;
            }
            case NodeKind::filter_block: {
                const FilterBlock& n = as<FilterBlock>(node);
                const ScopePtr inner = std::make_shared<Scope>(scope);
                const Value body = Value::string(render_block(n.body, inner));
                append(out, to_str(eval_filter(as<FilterOrTest>(*n.filter), inner, &body)));
                return Flow::normal;
            }
            case NodeKind::with: {
                const With& n = as<With>(node);
                std::vector<Value> values;
                for (const auto& v : n.values) values.push_back(eval(*v, scope));
                const ScopePtr inner = std::make_shared<Scope>(scope);
                for (size_t i = 0; i < n.targets.size(); ++i)
                    assign(*n.targets[i], values[i], inner);
                return exec(n.body, inner, out);
            }
            case NodeKind::block: {
                const Block& n = as<Block>(node);
                exec(n.body, std::make_shared<Scope>(n.scoped ? scope : root_), out);
                return Flow::normal;
            }
            case NodeKind::break_:
                return Flow::break_;
            case NodeKind::continue_:
                return Flow::continue_;
            case NodeKind::unsupported: {
                // Jinja2 raises TypeError for include/import/extends without a loader.
                const std::string& what = as<Unsupported>(node).what;
                throw_error(
                    what.find("loader") != std::string::npos ? ErrorKind::type : ErrorKind::runtime,
                    "{} is not supported here", what);
            }
            default:
                throw_error(ErrorKind::runtime, "not a statement");
        }
    } catch (TemplateError& e) {
        if (!e.located()) e.locate(node.line, describe(node));
        throw;
    }
}

void Evaluator::exec_for(const For& node, const ScopePtr& scope, std::string& out,
                         const Value& iterable, int depth) {
    Value source = iterable;
    if (node.filter) {
        // The filter sees the loop variables but not `loop` (a generator in Jinja2: evaluated
        // lazily, as the loop reads items).
        source = make_generator(*this, iterable, [this, &node, scope](Evaluator&, Value& item) {
            const ScopePtr test_scope = std::make_shared<Scope>(scope);
            assign(*node.target, item, test_scope);
            return truthy(eval(*node.filter, test_scope));
        });
    }
    auto loop = std::make_shared<Loop>(*this, iterable, source, node.recursive ? &node : nullptr,
                                       scope, depth);
    track(loop);
    const Value loop_value = Value::object(loop);
    // Jinja2 runs `else` unless an iteration reached the end of the body (so a loop whose
    // iterations all ended in break or continue runs it too).
    bool run_else = true;
    Value item;
    while (loop->advance(item)) {
        tick();
        const ScopePtr inner = std::make_shared<Scope>(scope);
        assign(*node.target, item, inner);
        inner->set("loop", loop_value);
        const Flow f = exec(node.body, inner, out);
        if (f == Flow::break_) break;
        if (f == Flow::continue_) continue;
        run_else = false;
    }
    if (run_else && !node.otherwise.empty())
        exec(node.otherwise, std::make_shared<Scope>(scope), out);
}

std::string Evaluator::run_loop(const For& node, const ScopePtr& scope, const Value& iterable,
                                int depth) {
    Depth guard(*this);
    std::string out;
    exec_for(node, scope, out, iterable, depth);
    return out;
}

void Evaluator::assign(const Node& target, const Value& value, const ScopePtr& scope) {
    switch (target.kind) {
        case NodeKind::name:
            scope->set(as<Name>(target).name, value);
            return;
        case NodeKind::tuple: {
            const auto& targets = as<Sequence>(target).items;
            if (!iterable(value) || value.is_undefined()) {
                if (value.is_undefined()) value.fail_undefined();
                throw_error(ErrorKind::type, "cannot unpack non-iterable {} object",
                            type_name(value));
            }
            const List items = to_list(*this, value);
            if (items.size() < targets.size())
                throw_error(ErrorKind::value, "not enough values to unpack (expected {}, got {})",
                            targets.size(), items.size());
            if (items.size() > targets.size())
                throw_error(ErrorKind::value, "too many values to unpack (expected {})",
                            targets.size());
            for (size_t i = 0; i < targets.size(); ++i) assign(*targets[i], items[i], scope);
            return;
        }
        case NodeKind::ns_ref: {
            const NsRef& ref = as<NsRef>(target);
            const Value ns = lookup(ref.name, scope);
            Namespace* n = ns.object_as<Namespace>();
            if (!n)
                throw_error(ErrorKind::runtime, "cannot assign attribute on non-namespace object");
            n->attrs.set(Value::string(ref.attr), value);
            return;
        }
        default:
            throw_error(ErrorKind::runtime, "cannot assign to {}", describe(target));
    }
}

Value Evaluator::make_macro(const Signature& sig, const Body& body, const std::string& name,
                            const ScopePtr& scope) {
    auto macro = std::make_shared<Macro>(sig, body, name, scope);
    track(macro);
    return Value::object(std::move(macro));
}

std::string Evaluator::call_macro(const Signature& sig, const Body& body, const std::string& name,
                                  const ScopePtr& closure, const CallArgs& args,
                                  const Value& /*caller*/) {
    Depth guard(*this);
    const ScopePtr scope = std::make_shared<Scope>(closure);
    std::vector<std::pair<std::string, Value>> kwargs = args.keywords;
    const auto take = [&](const std::string& key) -> std::optional<Value> {
        for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
            if (it->first == key) {
                Value v = std::move(it->second);
                kwargs.erase(it);
                return v;
            }
        }
        return std::nullopt;
    };
    const size_t n = sig.params.size();
    std::vector<std::optional<Value>> bound(n);
    for (size_t i = 0; i < n && i < args.positional.size(); ++i) bound[i] = args.positional[i];
    for (size_t i = args.positional.size(); i < n; ++i) bound[i] = take(sig.params[i]);
    if (sig.caller) {
        std::optional<Value> c = take("caller");
        scope->set("caller", c ? *c : Value::undefined("No caller defined"));
    }
    if (sig.catch_kwargs) {
        Dict d;
        for (auto& [k, v] : kwargs) d.set(Value::string(k), v);
        scope->set("kwargs", Value::dict(std::move(d)));
    } else if (!kwargs.empty()) {
        if (kwargs.front().first == "caller")
            throw_error(ErrorKind::type,
                        "macro '{}' was invoked with two values for the special caller argument. "
                        "This is most likely a bug.",
                        name);
        throw_error(ErrorKind::type, "macro '{}' takes no keyword argument '{}'", name,
                    kwargs.front().first);
    }
    if (sig.catch_varargs) {
        List rest;
        for (size_t i = n; i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
        scope->set("varargs", Value::tuple(std::move(rest)));
    } else if (args.positional.size() > n) {
        throw_error(ErrorKind::type, "macro '{}' takes not more than {} argument(s)", name, n);
    }
    // Defaults are evaluated at the call, in the macro's scope (earlier parameters visible).
    const size_t first_default = n - sig.defaults.size();
    for (size_t i = 0; i < n; ++i) {
        if (bound[i]) {
            scope->set(sig.params[i], *bound[i]);
        } else if (i >= first_default) {
            scope->set(sig.params[i], eval(*sig.defaults[i - first_default], scope));
        } else {
            scope->set(sig.params[i], Value::undefined(fmt::format(
                                          "parameter '{}' was not provided", sig.params[i])));
        }
    }
    std::string out;
    exec(body, scope, out);
    return out;
}

// ---- expressions -------------------------------------------------------------------------

Value Evaluator::eval(const Node& node, const ScopePtr& scope) {
    Nesting nesting(t_nesting);
    try {
        return eval_inner(node, scope);
    } catch (TemplateError& e) {
        if (!e.located()) e.locate(node.line, describe(node));
        throw;
    }
}

Value Evaluator::eval_inner(const Node& node, const ScopePtr& scope) {
    switch (node.kind) {
        case NodeKind::constant:
            return as<Constant>(node).value;
        case NodeKind::name:
            return lookup(as<Name>(node).name, scope);
        case NodeKind::list:
        case NodeKind::tuple: {
            List items;
            for (const auto& item : as<Sequence>(node).items) items.push_back(eval(*item, scope));
            return node.kind == NodeKind::list ? Value::list(std::move(items))
                                               : Value::tuple(std::move(items));
        }
        case NodeKind::dict: {
            Dict d;
            for (const auto& [k, v] : as<DictLiteral>(node).items) {
                Value key = eval(*k, scope);
                check_hashable(key);
                d.set(std::move(key), eval(*v, scope));
            }
            return Value::dict(std::move(d));
        }
        case NodeKind::get_attr: {
            const GetAttr& n = as<GetAttr>(node);
            return get_attr(eval(*n.object, scope), n.attr);
        }
        case NodeKind::get_item: {
            const GetItem& n = as<GetItem>(node);
            const Value obj = eval(*n.object, scope);
            if (n.key->kind != NodeKind::slice) return get_item(obj, eval(*n.key, scope));
            const Slice& s = as<Slice>(*n.key);
            const auto bound = [&](const NodePtr& e) {
                return e ? eval(*e, scope) : Value::none();
            };
            const Value start = bound(s.start), stop = bound(s.stop), step = bound(s.step);
            // Jinja2 slices with Python's own obj[a:b:c], not the sandbox's getitem: what
            // cannot be sliced raises.
            if (obj.is_undefined()) obj.fail_undefined();
            if (obj.is_dict()) throw_error(ErrorKind::type, "unhashable type: 'slice'");
            if (!obj.is_string() && !obj.is_sequence())
                throw_error(ErrorKind::type, "'{}' object is not subscriptable", type_name(obj));
            const auto index = [](const Value& v) -> std::optional<int64_t> {
                if (v.is_none()) return std::nullopt;
                if (v.is_undefined()) v.fail_undefined();
                if (!v.is_integral())
                    throw_error(ErrorKind::type,
                                "slice indices must be integers or None or have an __index__ "
                                "method");
                return v.as_int();
            };
            const auto a = index(start), b = index(stop), c = index(step);
            if (obj.is_string()) {
                const std::u32string u = text::decode(obj.str());
                const auto r = text::resolve_slice(a, b, c, u.size());
                std::u32string out;
                for (size_t i = 0; i < r.count; ++i)
                    out += u[size_t(r.start + int64_t(i) * r.step)];
                return obj.is_markup() ? Value::markup(text::encode(out))
                                       : Value::string(text::encode(out));
            }
            const List& items = obj.items();
            const auto r = text::resolve_slice(a, b, c, items.size());
            List out;
            out.reserve(r.count);
            for (size_t i = 0; i < r.count; ++i)
                out.push_back(items[size_t(r.start + int64_t(i) * r.step)]);
            return obj.is_list() ? Value::list(std::move(out)) : Value::tuple(std::move(out));
        }
        case NodeKind::call: {
            const Call& n = as<Call>(node);
            const Value callee = eval(*n.callee, scope);
            return call(callee, eval_args(n.args, scope));
        }
        case NodeKind::filter:
            return eval_filter(as<FilterOrTest>(node), scope, nullptr);
        case NodeKind::test: {
            const FilterOrTest& n = as<FilterOrTest>(node);
            const Value v = eval(*n.value, scope);
            return Value::boolean(apply_test(n.name, v, eval_args(n.args, scope)));
        }
        case NodeKind::unary: {
            const Unary& n = as<Unary>(node);
            const Value v = eval(*n.operand, scope);
            if (n.op == '!') return Value::boolean(!truthy(v));
            return n.op == '-' ? negate(v) : unary_plus(v);
        }
        case NodeKind::binary: {
            const Binary& n = as<Binary>(node);
            const Value a = eval(*n.left, scope);
            return binary_op(*this, n.op, a, eval(*n.right, scope));
        }
        case NodeKind::concat: {
            std::string out;
            for (const auto& part : as<Concat>(node).parts) {
                out += to_str(eval(*part, scope));
                check_size(out.size());
            }
            charge(out.size());
            return Value::string(std::move(out));
        }
        case NodeKind::compare: {
            const Compare& n = as<Compare>(node);
            Value left = eval(*n.first, scope);
            for (const auto& [op, expr] : n.rest) {
                Value right = eval(*expr, scope);
                if (!compare_op(*this, op, left, right)) return Value::boolean(false);
                left = std::move(right);
            }
            return Value::boolean(true);
        }
        case NodeKind::logical: {
            const Logical& n = as<Logical>(node);
            Value left = eval(*n.left, scope);
            if (truthy(left) != n.is_and) return left;
            return eval(*n.right, scope);
        }
        case NodeKind::cond: {
            const Cond& n = as<Cond>(node);
            if (truthy(eval(*n.test, scope))) return eval(*n.then, scope);
            if (n.otherwise) return eval(*n.otherwise, scope);
            return Value::undefined(fmt::format(
                "the inline if-expression on line {} evaluated to false and no else section was "
                "defined.",
                node.line));
        }
        default:
            throw_error(ErrorKind::runtime, "{} is not an expression", describe(node));
    }
}

Value Evaluator::eval_filter(const FilterOrTest& node, const ScopePtr& scope,
                             const Value* block_input) {
    Value input;
    if (!node.value) {
        input = *block_input;
    } else if (node.value->kind == NodeKind::filter && block_input) {
        input = eval_filter(as<FilterOrTest>(*node.value), scope, block_input);
    } else {
        input = eval(*node.value, scope);
    }
    try {
        return apply_filter(node.name, input, eval_args(node.args, scope));
    } catch (TemplateError& e) {
        if (!e.located()) e.locate(node.line, describe(node));
        throw;
    }
}

CallArgs Evaluator::eval_args(const Args& args, const ScopePtr& scope) {
    CallArgs out;
    for (const auto& p : args.positional) out.positional.push_back(eval(*p, scope));
    for (const auto& [k, v] : args.keywords) out.keywords.emplace_back(k, eval(*v, scope));
    if (args.star) {
        const Value extra = eval(*args.star, scope);
        if (!iterable(extra) || extra.is_undefined())
            throw_error(ErrorKind::type, "argument after * must be an iterable, not {}",
                        type_name(extra));
        for (Value& v : to_list(*this, extra)) out.positional.push_back(std::move(v));
    }
    if (args.star_star) {
        const Value extra = eval(*args.star_star, scope);
        if (!extra.is_dict())
            throw_error(ErrorKind::type, "argument after ** must be a mapping, not {}",
                        type_name(extra));
        for (const auto& [k, v] : extra.dict().entries) {
            if (!k.is_string()) throw_error(ErrorKind::type, "keywords must be strings");
            out.keywords.emplace_back(k.str(), v);
        }
    }
    for (size_t i = 0; i < out.keywords.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (out.keywords[i].first == out.keywords[j].first)
                throw_error(ErrorKind::type, "got multiple values for keyword argument '{}'",
                            out.keywords[i].first);
    return out;
}

Value Evaluator::lookup(std::string_view name, const ScopePtr& scope) {
    if (const Value* v = scope->find(name)) return *v;
    if (const Value* v = context_.variables.find(name)) return *v;
    if (std::optional<Value> g = find_global(name)) return *g;
    return Value::undefined(fmt::format("'{}' is undefined", name));
}

// ---- the sandbox's lookups ---------------------------------------------------------------

namespace {

// getattr(obj, name) without the item fallback: nullopt for AttributeError.
std::optional<Value> python_getattr(Evaluator& ev, const Value& obj, std::string_view name) {
    if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__")
        return Value::undefined(
            fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type_name(obj)),
            ErrorKind::security);
    if (obj.is_object()) return obj.object()->attribute(ev, name);
    return builtin_attribute(obj, name);
}

}  // namespace

Value Evaluator::get_attr(const Value& obj, std::string_view name) {
    if (obj.is_undefined()) obj.fail_undefined();
    if (std::optional<Value> v = python_getattr(*this, obj, name)) return *v;
    if (obj.is_dict())
        if (const Value* v = obj.dict().find(name)) return *v;
    return Value::undefined(fmt::format("'{}' has no attribute '{}'", object_type_repr(obj), name));
}

Value Evaluator::get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) obj.fail_undefined();
    switch (obj.kind()) {
        case Kind::dict: {
            const bool hashable = !(key.is_list() || key.is_dict());
            if (hashable)
                if (const Value* v = obj.dict().find(key)) return *v;
            break;
        }
        case Kind::list:
        case Kind::tuple:
            if (key.is_integral()) {
                const List& items = obj.items();
                int64_t i = key.as_int();
                if (i < 0) i += int64_t(items.size());
                if (i >= 0 && i < int64_t(items.size())) return items[size_t(i)];
            }
            break;
        case Kind::string:
            if (key.is_integral()) {
                const std::string& s = obj.str();
                const int64_t len = int64_t(text::is_ascii(s) ? s.size() : text::length(s));
                int64_t i = key.as_int();
                if (i < 0) i += len;
                if (i >= 0 && i < len) {
                    std::string c = text::substr(s, size_t(i), size_t(i) + 1);
                    return obj.is_markup() ? Value::markup(std::move(c))
                                           : Value::string(std::move(c));
                }
            }
            break;
        default:
            break;
    }
    if (key.is_string())
        if (std::optional<Value> v = python_getattr(*this, obj, key.str())) return *v;
    if (key.is_string())
        return Value::undefined(
            fmt::format("'{}' has no attribute '{}'", object_type_repr(obj), key.str()));
    return Value::undefined(fmt::format("{} has no element {}", object_type_repr(obj), repr(key)));
}

Value Evaluator::call(const Value& callee, const CallArgs& args) {
    if (callee.is_undefined()) callee.fail_undefined();
    if (callee.is_object() && callee.object()->callable())
        return callee.object()->call(*this, args);
    throw_error(ErrorKind::type, "'{}' object is not callable", type_name(callee));
}

Value Evaluator::apply_filter(std::string_view name, const Value& value, const CallArgs& args) {
    const FilterFn fn = find_filter(name);
    if (!fn) throw_error(ErrorKind::runtime, "No filter named '{}' found.", name);
    return fn(*this, value, args);
}

bool Evaluator::apply_test(std::string_view name, const Value& value, const CallArgs& args) {
    const TestFn fn = find_test(name);
    if (!fn) throw_error(ErrorKind::runtime, "No test named '{}' found.", name);
    return fn(*this, value, args);
}

}  // namespace mw::tmpl
