// A template is untrusted input (it comes with a downloaded model): recursion, huge loops,
// output and memory bombs, deep nesting and long chains stop quickly with a limit error, never
// a crash, a hang or an exhausted machine.
#include <gtest/gtest.h>

#include <chrono>

#include "template/template.h"

namespace {

using mw::tmpl::ErrorKind;
using mw::tmpl::Limits;
using mw::tmpl::RenderOptions;
using mw::tmpl::Template;
using mw::tmpl::TemplateError;

// Renders and returns the error; fails the test when the render succeeds or takes long.
TemplateError render_error(const std::string& source, const Limits& limits = {}) {
    const auto start = std::chrono::steady_clock::now();
    RenderOptions options;
    options.limits = limits;
    try {
        const std::string out = Template::parse(source, "bomb").render({}, options);
        ADD_FAILURE() << "rendered " << out.size() << " bytes";
    } catch (const TemplateError& e) {
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_LT(s, 20.0) << e.what();
        return e;
    }
    return TemplateError(ErrorKind::runtime, "no error");
}

void expect_limit(const std::string& source, const std::string& says, const Limits& limits = {}) {
    SCOPED_TRACE(source.substr(0, 200));
    const TemplateError e = render_error(source, limits);
    EXPECT_EQ(e.kind(), ErrorKind::limit) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("template 'bomb'"), std::string::npos) << e.what();
}

TEST(TemplateLimits, Recursion) {
    expect_limit("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", "nested deeper");
    expect_limit("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", "nested deeper");
    expect_limit(
        "{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}"
        "{{ a(0) }}",
        "nested deeper");
    // Deep recursion through an expression at every level.
    expect_limit(
        "{% macro r(n) %}{{ ((((((((r(n + 1)|string)|string)|string)|string)|string)|string)|"
        "string)|string) }}{% endmacro %}{{ r(0) }}",
        "nested deeper");
}

TEST(TemplateLimits, Loops) {
    Limits small;
    small.max_iterations = 20000;
    expect_limit("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 "loop iterations", small);
    expect_limit("{{ range(100000) | map('string') | map('upper') | list | length }}",
                 "loop iterations", small);
    // The sandbox's range limit, as Jinja2's (OverflowError there).
    EXPECT_EQ(render_error("{{ range(100001) | length }}").kind(), ErrorKind::overflow);
}

// fuzz_template: sorting a list again and again counted no iterations, so an 8 KiB template of
// chained sorts ran for seconds within every limit. A sort now counts its comparisons.
TEST(TemplateLimits, SortsCountTheirComparisons) {
    Limits small;
    small.max_iterations = 100000;
    const std::string chars = "{% set l = ('zyxw' * 2000)|list %}";  // 8000 iterations
    expect_limit(chars + "{{ (l|sort|sort|sort|sort|sort|sort|sort|sort)|length }}",
                 "loop iterations", small);
    expect_limit(chars + "{{ (l|groupby(0)|list|length) + (l|groupby(0)|list|length) }}",
                 "loop iterations", small);
    // What real templates sort (a few tools, a dict's keys) stays far below any limit.
    RenderOptions options;
    options.limits = small;
    EXPECT_EQ(Template::parse("{{ ['b', 'a', 'c']|sort|join(',') }}", "sorted").render({}, options),
              "a,b,c");
}

TEST(TemplateLimits, DefaultIterationLimitIsReachedQuickly) {
    expect_limit("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 "more than 1000000 loop iterations");
}

TEST(TemplateLimits, OutputAndValueSizes) {
    Limits small;
    small.max_output_bytes = 1 << 20;
    // The default (1 GiB of values built) takes seconds to reach by growing a list, minutes
    // under ASan; the limit is the same code at any size.
    small.max_work_bytes = 64 << 20;
    expect_limit("{% set s = 'x' * 1000 %}{% for i in range(100000) %}{{ s }}{% endfor %}",
                 "output would exceed", small);
    expect_limit(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}",
        "more than", small);
    expect_limit(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}",
        "more than", small);
    expect_limit("{{ 'x' * 1000000000000 }}", "more than", small);
    expect_limit("{{ [0] * 1000000000000 }}", "more than", small);
    expect_limit("{{ 'x' | center(1000000000) }}", "more than", small);
    expect_limit("{{ '%999999999d' % 1 }}", "too large", small);
    expect_limit("{{ 'abc' | replace('', 'x' * 500000) | length }}", "more than", small);
    expect_limit("{{ ('{:100000}' * 100).format(*range(100)) | length }}", "more than", small);
    expect_limit(
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}"
        "{% endfor %}",
        "more than", small);
}

