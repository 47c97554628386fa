#!/usr/bin/env bash
# Time to first token after an idle sleep: llama.cpp's `llama-server` in router mode with
# --sleep-idle-seconds against `tessera serve --models DIR --idle-policy fixed --keep-alive S`, on
# the same GGUF file (alone in a models directory), same threads, one slot, same context.
#   scripts/bench-fleet-vs-llama-server.sh LLAMA_SERVER TESSERA MODEL.gguf [RUNS] [IDLE_S]
# LLAMA_SERVER and TESSERA are prebuilt binaries (this script builds nothing). RUNS defaults to 5,
# IDLE_S (the idle seconds before a model sleeps, on both sides) to 3.
# Env: THREADS (2), CTX (2048), MARGIN (1 s of extra idle after the sleep is seen), MAX_TOKENS (4),
#      PROMPT ("Once upon a time,": short, so the first token is mostly the wake),
#      OUT (~/.cache/tessera/fleetbench: the models directory and the server logs).
# How: the servers run one after the other, never together. For each: start it, send one warm-up
# request (llama-server's router spawns the model's child process on it), time 3 warm requests,
# then RUNS times: stay idle, polling the model list (llama-server: GET /models, status "sleeping";
# tessera: GET /v1/models, state "suspended"; neither counts as activity) until the model has gone
# to sleep, stay idle MARGIN more seconds, then time one streaming /v1/completions request
# (temperature 0) from sending it to the first SSE chunk that carries text, and check the model is
# awake again. Every prompt is "Note N: $PROMPT" with its own N, and llama-server is asked for
# "cache_prompt": false (tessera is not sent it: it refuses fields it does not implement), so no
# prompt cache ever hits: "warm" is a full prefill on an awake model, and after-sleep minus warm
# is what waking costs ("wake ms"). The resident memory of the process holding the weights
# (llama-server's child, tessera itself) is read awake and asleep to show that the sleep released
# it.
set -euo pipefail
usage="usage: $0 LLAMA_SERVER TESSERA MODEL.gguf [RUNS] [IDLE_S]"
llama_server="${1:?$usage}"
tessera="${2:?$usage}"
model="${3:?$usage}"
runs="${4:-5}"
idle_s="${5:-3}"
threads="${THREADS:-2}"; ctx="${CTX:-2048}"; margin="${MARGIN:-1}"; max_tokens="${MAX_TOKENS:-4}"
out="${OUT:-$HOME/.cache/tessera/fleetbench}"
for f in "$llama_server" "$tessera"; do [ -x "$f" ] || { echo "not executable: $f" >&2; exit 1; }; done
[ -f "$model" ] || { echo "no such model file: $model" >&2; exit 1; }

# The model alone in a directory, under the same stem for both servers (hard link, else a copy).
name=$(basename "$model" .gguf)
models_dir="$out/models"
mkdir -p "$models_dir"
find "$models_dir" -mindepth 1 -maxdepth 1 ! -name "$name.gguf" -exec rm -rf {} +
if [ ! "$models_dir/$name.gguf" -ef "$model" ]; then
  ln -f "$model" "$models_dir/$name.gguf" 2>/dev/null || cp -f "$model" "$models_dir/$name.gguf"
fi
# Page-cache the file once, so neither server pays the first cold read.
cat "$models_dir/$name.gguf" > /dev/null

helper=$(mktemp /tmp/fleetbench-XXXXXX.py)
. "$(dirname "$0")/lib/server.sh"  # start/stop/health of servers (SERVER_PID)
trap 'stop_server; rm -f "$helper"' EXIT
trap 'exit 130' INT TERM

cat > "$helper" <<'PY'
import http.client, json, sys, time

def get_json(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return json.loads(body) if r.status == 200 else None

def state(port, kind, model):
    # llama-server router: GET /models -> data[].status.value; tessera: GET /v1/models -> data[].state
    j = get_json(port, "/models" if kind == "llama" else "/v1/models")
    for m in (j or {}).get("data", []):
        if m.get("id") == model:
            return m["status"]["value"] if kind == "llama" else m.get("state", "?")
    return "missing"

def ttft(port, kind, model, prompt, max_tokens):
    req = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
           "stream": True}
    if kind == "llama":
        req["cache_prompt"] = False  # no prompt-cache reuse (tessera refuses unknown fields)
    body = json.dumps(req)
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise SystemExit(f"HTTP {r.status}: {r.read()[:300]!r}")
    first_chunk = first_text = None
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        now = time.perf_counter()
        if first_chunk is None:
            first_chunk = now
        choices = json.loads(data).get("choices") or [{}]
        if first_text is None and choices[0].get("text"):
            first_text = now
    total = time.perf_counter() - t0
    c.close()
    if first_chunk is None:
        raise SystemExit("no SSE data chunk in the response")
    # The first chunk with text; a chunk without text only if no token decoded to text.
    print(f"{((first_text or first_chunk) - t0):.4f} {total:.4f}")

cmd = sys.argv[1]
if cmd == "state":
    print(state(int(sys.argv[2]), sys.argv[3], sys.argv[4]))
