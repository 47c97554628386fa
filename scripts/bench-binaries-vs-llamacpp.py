#!/usr/bin/env python3
"""Alternates several Tessera binaries (e.g. a parent and a change) and llama-bench on GGUF files.

  scripts/bench-binaries-vs-llamacpp.py run OUT ROUNDS MODEL NAME=PATH...
  scripts/bench-binaries-vs-llamacpp.py table OUT

`run`: ROUNDS rounds on MODEL; each round runs every engine once (`tessera bench model -t 2 -p 128
-n 32 -r 2` for a Tessera binary; `llama-bench -t 2 -p 128 -n 32 -r 2 -mmp 0` for an engine whose
NAME starts with "llama"), the order reversed in every other round, so neither side always runs
first on a shared, noisy machine. Raw outputs go to OUT/<model>-<name>-r<round>.txt (any
subdirectory of OUT works for `table`). Env THREADS, PP, TG, REPS override 2, 128, 32, 2.
`table`: a markdown table of the medians over every round found under OUT, per model and test,
with the ratios of the engines named "after" to "before" and to "llama".
"""
import glob, json, os, re, statistics as st, subprocess, sys


def run(out, rounds, model, engines):
    threads, pp, tg, reps = (os.environ.get(k, d) for k, d in
                             (("THREADS", "2"), ("PP", "128"), ("TG", "32"), ("REPS", "2")))
    os.makedirs(out, exist_ok=True)
    tag = os.path.basename(model).replace(".gguf", "")
    for r in range(rounds):
        for name, path in (engines if r % 2 == 0 else engines[::-1]):
            if name.startswith("llama"):
                cmd = [path, "-m", model, "-t", threads, "-p", pp, "-n", tg, "-r", reps, "-mmp", "0",
                       "-o", "json"]
            else:
                cmd = [path, "bench", "model", "-m", model, "-t", threads, "-p", pp, "-n", tg, "-r",
                       reps, "--json"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{name} failed: {p.stderr[-2000:]}", file=sys.stderr)
                continue
            with open(f"{out}/{tag}-{name}-r{r}.txt", "w") as f:
                f.write(p.stdout)
            print(tag, name, r, parse(name, p.stdout), flush=True)


def parse(name, text):
    if name.startswith("llama"):
        return {(f"pp{x['n_prompt']}" if x["n_gen"] == 0 else f"tg{x['n_gen']}"): x["avg_ts"]
                for x in json.loads(text)}
    return {x["test"]: x["tokens_per_second_mean"] for x in json.loads(text)["results"]}


def table(out):
    res = {}
    for path in sorted(glob.glob(f"{out}/**/*.txt", recursive=True)):
        m = re.match(r"(.*)-([^-]+)-r\d+\.txt$", os.path.basename(path))
        text = open(path).read()
        if not m or not text.strip():
            continue
        for test, v in parse(m.group(2), text).items():
            res.setdefault((m.group(1), test), {}).setdefault(m.group(2), []).append(v)
    med = lambda v: st.median(v) if v else float("nan")
    show = lambda v: (f"{med(v):.1f}" + (f" ({', '.join(f'{x:.1f}' for x in v)})" if len(v) > 1 else "")
                      if v else "-")
    print("| model | test | before t/s | after t/s | llama.cpp t/s | after / before | after / llama.cpp |")
    print("|---|---|---|---|---|---|---|")
    for (tag, test), e in sorted(res.items()):
        b, a, l = e.get("before", []), e.get("after", []), e.get("llama", [])
        ratio = lambda x, y: f"{med(x) / med(y):.2f}x" if x and y else "-"
        print(f"| {tag.replace('synth-', '')} | {test} | {show(b)} | {show(a)} | {show(l)} | "
              f"{ratio(a, b)} | {ratio(a, l)} |")


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "run":
        run(sys.argv[2], int(sys.argv[3]), sys.argv[4], [e.split("=", 1) for e in sys.argv[5:]])
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
