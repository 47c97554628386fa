#!/usr/bin/python3
"""What keeping a replica's Slurm job saves: cold start (sbatch -> scheduled -> process start ->
weights loaded -> /health) against an in-place resume (the model suspended inside the kept job,
then POST /admin/models/NAME/resume), both as the router measures them, and the TTFT a client sees
for the first request after each.

Runs `tessera cluster --max-replicas 1` on a private local Slurm (scripts/slurm-local.sh), first
with --suspend release (every idle period ends the job: the next request is a cold start), then
with --suspend keep (the job stays: the next request resumes in place), CYCLES idle periods each.
Usage: scripts/bench_cluster_resume.py TESSERA MODEL.gguf [CYCLES=3] [WORK=.cache/bench-cluster-resume]
Prints a table; the numbers go to docs/CLUSTER.md by hand.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

TESSERA, MODEL = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
CYCLES = int(sys.argv[3]) if len(sys.argv) > 3 else 3
WORK = os.path.abspath(sys.argv[4] if len(sys.argv) > 4 else ".cache/bench-cluster-resume")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEEP_ALIVE = 2.0
os.makedirs(WORK, exist_ok=True)


def sh(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def http(url, body=None, timeout=300):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read().decode()


def ttft(url):
    """Seconds to the first streamed byte of a 4-token completion."""
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(
        {"model": "m", "prompt": "Once upon a time", "max_tokens": 4, "stream": True}).encode(),
        headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=300) as r:
        r.read(1)
        first = time.monotonic() - t0
        r.read()
    return first


slurm_dir = os.path.join(WORK, "slurm")
r = sh("bash", os.path.join(ROOT, "scripts/slurm-local.sh"), "start", slurm_dir)
if r.returncode != 0:
    sys.exit("slurm-local.sh start failed: " + r.stdout + r.stderr)
for line in sh("bash", os.path.join(ROOT, "scripts/slurm-local.sh"), "env", slurm_dir).stdout.splitlines():
    m = re.match(r"export (\w+)=(.*)", line)
    if m:
        os.environ[m.group(1)] = m.group(2).strip("'\"")

rows = []
try:
    for mode in ("release", "keep"):
        cmd = [TESSERA, "cluster", "--name", f"resume{os.getpid()}", "--model", f"m={MODEL}", "--port", "0",
               "--max-replicas", "1", "--keep-alive", str(KEEP_ALIVE), "--suspend", mode,
               "--release-kept-after", "-1", "--cpus-per-replica", "2", "--log-dir", os.path.join(WORK, "logs"),
               "--release-on-exit", "--serve-arg=--ctx-size", "--serve-arg=512"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(os.path.join(WORK, f"cluster-{mode}.log"), "w"),
                             text=True)
        url = "http://127.0.0.1:" + re.search(r"http://[\d.]+:(\d+)", p.stdout.readline()).group(1)
        ttfts = [ttft(url)]  # the first start is cold in both modes
        for _ in range(CYCLES):
            deadline = time.time() + KEEP_ALIVE + 60
            while time.time() < deadline:  # wait for the idle take-down to finish
                rep = json.loads(http(url + "/cluster/status"))["models"][0]["replicas"][0]
                if rep["state"] == "suspended":
                    break
                time.sleep(0.2)
            ttfts.append(ttft(url))
        rep = json.loads(http(url + "/cluster/status"))["models"][0]["replicas"][0]
        rows.append((mode, rep, ttfts))
        p.terminate()
        p.wait(60)
finally:
    sh("bash", os.path.join(ROOT, "scripts/slurm-local.sh"), "stop", slurm_dir)

size = os.path.getsize(MODEL) / 2**20
print(f"model {os.path.basename(MODEL)} ({size:.0f} MiB), {CYCLES} idle periods per mode, keep-alive {KEEP_ALIVE} s")
print("| mode | cold starts | mean cold start (s) | in-place resumes | mean in-place resume (s) | "
      "TTFT after idle, median (s) | first TTFT (s) |")
print("|---|---|---|---|---|---|---|")
for mode, rep, ttfts in rows:
    print(f"| {mode} | {rep['cold_starts']} | {rep['cold_start_s']:.3f} | {rep['resumes_in_place']} | "
          f"{rep['resume_in_place_s']:.3f} | {statistics.median(ttfts[1:]):.3f} | {ttfts[0]:.3f} |")
