// Templates of our own, rendered by this interpreter and, at test time, by Python's Jinja2 in
// transformers' environment (render.py's: ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, tojson = json.dumps, raise_exception, a fixed strftime_now):
// the outputs must be identical, and where Jinja2 raises we must fail too. Skipped, loudly,
// when python3 with jinja2 is missing (scripts/install-deps --test installs python3-jinja2).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "chat/json_value.h"
#include "support/test_support.h"
#include "template/template.h"

namespace {

using nlohmann::ordered_json;

constexpr const char* kRenderPy = R"py(
import json, sys
import jinja2, jinja2.ext, jinja2.sandbox

def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)

env = jinja2.sandbox.ImmutableSandboxedEnvironment(
    trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: "26 Jul 2024"
cases = json.load(open(sys.argv[1], encoding="utf-8"))
out = []
for case in cases:
    try:
        out.append({"out": env.from_string(case["template"]).render(**case["context"])})
    except Exception as e:
        out.append({"error": "%s: %s" % (type(e).__name__, e)})
json.dump(out, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
)py";

// The variables every case sees.
constexpr const char* kContext = R"json({
  "messages": [
    {"role": "system", "content": "You are helpful.\n"},
    {"role": "user", "content": "  What's the weather in Paris? 你好 👋  "},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
     "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
    {"role": "assistant", "content": "<think>It is sunny.</think>Sunny, 21.5 °C."},
    {"role": "user", "content": "Thanks!\tBye."}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather",
    "description": "Weather \"now\" and later",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "City name"},
      "days": {"type": "integer", "enum": [1, 3, 7]}}, "required": ["city"]}}}],
  "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "n": 7, "f": 2.5, "big": 12345678901234, "neg": -3, "empty": [], "nothing": null,
  "d": {"b": 2, "a": 1, "c": {"x": [1, 2, {"y": "z"}]}},
  "words": ["delta", "Alpha", "charlie", "bravo", "alpha"]
})json";

