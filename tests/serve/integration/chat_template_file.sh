#!/usr/bin/env bash
# `tessera serve --chat-template FILE` with a Jinja template no built-in family matches (zephyr
# style, as TinyLlama-Chat ships): the server starts, /v1/chat/completions renders through the
# interpreter (checked by greedy decoding: the chat reply equals the completion of the prompt the
# template should produce), a template's raise_exception answers 400 with its message, and a
# file that does not parse stops the server at start with the line named.
# Usage: chat_template_file.sh TESSERA_BINARY WORK_DIR. Exit 77 (skipped) without curl or python3.
set -euo pipefail
TESSERA=$1
export TESSERA
WORK=$2
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (reads the JSON replies)"; exit 77; }

MODEL="$WORK/tiny-q8_0.gguf"
[ -f "$MODEL" ] || "$TESSERA" synth --shape tiny --dtype q8_0 --ctx 512 -o "$MODEL" >/dev/null

TEMPLATE="$WORK/zephyr.jinja"
cat >"$TEMPLATE" <<'JINJA'
{% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>\n' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>\n' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>\n'  + message['content'] + eos_token }}
{% else %}
{{ raise_exception('Unknown role: ' + message['role']) }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}
JINJA

fails=0
check() {  # name, expected, actual
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
contains() {  # name, needle, haystack
  if printf '%s' "$3" | grep -qF -- "$2"; then echo "ok   $1"; else echo "FAIL $1: '$2' not in: ${3:0:400}"; fails=$((fails + 1)); fi
}

# A template that does not parse: the server refuses to start and names the line.
BAD="$WORK/bad.jinja"
printf 'ok\n{%% for m in messages %%}\n{{ m.content }}\n' >"$BAD"
set +e
out=$("$TESSERA" serve --model "$MODEL" --port 0 --chat-template "$BAD" 2>&1)
rc=$?
set -e
check "bad template stops the server" yes "$([ $rc -ne 0 ] && echo yes || echo "no (rc $rc)")"
contains "bad template error names the line" "line 2: {% for %} is never closed" "$out"
contains "bad template error names the file" "bad.jinja" "$out"

LOG="$WORK/server-chat-template.log"
# scripts/lib/server.sh: start on a free loopback port (SERVER_PID, SERVER_PORT), wait for /health.
. "$(dirname "$0")/../../../scripts/lib/server.sh"
trap stop_server EXIT
start_tessera_server "$LOG" --model "$MODEL" --threads 2 --ctx-size 512 \
  --chat-template "$TEMPLATE" || exit 1
BASE="http://127.0.0.1:$SERVER_PORT"
wait_healthy "$BASE" 30 || exit 1
post() { curl -s -H 'Content-Type: application/json' "$@"; }

chat=$(post "$BASE/v1/chat/completions" -d '{"model":"tiny-q8_0","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"max_tokens":8,"temperature":0}')
contains "chat answers" '"object":"chat.completion"' "$chat"
# Greedy decoding is deterministic: the reply equals the completion of the prompt the template
# renders (the synthetic vocabulary's EOS text is </s>).
PROMPT='<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\n'
comp=$(post "$BASE/v1/completions" -d "{\"model\":\"tiny-q8_0\",\"prompt\":\"$PROMPT\",\"max_tokens\":8,\"temperature\":0}")
field() {  # JSON text, python expression over `j`
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}
check "chat prompt tokens = rendered prompt tokens" \
  "$(field "$comp" 'j["usage"]["prompt_tokens"]')" "$(field "$chat" 'j["usage"]["prompt_tokens"]')"
check "chat reply = completion of the rendered prompt" \
  "$(field "$comp" 'repr(j["choices"][0]["text"])')" \
  "$(field "$chat" 'repr(j["choices"][0]["message"]["content"])')"
# A different prompt gives a different count: the check above can fail.
other=$(post "$BASE/v1/completions" -d "{\"model\":\"tiny-q8_0\",\"prompt\":\"<|user|>\\nHi</s>\\n<|assistant|>\\n\",\"max_tokens\":1}")
check "a shorter prompt has fewer tokens" yes \
  "$([ "$(field "$other" 'j["usage"]["prompt_tokens"]')" -lt "$(field "$chat" 'j["usage"]["prompt_tokens"]')" ] && echo yes || echo no)"

bad_role=$(post -w ' %{http_code}' "$BASE/v1/chat/completions" -d '{"model":"tiny-q8_0","messages":[{"role":"tool","content":"x"}],"max_tokens":2}')
contains "raise_exception is a 400" " 400" "$bad_role"
contains "raise_exception message reaches the client" "Unknown role: tool" "$bad_role"

stop_server
trap - EXIT
grep -q "chat template: file $TEMPLATE" "$LOG" && echo "ok   log names the template" || { echo "FAIL log does not name the template"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo PASS || { echo "--- server log"; tail -30 "$LOG"; }
exit $fails
