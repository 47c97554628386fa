# Shared helpers for the scripts that start `tessera serve` or a peer server (llama-server) on
# loopback and drive it. Source it:  . "$(dirname "$0")/lib/server.sh"  (set -euo pipefail safe)
#   start_tessera_server LOG ARGS...   starts `$TESSERA serve --host 127.0.0.1 --port 0 ARGS...`
#                                      in the background; sets SERVER_PID and SERVER_PORT (read
#                                      from its "listening on" line)
#   start_server LOG CMD ARGS...       starts any server command (its port chosen by the caller,
#                                      e.g. with free_port) in the background; sets SERVER_PID
#   wait_healthy URL [SECONDS]         polls URL/health until 200 (default 60 s); fails early,
#                                      printing the log's tail, if SERVER_PID exits
#   stop_server                        SIGTERM, then waits (SIGKILL after 30 s); no-op without one
#   stop_server_checked [SECONDS]      SIGTERM and require a clean exit (status 0) within SECONDS
#                                      (default 10): the graceful-shutdown check
#   free_port                          prints a free loopback TCP port
#   ensure_tessera                     builds build/release/tessera if it is missing
#   synth_model SHAPE DTYPE            prints the path of a cached synthetic GGUF
#                                      (~/.cache/tessera/bench/synth-SHAPE-DTYPE.gguf), making it
#                                      once with `tessera synth`
#   llama_bin NAME                     prints the path of a llama.cpp tool (llama-server,
#                                      llama-simple, ...): $LLAMA_CPP_BIN/NAME, else
#                                      ../peers/llama.cpp/build/bin/NAME beside the repository,
#                                      else NAME on PATH; fails with a clear message otherwise
# TESSERA defaults to build/release/tessera (run from the repository root).

SERVER_PID=""
SERVER_PORT=""
SERVER_LOG=""

start_tessera_server() {
  local log="$1"; shift
  "${TESSERA:-build/release/tessera}" serve --host 127.0.0.1 --port 0 "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  SERVER_LOG="$log"
  SERVER_PORT=""
  local _
  for _ in $(seq 1 600); do
    SERVER_PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$SERVER_PORT" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "server exited early:" >&2; cat "$log" >&2; return 1; }
    sleep 0.05
  done
  echo "server did not report its port within 30 s:" >&2; cat "$log" >&2
  return 1
}

start_server() {
  local log="$1"; shift
  "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  SERVER_LOG="$log"
}

wait_healthy() {
  local url="$1" secs="${2:-60}" _
  for _ in $(seq 1 $((secs * 10))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ] && return 0
    if [ -n "$SERVER_PID" ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "server exited before it was healthy" >&2
      [ -n "$SERVER_LOG" ] && tail -n 20 "$SERVER_LOG" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "server at $url not healthy after $secs s${SERVER_LOG:+ (log: $SERVER_LOG)}" >&2
  return 1
}

stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill "$SERVER_PID" 2>/dev/null || true
  local _
  for _ in $(seq 1 300); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

stop_server_checked() {
  local secs="${1:-10}" _ rc
  [ -n "$SERVER_PID" ] || { echo "no server to stop" >&2; return 1; }
  kill -TERM "$SERVER_PID"
  for _ in $(seq 1 $((secs * 20))); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "FAIL: server still running $secs s after SIGTERM" >&2
    stop_server
    return 1
  fi
  wait "$SERVER_PID" && rc=0 || rc=$?
  SERVER_PID=""
  [ "$rc" -eq 0 ] || { echo "FAIL: server exited with $rc after SIGTERM" >&2; return 1; }
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

ensure_tessera() {
  [ -x "${TESSERA:-build/release/tessera}" ] || ./scripts/build.sh release tessera >/dev/null
}

synth_model() {
  local shape="$1" dtype="$2"
  local model="$HOME/.cache/tessera/bench/synth-$shape-$dtype.gguf"
  mkdir -p "$(dirname "$model")"
  [ -f "$model" ] || "${TESSERA:-build/release/tessera}" synth --shape "$shape" --dtype "$dtype" \
    --out "$model" >/dev/null
  echo "$model"
}

llama_bin() {
  local name="$1"
  if [ -n "${LLAMA_CPP_BIN:-}" ] && [ -x "$LLAMA_CPP_BIN/$name" ]; then echo "$LLAMA_CPP_BIN/$name"; return 0; fi
  local beside
  beside="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/peers/llama.cpp/build/bin/$name"
  if [ -x "$beside" ]; then echo "$beside"; return 0; fi
  command -v "$name" 2>/dev/null && return 0
  echo "$name not found: build llama.cpp outside this repository and set LLAMA_CPP_BIN to its build/bin" >&2
  return 1
}