// One template per line, as long as it is: Python renders each at test time.
// clang-format off
const char* const kTemplates[] = {
    // inline if / else, nested and in filters
    R"({{ 'yes' if n > 5 else 'no' }} {{ 'a' if nothing else 'b' if n else 'c' }} {{ (n if n > 100) is defined }} {{ [1, 2] if empty else [3] }})",
    R"({% for m in messages %}{{ m.role ~ ('!' if loop.last else ',') }}{% endfor %})",
    // slices with steps, negative indices
    R"({{ words[::2] }} {{ words[::-1] }} {{ words[1:-1:2] }} {{ words[-2:] }} {{ words[5:1:-2] }} {{ 'abcdefgh'[::3] }} {{ 'abcdefgh'[-1::-2] }} {{ messages[1].content[2:9] }})",
    R"({{ messages[-1]['content'] }} {{ messages[-10] is defined }} {{ words[100:] }} {{ (words | list)[1:3] | join('/') }})",
    // filters
    R"({{ words | sort | join(',') }} {{ words | sort(case_sensitive=true) | first }} {{ words | unique | list | length }} {{ words | map('upper') | select('lt', 'C') | list }} {{ words | map('length') | sum }} {{ words | max }} {{ words | min(case_sensitive=true) }})",
    R"({{ messages | selectattr('role', 'in', ['user', 'system']) | map(attribute='content') | map('trim') | list }})",
    R"({{ messages | rejectattr('tool_calls', 'defined') | map(attribute='role') | join(' ') }} {{ messages | selectattr('tool_calls') | list | length }})",
    R"({{ d | dictsort | map('first') | join }} {{ d.c.x | last | tojson }} {{ d | tojson(indent=2, sort_keys=true) }} {{ d | items | map('last') | map('string') | list }})",
    R"({{ tools | tojson }}|{{ tools[0].function | tojson(indent=4) }}|{{ tools | map(attribute='function.name') | list }}|{{ tools[0].function.parameters.properties | list }})",
    R"({{ f | round }} {{ (n / 3) | round(3) }} {{ big | filesizeformat }} {{ neg | abs }} {{ '%08.3f' % f }} {{ '%-6s|%6d' % ('ab', n) }} {{ n // 2 }} {{ n % 4 }} {{ n ** 2 }} {{ f * 2 }} {{ big * 100 }})",
    R"({{ messages[1].content | trim | truncate(12) }} {{ messages[1].content | wordcount }} {{ messages[1].content | center(40) }}|{{ messages[5].content | replace('\t', ' ') | title }})",
    R"({{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(width='- ', first=true) }}|{{ words | batch(2) | list }}|{{ words | slice(2) | map('join', '+') | list }})",
    R"({{ words | groupby('0') | map(attribute='grouper') | list }} {{ messages | groupby('role') | map('first') | list }})",
    // string methods
    R"({{ messages[4].content.split('</think>')[-1] }}|{{ messages[4].content.split('</think>')[0].lstrip('<think>') }}|{{ messages[1].content.strip().rstrip('👋 ') }}|{{ 'x,y,,z'.split(',') }}|{{ 'a  b c'.split(None, 1) }}|{{ 'k=v=w'.rsplit('=', 1) }})",
    R"({{ messages[1].content.startswith('  W') }} {{ messages[1].content.endswith(('x', '  ')) }} {{ 'Hello'.find('l') }} {{ 'Hello'.rfind('l') }} {{ 'Hello'.count('l') }} {{ 'Hello'.replace('l', 'L', 1) }} {{ 'hello world'.title() }} {{ 'HeLLo'.swapcase() }} {{ 'hello'.capitalize() }})",
    R"({{ '{}: {:>8.2f}'.format('pi', 3.14159) }} {{ '{name} is {age}'.format(name='x', age=3) }} {{ '{0}-{0}'.format(n) }} {{ '%(a)s+%(b)s' % d }} {{ '%s' % (words,) }} {{ '%r %s' % ('q', nothing) }})",
    R"({{ '  x  '.lstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'abc'.upper().lower() }}|{{ ', '.join(words[:2]) }}|{{ 'a\nb\r\nc'.splitlines() }}|{{ 'tab\tsep'.expandtabs(4) }}|{{ '42'.zfill(5) }}|{{ 'abc'.partition('b') }})",
    // macros, call blocks, recursion
    R"({% macro render(v, depth=0) %}{% if v is mapping %}{{ '{' }}{% for k, x in v.items() %}{{ k }}:{{ render(x, depth + 1) }}{% if not loop.last %},{% endif %}{% endfor %}{{ '}' }}{% elif v is iterable and v is not string %}[{% for x in v %}{{ render(x, depth + 1) }}{% if not loop.last %},{% endif %}{% endfor %}]{% else %}{{ v }}@{{ depth }}{% endif %}{% endmacro %}{{ render(d) }}|{{ render(tools[0].function.parameters) }})",
    R"({% macro tag(name, attrs={}) %}<{{ name }}{% for k, v in attrs | dictsort %} {{ k }}="{{ v }}"{% endfor %}>{{ caller() if caller is defined else '' }}</{{ name }}>{% endmacro %}{{ tag('a', {'z': 1, 'b': 2}) }}{% call tag('p') %}inner {{ n }}{% endcall %})",
    R"({% macro fact(k) %}{{ 1 if k <= 1 else k * (fact(k - 1) | int) }}{% endmacro %}{{ fact(10) }} {% macro args() %}{{ varargs | length }}{{ kwargs | dictsort }}{% endmacro %}{{ args(1, 2, z=1, a=2) }})",
    R"({%- for item in [d] recursive -%}{%- if item is mapping -%}{%- for k in item -%}<{{ k }}@{{ loop.depth }}>{{ loop(item[k] if item[k] is mapping else []) }}{%- endfor -%}{%- endif -%}{%- endfor -%})",
    // loops, namespaces, scoping
    R"({% set ns = namespace(sys='', turns=0, last=none) %}{% for m in messages %}{% if m.role == 'system' %}{% set ns.sys = m.content | trim %}{% else %}{% set ns.turns = ns.turns + 1 %}{% set ns.last = m.role %}{% endif %}{% endfor %}{{ ns.sys }}|{{ ns.turns }}|{{ ns.last }})",
    R"({% for m in messages if m.role != 'tool' %}{{ loop.index }}/{{ loop.length }}:{{ m.role }}{{ '' if loop.last else ' ' }}{% endfor %}|{% for m in messages %}{% if loop.previtem is defined and loop.previtem.role == m.role %}dup{% endif %}{% endfor %})",
    R"({% set x = 'outer' %}{% for i in range(2) %}{{ x }}{% set x = 'inner' ~ i %}{{ x }};{% endfor %}{{ x }}|{% with x = x ~ '!' %}{{ x }}{% endwith %}{{ x }})",
    R"({% for i in range(10) %}{% if i is even %}{% continue %}{% endif %}{% if i > 6 %}{% break %}{% endif %}{{ i }}{% else %}never{% endfor %})",
    R"({% for a, b in d.items() %}{{ a }}{{ b is mapping }}{% endfor %}|{% for k, v in d | dictsort(reverse=true) %}{{ k }}{% endfor %}|{% for c in 'héé' %}{{ c }}.{% endfor %})",
    // chat-template style programs
    R"({{- bos_token }}{%- for m in messages %}{%- if m.role == 'assistant' and m.tool_calls %}{{- '<tool_call>' }}{%- for tc in m.tool_calls %}{{ {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}{%- endfor %}{{- '</tool_call>' }}{%- elif m.role == 'tool' %}{{- '<tool_response>' ~ m.content ~ '</tool_response>' }}{%- else %}{{- '<|' ~ m.role ~ '|>' ~ m.content | trim ~ eos_token }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %})",
    R"({%- if tools %}{{- 'Tools: ' }}{%- for t in tools %}{{- t.function.name ~ '(' ~ (t.function.parameters.properties | list | join(', ')) ~ ')' }}{%- if t.function.parameters.required %}{{- ' requires ' ~ t.function.parameters.required | join('+') }}{%- endif %}{%- endfor %}{%- endif %}
{{ strftime_now('%d %b %Y') }})",
    // whitespace control
    "a\n  {% if n %}\n    b\n  {%- endif %}\n  {%+ if n %}c{% endif +%}\n{# note #}\n  {#- tight -#}\nd {{- ' e ' -}} f\n",
    "{% raw %}{{ kept }} {%- raw -%}{% endraw %}|\n{%- for i in [1, 2] %}\n  {{ i }}\n{%- endfor %}\n\n",
    // undefined values
    R"({{ missing }}|{{ missing | default('dflt') }}|{{ missing is defined }}|{{ missing | length }}|{{ missing | list }}|{{ (missing or 'x') }}|{{ d.nope | default('n') }}|{{ messages[0].nope is none }}|{{ nothing is none }})",
    // errors Jinja2 raises
    R"({{ missing.attr }})",
    R"({{ messages[0].content + 1 }})",
    R"({{ messages[2].tool_calls[0].function.arguments + '' }})",
    R"({% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %})",
    R"({{ words | sort(attribute='nope') | first ~ 1 }})",
    R"({{ (words | select('odd')) | length }})",
    R"({% set w = words %}{{ w.append('x') }}{{ w.pop() }})",
    R"({{ 'x' | nosuchfilter }})",
    R"({{ range(10) | map('int') | sum / 0 }})",
    R"({% for x in n %}{% endfor %})",
    R"({{ d | tojson(sort_keys=true) }}{{ {1: 'a', 'b': 2} | tojson(sort_keys=true) }})",
};
// clang-format on

