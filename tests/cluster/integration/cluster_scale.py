#!/usr/bin/python3
"""Integration test of `tessera cluster` on a real Slurm (slurmctld + slurmd + munge started here
by scripts/slurm-local.sh) with real `tessera serve` replicas as Slurm jobs:
  scale 0 -> N under a burst, scancel mid-stream, kill -9 of a replica, a controller restart that
  adopts the running jobs, Prometheus scraping every target, the dashboard drawn in headless
  Chromium, and scale back to 0 - with every request answered exactly once (idle replicas
  released: --suspend release). Then --suspend auto with an SLO that a cold start would spend:
  the idle replica's model is suspended in place with its job kept, the next request resumes it
  in the same job faster than the cold start, and the kept job is released after its time.
  Last, two co-located models in one multi-model replica job (--colocate).
Usage: cluster_scale.py TESSERA_BINARY WORK_DIR REPO_ROOT. Exit 77 (skipped) without Slurm.
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

TESSERA, WORK, ROOT = (os.path.abspath(a) for a in sys.argv[1:4])
os.makedirs(WORK, exist_ok=True)
SLURM_DIR = os.path.join(WORK, "slurm")
PROM_DIR = os.path.join(WORK, "prometheus")
NAME = f"itest{os.getpid()}"
KEEP_ALIVE = 4.0
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)


def sh(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, **kw)


def http(url, body=None, timeout=120):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def free_port_base(n):
    import socket
    for base in range(20000 + (os.getpid() % 1000) * 16, 60000, 101):
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            pass
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports")


# --- the cluster engine -------------------------------------------------------------------------
r = sh("bash", os.path.join(ROOT, "scripts/slurm-local.sh"), "start", SLURM_DIR)
if r.returncode == 77:
    print(r.stdout + r.stderr)
    sys.exit(77)
if r.returncode != 0:
    print("slurm-local.sh start failed:\n" + r.stdout + r.stderr)
    sys.exit(1)
for line in sh("bash", os.path.join(ROOT, "scripts/slurm-local.sh"), "env", SLURM_DIR).stdout.splitlines():
    m = re.match(r"export (\w+)=(.*)", line)
    if m:
        os.environ[m.group(1)] = m.group(2).strip("'\"")

cluster = None
prom_started = False


def squeue_jobs():
    out = sh("squeue", "-h", "-o", "%i %j %T").stdout.split("\n")
    return {int(l.split()[0]): l.split()[2] for l in out if l.strip() and l.split()[1].startswith(NAME + "-")}


def cleanup():
    if cluster is not None and cluster.poll() is None:
        cluster.kill()
    for job in squeue_jobs():
        sh("scancel", str(job))
    if prom_started:
        sh("bash", os.path.join(ROOT, "scripts/prometheus-local.sh"), "stop", PROM_DIR)
    sh("bash", os.path.join(ROOT, "scripts/slurm-local.sh"), "stop", SLURM_DIR)


try:
    # 26 M parameters: a few ms per token on one core, so a 600-token stream lasts seconds and the
    # scancel below lands mid-stream.
    model = os.path.join(WORK, "mid-q8_0.gguf")
    if not os.path.exists(model):
        subprocess.run([TESSERA, "synth", "--shape", "tiny", "--dim", "512", "--layers", "8", "--heads", "8",
                        "--kv-heads", "4", "--ffn", "1536", "--dtype", "q8_0", "--ctx", "1024", "-o", model],
                       check=True, capture_output=True)
    base = free_port_base(2)
    cmd = [TESSERA, "cluster", "--name", NAME, "--model", f"tiny={model}", "--port", "0",
           "--max-replicas", "2", "--replica-cap", "2", "--keep-alive", str(KEEP_ALIVE), "--suspend", "release",
           "--cpus-per-replica", "1", "--mem-per-replica", "512", "--replica-port-base", str(base),
           "--log-dir", os.path.join(WORK, "logs"), "--deadline", "120",
           "--serve-arg=--ctx-size", "--serve-arg=1024", "--serve-arg=--parallel", "--serve-arg=4"]

    def start_cluster(cmd=cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(os.path.join(WORK, "cluster.log"), "a"),
                             text=True)
        line = p.stdout.readline()
        m = re.search(r"routing on http://[\d.]+:(\d+)", line)
        if not m:
            raise RuntimeError("tessera cluster did not start: " + line + open(os.path.join(WORK, "cluster.log")).read())
        return p, f"http://127.0.0.1:{m.group(1)}"

    cluster, url = start_cluster()

    def status():
        return json.loads(http(url + "/cluster/status")[1])["models"][0]

    check(status()["replicas_up"] == 0 and not squeue_jobs(), "starts with no replica (scale from zero)")

    # --- burst: 0 -> N --------------------------------------------------------------------------
    # A replayed ServeGen burst: the busiest m-large client's arrivals over 24 ten-minute windows,
    # compressed into ~4 s at up to 12 req/s (40 requests) (the schedule `tessera bench fleet --arrivals-only`
    # writes, as bench-cluster-fleet.sh replays). Without ../shared, 16 simultaneous requests.
    results, lock = [], threading.Lock()
    peak = [0]
    done = threading.Event()
    shared = os.environ.get("TESSERA_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    servegen = os.path.join(shared, "traces", "servegen", "language", "m-large")
    arrivals = [0.0] * 16
    if os.path.isdir(servegen):
        os.makedirs(os.path.join(WORK, "models"), exist_ok=True)
        link = os.path.join(WORK, "models", "tiny.gguf")
        if not os.path.exists(link):
            os.symlink(model, link)
        sched = os.path.join(WORK, "schedule.csv")
        r = sh(TESSERA, "bench", "fleet", "--models", os.path.join(WORK, "models"), "--servegen", servegen,
               "--windows", "24", "--time-scale", "3600", "--peak-rps", "12", "--prompt-tokens", "16",
               "--max-tokens", "24", "--policies", "always-on", "--arrivals-only", "--arrivals-out", sched)
        check(r.returncode == 0, "ServeGen schedule written: " + r.stderr.strip()[-200:])
        rows = [l.split(",") for l in open(sched).read().splitlines()[1:] if l.strip()]
        arrivals = [float(row[1]) for row in rows][:40]
        print(f"      replaying {len(arrivals)} ServeGen arrivals over {arrivals[-1]:.1f} s", flush=True)
    else:
        print(f"      no ServeGen traces at {servegen}: a burst of 16 simultaneous requests", flush=True)
    n_burst = len(arrivals)

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], len([s for s in squeue_jobs().values() if s == "RUNNING"]))
            time.sleep(0.1)

    def one(i, stream=False, max_tokens=24, at=0.0):
        time.sleep(max(0.0, t0 + at - time.monotonic()))
        code, body = http(url + "/v1/completions", {"model": "tiny", "prompt": f"request {i} " + "x" * (i % 7),
                                                     "max_tokens": max_tokens, "stream": stream})
        with lock:
            results.append((i, code, body))

    w = threading.Thread(target=watch)
    w.start()
    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i, i % 3 == 0, 24, at)) for i, at in enumerate(arrivals)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    w.join()
    check(len(results) == n_burst and all(c == 200 for _, c, _ in results),
          f"burst: {n_burst} of {n_burst} answered 200 ({sorted(c for _, c, _ in results)})")
    ids = set()
    for i, c, body in results:
        if c != 200:
            continue
        if body.startswith("data:"):
            chunks = [l[6:] for l in body.split("\n") if l.startswith("data: ") and l[6:] != "[DONE]"]
            ids.add(json.loads(chunks[0])["id"])
            check(body.rstrip().endswith("data: [DONE]"), f"stream {i} ends with [DONE]")
        else:
            ids.add(json.loads(body)["id"])
    check(len(ids) == n_burst, f"{n_burst} distinct completions (each answered once), got {len(ids)}")
    check(peak[0] == 2, f"scaled 0 -> 2 replicas as Slurm jobs (peak RUNNING {peak[0]})")

    # --- scancel mid-stream ---------------------------------------------------------------------
    got_first = threading.Event()
    stream_out = {}

    def long_stream():
        req = urllib.request.Request(url + "/v1/completions", data=json.dumps(
            {"model": "tiny", "prompt": "a long story", "max_tokens": 600, "ignore_eos": True,
             "stream": True}).encode(),
            headers={"Content-Type": "application/json"})
        body = ""
        with urllib.request.urlopen(req, timeout=120) as r:
            for raw in r:
                body += raw.decode()
                got_first.set()
        stream_out["body"] = body

    t = threading.Thread(target=long_stream)
    t.start()
    got_first.wait(30)
    busy = [r for r in status()["replicas"] if r["in_flight"] > 0 and r["job"]]
    if busy:
        sh("scancel", str(busy[0]["job"]))
    t.join(120)
    body = stream_out.get("body", "")
    check(bool(busy), "a replica is streaming when its job is cancelled")
    check("[DONE]" in body or '"error"' in body,
          "scancel mid-stream: the stream ends with [DONE] (drained) or an error event, never silently: "
          + repr(body[-160:]))
    results.clear()
    threads = [threading.Thread(target=one, args=(100 + i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(all(c == 200 for _, c, _ in results), f"after scancel: 4 of 4 answered ({[c for _, c, _ in results]})")

    # --- kill -9 of a replica -------------------------------------------------------------------
    victim = None
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = open(f"/proc/{pid}/cmdline").read().split("\0")
        except OSError:
            continue
        if "serve" in argv and "--port" in argv and argv[argv.index("--port") + 1] in (str(base), str(base + 1)) \
                and os.path.realpath(argv[0]) == os.path.realpath(TESSERA):
            victim = int(pid)
            break
    check(victim is not None, "found a replica process to kill")
    if victim:
        os.kill(victim, signal.SIGKILL)
    results.clear()
    threads = [threading.Thread(target=one, args=(200 + i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(all(c == 200 for _, c, _ in results), f"after kill -9: 6 of 6 answered ({[c for _, c, _ in results]})")

    # --- controller restart: rebuilds its view from Slurm ---------------------------------------
    deadline = time.time() + 30
    while time.time() < deadline and status()["replicas_up"] != len(squeue_jobs()):
        time.sleep(0.2)
    before = {j for j, s in squeue_jobs().items() if s == "RUNNING"}
    cluster.send_signal(signal.SIGTERM)
    cluster.wait(30)
    check(cluster.returncode == 0, "controller stops cleanly on SIGTERM")
    check({j for j, s in squeue_jobs().items() if s == "RUNNING"} == before and before,
          f"replica jobs {sorted(before)} keep running without the controller")
    cluster, url = start_cluster()
    deadline = time.time() + 30
    while time.time() < deadline and status()["replicas_up"] < len(before):
        time.sleep(0.1)
    check(status()["replicas_up"] == len(before), "restarted controller adopts the running replicas")
    code, _ = http(url + "/v1/completions", {"model": "tiny", "prompt": "after restart", "max_tokens": 8})
    check(code == 200, "restarted controller serves")
    check({j for j, s in squeue_jobs().items() if s == "RUNNING"} == before, "no job submitted again on restart")

    # --- Prometheus -----------------------------------------------------------------------------
    router_hostport = url.replace("http://", "")
    pr = sh("bash", os.path.join(ROOT, "scripts/prometheus-local.sh"), "start", router_hostport, PROM_DIR,
            str(free_port_base(1)))
    if pr.returncode == 77:
        print("SKIP prometheus: " + pr.stderr.strip())
    else:
        prom_started = pr.returncode == 0
        check(prom_started, "prometheus starts: " + pr.stdout.strip() + pr.stderr.strip())
        prom = open(os.path.join(PROM_DIR, "url")).read().strip()
        deadline, all_up, targets = time.time() + 20, False, []
        while time.time() < deadline and not all_up:
            http(url + "/v1/completions", {"model": "tiny", "prompt": "keep warm", "max_tokens": 2})
            replicas = {t for g in json.loads(http(url + "/cluster/targets")[1]) for t in g["targets"]}
            targets = json.loads(http(prom + "/api/v1/targets")[1])["data"]["activeTargets"]
            up = {t["labels"]["instance"] for t in targets if t["health"] == "up"}
            all_up = bool(replicas) and replicas | {router_hostport} <= up and \
                all(t["health"] == "up" for t in targets)
            time.sleep(0.5)
        check(all_up, "prometheus scrapes the router and every replica, all up: " +
              ", ".join(f"{t['labels'].get('job')}@{t['scrapeUrl']}={t['health']}" for t in targets))
        q = json.loads(http(prom + "/api/v1/query?query=sum(tessera_cluster_replicas%7Bstate%3D%22active%22%7D)")[1])
        check(q["status"] == "success" and q["data"]["result"], "fleet series queryable in prometheus")

    # --- dashboard in headless Chromium ---------------------------------------------------------
    chromium = next((c for c in ("chromium", "chromium-browser") if sh("sh", "-c", f"command -v {c}").returncode == 0), None)
    page = http(url + "/dashboard")[1]
    check("render-status" in page, "router serves /dashboard")
    if chromium is None:
        print("SKIP dashboard render: no chromium")
    else:
        dom = sh(chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--user-data-dir=" + os.path.join(WORK, "chromium"), "--virtual-time-budget=8000",
                 "--dump-dom", url + "/dashboard", timeout=120).stdout
        m = re.search(r'id="render-status"[^>]*>([^<]*)<', dom)
        verdict = m.group(1) if m else "(no #render-status)"
        if "Chart.js was not inlined" in verdict:
            print("SKIP dashboard charts: " + verdict)
        else:
            check(m is not None and 'data-ok="1"' in dom[dom.find('id="render-status"') - 80:dom.find('id="render-status"') + 80],
                  "dashboard charts drawn in headless Chromium: " + verdict)

    # --- back to zero ---------------------------------------------------------------------------
    deadline = time.time() + KEEP_ALIVE + 30
    while time.time() < deadline and (squeue_jobs() or status()["replicas_up"]):
        time.sleep(0.2)
    check(not squeue_jobs() and status()["replicas_up"] == 0, "idle: scaled back to 0 (no job left in Slurm)")
    s = status()
    check(s["failed"] == 0 and s["refused"] == 0, f"no request lost: failed {s['failed']}, refused {s['refused']}")
    print(json.dumps({k: v for k, v in s.items() if k != "replicas"}, indent=1))

    # --- suspend in place (auto): keep the job when a cold start would spend the SLO -----------
    cluster.send_signal(signal.SIGTERM)
    cluster.wait(30)
    auto_cmd = [TESSERA, "cluster", "--name", NAME, "--model", f"tiny={model}", "--port", "0",
                "--max-replicas", "1", "--keep-alive", "1", "--suspend", "auto", "--ttft-slo", "0.2",
                "--release-kept-after", "4", "--cpus-per-replica", "1", "--mem-per-replica", "512",
                "--replica-port-base", str(base), "--log-dir", os.path.join(WORK, "logs"),
                "--serve-arg=--ctx-size", "--serve-arg=1024"]
    cluster, url = start_cluster(auto_cmd)
    code, _ = http(url + "/v1/completions", {"model": "tiny", "prompt": "cold", "max_tokens": 4})
    check(code == 200, "auto: first request answered (cold start)")
    jobs_before = set(squeue_jobs())
    deadline = time.time() + 20
    # job_kept is set as the suspension ends, a moment before the router's state says so.
    while time.time() < deadline and not (status()["replicas"][0]["job_kept"] and
                                          status()["replicas"][0]["state"] == "suspended"):
        time.sleep(0.1)
    rep = status()["replicas"][0]
    check(rep["job_kept"] and rep["state"] == "suspended" and set(squeue_jobs()) == jobs_before and jobs_before,
          f"auto: idle replica suspended in place, job {sorted(jobs_before)} kept ({rep['last_down']})")
    code, _ = http(url + "/v1/completions", {"model": "tiny", "prompt": "warm", "max_tokens": 4})
    rep = status()["replicas"][0]
    check(code == 200 and rep["resumes_in_place"] == 1 and set(squeue_jobs()) == jobs_before,
          "auto: the next request resumed it in the same job")
    check(0 < rep["resume_in_place_s"] < rep["cold_start_s"],
          f"auto: measured in-place resume {rep['resume_in_place_s']:.3f} s < cold start {rep['cold_start_s']:.3f} s")
    deadline = time.time() + 1 + 4 + 20
    while time.time() < deadline and (squeue_jobs() or status()["replicas"][0]["job_kept"]):
        time.sleep(0.2)
    s = status()
    check(not squeue_jobs() and s["kept_released"] >= 1,
          f"auto: the kept job is released after its time (kept {s['kept_replica_seconds']:.1f} replica-s)")
    check(s["failed"] == 0 and s["refused"] == 0, "auto: no request lost")

    # --- multi-model replicas: two models share one job ----------------------------------------
    cluster.send_signal(signal.SIGTERM)
    cluster.wait(30)
    small = os.path.join(WORK, "small-q8_0.gguf")
    if not os.path.exists(small):
        subprocess.run([TESSERA, "synth", "--shape", "tiny", "--dim", "256", "--layers", "2", "--heads", "4",
                        "--kv-heads", "2", "--ffn", "512", "--dtype", "q8_0", "--ctx", "512", "-o", small],
                       check=True, capture_output=True)
    multi_cmd = [TESSERA, "cluster", "--name", NAME, "--model", f"tiny={model}", "--model", f"small={small}",
                 "--colocate", "tiny,small", "--port", "0", "--max-replicas", "1", "--keep-alive", "2",
                 "--suspend", "release", "--cpus-per-replica", "1", "--mem-per-replica", "384",
                 "--replica-port-base", str(base), "--log-dir", os.path.join(WORK, "logs"),
                 "--serve-arg=--ctx-size", "--serve-arg=512"]
    cluster, url = start_cluster(multi_cmd)
    answers = {}
    for name in ("tiny", "small", "tiny"):
        code, body = http(url + "/v1/completions", {"model": name, "prompt": "hello", "max_tokens": 4})
        answers.setdefault(name, []).append((code, json.loads(body).get("model") if code == 200 else body))
    jobs = sh("squeue", "-h", "-o", "%i %j").stdout.split()
    check(all(c == 200 and m == n for n, rs in answers.items() for c, m in rs),
          f"multi-model: both models answered by name ({answers})")
    check(len(squeue_jobs()) == 1 and f"{NAME}-tiny+small-0" in jobs,
          f"multi-model: one Slurm job serves both ({jobs})")
    models = json.loads(http(url + "/cluster/status")[1])["models"]
    check(models[0]["replicas"][0]["job"] == models[1]["replicas"][0]["job"] != 0,
          "multi-model: the router sees both models' replicas in the same job")
    # Until Slurm lists no job and the router has seen its release finish (it waits for the job to
    # leave squeue too, so squeue can empty a moment before the last slot stops "suspending").
    deadline = time.time() + 2 + 30
    while time.time() < deadline and (squeue_jobs() or any(
            m["replicas_up"] for m in json.loads(http(url + "/cluster/status")[1])["models"])):
        time.sleep(0.2)
    models = json.loads(http(url + "/cluster/status")[1])["models"]
    check(not squeue_jobs() and all(m["replicas_up"] == 0 for m in models),
          "multi-model: idle, the shared job is released with the last model")
finally:
    cleanup()

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all cluster checks passed")
