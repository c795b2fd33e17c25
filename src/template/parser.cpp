#include "template/parser.h"

#include <algorithm>
#include <initializer_list>

#include "template/error.h"

namespace mw::tmpl {

namespace {

bool is_op(const Token& t, std::string_view op) {
    return t.type == TokenType::op && t.value == op;
}
bool is_name(const Token& t, std::string_view name) {
    return t.type == TokenType::name && t.value == name;
}

class Parser {
  public:
    Parser(std::vector<Token> tokens, const ParseOptions& options)
        : tokens_(std::move(tokens)), options_(options) {}

    Body parse_template() {
        Body body = subparse({});
        return body;
    }

  private:
    // ---- token stream -------------------------------------------------------------------

    const Token& current() const { return tokens_[pos_]; }
    const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
    const Token& next() {
        const Token& t = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) ++pos_;
        return t;
    }
    bool skip_op(std::string_view op) {
        if (!is_op(current(), op)) return false;
        next();
        return true;
    }
    bool skip_name(std::string_view name) {
        if (!is_name(current(), name)) return false;
        next();
        return true;
    }

    [[noreturn]] void fail(const std::string& message, int line = 0) {
        TemplateError e(ErrorKind::syntax, message);
        std::string construct = "template text";
        if (!tag_stack_.empty()) construct = "'" + tag_stack_.back() + "' tag";
        if (in_print_ > 0 && tag_stack_.empty()) construct = "{{ ... }}";
        e.locate(line ? line : current().line, construct);
        throw e;
    }

    [[noreturn]] void fail_expected(const std::string& what) {
        if (current().type == TokenType::eof) fail_eof({});
        fail(fmt::format("expected token '{}', got '{}'", what, describe(current())));
    }

    const Token& expect_op(std::string_view op) {
        if (!is_op(current(), op)) fail_expected(std::string(op));
        return next();
    }
    const Token& expect_name(std::string_view name) {
        if (!is_name(current(), name)) fail_expected(std::string(name));
        return next();
    }
    const Token& expect_any_name() {
        if (current().type != TokenType::name) fail_expected("name");
        return next();
    }
    void expect_type(TokenType type, const char* what) {
        if (current().type != type) fail_expected(what);
        next();
    }