bool python_with_jinja2() {
    return mw::test::run_command("python3 -c 'import jinja2, jinja2.sandbox, jinja2.ext'")
               .exit_code == 0;
}

TEST(TemplateCrossCheck, SameRenderAsPythonJinja2) {
    if (!python_with_jinja2())
        GTEST_SKIP()
            << "python3 with jinja2 is not available (Debian: python3-jinja2, installed "
               "by scripts/install-deps --test): the cross-check against Python's Jinja2 did "
               "NOT run";
    const ordered_json context = ordered_json::parse(kContext);
    ordered_json cases = ordered_json::array();
    for (const char* t : kTemplates) cases.push_back({{"template", t}, {"context", context}});
    const std::string dir = mw::test::temp_dir();
    {
        std::ofstream(dir + "/render.py") << kRenderPy;
        std::ofstream(dir + "/cases.json", std::ios::binary) << cases.dump();
    }
    const auto r =
        mw::test::run_command(fmt::format("python3 '{0}/render.py' '{0}/cases.json' "
                                          "'{0}/out.json'",
                                          dir));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const ordered_json expected = ordered_json::parse(mw::test::read_text(dir + "/out.json"));
    ASSERT_EQ(expected.size(), cases.size());

    const mw::tmpl::Value vars = mw::chat::json_to_value(context);
    mw::tmpl::RenderOptions options;
    options.strftime_now = "26 Jul 2024";
    size_t n_errors = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        SCOPED_TRACE(kTemplates[i]);
        std::optional<std::string> got;
        std::string error;
        try {
            got =
                mw::tmpl::Template::parse(kTemplates[i], "crosscheck").render(vars.dict(), options);
        } catch (const mw::tmpl::TemplateError& e) {
            error = e.what();
        }
        if (expected[i].contains("error")) {
            ++n_errors;
            EXPECT_FALSE(got) << "Jinja2 raised " << expected[i]["error"] << " but we rendered:\n"
                              << *got;
        } else if (!got) {
            ADD_FAILURE() << "Jinja2 rendered " << expected[i]["out"]
                          << " but we failed: " << error;
        } else {
            EXPECT_EQ(*got, expected[i]["out"].get<std::string>());
        }
    }
    EXPECT_GE(n_errors, 8u);  // the error cases above did raise in Jinja2
}

}  // namespace
