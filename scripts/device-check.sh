#!/usr/bin/env bash
# The device checks in one short run, for a machine with a GPU (issue 44): the device tests on
# the GPU's OpenCL driver, its ceilings (`bench machine --device`) and the decoder's tokens/s with
# MBU/MFU (`bench model --device`) on synthetic SmolLM2-135M- and TinyLlama-shaped models, beside
# the CPU's. Needs only prebuilt binaries (such a machine may have no network and no compiler):
#   scripts/device-check.sh [BUILD_DIR [OUT_DIR]]      (default build/release, ./device-check)
# BUILD_DIR holds tessera and tests/device/{device_tests,device_model_tests}. Without an ICD
# loader (libOpenCL.so.1) on the machine, set TESSERA_OPENCL_LIBRARY to one carried along; when
# no /etc/OpenCL/vendors entry names NVIDIA's driver but libnvidia-opencl.so.1 exists, a
# vendors directory naming it is made for the loader (OCL_ICD_VENDORS).
# Device: $DEVICE (default: the first device whose type is gpu, else opencl:0). SHAPES, DTYPES,
# PP, TG narrow the model runs (defaults: both shapes, f16 q8_0 q4_0, pp512, tg128).
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
out="${2:-device-check}"
mkdir -p "$out"
log() { echo "[device-check] $*" | tee -a "$out/summary.txt"; }
: > "$out/summary.txt"
log "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader | while read -r l; do log "gpu: $l"; done

if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 && [ -z "${OCL_ICD_VENDORS:-}" ]; then
  nv=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1/ {print $NF; exit}')
  [ -z "$nv" ] && nv=$(find / -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
  if [ -n "$nv" ]; then
    mkdir -p "$out/vendors"
    echo "$nv" > "$out/vendors/nvidia.icd"
    export OCL_ICD_VENDORS="$PWD/$out/vendors"
    log "no registered OpenCL driver: using $nv through $OCL_ICD_VENDORS"
  fi
fi

tessera="$build/tessera"
"$tessera" info --devices | tee -a "$out/summary.txt"
"$tessera" info --devices --json > "$out/devices.json" || { log "no OpenCL device: stopping"; exit 1; }
device="${DEVICE:-$(python3 -c "
import json; d = json.load(open('$out/devices.json'))['opencl']
g = [x['index'] for x in d if x.get('type') == 'gpu']
print(f'opencl:{g[0] if g else 0}')")}"
index="${device#opencl:}"
log "device under test: $device"

export TESSERA_TEST_OPENCL_DEVICE="$index"
for t in device_tests device_model_tests; do
  if "$build/tests/device/$t" > "$out/$t.txt" 2>&1; then
    log "$t: $(grep -E '^\[  PASSED  \]' "$out/$t.txt")"
  else
    log "$t: FAILED: $(grep -E '^\[  FAILED  \]' "$out/$t.txt" | head -5 | tr '\n' ' ')"
  fi
done

"$tessera" bench machine --device "$device" --json > "$out/machine-device.json" 2> "$out/machine-device.err" &&
  log "device ceilings: $(python3 -c "
import json; d = json.load(open('$out/machine-device.json'))['device']
print(f\"{d['name']}: read {d['read_gbps']:.1f} GB/s, f32 FMA {d['fma_gflops']:.0f} GFLOP/s\")")" ||
  log "bench machine --device failed: $(cat "$out/machine-device.err")"

for shape in ${SHAPES:-smollm2-135m tinyllama-1.1b}; do
  for dtype in ${DTYPES:-f16 q8_0 q4_0}; do
    m="$out/synth-$shape-$dtype.gguf"
    [ -f "$m" ] || "$tessera" synth --shape "$shape" --dtype "$dtype" --out "$m" > /dev/null || continue
    for where in "$device" cpu; do
      args=(bench model -m "$m" -p "${PP:-512}" -n "${TG:-128}" -r 3 --json)
      [ "$where" = cpu ] && args+=(--no-adjacent-probe) || args+=(--device "$where" --machine "$out/machine-device.json")
      if "$tessera" "${args[@]}" > "$out/model-$shape-$dtype-${where/:/}.json" 2> "$out/err.txt"; then
        log "$shape $dtype on $where: $(python3 -c "
import json; j = json.load(open('$out/model-$shape-$dtype-${where/:/}.json'))
print('; '.join(f\"{r['test']} {r['tokens_per_second_median']:.1f} t/s, MBU {100 * r.get('mbu', 0):.0f}%\" for r in j['results']))")"
      else
        log "$shape $dtype on $where failed: $(tail -1 "$out/err.txt")"
      fi
    done
    rm -f "$m"
  done
done
log "done: $out/summary.txt"
