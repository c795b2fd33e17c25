// The syntax tree of a parsed template: what Jinja2's parser builds (jinja2.nodes), parsed
// once and rendered many times. Every node keeps its line for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace mw::tmpl {

enum class NodeKind {
    // expressions
    constant,
    name,
    list,
    tuple,
    dict,
    get_attr,
    get_item,
    slice,
    call,
    filter,
    test,
    unary,
    binary,
    concat,
    compare,
    logical,
    cond,
    ns_ref,
    // statements
    output,
    if_,
    for_,
    assign,
    assign_block,
    macro,
    call_block,
    filter_block,
    with,
    break_,
    continue_,
    block,
    unsupported,
};

struct Node {
    NodeKind kind;
    int line;
    Node(NodeKind k, int l) : kind(k), line(l) {}
    virtual ~Node() = default;
};
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

template <typename T>
const T& as(const Node& n) {
    return static_cast<const T&>(n);
}

// ---- expressions -------------------------------------------------------------------------

struct Constant : Node {
    Value value;
    Constant(int l, Value v) : Node(NodeKind::constant, l), value(std::move(v)) {}
};

struct Name : Node {
    std::string name;
    Name(int l, std::string n) : Node(NodeKind::name, l), name(std::move(n)) {}
};

// list, tuple
struct Sequence : Node {
    std::vector<NodePtr> items;
    Sequence(NodeKind k, int l) : Node(k, l) {}
};

struct DictLiteral : Node {
    std::vector<std::pair<NodePtr, NodePtr>> items;
    explicit DictLiteral(int l) : Node(NodeKind::dict, l) {}
};

struct GetAttr : Node {
    NodePtr object;
    std::string attr;
    GetAttr(int l, NodePtr o, std::string a)
        : Node(NodeKind::get_attr, l), object(std::move(o)), attr(std::move(a)) {}
};

struct GetItem : Node {
    NodePtr object;
    NodePtr key;  // an expression or a Slice
    GetItem(int l, NodePtr o, NodePtr k)
        : Node(NodeKind::get_item, l), object(std::move(o)), key(std::move(k)) {}
};

struct Slice : Node {
    NodePtr start, stop, step;  // each may be null
    explicit Slice(int l) : Node(NodeKind::slice, l) {}
};

struct Args {
    std::vector<NodePtr> positional;
    std::vector<std::pair<std::string, NodePtr>> keywords;
    NodePtr star;       // *args
    NodePtr star_star;  // **kwargs
};

struct Call : Node {
    NodePtr callee;
    Args args;
    Call(int l, NodePtr c) : Node(NodeKind::call, l), callee(std::move(c)) {}
};

// `value | name(args)` and `value is [not] name(args)`; for a filter block the value is null
// (the rendered body).
struct FilterOrTest : Node {
    NodePtr value;
    std::string name;
    Args args;
    FilterOrTest(NodeKind k, int l, NodePtr v, std::string n)
        : Node(k, l), value(std::move(v)), name(std::move(n)) {}
};

struct Unary : Node {
    char op;  // '-', '+', '!' (not)
    NodePtr operand;
    Unary(int l, char o, NodePtr e) : Node(NodeKind::unary, l), op(o), operand(std::move(e)) {}
};

enum class BinaryOp { add, sub, mul, div, floordiv, mod, pow };

struct Binary : Node {
    BinaryOp op;
    NodePtr left, right;
    Binary(int l, BinaryOp o, NodePtr a, NodePtr b)
        : Node(NodeKind::binary, l), op(o), left(std::move(a)), right(std::move(b)) {}
};

struct Concat : Node {
    std::vector<NodePtr> parts;
    explicit Concat(int l) : Node(NodeKind::concat, l) {}
};

enum class CompareOp { eq, ne, lt, le, gt, ge, in, not_in };

struct Compare : Node {
    NodePtr first;
    std::vector<std::pair<CompareOp, NodePtr>> rest;
    Compare(int l, NodePtr f) : Node(NodeKind::compare, l), first(std::move(f)) {}
};