TEST(TemplateLimits, Work) {
    Limits small;
    small.max_work_bytes = 20 << 20;
    expect_limit(
        "{% set s = 'a' * 100000 %}{% for i in range(100000) %}{% set t = s.replace('a', 'b') "
        "%}{% endfor %}",
        "bytes of text", small);
}

TEST(TemplateLimits, Nesting) {
    // Parsing: expressions and blocks nested too deep are syntax errors, without recursing far.
    const TemplateError parens =
        render_error("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}");
    EXPECT_EQ(parens.kind(), ErrorKind::syntax) << parens.what();
    std::string ifs;
    for (int i = 0; i < 10000; ++i) ifs += "{% if true %}";
    EXPECT_EQ(render_error(ifs).kind(), ErrorKind::syntax);
    EXPECT_EQ(render_error("{{ " + std::string(100000, '-') + "1 }}").kind(), ErrorKind::syntax);
    EXPECT_EQ(render_error("{{ [" + std::string(50000, '[') + "]").kind(), ErrorKind::syntax);

    // Values nested deeper than 512 levels, and long chains of generators, are refused.
    expect_limit(
        "{% set ns = namespace(v=[]) %}{% for i in range(100000) %}{% set ns.v = [ns.v] %}"
        "{% endfor %}",
        "nested deeper");
    expect_limit(
        "{% set ns = namespace(g=[1]) %}{% for i in range(100000) %}{% set ns.g = ns.g | "
        "map('string') %}{% endfor %}{{ ns.g | list }}",
        "chained more than");
}

// Long chains of namespaces, macros closing over scopes they are stored in, namespaces
// holding themselves: destroyed after the render without recursion or leaks (ASan checks).
TEST(TemplateLimits, ChainsAndCyclesAreReleased) {
    const std::string chain =
        "{% set h = namespace(head=none) %}{% for i in range(100000) %}"
        "{% set h.head = namespace(next=h.head, i=i) %}{% endfor %}{{ h.head.i }}"
        "{% set h.head = none %}{{ 'dropped' }}";
    Limits limits;
    limits.max_iterations = 1000000;
    RenderOptions options;
    options.limits = limits;
    EXPECT_EQ(Template::parse(chain, "chain").render({}, options), "99999dropped");
    const std::string cycles =
        "{% set ns = namespace() %}{% set ns.self = ns %}{% macro m() %}{{ ns }}{% endmacro %}"
        "{% set ns.m = m %}{% for x in [1, 2] %}{% set ns.loop = loop %}{% endfor %}"
        "{% set ns.gen = [1] | map('string') %}ok";
    EXPECT_EQ(Template::parse(cycles, "cycles").render({}), "ok");
}

TEST(TemplateLimits, Source) {
    try {
        Template::parse(std::string(Template::max_source_bytes + 1, 'x'), "huge");
        ADD_FAILURE() << "parsed";
    } catch (const TemplateError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::limit);
        EXPECT_NE(std::string(e.what()).find("huge"), std::string::npos) << e.what();
    }
    // Invalid UTF-8 is refused with its line.
    try {
        Template::parse("ok\n\xff", "bytes");
        ADD_FAILURE() << "parsed";
    } catch (const TemplateError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::syntax);
        EXPECT_EQ(e.line(), 2);
    }
}

// Integers are 64-bit here (Python's grow): overflow is an error, never a wrapped value.
TEST(TemplateLimits, IntegerOverflow) {
    EXPECT_EQ(render_error("{{ 10 ** 30 }}").kind(), ErrorKind::overflow);
    EXPECT_EQ(render_error("{{ 9223372036854775807 + 1 }}").kind(), ErrorKind::overflow);
    EXPECT_EQ(render_error("{{ -9223372036854775807 - 2 }}").kind(), ErrorKind::overflow);
    EXPECT_EQ(render_error("{{ 99999999999999999999 }}").kind(), ErrorKind::syntax);
}

}  // namespace
