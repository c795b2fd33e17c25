// The checks Jinja2's compiler makes before a template renders (see parser.h).
#include <algorithm>

#include "template/error.h"
#include "template/library.h"
#include "template/parser.h"

namespace mw::tmpl {

namespace {

class Checker {
  public:
    void body(Body& b, bool soft, int loops) {
        for (auto& n : b) node(*n, soft, loops);
    }

  private:
    [[noreturn]] static void fail(const Node& n, const std::string& message) {
        TemplateError e(ErrorKind::syntax, message);
        e.locate(n.line, describe(n));
        throw e;
    }

    void args(Args& a, bool soft) {
        for (auto& p : a.positional) expr(p.get(), soft);
        for (auto& [k, v] : a.keywords) expr(v.get(), soft);
        expr(a.star.get(), soft);
        expr(a.star_star.get(), soft);
    }

    void expr(Node* n, bool soft) {
        if (!n) return;
        switch (n->kind) {
            case NodeKind::list:
            case NodeKind::tuple:
                for (auto& i : static_cast<Sequence*>(n)->items) expr(i.get(), soft);
                break;
            case NodeKind::dict:
                for (auto& [k, v] : static_cast<DictLiteral*>(n)->items) {
                    expr(k.get(), soft);
                    expr(v.get(), soft);
                }
                break;
            case NodeKind::get_attr:
                expr(static_cast<GetAttr*>(n)->object.get(), soft);
                break;
            case NodeKind::get_item:
                expr(static_cast<GetItem*>(n)->object.get(), soft);
                expr(static_cast<GetItem*>(n)->key.get(), soft);
                break;
            case NodeKind::slice: {
                auto* s = static_cast<Slice*>(n);
                expr(s->start.get(), soft);
                expr(s->stop.get(), soft);
                expr(s->step.get(), soft);
                break;
            }
            case NodeKind::call:
                expr(static_cast<Call*>(n)->callee.get(), soft);
                args(static_cast<Call*>(n)->args, soft);
                break;
            case NodeKind::filter:
            case NodeKind::test: {
                auto* f = static_cast<FilterOrTest*>(n);
                const bool is_filter = n->kind == NodeKind::filter;
                if (!soft &&
                    !(is_filter ? find_filter(f->name) != nullptr : find_test(f->name) != nullptr))
                    fail(*n,
                         fmt::format("No {} named '{}'.", is_filter ? "filter" : "test", f->name));
                expr(f->value.get(), soft);
                args(f->args, soft);
                break;
            }
            case NodeKind::unary:
                expr(static_cast<Unary*>(n)->operand.get(), soft);
                break;
            case NodeKind::binary:
                expr(static_cast<Binary*>(n)->left.get(), soft);
                expr(static_cast<Binary*>(n)->right.get(), soft);
                break;
            case NodeKind::concat:
                for (auto& p : static_cast<Concat*>(n)->parts) expr(p.get(), soft);
                break;
            case NodeKind::compare:
                expr(static_cast<Compare*>(n)->first.get(), soft);
                for (auto& [op, e] : static_cast<Compare*>(n)->rest) expr(e.get(), soft);
                break;
            case NodeKind::logical:
                expr(static_cast<Logical*>(n)->left.get(), soft);
                expr(static_cast<Logical*>(n)->right.get(), soft);
                break;
            case NodeKind::cond: {
                auto* c = static_cast<Cond*>(n);
                expr(c->test.get(), true);
                expr(c->then.get(), true);
                expr(c->otherwise.get(), true);
                break;
            }
            default:
                break;
        }
    }

    void signature(Signature& sig, Body& b) {
        for (auto& d : sig.defaults) expr(d.get(), false);
        UsedNames used;
        used.body(b);
        const auto param = [&](const char* n) {
            return std::find(sig.params.begin(), sig.params.end(), n) != sig.params.end();
        };
        sig.caller = used.caller && !param("caller");
        sig.catch_kwargs = used.kwargs && !param("kwargs");
        sig.catch_varargs = used.varargs && !param("varargs");
        body(b, false, 0);
    }

    void node(Node& n, bool soft, int loops) {
        switch (n.kind) {
            case NodeKind::output:
                for (auto& p : static_cast<Output&>(n).parts) expr(p.expr.get(), soft);
                break;
            case NodeKind::if_: {
                auto& i = static_cast<If&>(n);
                for (auto& [test, b] : i.branches) {
                    expr(test.get(), true);
                    body(b, true, loops);
                }
                body(i.otherwise, true, loops);
                break;
            }
            case NodeKind::for_: {
                auto& f = static_cast<For&>(n);
                expr(f.iter.get(), soft);
                expr(f.filter.get(), false);
                body(f.body, false, loops + 1);
                body(f.otherwise, false, loops);
                break;
            }
            case NodeKind::assign:
                expr(static_cast<Assign&>(n).value.get(), soft);
                break;
            case NodeKind::assign_block:
                expr(static_cast<AssignBlock&>(n).filter.get(), false);
                body(static_cast<AssignBlock&>(n).body, false, loops);
                break;
            case NodeKind::macro: {
                auto& m = static_cast<MacroDef&>(n);
                signature(m.signature, m.body);
                break;
            }
            case NodeKind::call_block: {
                auto& c = static_cast<CallBlock&>(n);
                expr(c.call.get(), soft);
                signature(c.signature, c.body);
                break;
            }
            case NodeKind::filter_block:
                expr(static_cast<FilterBlock&>(n).filter.get(), false);
                body(static_cast<FilterBlock&>(n).body, false, loops);
                break;
            case NodeKind::with: {
                auto& w = static_cast<With&>(n);
                for (auto& v : w.values) expr(v.get(), soft);
                // transformers compiles a generation block as a caller() macro: no loop there.
                body(w.body, false, w.generation ? 0 : loops);
                break;
            }
            case NodeKind::block:
                body(static_cast<Block&>(n).body, false, 0);
                break;
            case NodeKind::break_:
            case NodeKind::continue_:
                if (loops == 0) fail(n, fmt::format("'{}' outside loop", describe(n)));
                break;
            default:
                break;
        }
    }

