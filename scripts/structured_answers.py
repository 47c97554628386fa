#!/usr/bin/python3
"""Structured output against a live OpenAI-compatible server, for scripts/structured-vs-llama-server.sh.

  structured_answers.py run URL CORPUS OUT.json --engine NAME [--seeds N] [--max-tokens N]
                                                [--timeout S] [--metrics]
  structured_answers.py report OUT.json...

run: sends every schema of CORPUS (tests/engine/data/json_schema_corpus.json: name, schema, valid,
invalid) as a json_schema response_format to URL/v1/chat/completions, one request at a time,
greedy and at temperature 1.0 with seeds 1..N, and classifies each answer with an independent
validator (python3-jsonschema: the validator the schema's "$schema" names, else draft 2020-12,
with its format checker, as tests/engine/validate_json_schema.py does):
  valid      the content parses as JSON and validates
  refused    HTTP 4xx/5xx (the server would not take the schema, or failed on it)
  truncated  finish_reason "length" and not valid
  invalid    parsed but fails validation, or not JSON
  timeout    no complete answer within --timeout seconds
It writes every answer and the totals (completion tokens, seconds waited on answers) to OUT.json;
with --metrics it also reads the server's /metrics before and after (a Tessera server's
tessera_constraint_seconds_total and tessera_constrained_tokens_total).
report: one table per engine (classes by setting), output tok/s (completion tokens / wall time of
the answered requests), the constraint's time per constrained token where measured, and the
schemas whose outcomes differ between the engines.
"""
import argparse
import json
import re
import socket
import sys
import time
import urllib.error
import urllib.request

CLASSES = ("valid", "refused", "invalid", "truncated", "timeout")


def scrape(url):
    """Sums of the constraint counters in url/metrics, or None when it has neither."""
    try:
        text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    except (urllib.error.URLError, OSError):
        return None
    sums = {}
    for family in ("tessera_constraint_seconds_total", "tessera_constrained_tokens_total"):
        for m in re.finditer(r"^" + family + r"(?:\{[^}]*\})? (\S+)$", text, re.M):
            sums[family] = sums.get(family, 0.0) + float(m.group(1))
    return sums or None


def ask(url, body, timeout):
    """(status, parsed body or error text, seconds)."""
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.load(r), time.perf_counter() - t0
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")[:300], time.perf_counter() - t0
    except (socket.timeout, TimeoutError):
        return None, "timeout", time.perf_counter() - t0
    except urllib.error.URLError as e:
        if isinstance(e.reason, (socket.timeout, TimeoutError)):
            return None, "timeout", time.perf_counter() - t0
        raise


def classify(validator, status, reply):
    if status is None:
        return "timeout", None, 0
    if status >= 400:
        return "refused", None, 0
    choice = reply["choices"][0]
    content = choice["message"].get("content") or ""
    tokens = reply.get("usage", {}).get("completion_tokens", 0)
    try:
        value = json.loads(content)
        ok = validator.is_valid(value)
    except ValueError:
        ok = False
    if ok:
        return "valid", content, tokens
    if choice.get("finish_reason") == "length":
        return "truncated", content, tokens
    return "invalid", content, tokens


def run(a):
    import jsonschema  # Debian's python3-jsonschema
    corpus = json.load(open(a.corpus, encoding="utf-8"))
    settings = [("greedy", 0.0, None)] + [(f"t1.0/seed{s}", 1.0, s) for s in range(1, a.seeds + 1)]
    before = scrape(a.url) if a.metrics else None
    answers, tokens, seconds = [], 0, 0.0
    for entry in corpus:
        cls = jsonschema.validators.validator_for(entry["schema"],
                                                  default=jsonschema.Draft202012Validator)
        validator = cls(entry["schema"], format_checker=cls.FORMAT_CHECKER)
        for label, temperature, seed in settings:
            body = {"model": a.model,
                    "messages": [{"role": "user", "content": f"Give a JSON value for: {entry['name']}"}],
                    "max_tokens": a.max_tokens, "temperature": temperature,
                    "response_format": {"type": "json_schema",
                                        "json_schema": {"name": "answer", "schema": entry["schema"]}}}
            if seed is not None:
                body["seed"] = seed
            status, reply, dt = ask(a.url, body, a.timeout)
            kind, content, n = classify(validator, status, reply)
            if kind in ("valid", "invalid", "truncated"):
                tokens += n
                seconds += dt
            answers.append({"schema": entry["name"], "setting": label, "class": kind,
                            "status": status, "tokens": n, "seconds": round(dt, 4),
                            "content": content if content is not None else str(reply)[:300]})
            print(f"{a.engine} {label:14} {kind:9} {n:4} tok {dt:6.2f} s  {entry['name']}",
                  file=sys.stderr)
    after = scrape(a.url) if a.metrics else None
    out = {"engine": a.engine, "completion_tokens": tokens, "answer_seconds": seconds,
           "answers": answers}
    if before is not None and after is not None:
        out["constraint_seconds"] = (after.get("tessera_constraint_seconds_total", 0.0)
                                     - before.get("tessera_constraint_seconds_total", 0.0))
        out["constrained_tokens"] = (after.get("tessera_constrained_tokens_total", 0.0)
                                     - before.get("tessera_constrained_tokens_total", 0.0))
    json.dump(out, open(a.out, "w"), indent=1)


def report(paths):
    runs = [json.load(open(p)) for p in paths]
    for r in runs:
        settings = sorted({x["setting"] for x in r["answers"]}, key=lambda s: (s != "greedy", s))
        print(f"\n{r['engine']}:")
        print("| setting | " + " | ".join(CLASSES) + " |")
        print("|---|" + "---:|" * len(CLASSES))
        for s in settings + ["all"]:
            xs = [x for x in r["answers"] if s == "all" or x["setting"] == s]
            print(f"| {s} | " + " | ".join(str(sum(x["class"] == c for x in xs)) for c in CLASSES) + " |")
        tps = r["completion_tokens"] / r["answer_seconds"] if r["answer_seconds"] else 0.0
        line = (f"output: {r['completion_tokens']} tokens in {r['answer_seconds']:.1f} s of answered "
                f"requests = {tps:.1f} tok/s")
        if r.get("constrained_tokens"):
            line += (f"; constraint engine {1e6 * r['constraint_seconds'] / r['constrained_tokens']:.1f} us"
                     f" per constrained token ({r['constrained_tokens']:.0f} tokens, /metrics)")
        print(line)
        refused = sorted({x["schema"] for x in r["answers"] if x["class"] == "refused"})
        if refused:
            print(f"refused schemas ({len(refused)}): " + "; ".join(refused))
        bad = sorted({f"{x['schema']} [{x['setting']}] {x['class']}" for x in r["answers"]
                      if x["class"] in ("invalid", "truncated", "timeout")})
        if bad:
            print(f"not valid ({len(bad)}): " + "; ".join(bad))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("url")
    r.add_argument("corpus")
    r.add_argument("out")
    r.add_argument("--engine", required=True)
    r.add_argument("--model", default="model")
    r.add_argument("--seeds", type=int, default=3)
    r.add_argument("--max-tokens", type=int, default=256)
    r.add_argument("--timeout", type=float, default=120.0)
    r.add_argument("--metrics", action="store_true")
    rep = sub.add_parser("report")
    rep.add_argument("paths", nargs="+")
    a = p.parse_args()
    if a.cmd == "run":
        run(a)
    else:
        report(a.paths)


if __name__ == "__main__":
    main()