struct Logical : Node {
    bool is_and;
    NodePtr left, right;
    Logical(int l, bool a, NodePtr x, NodePtr y)
        : Node(NodeKind::logical, l), is_and(a), left(std::move(x)), right(std::move(y)) {}
};

// `then if test else otherwise` (otherwise may be null: undefined)
struct Cond : Node {
    NodePtr test, then, otherwise;
    explicit Cond(int l) : Node(NodeKind::cond, l) {}
};

// `ns.attr` as an assignment target
struct NsRef : Node {
    std::string name, attr;
    NsRef(int l, std::string n, std::string a)
        : Node(NodeKind::ns_ref, l), name(std::move(n)), attr(std::move(a)) {}
};

// ---- statements --------------------------------------------------------------------------

// Template text and {{ expressions }}, in order. A part with a null expr is text.
struct Output : Node {
    struct Part {
        std::string text;
        NodePtr expr;
    };
    std::vector<Part> parts;
    explicit Output(int l) : Node(NodeKind::output, l) {}
};

struct If : Node {
    std::vector<std::pair<NodePtr, Body>> branches;  // if, elif...
    Body otherwise;
    explicit If(int l) : Node(NodeKind::if_, l) {}
};

struct For : Node {
    NodePtr target, iter, filter;  // filter may be null
    Body body, otherwise;
    bool recursive = false;
    explicit For(int l) : Node(NodeKind::for_, l) {}
};

struct Assign : Node {
    NodePtr target, value;
    explicit Assign(int l) : Node(NodeKind::assign, l) {}
};

struct AssignBlock : Node {
    NodePtr target;
    NodePtr filter;  // a filter chain whose innermost value is null, or null
    Body body;
    explicit AssignBlock(int l) : Node(NodeKind::assign_block, l) {}
};

// The parameters of a macro or call block, and the special names its body uses.
struct Signature {
    std::vector<std::string> params;
    std::vector<NodePtr> defaults;  // for the last defaults.size() params
    bool catch_kwargs = false;      // the body reads `kwargs`
    bool catch_varargs = false;     // `varargs`
    bool caller = false;            // `caller`
};

struct MacroDef : Node {
    std::string name;
    Signature signature;
    Body body;
    MacroDef(int l, std::string n) : Node(NodeKind::macro, l), name(std::move(n)) {}
};

struct CallBlock : Node {
    NodePtr call;  // a Call
    Signature signature;
    Body body;
    explicit CallBlock(int l) : Node(NodeKind::call_block, l) {}
};

struct FilterBlock : Node {
    NodePtr filter;  // chain whose innermost value is null
    Body body;
    explicit FilterBlock(int l) : Node(NodeKind::filter_block, l) {}
};

struct With : Node {
    std::vector<NodePtr> targets, values;
    Body body;
    // transformers' {% generation %} (its AssistantTracker extension, which chat templates
    // mark the assistant's text with): the body in its own scope, as a caller() body.
    bool generation = false;
    explicit With(int l) : Node(NodeKind::with, l) {}
};

struct Block : Node {
    std::string name;
    bool scoped = false;
    Body body;
    Block(int l, std::string n) : Node(NodeKind::block, l), name(std::move(n)) {}
};

// include / import / extends / autoescape: parsed as Jinja2 does, refused when rendered (a
// template from a string has no loader).
struct Unsupported : Node {
    std::string what;
    Unsupported(int l, std::string w) : Node(NodeKind::unsupported, l), what(std::move(w)) {}
};

struct Simple : Node {  // break, continue
    Simple(NodeKind k, int l) : Node(k, l) {}
};

// The operator as written in a template ("+", "//", "**").
const char* symbol(BinaryOp op);

// A short description of a node for error messages ("filter 'tojson'", "for loop").
std::string describe(const Node& node);

}  // namespace mw::tmpl
