#!/usr/bin/env python3
"""A LoRA adapter served unmerged against the merged model: greedy completions and their
logprobs from two running `tessera serve` instances, one with `--lora NAME=ADAPTER` on the base,
one on the merged model (`tessera lora merge`). Prints, per prompt, whether the texts are equal,
the largest logprob difference, and whether the base alone differs (so the adapter did something).
Usage: lora-served-vs-merged.py ADAPTER_PORT MERGED_PORT [max_tokens]   (standard library only)"""
import json
import sys
import urllib.request


def get(port, path):
    return json.load(urllib.request.urlopen(f"http://localhost:{port}{path}"))


def complete(port, model, prompt, max_tokens):
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "logprobs": 1}
    req = urllib.request.Request(f"http://localhost:{port}/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    c = json.load(urllib.request.urlopen(req))["choices"][0]
    return c["text"], c["logprobs"]["token_logprobs"]


def main():
    a_port, m_port = int(sys.argv[1]), int(sys.argv[2])
    max_tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 48
    ids = [m["id"] for m in get(a_port, "/v1/models")["data"]]
    adapter = next(i for i in ids if ":" in i)
    base = adapter.split(":")[0]
    merged = get(m_port, "/v1/models")["data"][0]["id"]
    prompts = ["She looked at him and", "The house was", "He said that the", "In the morning they",
               "It was a long"]
    same = 0
    for p in prompts:
        a, la = complete(a_port, adapter, p, max_tokens)
        b, lb = complete(m_port, merged, p, max_tokens)
        c, _ = complete(a_port, base, p, max_tokens)
        diff = max((abs(x - y) for x, y in zip(la, lb)), default=0.0)
        same += a == b
        print(f"{p!r}: {adapter} == {merged}: {a == b} (max |d logprob| {diff:.2e}); "
              f"{base} alone differs: {a != c}")
    print(f"{same}/{len(prompts)} identical greedy completions")
    return 0 if same == len(prompts) else 1


if __name__ == "__main__":
    sys.exit(main())
