#!/usr/bin/env bash
# A Prometheus server (Debian's `prometheus`) scraping a `tessera cluster` router and, through the
# router's /cluster/targets (http_sd_configs), every replica it runs - for the demo and the
# cluster integration test.
#   scripts/prometheus-local.sh start ROUTER_HOST:PORT [DIR] [LISTEN_PORT]   (default DIR:
#       ${TESSERA_PROMETHEUS_DIR:-/tmp/tessera-prometheus-$UID}, LISTEN_PORT 9090)
#   scripts/prometheus-local.sh stop [DIR]
#   scripts/prometheus-local.sh url [DIR]            its base URL
# Exits 77 when prometheus is not installed (scripts/install-deps.sh installs it).
set -euo pipefail
cmd=${1:-}
shift || true
default_dir=${TESSERA_PROMETHEUS_DIR:-/tmp/tessera-prometheus-$(id -u)}

case "$cmd" in
  start)
    router=${1:?usage: prometheus-local.sh start ROUTER_HOST:PORT [DIR] [LISTEN_PORT]}
    dir=${2:-$default_dir}
    listen=${3:-9090}
    command -v prometheus >/dev/null || { echo "SKIP: prometheus is not installed" >&2; exit 77; }
    mkdir -p "$dir/data"
    if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      echo "prometheus already running (pid $(cat "$dir/pid"))"
      exit 0
    fi
    cat >"$dir/prometheus.yml" <<YAML
# Written by scripts/prometheus-local.sh.
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tessera-router
    static_configs:
      - targets: ['$router']
  - job_name: tessera-replicas
    http_sd_configs:
      - url: 'http://$router/cluster/targets'
        refresh_interval: 1s
YAML
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
      --web.listen-address="127.0.0.1:$listen" >"$dir/prometheus.log" 2>&1 &
    echo $! >"$dir/pid"
    echo "http://127.0.0.1:$listen" >"$dir/url"
    for _ in $(seq 1 200); do
      if curl -fsS "http://127.0.0.1:$listen/-/ready" >/dev/null 2>&1; then
        echo "prometheus ready on http://127.0.0.1:$listen (config $dir/prometheus.yml)"
        exit 0
      fi
      kill -0 "$(cat "$dir/pid")" 2>/dev/null || { echo "prometheus exited:" >&2; tail -20 "$dir/prometheus.log" >&2; exit 1; }
      sleep 0.1
    done
    echo "prometheus not ready after 20 s:" >&2
    tail -20 "$dir/prometheus.log" >&2
    exit 1
    ;;
  stop)
    dir=${1:-$default_dir}
    if [ -f "$dir/pid" ]; then
      pid=$(cat "$dir/pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/pid"
    fi
    ;;
  url)
    cat "${1:-$default_dir}/url"
    ;;
  *)
    echo "usage: prometheus-local.sh start ROUTER_HOST:PORT [DIR] [LISTEN_PORT] | stop [DIR] | url [DIR]" >&2
    exit 2
    ;;
esac
