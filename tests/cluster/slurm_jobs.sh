#!/usr/bin/env bash
# Integration test: starts a private Slurm cluster in a temporary state directory, runs the Slurm
# CLI client's tests against it (cluster_slurm_driver), and always stops the cluster again.
#   slurm_jobs.sh DRIVER SLURM_LOCAL_SH
# Exit: the driver's status; 77 (skip) when Slurm or munge is not installed.
set -euo pipefail
driver="$1"
slurm_local="$2"
if ! "$slurm_local" check; then
  echo "cluster_slurm_jobs: skipped: Slurm or munge is not installed" >&2
  exit 77
fi
# Short path: munged's socket path must fit in sockaddr_un (108 bytes).
state="$(mktemp -d /tmp/tessera-slurm-test.XXXXXX)"
cleanup() {
  "$slurm_local" stop "$state" >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$slurm_local" start "$state"  # prints how long the cluster took to come up
mkdir -p "$state/jobs"
TESSERA_SLURM_CONF="$state/slurm.conf" TESSERA_SLURM_TEST_DIR="$state/jobs" "$driver"