elif cmd == "ttft":
    ttft(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
PY

prompt="${PROMPT:-Once upon a time,}"
ask() {  # N -> TTFT in ms of one request whose prompt starts with "Note N:" (N: 10..99, distinct)
  # $kind is measure()'s local (bash scoping is dynamic).
  python3 "$helper" ttft "$port" "$kind" "$name" "Note $1: $prompt" "$max_tokens" | awk '{print $1 * 1000}'
}
port=$(free_port)

rss_mib() {  # pid -> resident MiB
  awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo "?"
}
weights_pid() {  # kind -> the process holding the weights
  if [ "$1" = llama ]; then pgrep -P "$SERVER_PID" | head -n 1; else echo "$SERVER_PID"; fi
}

# measure KIND ASLEEP_STATE: fills warm_ms, sleep_ms (space separated), rss_awake, rss_asleep,
# seen_after (seconds from the end of a request until the sleep was seen, per run)
measure() {
  local kind=$1 asleep=$2 r t s waited
  ask 10 > /dev/null  # warm-up / load
  warm_ms=""
  for r in 1 2 3; do warm_ms="$warm_ms $(ask $((10 + r)))"; done
  rss_awake=$(rss_mib "$(weights_pid "$kind")")
  sleep_ms=""; seen_after=""; rss_asleep=""
  for r in $(seq 1 "$runs"); do
    local t_idle0=$SECONDS deadline=$((SECONDS + idle_s + 30))
    local start_ns
    start_ns=$(date +%s%N)
    while :; do
      s=$(python3 "$helper" state "$port" "$kind" "$name")
      [ "$s" = "$asleep" ] && break
      if [ $SECONDS -ge $deadline ]; then
        echo "$kind: model never went to sleep after $((SECONDS - t_idle0)) s idle (state: $s)" >&2
        return 1
      fi
      sleep 0.2
    done
    waited=$(( ($(date +%s%N) - start_ns) / 1000000 ))
    seen_after="$seen_after $(awk -v m="$waited" 'BEGIN {printf "%.1f", m / 1000}')"
    sleep "$margin"
    [ -z "$rss_asleep" ] && rss_asleep=$(rss_mib "$(weights_pid "$kind")")
    t=$(ask $((20 + r)))
    sleep_ms="$sleep_ms $t"
    s=$(python3 "$helper" state "$port" "$kind" "$name")
    printf '  %-12s run %d: asleep after %5.1f s idle, TTFT %8.1f ms, state after: %s\n' \
      "$kind" "$r" "$(awk -v m="$waited" 'BEGIN {print m / 1000}')" "$t" "$s"
  done
}
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
fmt_list() { awk '{for (i = 1; i <= NF; i++) printf "%s%.1f", (i > 1 ? " " : ""), $i}'; }

echo "model $name ($(du -h "$models_dir/$name.gguf" | cut -f1)), $runs runs, idle $idle_s s (+$margin s), $threads threads, ctx $ctx, max_tokens $max_tokens, port $port"

# (a) llama-server, router mode: no model on the command line; the child inherits the other flags.
llama_log="$out/llama-server.log"
"$llama_server" --models-dir "$models_dir" --models-max 1 --host 127.0.0.1 --port "$port" \
  -t "$threads" -np 1 -c "$ctx" --sleep-idle-seconds "$idle_s" > "$llama_log" 2>&1 &
SERVER_PID=$!; SERVER_LOG=$llama_log
wait_healthy "http://127.0.0.1:$port" 120
measure llama sleeping
l_warm=$warm_ms; l_sleep=$sleep_ms; l_rss_awake=$rss_awake; l_rss_asleep=$rss_asleep
l_enter=$(grep -c "server is entering sleeping state" "$llama_log" || true)
l_exit=$(grep -c "server is exiting sleeping state" "$llama_log" || true)
stop_server

# (b) tessera serve over the same directory.
tessera_log="$out/tessera-server.log"
"$tessera" serve --models "$models_dir" --idle-policy fixed --keep-alive "$idle_s" --host 127.0.0.1 \
  --port "$port" -t "$threads" --parallel 1 -c "$ctx" > "$tessera_log" 2>&1 &
SERVER_PID=$!; SERVER_LOG=$tessera_log
wait_healthy "http://127.0.0.1:$port" 120
measure tessera suspended
t_warm=$warm_ms; t_sleep=$sleep_ms; t_rss_awake=$rss_awake; t_rss_asleep=$rss_asleep
t_enter=$(grep -c -- "active -> suspending" "$tessera_log" || true)
t_exit=$(grep -c -- "suspended -> resuming" "$tessera_log" || true)
stop_server

l_med=$(echo "$l_sleep" | median); t_med=$(echo "$t_sleep" | median)
l_wmed=$(echo "$l_warm" | median); t_wmed=$(echo "$t_warm" | median)
echo
printf '%-13s %8s %15s %8s %10s %11s %12s  %s\n' server "warm ms" "after-sleep ms" "wake ms" \
  "RSS awake" "RSS asleep" "sleeps/wakes" "after-sleep runs (ms)"
row() {  # label warm-median sleep-median rss-awake rss-asleep sleeps wakes runs
  printf '%-13s %8.1f %15.1f %8.1f %9sM %10sM %7s/%-4s  %s\n' "$1" "$2" "$3" "$(awk -v a="$3" -v b="$2" 'BEGIN {print a - b}')" \
    "$4" "$5" "$6" "$7" "$(echo "$8" | fmt_list)"
}
row llama-server "$l_wmed" "$l_med" "$l_rss_awake" "$l_rss_asleep" "$l_enter" "$l_exit" "$l_sleep"
row tessera "$t_wmed" "$t_med" "$t_rss_awake" "$t_rss_asleep" "$t_enter" "$t_exit" "$t_sleep"
awk -v l="$l_med" -v t="$t_med" -v lw="$l_wmed" -v tw="$t_wmed" 'BEGIN {
  r = (t > 0) ? l / t : 0
  printf "after-sleep TTFT ratio llama-server / tessera: %.1fx (target >= 5x: %s)\n", r, (r >= 5 ? "met" : "not met")
  if (t - tw > 0) printf "wake-cost ratio (after-sleep minus warm) llama-server / tessera: %.1fx\n", (l - lw) / (t - tw) }'
echo "logs: $llama_log $tessera_log"
