#!/usr/bin/env bash
# `tessera serve --device opencl` under concurrent streams against the CPU server (issue 44):
# the same N greedy completions (distinct prompts, all in flight at once) sent to a CPU server and
# to a device server; every request must be answered and every text must be equal. A check that
# it runs and agrees, not a speed figure (PoCL is not a GPU).
#   scripts/device-serve-check.sh [MODEL [TOKENIZER]] [-n STREAMS]
# Default model: ../shared/models/stories260K.bin with its tokenizer (trained weights: greedy
# ties are rare); STREAMS 16, 48 tokens each.
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:-../shared/models/stories260K.bin}"
tokenizer="${2:-../shared/models/stories260K-tok512.bin}"
streams="${STREAMS:-16}"
tokens="${TOKENS:-48}"
. scripts/lib/server.sh
ensure_tessera
out=$(mktemp -d)
trap 'stop_server; rm -rf "$out"' EXIT
tok_args=()
[ -n "$tokenizer" ] && tok_args=(--tokenizer "$tokenizer")
for device in cpu opencl; do
  start_tessera_server "$out/$device.log" -m "$model" "${tok_args[@]}" --device "$device" \
    --parallel "$streams"
  wait_healthy "http://127.0.0.1:$SERVER_PORT" 120
  python3 - "http://127.0.0.1:$SERVER_PORT" "$streams" "$tokens" "$out/$device.json" <<'PY'
import concurrent.futures, json, sys, time, urllib.request
url, n, tokens, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
model = json.load(urllib.request.urlopen(url + "/v1/models"))["data"][0]["id"]
subjects = ["a cat", "the sea", "a red ball", "Lily", "a big tree", "the park", "a dog", "the sun",
            "a little bird", "Tom", "a boat", "the moon", "a cake", "the garden", "a toy car", "Ben"]
def one(i):
    body = json.dumps({"model": model, "prompt": f"Once upon a time, {subjects[i % len(subjects)]} {i}",
                       "max_tokens": tokens, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)["choices"][0]["text"]
t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(n) as ex:
    texts = list(ex.map(one, range(n)))
print(f"{n} streams answered in {time.time() - t0:.1f} s")
json.dump(texts, open(path, "w"))
PY
  stop_server
done
python3 - "$out/cpu.json" "$out/opencl.json" <<'PY'
import json, sys
cpu, dev = (json.load(open(p)) for p in sys.argv[1:3])
same = sum(a == b for a, b in zip(cpu, dev))
print(f"greedy texts equal: {same} of {len(cpu)}")
for i, (a, b) in enumerate(zip(cpu, dev)):
    if a != b:
        print(f"  stream {i}:\n    cpu: {a!r}\n    dev: {b!r}")
sys.exit(0 if same == len(cpu) else 1)
PY
