#!/usr/bin/env bash
# Loopback integration test of `tessera serve`: starts the real binary on a synthetic model, drives
# it with curl (curl_checks.sh) and with the official `openai` npm client (openai_client.mjs), then
# sends SIGTERM and checks a clean drain. Usage: run.sh TESSERA_BINARY WORK_DIR [curl|openai|all]
# Exit 77 (CTest "skipped") when curl, node or the npm package is unavailable.
set -euo pipefail

TESSERA=$1
export TESSERA
WORK=$2
WHAT=${3:-all}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }

MODEL="$WORK/tiny-q8_0.gguf"
[ -f "$MODEL" ] || "$TESSERA" synth --shape tiny --dtype q8_0 --ctx 512 -o "$MODEL" >/dev/null

if [ "$WHAT" = openai ] || [ "$WHAT" = all ]; then
  command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: node/npm are not installed"; exit 77; }
  NODE_DIR="$WORK/node"
  if [ ! -d "$NODE_DIR/node_modules/openai" ] || [ ! -d "$NODE_DIR/node_modules/zod" ]; then
    mkdir -p "$NODE_DIR"
    # The official client, from the npm registry (the test setup's one network need), and zod for
    # its structured-output helpers (zodResponseFormat).
    if ! (cd "$NODE_DIR" && npm install --silent --no-audit --no-fund openai@4 zod@3 >/dev/null 2>&1); then
      echo "SKIP: could not install the openai npm package (no registry access?)"
      exit 77
    fi
  fi
fi

# ChatML as a Jinja template that also renders tools and asks for Hermes-style calls, so the
# clients' function-calling requests run (the built-in chatml renders no tools).
TEMPLATE="$WORK/chatml-tools.jinja"
cat >"$TEMPLATE" <<'JINJA'
{%- if tools %}<|im_start|>system
You may call these functions:
<tools>
{% for t in tools %}{{ t | tojson }}
{% endfor %}</tools>
Write each call as <tool_call>{"name": <name>, "arguments": <object>}</tool_call><|im_end|>
{% endif %}
{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}
JINJA
API_KEY=test-key-123
LOG="$WORK/server-$WHAT.log"
# scripts/lib/server.sh: start on a free loopback port (SERVER_PID, SERVER_PORT), wait for /health.
. "$HERE/../../../scripts/lib/server.sh"
trap stop_server EXIT
start_tessera_server "$LOG" --model "$MODEL" --threads 2 --parallel 4 \
  --ctx-size 512 --api-key "$API_KEY" --chat-template "$TEMPLATE" || exit 1
BASE="http://127.0.0.1:$SERVER_PORT"
# up to 30 s: a loaded CI machine can be slow to load the model
wait_healthy "$BASE" 30 || { cat "$LOG"; exit 1; }

status=0
if [ "$WHAT" = curl ] || [ "$WHAT" = all ]; then
  BASE=$BASE API_KEY=$API_KEY MODEL_NAME=tiny-q8_0 bash "$HERE/curl_checks.sh" || status=1
fi
if [ "$WHAT" = openai ] || [ "$WHAT" = all ]; then
  BASE=$BASE API_KEY=$API_KEY MODEL_NAME=tiny-q8_0 NODE_PATH="$WORK/node/node_modules" \
    node "$HERE/openai_client.mjs" "$WORK/node/node_modules/openai/index.mjs" || status=1
fi

# Graceful shutdown: SIGTERM drains and exits 0 within 10 s.
stop_server_checked 10 || { cat "$LOG"; status=1; }
trap - EXIT
[ $status -eq 0 ] && echo "PASS" || { echo "--- server log"; tail -50 "$LOG"; }
exit $status
