#!/usr/bin/env bash
# Issue 42 against the real `tessera serve`: a fleet of two models on two I/O threads, one of
# them downloaded from a stranger with a planted tokenizer.chat_template that holds a 50 MB
# string sixty times and loops 499,000 `'b' in s` over it. Two clients keep sending it chats.
# Checked: each hostile chat is answered within the deadline (--template-timeout-ms 1000) with
# 500 chat_template_limit (never 429); meanwhile /health and the other model's chat answer in
# under 500 ms (median: a request held behind a hostile render would wait for its 1,000 ms
# deadline; on a quiet machine both take a few ms, and the margin keeps a loaded one from
# failing the check for the CPU the attackers take); the process' peak resident memory stays within the render budgets over
# what the loaded models hold; SIGTERM ends the process within its drain time while renders run.
# Usage: hostile_model.sh TESSERA_BINARY WORK_DIR. Exit 77 (skipped) without curl or python3.
set -euo pipefail
TESSERA=$1
WORK=$2
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }

MODELS="$WORK/models"
rm -rf "$MODELS" "$WORK"/attack-*.txt
mkdir -p "$MODELS"
cat >"$WORK/hostile.jinja" <<'JINJA'
{% set s = 'a' * 50000000 %}{% set l = [s] * 60 %}{% for i in range(499000) %}{% if 'b' in s %}x{% endif %}{% endfor %}{{ l|length }}
JINJA
cat >"$WORK/good.jinja" <<'JINJA'
{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}<|assistant|>
JINJA
"$TESSERA" synth --shape tiny --dtype q8_0 --ctx 512 --chat-template "$WORK/hostile.jinja" \
  -o "$MODELS/hostile.gguf" >/dev/null 2>&1
"$TESSERA" synth --shape tiny --dtype q8_0 --ctx 512 --chat-template "$WORK/good.jinja" \
  -o "$MODELS/good.gguf" >/dev/null 2>&1

fails=0
check() {  # name, condition (yes/no), detail
  if [ "$2" = yes ]; then echo "ok   $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}

DRAIN=5
LOG="$WORK/server-hostile.log"
# scripts/lib/server.sh: start on a free loopback port (SERVER_PID, SERVER_PORT), wait for /health.
. "$(dirname "$0")/../../../scripts/lib/server.sh"
start_tessera_server "$LOG" --models "$MODELS" --threads 2 --io-threads 2 \
  --ctx-size 512 --template-timeout-ms 1000 --drain-seconds "$DRAIN"
PID=$SERVER_PID
cleanup() { kill -9 "$PID" 2>/dev/null || true; jobs -p | xargs -r kill 2>/dev/null || true; }
trap cleanup EXIT
BASE="http://127.0.0.1:$SERVER_PORT"
wait_healthy "$BASE" 30
post() { curl -s -H 'Content-Type: application/json' "$@"; }
chat() {  # model -> "<status> <seconds> <body>"
  post -w '\n%{http_code} %{time_total}\n' "$BASE/v1/chat/completions" \
    -d "{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}"
}
# Both models up (their completions route works, the hostile one's included).
for m in hostile good; do
  code=$(post -o /dev/null -w '%{http_code}' "$BASE/v1/completions" -d "{\"model\":\"$m\",\"prompt\":\"hi\",\"max_tokens\":2}")
  check "$m completes before the attack" "$([ "$code" = 200 ] && echo yes || echo no)" "status $code"
done
rss_kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$PID/status"; }
BASE_RSS=$(rss_kib VmRSS)

# Two attackers.
for a in 1 2; do
  ( for _ in $(seq 1 6); do chat hostile | tail -1 >>"$WORK/attack-$a.txt"; chat hostile | head -1 >>"$WORK/attack-body-$a.txt"; done ) &
done
sleep 0.5
health=() ; other=()
for _ in $(seq 1 15); do
  health+=("$(curl -s -o /dev/null -w '%{time_total}' "$BASE/health")")
  out=$(chat good)
  other+=("$(printf '%s' "$out" | tail -1 | cut -d' ' -f2)")
  code=$(printf '%s' "$out" | tail -1 | cut -d' ' -f1)
  [ "$code" = 200 ] || { echo "FAIL other model's chat: $out"; fails=$((fails + 1)); }
  sleep 0.1
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
H=$(median "${health[@]}"); O=$(median "${other[@]}")
echo "during the attack: /health median ${H}s, other model's chat median ${O}s"
check "/health answers in under 500 ms" "$(python3 -c "print('yes' if $H < 0.5 else 'no')")" "median ${H}s"
check "the other model's chat answers in under 500 ms" "$(python3 -c "print('yes' if $O < 0.5 else 'no')")" "median ${O}s"
PEAK=$(rss_kib VmHWM)

# SIGTERM while hostile renders run: the process ends within its drain time.
sleep 0.3
T0=$(date +%s.%N)
kill -TERM "$PID"
for _ in $(seq 1 400); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
T1=$(date +%s.%N)
alive=$(kill -0 "$PID" 2>/dev/null && echo yes || echo no)
EXIT_S=$(python3 -c "print(round($T1 - $T0, 2))")
check "SIGTERM exits within the drain time ($DRAIN s)" \
  "$([ "$alive" = no ] && python3 -c "print('yes' if $EXIT_S <= $DRAIN + 1 else 'no')" || echo no)" "took ${EXIT_S}s, alive: $alive"
wait 2>/dev/null || true

# Every hostile chat answered before the shutdown: 500 chat_template_limit within the deadline.
n=0; bad=0
while read -r code secs; do
  n=$((n + 1))
  if [ "$code" != 500 ] || [ "$(python3 -c "print('yes' if $secs < 3.0 else 'no')")" != yes ]; then
    bad=$((bad + 1)); echo "  hostile chat: $code in ${secs}s"
  fi
done < <(cat "$WORK"/attack-[12].txt 2>/dev/null | grep -E '^(200|400|429|500) ')  # answered before the shutdown
check "hostile chats: 500 within the deadline (checked $n)" "$([ $n -ge 2 ] && [ $bad -eq 0 ] && echo yes || echo no)" "$bad of $n bad"
grep -q chat_template_limit "$WORK"/attack-body-*.txt && c=yes || c=no
check "hostile chats name chat_template_limit" "$c" "$(head -c 300 "$WORK"/attack-body-1.txt)"
grep -q '"code":"rate_limit' "$WORK"/attack-body-*.txt && r=no || r=yes
check "no hostile chat is a 429" "$r" "a 429 was answered"
# Peak memory: two renders at once, each within its 128 MiB budget and two 64 MiB values in
# flight, over what the process held with both models loaded (the 60 copies were 3 GB each).
GROWTH_MIB=$(( (PEAK - BASE_RSS) / 1024 ))
echo "peak resident ${PEAK} KiB, ${GROWTH_MIB} MiB over the loaded models"
check "peak memory within the render budgets" "$([ $GROWTH_MIB -lt $(( 2 * (128 + 128) )) ] && echo yes || echo no)" "${GROWTH_MIB} MiB"
trap - EXIT
cleanup
[ $fails -eq 0 ] && echo PASS || { echo "--- server log"; tail -30 "$LOG"; }
exit $fails