    [[noreturn]] void fail_eof(const std::vector<std::string>& end_tokens) {
        std::vector<std::vector<std::string>> stack = end_stack_;
        if (!end_tokens.empty()) stack.push_back(end_tokens);
        std::string message = "Unexpected end of template.";
        if (!stack.empty()) {
            std::string expected;
            const auto& want = stack.back();
            for (size_t i = 0; i < want.size(); ++i)
                expected +=
                    (i ? (i + 1 == want.size() ? " or " : ", ") : "") + ("'" + want[i] + "'");
            message += " Jinja was looking for the following tags: " + expected + ".";
        }
        if (!tag_stack_.empty())
            message +=
                " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
        fail(message);
    }

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser) : p(parser) {
            if (++p.depth_ > p.options_.max_depth)
                p.fail(fmt::format("nesting deeper than {} levels", p.options_.max_depth));
        }
        ~DepthGuard() { --p.depth_; }
    };

    // ---- statements ---------------------------------------------------------------------

    bool at_end_token(const std::vector<std::string>& end_tokens) const {
        const Token& t = current();
        if (t.type != TokenType::name) return false;
        return std::find(end_tokens.begin(), end_tokens.end(), t.value) != end_tokens.end();
    }

    Body subparse(const std::vector<std::string>& end_tokens) {
        Body body;
        std::unique_ptr<Output> out;
        if (!end_tokens.empty()) end_stack_.push_back(end_tokens);
        const auto flush = [&] {
            if (out) body.push_back(std::move(out));
            out.reset();
        };
        while (current().type != TokenType::eof) {
            const Token& t = current();
            if (t.type == TokenType::data) {
                if (!out) out = std::make_unique<Output>(t.line);
                out->parts.push_back({t.value, nullptr});
                next();
            } else if (t.type == TokenType::var_begin) {
                next();
                if (!out) out = std::make_unique<Output>(current().line);
                ++in_print_;
                NodePtr e = parse_tuple(false, true, {}, false);
                --in_print_;
                expect_type(TokenType::var_end, "end of print statement");
                out->parts.push_back({"", std::move(e)});
            } else if (t.type == TokenType::block_begin) {
                flush();
                next();
                if (!end_tokens.empty() && at_end_token(end_tokens)) {
                    end_stack_.pop_back();
                    return body;
                }
                NodePtr stmt = parse_statement();
                if (stmt) body.push_back(std::move(stmt));
                expect_type(TokenType::block_end, "end of statement block");
            } else {
                fail(fmt::format("unexpected '{}'", describe(t)));
            }
        }
        flush();
        if (!end_tokens.empty()) end_stack_.pop_back();
        return body;
    }

    Body parse_statements(const std::vector<std::string>& end_tokens, bool drop_needle) {
        skip_op(":");
        expect_type(TokenType::block_end, "end of statement block");
        Body body = subparse(end_tokens);
        if (current().type == TokenType::eof) fail_eof(end_tokens);
        if (drop_needle) next();
        return body;
    }

    NodePtr parse_statement() {
        const Token& t = current();
        if (t.type != TokenType::name) fail("tag name expected");
        const std::string tag = t.value;
        static const char* const kKnown[] = {"for",      "if",         "block", "extends", "print",
                                             "macro",    "include",    "from",  "import",  "set",
                                             "with",     "autoescape", "call",  "filter",  "break",
                                             "continue", "generation"};
        if (std::find_if(std::begin(kKnown), std::end(kKnown),
                         [&](const char* k) { return tag == k; }) == std::end(kKnown)) {
            std::string message = fmt::format("Encountered unknown tag '{}'.", tag);
            for (auto it = end_stack_.rbegin(); it != end_stack_.rend(); ++it) {
                if (std::find(it->begin(), it->end(), tag) != it->end()) {
                    message += " You probably made a nesting mistake.";
                    break;
                }
            }
            if (!end_stack_.empty()) {
                std::string expected;
                const auto& want = end_stack_.back();
                for (size_t i = 0; i < want.size(); ++i)
                    expected +=
                        (i ? (i + 1 == want.size() ? " or " : ", ") : "") + ("'" + want[i] + "'");
                message += " Jinja was looking for the following tags: " + expected + ".";
            }
            fail(message);
        }
        DepthGuard guard(*this);
        tag_stack_.push_back(tag);
        NodePtr node;
        if (tag == "for") {
            node = parse_for();
        } else if (tag == "if") {
            node = parse_if();
        } else if (tag == "set") {
            node = parse_set();
        } else if (tag == "macro") {
            node = parse_macro();
        } else if (tag == "call") {
            node = parse_call_block();
        } else if (tag == "filter") {
            node = parse_filter_block();
        } else if (tag == "with") {
            node = parse_with();
        } else if (tag == "generation") {
            auto with = std::make_unique<With>(next().line);
            with->generation = true;
            with->body = parse_statements({"endgeneration"}, true);
            node = std::move(with);
        } else if (tag == "print") {
            node = parse_print();
        } else if (tag == "block") {
            node = parse_block();
        } else if (tag == "break" || tag == "continue") {
            node = std::make_unique<Simple>(tag == "break" ? NodeKind::break_ : NodeKind::continue_,
                                            next().line);
        } else {
            node = parse_unsupported(tag);
        }
        tag_stack_.pop_back();
        return node;
    }

    NodePtr parse_for() {
        auto node = std::make_unique<For>(next().line);
        node->target = parse_assign_target(true, false, {"in"}, false);
        check_loop_target(*node->target);
        expect_name("in");
        node->iter = parse_tuple(false, false, {"recursive"}, false);
        if (skip_name("if")) node->filter = parse_expression(true);
        node->recursive = skip_name("recursive");
        node->body = parse_statements({"endfor", "else"}, false);
        if (next().value == "else") node->otherwise = parse_statements({"endfor"}, true);
        return node;
    }

    void check_loop_target(const Node& target) {
        if (target.kind == NodeKind::name && as<Name>(target).name == "loop")
            fail("Can't assign to special loop variable in for-loop target", target.line);
        if (target.kind == NodeKind::tuple)
            for (const auto& item : as<Sequence>(target).items) check_loop_target(*item);
    }

    NodePtr parse_if() {
        auto node = std::make_unique<If>(next().line);
        while (true) {
            NodePtr test = parse_tuple(false, false, {}, false);
            Body body = parse_statements({"elif", "else", "endif"}, false);
            node->branches.emplace_back(std::move(test), std::move(body));
            const Token& t = next();
            if (t.value == "elif") continue;
            if (t.value == "else") node->otherwise = parse_statements({"endif"}, true);
            break;
        }
        return node;
    }

    NodePtr parse_set() {
        const int line = next().line;
        NodePtr target = parse_assign_target(true, false, {}, true);
        if (skip_op("=")) {
            auto node = std::make_unique<Assign>(line);
            node->target = std::move(target);
            node->value = parse_tuple(false, true, {}, false);
            return node;
        }
        auto node = std::make_unique<AssignBlock>(line);
        node->target = std::move(target);
        node->filter = parse_filter(nullptr, false);
        node->body = parse_statements({"endset"}, true);
        return node;
    }

    NodePtr parse_with() {
        auto node = std::make_unique<With>(next().line);
        while (current().type != TokenType::block_end) {
            if (!node->targets.empty()) expect_op(",");
            node->targets.push_back(parse_assign_target(true, false, {}, false));
            expect_op("=");
            node->values.push_back(parse_expression(true));
        }
        node->body = parse_statements({"endwith"}, true);
        return node;
    }

    NodePtr parse_block() {
        const int line = next().line;
        auto node = std::make_unique<Block>(line, expect_any_name().value);
        node->scoped = skip_name("scoped");
        skip_name("required");
        if (is_op(current(), "-"))
            fail(
                "Block names in Jinja have to be valid Python identifiers and may not contain "
                "hyphens, use an underscore instead.");
        node->body = parse_statements({"endblock"}, true);
        skip_name(node->name);
        return node;
    }

    // include, import, from, extends, autoescape: parsed for their syntax, refused when run.
    NodePtr parse_unsupported(const std::string& tag) {
        const int line = next().line;
        if (tag == "autoescape") {
            parse_expression(true);
            parse_statements({"endautoescape"}, true);
            return std::make_unique<Unsupported>(line, "the autoescape tag");
        }
        parse_expression(true);
        if (tag == "import") {
            expect_name("as");
            expect_any_name();
        } else if (tag == "from") {
            expect_name("import");
            while (current().type == TokenType::name || is_op(current(), ",")) next();
        }
        while (current().type == TokenType::name) next();  // with/without context, ignore missing
        return std::make_unique<Unsupported>(
            line, fmt::format("the {} tag (there is no loader for other templates)", tag));
    }

    void parse_signature(Signature& sig) {
        expect_op("(");
        while (!is_op(current(), ")")) {
            if (!sig.params.empty()) expect_op(",");
            sig.params.push_back(expect_any_name().value);
            if (skip_op("=")) {
                sig.defaults.push_back(parse_expression(true));
            } else if (!sig.defaults.empty()) {
                fail("non-default argument follows default argument");
            }
        }
        expect_op(")");
    }

    NodePtr parse_macro() {
        const int line = next().line;
        auto node = std::make_unique<MacroDef>(line, expect_any_name().value);
        parse_signature(node->signature);
        node->body = parse_statements({"endmacro"}, true);
        return node;
    }

    NodePtr parse_call_block() {
        auto node = std::make_unique<CallBlock>(next().line);
        if (is_op(current(), "(")) parse_signature(node->signature);
        node->call = parse_expression(true);
        if (node->call->kind != NodeKind::call) fail("expected call", node->line);
        node->body = parse_statements({"endcall"}, true);
        return node;
    }

    NodePtr parse_filter_block() {
        auto node = std::make_unique<FilterBlock>(next().line);
        node->filter = parse_filter(nullptr, true);
        node->body = parse_statements({"endfilter"}, true);
        return node;
    }

    NodePtr parse_print() {
        auto node = std::make_unique<Output>(next().line);
        bool first = true;
        while (current().type != TokenType::block_end) {
            if (!first) expect_op(",");
            first = false;
            node->parts.push_back({"", parse_expression(true)});
        }
        return node;
    }

    static bool can_assign(const Node& n) {
        if (n.kind == NodeKind::name || n.kind == NodeKind::ns_ref) return true;
        if (n.kind == NodeKind::tuple) {
            for (const auto& item : as<Sequence>(n).items)
                if (!can_assign(*item)) return false;
            return true;
        }
        return false;
    }

    NodePtr parse_assign_target(bool with_tuple, bool name_only,
                                const std::vector<std::string>& extra_end, bool with_namespace) {
        NodePtr target;
        if (name_only) {
            const Token& t = expect_any_name();
            target = std::make_unique<Name>(t.line, t.value);
        } else if (with_tuple) {
            target = parse_tuple(true, true, extra_end, false, with_namespace);
        } else {
            target = parse_primary(with_namespace);
        }
        if (!can_assign(*target)) {
            const char* what = target->kind == NodeKind::constant ? "const" : "expression";
            fail(fmt::format("can't assign to '{}'", what), target->line);
        }
        return target;
    }

    // ---- expressions --------------------------------------------------------------------

    NodePtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    NodePtr parse_condexpr() {
        int line = current().line;
        NodePtr expr1 = parse_or();
        while (skip_name("if")) {
            auto cond = std::make_unique<Cond>(line);
            cond->test = parse_or();
            if (skip_name("else")) cond->otherwise = parse_condexpr();
            cond->then = std::move(expr1);
            expr1 = std::move(cond);
            line = current().line;
        }
        return expr1;
    }

    NodePtr parse_or() {
        int line = current().line;
        NodePtr left = parse_and();
        while (skip_name("or")) {
            left = std::make_unique<Logical>(line, false, std::move(left), parse_and());
            line = current().line;
        }
        return left;
    }

    NodePtr parse_and() {
        int line = current().line;
        NodePtr left = parse_not();
        while (skip_name("and")) {
            left = std::make_unique<Logical>(line, true, std::move(left), parse_not());
            line = current().line;
        }
        return left;
    }

    NodePtr parse_not() {
        if (is_name(current(), "not")) {
            const int line = next().line;
            DepthGuard guard(*this);
            return std::make_unique<Unary>(line, '!', parse_not());
        }
        return parse_compare();
    }

    NodePtr parse_compare() {
        int line = current().line;
        NodePtr expr = parse_math1();
        std::unique_ptr<Compare> cmp;
        while (true) {
            const Token& t = current();
            std::optional<CompareOp> op;
            if (t.type == TokenType::op) {
                if (t.value == "==") op = CompareOp::eq;
                if (t.value == "!=") op = CompareOp::ne;
                if (t.value == "<") op = CompareOp::lt;
                if (t.value == "<=") op = CompareOp::le;
                if (t.value == ">") op = CompareOp::gt;
                if (t.value == ">=") op = CompareOp::ge;
                if (op) next();
            } else if (is_name(t, "in")) {
                next();
                op = CompareOp::in;
            } else if (is_name(t, "not") && is_name(look(), "in")) {
                next();
                next();
                op = CompareOp::not_in;
            }
            if (!op) break;
            if (!cmp) cmp = std::make_unique<Compare>(line, std::move(expr));
            cmp->rest.emplace_back(*op, parse_math1());
            line = current().line;
        }
        if (!cmp) return expr;
        cmp->line = line;
        return cmp;
    }

    NodePtr parse_math1() {
        int line = current().line;
        NodePtr left = parse_concat();
        while (is_op(current(), "+") || is_op(current(), "-")) {
            const BinaryOp op = next().value == "+" ? BinaryOp::add : BinaryOp::sub;
            left = std::make_unique<Binary>(line, op, std::move(left), parse_concat());
            line = current().line;
        }
        return left;
    }

    NodePtr parse_concat() {
        const int line = current().line;
        NodePtr first = parse_math2();
        if (!is_op(current(), "~")) return first;
        auto node = std::make_unique<Concat>(line);
        node->parts.push_back(std::move(first));
        while (skip_op("~")) node->parts.push_back(parse_math2());
        return node;
    }

    NodePtr parse_math2() {
        int line = current().line;
        NodePtr left = parse_pow();
        while (true) {
            const Token& t = current();
            BinaryOp op;
            if (is_op(t, "*")) {
                op = BinaryOp::mul;
            } else if (is_op(t, "/")) {
                op = BinaryOp::div;
            } else if (is_op(t, "//")) {
                op = BinaryOp::floordiv;
            } else if (is_op(t, "%")) {
                op = BinaryOp::mod;
            } else {
                break;
            }
            next();
            left = std::make_unique<Binary>(line, op, std::move(left), parse_pow());
            line = current().line;
        }
        return left;
    }

    NodePtr parse_pow() {
        int line = current().line;
        NodePtr left = parse_unary(true);
        while (skip_op("**")) {
            left =
                std::make_unique<Binary>(line, BinaryOp::pow, std::move(left), parse_unary(true));
            line = current().line;
        }
        return left;
    }

    NodePtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        const Token& t = current();
        const int line = t.line;
        NodePtr node;
        if (is_op(t, "-") || is_op(t, "+")) {
            const char op = next().value[0];
            node = std::make_unique<Unary>(line, op, parse_unary(false));
        } else {
            node = parse_primary(false);
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    NodePtr parse_primary(bool with_namespace) {
        DepthGuard guard(*this);
        const Token& t = current();
        if (t.type == TokenType::name) {
            next();
            if (t.value == "true" || t.value == "True")
                return const_node(t.line, Value::boolean(true));
            if (t.value == "false" || t.value == "False")
                return const_node(t.line, Value::boolean(false));
            if (t.value == "none" || t.value == "None") return const_node(t.line, Value::none());
            if (with_namespace && is_op(current(), ".")) {
                next();
                const Token& attr = expect_any_name();
                return std::make_unique<NsRef>(t.line, t.value, attr.value);
            }
            return std::make_unique<Name>(t.line, t.value);
        }
        if (t.type == TokenType::string) {
            const int line = t.line;
            std::string s;
            while (current().type == TokenType::string) s += next().value;
            return const_node(line, Value::string(std::move(s)));
        }
        if (t.type == TokenType::integer)
            return const_node(t.line, Value::integer(next().int_value));
        if (t.type == TokenType::floating)
            return const_node(t.line, Value::number(next().float_value));
        if (is_op(t, "(")) {
            next();
            NodePtr node = parse_tuple(false, true, {}, true);
            expect_op(")");
            return node;
        }
        if (is_op(t, "[")) return parse_list();
        if (is_op(t, "{")) return parse_dict();
        if (t.type == TokenType::eof || t.type == TokenType::var_end ||
            t.type == TokenType::block_end)
            fail(fmt::format("unexpected '{}'", describe(t)));
        fail(fmt::format("unexpected '{}'", describe(t)));
    }

    static NodePtr const_node(int line, Value v) {
        return std::make_unique<Constant>(line, std::move(v));
    }

    bool is_tuple_end(const std::vector<std::string>& extra_end) const {
        const Token& t = current();
        if (t.type == TokenType::var_end || t.type == TokenType::block_end || is_op(t, ")"))
            return true;
        return t.type == TokenType::name &&
               std::find(extra_end.begin(), extra_end.end(), t.value) != extra_end.end();
    }

    NodePtr parse_tuple(bool simplified, bool with_condexpr,
                        const std::vector<std::string>& extra_end, bool explicit_parens,
                        bool with_namespace = false) {
        int line = current().line;
        std::vector<NodePtr> args;
        bool is_tuple = false;
        while (true) {
            if (!args.empty()) expect_op(",");
            if (is_tuple_end(extra_end)) break;
            args.push_back(simplified ? parse_primary(with_namespace)
                                      : parse_expression(with_condexpr));
            if (is_op(current(), ",")) {
                is_tuple = true;
            } else {
                break;
            }
            line = current().line;
        }
        if (!is_tuple) {
            if (!args.empty()) return std::move(args[0]);
            if (!explicit_parens)
                fail(fmt::format("Expected an expression, got '{}'", describe(current())));
        }
        auto node = std::make_unique<Sequence>(NodeKind::tuple, line);
        node->items = std::move(args);
        return node;
    }

    NodePtr parse_list() {
        auto node = std::make_unique<Sequence>(NodeKind::list, expect_op("[").line);
        while (!is_op(current(), "]")) {
            if (!node->items.empty()) expect_op(",");
            if (is_op(current(), "]")) break;
            node->items.push_back(parse_expression(true));
        }
        expect_op("]");
        return node;
    }

    NodePtr parse_dict() {
        auto node = std::make_unique<DictLiteral>(expect_op("{").line);
        while (!is_op(current(), "}")) {
            if (!node->items.empty()) expect_op(",");
            if (is_op(current(), "}")) break;
            NodePtr key = parse_expression(true);
            expect_op(":");
            node->items.emplace_back(std::move(key), parse_expression(true));
        }
        expect_op("}");
        return node;
    }

    NodePtr parse_postfix(NodePtr node) {
        while (true) {
            if (is_op(current(), ".") || is_op(current(), "[")) {
                node = parse_subscript(std::move(node));
            } else if (is_op(current(), "(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    NodePtr parse_filter_expr(NodePtr node) {
        while (true) {
            if (is_op(current(), "|")) {
                node = parse_filter(std::move(node), false);
            } else if (is_name(current(), "is")) {
                node = parse_test(std::move(node));
            } else if (is_op(current(), "(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    NodePtr parse_subscript(NodePtr node) {
        DepthGuard guard(*this);
        const Token& t = next();
        if (t.value == ".") {
            const Token& attr = next();
            if (attr.type == TokenType::name)
                return std::make_unique<GetAttr>(t.line, std::move(node), attr.value);
            if (attr.type != TokenType::integer) fail("expected name or number", attr.line);
            return std::make_unique<GetItem>(t.line, std::move(node),
                                             const_node(attr.line, Value::integer(attr.int_value)));
        }
        std::vector<NodePtr> args;
        while (!is_op(current(), "]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(parse_subscribed());
        }
        expect_op("]");
        NodePtr key;
        if (args.size() == 1) {
            key = std::move(args[0]);
        } else {
            auto tuple = std::make_unique<Sequence>(NodeKind::tuple, t.line);
            tuple->items = std::move(args);
            key = std::move(tuple);
        }
        return std::make_unique<GetItem>(t.line, std::move(node), std::move(key));
    }

    NodePtr parse_subscribed() {
        const int line = current().line;
        auto slice = std::make_unique<Slice>(line);
        if (is_op(current(), ":")) {
            next();
        } else {
            NodePtr node = parse_expression(true);
            if (!is_op(current(), ":")) return node;
            next();
            slice->start = std::move(node);
        }
        const auto at_end = [&] { return is_op(current(), "]") || is_op(current(), ","); };
        if (!is_op(current(), ":") && !at_end()) slice->stop = parse_expression(true);
        if (is_op(current(), ":")) {
            next();
            if (!at_end()) slice->step = parse_expression(true);
        }
        return slice;
    }

    void parse_call_args(Args& args) {
        const Token& open = expect_op("(");
        bool require_comma = false;
        const auto ensure = [&](bool ok) {
            if (!ok) fail("invalid syntax for function call expression", open.line);
        };
        while (!is_op(current(), ")")) {
            if (require_comma) {
                expect_op(",");
                if (is_op(current(), ")")) break;
            }
            if (is_op(current(), "*")) {
                ensure(!args.star && !args.star_star);
                next();
                args.star = parse_expression(true);
            } else if (is_op(current(), "**")) {
                ensure(!args.star_star);
                next();
                args.star_star = parse_expression(true);
            } else if (current().type == TokenType::name && is_op(look(), "=")) {
                ensure(!args.star_star);
                std::string key = next().value;
                next();
                args.keywords.emplace_back(std::move(key), parse_expression(true));
            } else {
                ensure(!args.star && !args.star_star && args.keywords.empty());
                args.positional.push_back(parse_expression(true));
            }
            require_comma = true;
        }
        expect_op(")");
    }

    NodePtr parse_call(NodePtr callee) {
        DepthGuard guard(*this);
        auto node = std::make_unique<Call>(current().line, std::move(callee));
        parse_call_args(node->args);
        return node;
    }

    std::string dotted_name() {
        std::string name = expect_any_name().value;
        while (is_op(current(), ".")) {
            next();
            name += "." + expect_any_name().value;
        }
        return name;
    }

    NodePtr parse_filter(NodePtr node, bool start_inline) {
        while (is_op(current(), "|") || start_inline) {
            DepthGuard guard(*this);
            if (!start_inline) next();
            const int line = current().line;
            auto f = std::make_unique<FilterOrTest>(NodeKind::filter, line, std::move(node),
                                                    dotted_name());
            if (is_op(current(), "(")) parse_call_args(f->args);
            node = std::move(f);
            start_inline = false;
        }
        return node;
    }

    NodePtr parse_test(NodePtr node) {
        DepthGuard guard(*this);
        const int line = next().line;
        const bool negated = skip_name("not");
        auto t =
            std::make_unique<FilterOrTest>(NodeKind::test, line, std::move(node), dotted_name());
        const Token& c = current();
        if (is_op(c, "(")) {
            parse_call_args(t->args);
        } else if ((c.type == TokenType::name || c.type == TokenType::string ||
                    c.type == TokenType::integer || c.type == TokenType::floating ||
                    is_op(c, "[") || is_op(c, "{")) &&
                   !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
            if (is_name(c, "is")) fail("You cannot chain multiple tests with is");
            t->args.positional.push_back(parse_postfix(parse_primary(false)));
        }
        if (negated) return std::make_unique<Unary>(line, '!', std::move(t));
        return t;
    }

    std::vector<Token> tokens_;
    const ParseOptions& options_;
    size_t pos_ = 0;
    int depth_ = 0;
    int in_print_ = 0;
    std::vector<std::string> tag_stack_;
    std::vector<std::vector<std::string>> end_stack_;
};

}  // namespace

Body parse(std::string_view source, const ParseOptions& options) {
    Parser parser(lex(source, options.lex), options);
    Body body = parser.parse_template();
    check(body);
    return body;
}

}  // namespace mw::tmpl
