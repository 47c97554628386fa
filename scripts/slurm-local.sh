#!/usr/bin/env bash
# A private one-host Slurm cluster for demos and tests: munged, slurmctld and slurmd, all of
# their files (config, munge key and socket, pid files, logs, spool) under one state directory,
# on free ports, so it never touches /etc/slurm, /etc/munge or a system munge.
#
#   scripts/slurm-local.sh start  [STATE_DIR]   start (no-op when already up); waits for idle nodes
#   scripts/slurm-local.sh stop   [STATE_DIR]   cancel all jobs, stop the daemons (idempotent)
#   scripts/slurm-local.sh status [STATE_DIR]   sinfo and squeue (exit 3 when not running)
#   scripts/slurm-local.sh env    [STATE_DIR]   `export SLURM_CONF=...` lines, for eval
#   scripts/slurm-local.sh check                exit 0 when slurm-wlm and munge are installed, else 77
#
# STATE_DIR: $TESSERA_SLURM_DIR, else ${TMPDIR:-/tmp}/tessera-slurm-$UID.
# Nodes: $TESSERA_SLURM_NODES (default 1). One node is this host (`hostname -s`) with all its CPUs
# and memory; N > 1 runs N slurmd on this host (n1..nN, `slurmd -N`, one Port= each), each with
# nproc/N CPUs (at least 1) and 1/N of the memory.
# Ports: slurmctld on $TESSERA_SLURM_CTLD_PORT and the slurmds on the N ports after it; default:
# the first free run of N+1 ports from 16817.
# Start timeout: $TESSERA_SLURM_START_TIMEOUT seconds (default 60).
#
# Configured for a container without systemd or cgroups: proctrack/linuxproc, task/none, no job
# accounting, select/cons_tres with CR_Core_Memory so several jobs share a node's CPUs and memory.
# Clients find munged through AuthInfo=socket=... in the written slurm.conf, so SLURM_CONF is all
# they need.
# Exit codes: 0 ok, 1 failure (with the tail of the logs), 2 usage, 77 Slurm or munge missing.
set -euo pipefail

