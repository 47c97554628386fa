# Shared helpers for scripts that start `tessera serve` (or another OpenAI-compatible server) on
# loopback. Source it:  . "$(dirname "$0")/lib/server.sh"
#   start_tessera_server LOG ARGS...   starts `$TESSERA serve --host 127.0.0.1 --port 0 ARGS...`
#                                      in the background; sets SERVER_PID and SERVER_PORT (read
#                                      from its "listening on" line)
#   wait_healthy URL [SECONDS]         polls URL/health until 200 (default 60 s); fails early if
#                                      SERVER_PID exits
#   stop_server                        SIGTERM, then waits (SIGKILL after 30 s)
# TESSERA defaults to build/release/tessera.

SERVER_PID=""
SERVER_PORT=""

start_tessera_server() {
  local log="$1"; shift
  "${TESSERA:-build/release/tessera}" serve --host 127.0.0.1 --port 0 "$@" >"$log" 2>&1 &
  SERVER_PID=$!
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

wait_healthy() {
  local url="$1" secs="${2:-60}" _
  for _ in $(seq 1 $((secs * 10))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ] && return 0
    if [ -n "$SERVER_PID" ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "server exited before it was healthy" >&2; return 1
    fi
    sleep 0.1
  done
  echo "server at $url not healthy after $secs s" >&2
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
