#!/usr/bin/env python3
"""Expected renders of the 2026 families' chat templates (templates/ here), made the way
../shared/testdata/chat-templates/render.py makes that corpus's, so memwall's interpreter can be
held to them byte for byte (tests/template_families_test.cpp).

Usage (python3 with Jinja2 3.1.6; scripts/install-deps --test installs python3-jinja2):
    tests/data/chat-templates/render.py            # re-render every case, compare with cases.json
    tests/data/chat-templates/render.py --regen    # rewrite cases.json

Environment: the shared corpus's (transformers' _compile_jinja_template):
    ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                  extensions=[loopcontrols, generation])
    tojson = json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)
    raise_exception(msg) raises TemplateError; strftime_now(fmt) -> the fixed "26 Jul 2024"
plus transformers' `{% generation %}...{% endgeneration %}` tag (its AssistantTracker, which
renders the body unchanged outside training; LFM2.5-8B-A1B's template uses it).

Render variables: messages, add_generation_prompt, bos_token, eos_token; tools only when the
conversation has tools (else undefined, as in the shared corpus); and a case's "variables" (the
keyword arguments these templates read: reasoning_effort, model_identity, builtin_tools,
enable_thinking, keep_past_thinking, preserve_thinking).

Conversations: the shared corpus's conversations.json (MEMWALL_SHARED_DIR, default ../shared beside
the project) and this folder's conversations.json (reasoning, tool use, developer role). Every
template gets every conversation with add_generation_prompt true and false; cases where Jinja2
raises are recorded as {"error": true} (memwall must fail there too). Then the variable cases of
VARIABLE_CASES.
"""
import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox

FIXED_DATE = "26 Jul 2024"

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("MEMWALL_SHARED_DIR",
                        os.path.join(HERE, "..", "..", "..", "..", "shared"))

# Each template's special tokens, as its model's tokenizer_config.json names them.
TEMPLATES = {
    "openai-gpt-oss-120b": ("<|startoftext|>", "<|return|>"),
    "google-gemma-4-31B-it": ("<bos>", "<eos>"),
    "google-gemma-4-31B-it-interleaved": ("<bos>", "<eos>"),
    "Qwen3.5-4B": ("", "<|im_end|>"),
    "LFM2-8B-A1B": ("<|startoftext|>", "<|im_end|>"),
    "LFM2.5-Instruct": ("<|startoftext|>", "<|im_end|>"),
    "LFM2.5-8B-A1B": ("<|startoftext|>", "<|im_end|>"),
    "HuggingFaceTB-SmolLM3-3B": ("", "<|im_end|>"),
}

# (template, conversation, variables): rendered with add_generation_prompt true and false.
VARIABLE_CASES = [
    ("openai-gpt-oss-120b", "system_user", {"reasoning_effort": "low"}),
    ("openai-gpt-oss-120b", "system_user", {"reasoning_effort": "high"}),
    ("openai-gpt-oss-120b", "single_user", {"model_identity": "You are Memwall, a test model."}),
    ("openai-gpt-oss-120b", "single_user", {"builtin_tools": ["browser", "python"]}),
    ("openai-gpt-oss-120b", "tools_schemas", {"builtin_tools": ["python"],
                                              "reasoning_effort": "high"}),
    ("Qwen3.5-4B", "multi_turn", {"enable_thinking": False}),
    ("Qwen3.5-4B", "multi_turn", {"enable_thinking": True}),
    ("Qwen3.5-4B", "reasoning_content", {"enable_thinking": False}),
    ("HuggingFaceTB-SmolLM3-3B", "multi_turn", {"enable_thinking": False}),
    ("HuggingFaceTB-SmolLM3-3B", "reasoning_think_tags", {"enable_thinking": False}),
    ("google-gemma-4-31B-it", "system_user", {"enable_thinking": True}),
    ("google-gemma-4-31B-it", "single_user", {"enable_thinking": True}),
    ("google-gemma-4-31B-it", "tool_call_reasoning", {"enable_thinking": True}),
    ("google-gemma-4-31B-it", "multi_turn", {"enable_thinking": False}),
    ("google-gemma-4-31B-it-interleaved", "tool_call_reasoning", {"enable_thinking": True}),
    ("LFM2.5-Instruct", "reasoning_think_tags", {"keep_past_thinking": True}),
    ("LFM2.5-8B-A1B", "reasoning_thinking", {"preserve_thinking": True}),
]


class GenerationExtension(jinja2.ext.Extension):
    """transformers' {% generation %} tag (AssistantTracker) as it renders outside training: a
    call block whose method returns caller(), so the body is rendered unchanged, in its own
    scope."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation"), [], [], body).set_lineno(
            lineno)

    def _generation(self, caller):
        return caller()


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def make_env():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[jinja2.ext.loopcontrols, GenerationExtension])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_DATE
    return env


def load_conversations():
    with open(os.path.join(SHARED, "testdata", "chat-templates", "conversations.json"),
              encoding="utf-8") as f:
        conversations = json.load(f)
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        for name, conv in json.load(f).items():
            assert name not in conversations, name
            conversations[name] = conv
    return conversations


def context_of(case, conversations):
    conv = conversations[case["conversation"]]
    ctx = dict(case.get("variables", {}))
    ctx.update(messages=conv["messages"], add_generation_prompt=case["add_generation_prompt"],
               bos_token=case["bos_token"], eos_token=case["eos_token"])
    if "tools" in conv:
        ctx["tools"] = conv["tools"]
    return ctx


def all_cases(conversations):
    cases = []
    for name, (bos, eos) in TEMPLATES.items():
        for conv in conversations:
            for agp in (True, False):
                cases.append({"template": name, "conversation": conv,
                              "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos})
    for name, conv, variables in VARIABLE_CASES:
        bos, eos = TEMPLATES[name]
        for agp in (True, False):
            cases.append({"template": name, "conversation": conv, "add_generation_prompt": agp,
                          "bos_token": bos, "eos_token": eos, "variables": variables})
    return cases


def render_case(env, case, conversations):
    with open(os.path.join(HERE, "templates", case["template"] + ".jinja"), encoding="utf-8",
              newline="") as f:
        text = f.read()
    try:
        return env.from_string(text).render(**context_of(case, conversations)), None
    except Exception as e:  # noqa: BLE001 - any failure is an expected error case
        return {"error": True}, "%s: %s" % (type(e).__name__, e)


def main(argv):
    env = make_env()
    conversations = load_conversations()
    cases_path = os.path.join(HERE, "cases.json")
    if "--regen" in argv:
        cases = all_cases(conversations)
        n_errors = 0
        for case in cases:
            case["expected"], err = render_case(env, case, conversations)
            if err:
                case["error_message"] = err
                n_errors += 1
        with open(cases_path, "w", encoding="utf-8") as f:
            json.dump(cases, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print("wrote %d cases (%d where Jinja2 raises)" % (len(cases), n_errors))
        return 0
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    bad = 0
    for case in cases:
        got, _ = render_case(env, case, conversations)
        if got != case["expected"]:
            bad += 1
            print("MISMATCH: %s / %s / add_generation_prompt=%s / %s" % (
                case["template"], case["conversation"], case["add_generation_prompt"],
                json.dumps(case.get("variables", {}))))
    print("%d cases, %d mismatches" % (len(cases), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
