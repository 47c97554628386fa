#!/usr/bin/env bash
# curl against a running `tessera serve` (see run.sh): routes, streaming, errors, metrics and
# cancellation. Env: BASE, API_KEY, MODEL_NAME.
set -uo pipefail
fails=0
AUTH="Authorization: Bearer $API_KEY"
check() {  # name, expected, actual
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
contains() {  # name, needle, haystack
  if printf '%s' "$3" | grep -qF -- "$2"; then echo "ok   $1"; else echo "FAIL $1: '$2' not in: ${3:0:400}"; fails=$((fails + 1)); fi
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
post() { curl -s -H "$AUTH" -H 'Content-Type: application/json' "$@"; }

check "health" 200 "$(code "$BASE/health")"
check "models needs the key" 401 "$(code "$BASE/v1/models")"
check "wrong key" 401 "$(code -H 'Authorization: Bearer nope' "$BASE/v1/models")"
contains "models lists the model" "\"id\":\"$MODEL_NAME\"" "$(curl -s -H "$AUTH" "$BASE/v1/models")"

body=$(post "$BASE/v1/completions" -d "{\"model\":\"$MODEL_NAME\",\"prompt\":\"Once upon a time\",\"max_tokens\":8,\"temperature\":0}")
contains "completion object" '"object":"text_completion"' "$body"
contains "completion usage" '"completion_tokens":8' "$body"
contains "finish length" '"finish_reason":"length"' "$body"

stream=$(post -N "$BASE/v1/completions" -d "{\"model\":\"$MODEL_NAME\",\"prompt\":\"Hello\",\"max_tokens\":5,\"stream\":true,\"stream_options\":{\"include_usage\":true}}")
check "stream ends with [DONE]" "data: [DONE]" "$(printf '%s\n' "$stream" | grep '^data:' | tail -1)"
contains "stream usage chunk" '"completion_tokens":5' "$stream"
# One chunk per token that completes visible text (a token ending inside a UTF-8 character waits
# for the next), then the finish chunk, the usage chunk and [DONE].
check "one finish chunk" 1 "$(printf '%s\n' "$stream" | grep -c '"finish_reason":"length"')"
n_data=$(printf '%s\n' "$stream" | grep -c '^data:')
check "stream chunks in range" yes "$([ "$n_data" -ge 4 ] && [ "$n_data" -le 8 ] && echo yes || echo "no ($n_data)")"

chat=$(post "$BASE/v1/chat/completions" -d "{\"model\":\"$MODEL_NAME\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":4}")
contains "chat object" '"object":"chat.completion"' "$chat"
contains "chat message" '"role":"assistant"' "$chat"

# Greedy is deterministic: the same request twice gives the same text.
a=$(post "$BASE/v1/completions" -d "{\"model\":\"$MODEL_NAME\",\"prompt\":\"abc\",\"max_tokens\":6,\"temperature\":0}" | sed 's/"id":"[^"]*"//; s/"created":[0-9]*//')
b=$(post "$BASE/v1/completions" -d "{\"model\":\"$MODEL_NAME\",\"prompt\":\"abc\",\"max_tokens\":6,\"temperature\":0}" | sed 's/"id":"[^"]*"//; s/"created":[0-9]*//')
check "greedy repeatable" "$a" "$b"

check "malformed JSON" 400 "$(code -H "$AUTH" -H 'Content-Type: application/json' -d '{"model":' "$BASE/v1/completions")"
check "wrong type" 400 "$(code -H "$AUTH" -H 'Content-Type: application/json' -d "{\"model\":\"$MODEL_NAME\",\"prompt\":\"x\",\"max_tokens\":\"many\"}" "$BASE/v1/completions")"
contains "error names the field" 'max_tokens' "$(post "$BASE/v1/completions" -d "{\"model\":\"$MODEL_NAME\",\"prompt\":\"x\",\"max_tokens\":\"many\"}")"
check "unknown model" 404 "$(code -H "$AUTH" -H 'Content-Type: application/json' -d '{"model":"nope","prompt":"x"}' "$BASE/v1/completions")"
check "unknown route" 404 "$(code -H "$AUTH" "$BASE/v1/nothing")"
head -c 9000000 /dev/zero | tr '\0' 'a' > "${TMPDIR:-/tmp}/tessera-big-body.txt"
check "body too large" 413 "$(code -H "$AUTH" -H 'Content-Type: application/json' --data-binary @"${TMPDIR:-/tmp}/tessera-big-body.txt" "$BASE/v1/completions")"
rm -f "${TMPDIR:-/tmp}/tessera-big-body.txt"

# A client that goes away mid-stream cancels its request and frees its KV blocks.
curl -s -N -m 1 -H "$AUTH" -H 'Content-Type: application/json' \
  -d "{\"model\":\"$MODEL_NAME\",\"prompt\":\"tell me a long story\",\"max_tokens\":400,\"stream\":true,\"ignore_eos\":true}" \
  "$BASE/v1/completions" >/dev/null 2>&1
used=""
for _ in $(seq 1 100); do
  used=$(curl -s -H "$AUTH" "$BASE/metrics" | awk '/^tessera_kv_blocks_used[ {]/ {print $NF}' | head -1)
  [ "$used" = 0 ] && break
  sleep 0.05
done
check "cancelled stream freed its blocks" 0 "$used"
metrics=$(curl -s -H "$AUTH" "$BASE/metrics")
contains "metrics: requests" "tessera_http_requests_total" "$metrics"
contains "metrics: ttft histogram" "tessera_time_to_first_token_seconds_bucket" "$metrics"

echo "curl checks: $fails failed"
[ $fails -eq 0 ]
