#!/usr/bin/env python3
"""Renders chat templates with Python's jinja2 the way HF transformers' apply_chat_template does,
over a fixed set of conversations, and writes the renderings as JSON: the expected outputs for
Tessera's Jinja interpreter (tests/jinja/real_templates_test.cpp).

    /usr/bin/python3 scripts/render-templates.py --templates ../shared/templates --out FILE

Needs jinja2 (Debian python3-jinja2). Exits 77 (CTest's skip code) when jinja2 or the template
directory is absent. The output is one object:
    {"cases": [{"name", "context"}...],
     "templates": {"<file name>": {"<case name>": {"output": str} | {"error": str}}}}
`context` is exactly what the template is rendered with (besides the globals below), so the C++
test renders from the same data. strftime_now returns a FIXED date (2026-01-15 10:30:00) so the
renderings are reproducible; the C++ side is given the same date.
"""
import argparse
import datetime
import json
import os
import sys

FIXED_NOW = datetime.datetime(2026, 1, 15, 10, 30, 0)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]

TOOL_CALL = {
    "id": "call_0001",
    "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
}


def conversations():
    """(name, messages, extra context) for each case; add_generation_prompt is in the context."""
    sys_user = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hello! How are you?"},
    ]
    multi = [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "2+2 is 4."},
        {"role": "user", "content": "And 3+3? Answer with \"six\" or 6 — ünïcode too."},
    ]
    multi_sys = [{"role": "system", "content": "Be brief."}] + multi + [
        {"role": "assistant", "content": "6"},
    ]
    tools = [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_0001", "name": "get_weather",
         "content": "{\"temperature\": 18, \"sky\": \"cloudy\"}"},
        {"role": "assistant", "content": "It is 18 degrees and cloudy in Paris."},
        {"role": "user", "content": "Thanks!"},
    ]
    parts = [
        {"role": "system", "content": [{"type": "text", "text": "Answer in French."}]},
        {"role": "user", "content": [{"type": "text", "text": "Describe "},
                                     {"type": "text", "text": "the sky."}]},
    ]
    reasoning = [
        {"role": "user", "content": "Is 17 prime?"},
        {"role": "assistant", "content": "Yes.",
         "reasoning_content": "17 has no divisors between 2 and 4."},
        {"role": "user", "content": "And 21?"},
    ]
    string_args = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_0002", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_0002", "content": "-3 C, snow"},
    ]
    return [
        ("system_user_gen", sys_user, {"add_generation_prompt": True}),
        ("content_parts_gen", parts, {"add_generation_prompt": True}),
        ("reasoning_no_thinking_gen", reasoning,
         {"add_generation_prompt": True, "enable_thinking": False}),
        ("tool_string_args_gen", string_args, {"add_generation_prompt": True, "tools": TOOLS}),
        ("system_user_nogen", sys_user, {"add_generation_prompt": False}),
        ("user_only_gen", [{"role": "user", "content": "Hi"}], {"add_generation_prompt": True}),
        ("multi_turn_gen", multi, {"add_generation_prompt": True}),
        ("multi_turn_system_nogen", multi_sys, {"add_generation_prompt": False}),
        ("tools_gen", tools, {"add_generation_prompt": True, "tools": TOOLS}),
    ]


def make_env():
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class TemplateError(Exception):
        pass

    # HF's AssistantTracker: {% generation %}...{% endgeneration %} renders its body unchanged
    # (it only records spans when asked for an assistant mask, which is not asked here).
    class GenerationBlock(Extension):
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--templates", required=True, help="directory of *.jinja files")
    ap.add_argument("--out", required=True, help="JSON file to write")
    args = ap.parse_args()
    try:
        env = make_env()
    except ImportError:
        print("render-templates: jinja2 is not installed (apt install python3-jinja2)",
              file=sys.stderr)
        return 77
    if not os.path.isdir(args.templates):
        print(f"render-templates: no template directory {args.templates}", file=sys.stderr)
        return 77

    cases = []
    for name, messages, extra in conversations():
        context = {"messages": messages, "bos_token": "<s>", "eos_token": "</s>", "tools": None}
        context.update(extra)
        cases.append({"name": name, "context": context})

    templates = {}
    for fname in sorted(os.listdir(args.templates)):
        if not fname.endswith(".jinja"):
            continue
        with open(os.path.join(args.templates, fname), encoding="utf-8") as f:
            source = f.read()
        results = {}
        try:
            compiled = env.from_string(source)
        except Exception as e:  # a template jinja2 itself cannot parse
            for case in cases:
                results[case["name"]] = {"error": f"{type(e).__name__}: {e}"}
            templates[fname] = results
            continue
        for case in cases:
            # Deep copy: a template must not see another case's mutations.
            context = json.loads(json.dumps(case["context"]))
            try:
                results[case["name"]] = {"output": compiled.render(**context)}
            except Exception as e:
                results[case["name"]] = {"error": f"{type(e).__name__}: {e}"}
        templates[fname] = results

    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"cases": cases, "templates": templates}, f, ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
