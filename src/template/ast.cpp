#include "template/ast.h"

#include <fmt/format.h>

namespace mw::tmpl {

namespace {

// The callee of a call as written: `raise_exception`, `message.content.split`.
std::string callee_text(const Node& n) {
    if (n.kind == NodeKind::name) return as<Name>(n).name;
    if (n.kind == NodeKind::get_attr) {
        const GetAttr& g = as<GetAttr>(n);
        return callee_text(*g.object) + "." + g.attr;
    }
    if (n.kind == NodeKind::get_item) return callee_text(*as<GetItem>(n).object) + "[...]";
    if (n.kind == NodeKind::call) return callee_text(*as<Call>(n).callee) + "(...)";
    return "(...)";
}

}  // namespace

const char* symbol(BinaryOp op) {
    switch (op) {
        case BinaryOp::add:
            return "+";
        case BinaryOp::sub:
            return "-";
        case BinaryOp::mul:
            return "*";
        case BinaryOp::div:
            return "/";
        case BinaryOp::floordiv:
            return "//";
        case BinaryOp::mod:
            return "%";
        case BinaryOp::pow:
            return "**";
    }
    return "?";
}

std::string describe(const Node& node) {
    switch (node.kind) {
        case NodeKind::constant:
            return "literal";
        case NodeKind::name:
            return fmt::format("variable '{}'", as<Name>(node).name);
        case NodeKind::list:
            return "list literal";
        case NodeKind::tuple:
            return "tuple";
        case NodeKind::dict:
            return "dict literal";
        case NodeKind::get_attr:
            return fmt::format("attribute '{}'", callee_text(node));
        case NodeKind::get_item:
            return fmt::format("subscript '{}'", callee_text(node));
        case NodeKind::slice:
            return "slice";
        case NodeKind::call:
            return fmt::format("call of {}()", callee_text(*as<Call>(node).callee));
        case NodeKind::filter:
            return fmt::format("filter '{}'", as<FilterOrTest>(node).name);
        case NodeKind::test:
            return fmt::format("test '{}'", as<FilterOrTest>(node).name);
        case NodeKind::unary: {
            const char op = as<Unary>(node).op;
            return op == '!' ? "operator 'not'" : fmt::format("unary '{}'", op);
        }
        case NodeKind::binary:
            return fmt::format("operator '{}'", symbol(as<Binary>(node).op));
        case NodeKind::concat:
            return "operator '~'";
        case NodeKind::compare:
            return "comparison";
        case NodeKind::logical:
            return as<Logical>(node).is_and ? "operator 'and'" : "operator 'or'";
        case NodeKind::cond:
            return "inline if";
        case NodeKind::ns_ref:
            return fmt::format("'{}.{}'", as<NsRef>(node).name, as<NsRef>(node).attr);
        case NodeKind::output:
            return "{{ ... }}";
        case NodeKind::if_:
            return "'if' tag";
        case NodeKind::for_:
            return "'for' loop";
        case NodeKind::assign:
            return "'set' tag";
        case NodeKind::assign_block:
            return "'set' block";
        case NodeKind::macro:
            return fmt::format("macro '{}'", as<MacroDef>(node).name);
        case NodeKind::call_block:
            return "'call' block";
        case NodeKind::filter_block:
            return "'filter' block";
        case NodeKind::with:
            return as<With>(node).generation ? "'generation' block" : "'with' block";
        case NodeKind::break_:
            return "break";
        case NodeKind::continue_:
            return "continue";
        case NodeKind::block:
            return fmt::format("block '{}'", as<Block>(node).name);
        case NodeKind::unsupported:
            return as<Unsupported>(node).what;
    }
    return "node";
}

}  // namespace mw::tmpl