    // Finds whether a macro body reads caller / kwargs / varargs (Jinja2's find_undeclared:
    // nested blocks are not searched).
    struct UsedNames {
        bool caller = false, kwargs = false, varargs = false;

        void body(const Body& b) {
            for (const auto& n : b) node(*n);
        }
        void args(const Args& a) {
            for (const auto& p : a.positional) node(*p);
            for (const auto& [k, v] : a.keywords) node(*v);
            if (a.star) node(*a.star);
            if (a.star_star) node(*a.star_star);
        }
        void opt(const NodePtr& n) {
            if (n) node(*n);
        }
        void node(const Node& n) {
            switch (n.kind) {
                case NodeKind::name: {
                    const std::string& name = as<Name>(n).name;
                    caller |= name == "caller";
                    kwargs |= name == "kwargs";
                    varargs |= name == "varargs";
                    break;
                }
                case NodeKind::list:
                case NodeKind::tuple:
                    for (const auto& i : as<Sequence>(n).items) node(*i);
                    break;
                case NodeKind::dict:
                    for (const auto& [k, v] : as<DictLiteral>(n).items) {
                        node(*k);
                        node(*v);
                    }
                    break;
                case NodeKind::get_attr:
                    node(*as<GetAttr>(n).object);
                    break;
                case NodeKind::get_item:
                    node(*as<GetItem>(n).object);
                    node(*as<GetItem>(n).key);
                    break;
                case NodeKind::slice:
                    opt(as<Slice>(n).start);
                    opt(as<Slice>(n).stop);
                    opt(as<Slice>(n).step);
                    break;
                case NodeKind::call:
                    node(*as<Call>(n).callee);
                    args(as<Call>(n).args);
                    break;
                case NodeKind::filter:
                case NodeKind::test:
                    opt(as<FilterOrTest>(n).value);
                    args(as<FilterOrTest>(n).args);
                    break;
                case NodeKind::unary:
                    node(*as<Unary>(n).operand);
                    break;
                case NodeKind::binary:
                    node(*as<Binary>(n).left);
                    node(*as<Binary>(n).right);
                    break;
                case NodeKind::concat:
                    for (const auto& p : as<Concat>(n).parts) node(*p);
                    break;
                case NodeKind::compare:
                    node(*as<Compare>(n).first);
                    for (const auto& [op, e] : as<Compare>(n).rest) node(*e);
                    break;
                case NodeKind::logical:
                    node(*as<Logical>(n).left);
                    node(*as<Logical>(n).right);
                    break;
                case NodeKind::cond:
                    opt(as<Cond>(n).test);
                    opt(as<Cond>(n).then);
                    opt(as<Cond>(n).otherwise);
                    break;
                case NodeKind::output:
                    for (const auto& p : as<Output>(n).parts) opt(p.expr);
                    break;
                case NodeKind::if_:
                    for (const auto& [t, b] : as<If>(n).branches) {
                        node(*t);
                        body(b);
                    }
                    body(as<If>(n).otherwise);
                    break;
                case NodeKind::for_:
                    node(*as<For>(n).iter);
                    opt(as<For>(n).filter);
                    body(as<For>(n).body);
                    body(as<For>(n).otherwise);
                    break;
                case NodeKind::assign:
                    node(*as<Assign>(n).value);
                    break;
                case NodeKind::assign_block:
                    opt(as<AssignBlock>(n).filter);
                    body(as<AssignBlock>(n).body);
                    break;
                case NodeKind::macro:
                    for (const auto& d : as<MacroDef>(n).signature.defaults) node(*d);
                    body(as<MacroDef>(n).body);
                    break;
                case NodeKind::call_block:
                    node(*as<CallBlock>(n).call);
                    body(as<CallBlock>(n).body);
                    break;
                case NodeKind::filter_block:
                    opt(as<FilterBlock>(n).filter);
                    body(as<FilterBlock>(n).body);
                    break;
                case NodeKind::with:
                    for (const auto& v : as<With>(n).values) node(*v);
                    body(as<With>(n).body);
                    break;
                default:
                    break;
            }
        }
    };
};

}  // namespace

void check(Body& body) {
    Checker().body(body, false, 0);
}

}  // namespace mw::tmpl