usage() { sed -n '5,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
cmd="$1"
shift
STATE_DIR="${1:-${TESSERA_SLURM_DIR:-${TMPDIR:-/tmp}/tessera-slurm-$UID}}"
case "$STATE_DIR" in
  /*) ;;
  *) STATE_DIR="$PWD/$STATE_DIR" ;;
esac
CONF="$STATE_DIR/slurm.conf"
SOCKET="$STATE_DIR/munge/munge.socket"
NODES="${TESSERA_SLURM_NODES:-1}"
case "$NODES" in
  ''|*[!0-9]*|0)
    echo "slurm-local: TESSERA_SLURM_NODES must be a positive integer, not '$NODES'" >&2
    exit 2 ;;
esac
PATH="$PATH:/usr/sbin:/sbin"

need=(munged slurmctld slurmd sbatch squeue scancel sinfo)
require_installed() {
  local p
  for p in "${need[@]}"; do
    if ! command -v "$p" >/dev/null 2>&1; then
      echo "slurm-local: '$p' not found: Slurm or munge is not installed;" \
           "run scripts/install-deps.sh (Debian packages slurm-wlm munge)" >&2
      exit 77
    fi
  done
}

# pid_alive FILE: the pid in FILE names a live process.
pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pids FILE...: TERM every live process named by a pid file, wait up to 10 s for all of them
# (each takes ~2 s to shut down, so they are stopped together), then KILL what is left.
stop_pids() {
  local f pid pids=() i alive
  for f in "$@"; do
    if pid_alive "$f"; then
      pid="$(cat "$f")"
      pids+=("$pid")
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  for i in $(seq 200); do
    alive=0
    for pid in "${pids[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then alive=1; fi
    done
    [ "$alive" = 1 ] || break
    sleep 0.05
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm-local: pid $pid ignored TERM for 10 s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  rm -f "$@"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_ports() {
  if [ -n "${TESSERA_SLURM_CTLD_PORT:-}" ]; then
    CTLD_PORT="$TESSERA_SLURM_CTLD_PORT"
    return
  fi
  local p k ok
  for p in $(seq 16817 $((NODES + 1)) 17999); do
    ok=1
    for k in $(seq 0 "$NODES"); do
      port_free $((p + k)) || { ok=0; break; }
    done
    if [ "$ok" = 1 ]; then
      CTLD_PORT="$p"
      return
    fi
  done
  echo "slurm-local: no free run of $((NODES + 1)) ports in 16817..18000;" \
       "set TESSERA_SLURM_CTLD_PORT" >&2
  exit 1
}

# node_names: the NodeName of each slurmd, one a line.
node_names() {
  if [ "$NODES" = 1 ]; then
    hostname -s
  else
    seq -f 'n%g' 1 "$NODES"
  fi
}

write_conf() {
  local host cpus mem_kb mem_mb margin
  host="$(hostname -s)"
  cpus=$(($(nproc) / NODES))
  [ "$cpus" -ge 1 ] || cpus=1
  mem_kb="$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
  # Leave 10% (at least 512 MiB) to the OS: slurmd drains a node whose measured memory comes out
  # below the configured RealMemory.
  mem_mb=$((mem_kb / 1024))
  margin=$((mem_mb / 10))
  [ "$margin" -ge 512 ] || margin=512
  mem_mb=$(((mem_mb - margin) / NODES))
  [ "$mem_mb" -ge 256 ] || mem_mb=256
  cat >"$CONF" <<EOF
# Written by scripts/slurm-local.sh; regenerated on each start.
ClusterName=tessera
SlurmctldHost=$host
SlurmctldPort=$CTLD_PORT
SlurmdPort=$((CTLD_PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$STATE_DIR/ctld
SlurmdSpoolDir=$STATE_DIR/slurmd-%n
SlurmctldPidFile=$STATE_DIR/slurmctld.pid
SlurmdPidFile=$STATE_DIR/slurmd-%n.pid
SlurmctldLogFile=$STATE_DIR/log/slurmctld.log
SlurmdLogFile=$STATE_DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
PlugStackConfig=$STATE_DIR/plugstack.conf
# No systemd and no cgroups in the container: track processes through /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
# Jobs share a node: each takes only its cores and memory.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
SchedulerType=sched/backfill
ReturnToService=2
# A local cluster should react quickly (demos, tests).
SchedulerParameters=sched_interval=1
MessageTimeout=10
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=30
EOF
  local k=0 name nodes=""
  for name in $(node_names); do
    if [ "$NODES" = 1 ]; then
      echo "NodeName=$name CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN" >>"$CONF"
    else
      echo "NodeName=$name NodeHostname=$host NodeAddr=127.0.0.1 Port=$((CTLD_PORT + 1 + k))" \
           "CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN" >>"$CONF"
    fi
    nodes="${nodes:+$nodes,}$name"
    k=$((k + 1))
  done
  echo "PartitionName=tessera Nodes=$nodes Default=YES MaxTime=INFINITE State=UP" >>"$CONF"
  # An empty plugstack keeps /etc/slurm/plugstack.conf (and its SPANK plugins) out.
  : >"$STATE_DIR/plugstack.conf"
}

tail_logs() {
  local f
  for f in "$STATE_DIR"/log/*; do
    [ -s "$f" ] || continue
    echo "---- $f (last 20 lines)" >&2
    tail -n 20 "$f" >&2
  done
}

# n_ready: how many nodes sinfo lists as usable (idle, mixed or allocated).
n_ready() {
  SLURM_CONF="$CONF" sinfo -h -N -o '%t' 2>/dev/null | grep -cE '^(idle|mix|alloc)$' || true
}

# all_alive: munged, slurmctld and every slurmd of the written config are running.
all_alive() {
  [ -f "$CONF" ] && pid_alive "$STATE_DIR/munged.pid" && pid_alive "$STATE_DIR/slurmctld.pid" ||
    return 1
  local name
  for name in $(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' "$CONF"); do
    pid_alive "$STATE_DIR/slurmd-$name.pid" || return 1
  done
}

start_munged() {
  if [ ! -s "$STATE_DIR/munge/munge.key" ]; then
    # 1 KiB of randomness, private to its owner (munged refuses a readable key).
    (umask 077 && dd if=/dev/urandom of="$STATE_DIR/munge/munge.key" bs=1024 count=1 status=none)
  fi
  rm -f "$SOCKET" "$SOCKET.lock"
  if ! munged --socket="$SOCKET" --key-file="$STATE_DIR/munge/munge.key" \
      --pid-file="$STATE_DIR/munged.pid" --log-file="$STATE_DIR/log/munged.log" \
      --seed-file="$STATE_DIR/munge/munged.seed" --force \
      </dev/null >>"$STATE_DIR/log/munged.out" 2>&1; then
    echo "slurm-local: munged did not start" >&2
    tail_logs
    exit 1
  fi
}

do_start() {
  require_installed
  mkdir -p "$STATE_DIR"
  chmod 0700 "$STATE_DIR"
  mkdir -p "$STATE_DIR/munge" "$STATE_DIR/log" "$STATE_DIR/ctld"
  # munged wants its socket's directory searchable by all; the key itself is 0600.
  chmod 0755 "$STATE_DIR/munge"
  if all_alive; then
    echo "slurm-local: already running in $STATE_DIR"
    return 0
  fi
  # A half-up cluster (a daemon died) is stopped whole and started again.
  do_stop quiet
  pick_ports
  local t0
  t0="$(date +%s%N)"
  write_conf
  start_munged
  # The daemons fork into the background and write their pid files; their stdio goes to files so
  # a caller's pipe (ctest, a test's subprocess) is never held open by them.
  slurmctld -f "$CONF" </dev/null >>"$STATE_DIR/log/slurmctld.out" 2>&1
  local name
  for name in $(node_names); do
    mkdir -p "$STATE_DIR/slurmd-$name"
    slurmd -f "$CONF" -N "$name" </dev/null >>"$STATE_DIR/log/slurmd-$name.out" 2>&1
  done
  local timeout="${TESSERA_SLURM_START_TIMEOUT:-60}" ready=0
  local deadline=$((SECONDS + timeout))
  while [ "$SECONDS" -lt "$deadline" ]; do
    ready="$(n_ready)"
    [ "$ready" -lt "$NODES" ] || break
    sleep 0.2
  done
  if [ "$ready" -lt "$NODES" ]; then
    echo "slurm-local: $ready of $NODES node(s) idle after ${timeout} s; sinfo says:" >&2
    SLURM_CONF="$CONF" sinfo -N -o '%N %t %E' >&2 || true
    tail_logs
    exit 1
  fi
  local ms=$((($(date +%s%N) - t0) / 1000000))
  echo "slurm-local: $NODES node(s) up in $((ms / 1000)).$(printf %03d $((ms % 1000))) s in $STATE_DIR" \
       "(slurmctld port $CTLD_PORT); eval \"\$($0 env $STATE_DIR)\""
}

do_stop() {
  local quiet="${1:-}"
  if [ -f "$CONF" ] && pid_alive "$STATE_DIR/slurmctld.pid"; then
    SLURM_CONF="$CONF" timeout 10 scancel --quiet --user="$(id -un)" 2>/dev/null || true
  fi
  # The Slurm daemons first, together; munged last, as they authenticate through it until the end.
  local files=("$STATE_DIR/slurmctld.pid")
  local f
  for f in "$STATE_DIR"/slurmd-*.pid; do
    if [ -e "$f" ]; then files+=("$f"); fi
  done
  stop_pids "${files[@]}"
  stop_pids "$STATE_DIR/munged.pid"
  [ -n "$quiet" ] || echo "slurm-local: stopped ($STATE_DIR)"
}

do_status() {
  require_installed
  if ! pid_alive "$STATE_DIR/slurmctld.pid"; then
    echo "slurm-local: not running ($STATE_DIR)"
    return 3
  fi
  SLURM_CONF="$CONF" sinfo -N -o '%N %P %t %c %m %e %O'
  SLURM_CONF="$CONF" squeue
}

case "$cmd" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  check) require_installed ;;
  *) usage ;;
esac
