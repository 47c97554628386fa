#!/usr/bin/env python3
"""The comparison half of scripts/sim-validate.sh: simulates the live run's exact schedule once per
policy and prints live and simulated side by side.

Each policy is simulated at least twice:
  sim      with the costs `bench model` and `bench resume` measured just before the live run;
  sim fit  with the unit costs the live run itself paid: a step's weight pass, per-row time and
           hand-off cost, and the mean resume and suspension times the live controller timed.
           With the live iteration log (OUT/live-iterations.csv) the fit is least squares over
           every iteration's device time (device_time below): time = step + row x (rows - 1) +
           switch x [another engine ran the device's previous iteration]; without it, from the
           engines' totals of held time for prompt and decode iterations, with no switch term.
This machine's speed drifts (memory bandwidth up to 2x within minutes), so a cost record taken
minutes before a run can be far off; the second row separates the simulator's dynamics (queueing,
batching, device sharing, the policies) from that drift. Neither row uses any latency or cold
start of the live run: TTFT, SLO attainment, memory-seconds and cold starts stay predictions.

With SIM_ARBITRATION=1 in the environment both simulate the shared device as the live one is
run: one iteration at a time by the live DeviceScheduler's rule, batches composed as the engine
composes them with its 512 rows per step (`tessera sim --device-arbitration --max-batch-tokens
512`) instead of processor sharing. With the live run's iterations (OUT/live-iterations.csv,
`bench fleet --iterations-out`) a third simulation, "sim var", adds how the live iterations'
times varied about the fitted cost: each live iteration's device time over the fitted cost of
its rows and hand-off, by kind (prompt rows or not, a switch or not), drawn per iteration
(`tessera sim --step-multipliers`); the draws make each run one sample of the tail, so
this column is the median of SIM_VAR_SEEDS (9) seeds, with the p99 range over them. And
"fit(t)" is the fit with the device's speed over time: per window of SIM_SPEED_WINDOW (1) replay
seconds, the live iterations' device time over their fitted cost (`tessera sim --device-speed`) -
the costs as the run paid them second by second (this machine's speed drifts, and a burst that
runs every engine at once is slower than the run's average), still no latency or cold start.

usage: sim_validate_compare.py TESSERA OUT SPAN ACTIVE_BYTES KEEP_ALIVE_S HISTOGRAM_BIN_S TTFT_SLO_S
"""
import functools
import json
import os
import statistics
import subprocess
import sys

VAR_SEEDS = int(os.environ.get("SIM_VAR_SEEDS", "9"))
SPEED_WINDOW_S = float(os.environ.get("SIM_SPEED_WINDOW", "1"))
PAIRS = [("always-on", "dedicated"), ("fixed", "keep-alive"), ("adaptive", "adaptive")]


def main():
    t, out, span, active, keep, binw, slo = sys.argv[1:8]
    live = {p["policy"]: p for p in json.load(open(f"{out}/live.json"))["policies"]}

    def simulate(policy, extra, requests_out=None):
        cmd = [t, "sim", "--schedule", f"{out}/schedule.csv", "--schedule-span", span,
               "--bench-record", f"{out}/model.json", "--resume-record", f"{out}/resume.json",
               "--active-bytes", active, "--max-running", "2", "--shared-device",
               "--keep-alive", keep, "--histogram-bin", binw, "--ttft-slo", slo,
               "--policy", policy, "--json", f"{out}/sim-one.json"] + extra
        if os.environ.get("SIM_ARBITRATION") == "1":
            cmd += ["--device-arbitration", "--max-batch-tokens", "512"]
        if requests_out:
            cmd += ["--requests-out", requests_out]
            if os.environ.get("SIM_ARBITRATION") == "1":
                cmd += ["--iterations-out", requests_out.replace("-requests-", "-iterations-")]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.load(open(f"{out}/sim-one.json"))["policies"][0]

    def live_costs(l, policy):
        """(decode step s, per-row s, switch s, resume s, suspend s; None where not measured)."""
        ms = l["models"]
        total = lambda k: sum(m[k] for m in ms)
        fitted = fit_iterations(out, policy)
        if fitted:
            step, row, switch = fitted
        else:
            td = total("decode_held_s") / total("decode_grants")
            rd = total("decode_rows") / total("decode_grants")
            tp = total("prefill_held_s") / total("prefill_grants")
            rp = total("prefill_rows") / total("prefill_grants")
            row = (tp - td) / (rp - rd)
            step, switch = td - row * (rd - 1), None
        resumes, suspends = total("resumes"), total("suspends")
        resume = sum(m["mean_resume_s"] * m["resumes"] for m in ms) / resumes if resumes else None
        suspend = (sum(m["mean_suspend_s"] * m["suspends"] for m in ms) / suspends
                   if suspends else None)
        return step, row, switch, resume, suspend

    rows = []
    for lp, sp in PAIRS:
        if lp not in live:
            continue
        l = live[lp]
        step, row, switch, resume, suspend = live_costs(l, lp)
        extra = ["--decode-step-s", f"{step:.9f}", "--row-s", f"{row:.9f}"]
        if switch is not None and os.environ.get("SIM_ARBITRATION") == "1":
            extra += ["--switch-s", f"{max(0.0, switch):.9f}"]
        if resume is not None:
            extra += ["--resume-s", f"{resume:.6f}"]
        if suspend is not None:
            extra += ["--suspend-s", f"{suspend:.6f}"]
        raw = simulate(sp, [])
        fit = simulate(sp, extra, f"{out}/sim-requests-{lp}.csv")
        var = speed = None
        if os.environ.get("SIM_ARBITRATION") == "1":
            sp_path = device_speed(out, lp, step, row, switch or 0.0, SPEED_WINDOW_S)
            if sp_path:
                speed = simulate(sp, extra + ["--device-speed", sp_path],
                                 f"{out}/sim-requests-speed-{lp}.csv")
            mult = step_multipliers(out, lp, step, row, switch or 0.0)
            if mult:
                # The draws make one simulation one sample of the tail: the median over seeds.
                runs = [simulate(sp, extra + ["--step-multipliers", mult, "--seed", str(seed)],
                                 f"{out}/sim-requests-var-{lp}.csv" if seed == 1 else None)
                        for seed in range(1, VAR_SEEDS + 1)]
                var = {k: statistics.median(r[k] for r in runs)
                       for k in ("ttft_p50_s", "ttft_p99_s", "slo_attainment", "memory_gb_hours",
                                 "cold_starts", "resumes", "device_busy_s")}
                var["p99_range"] = (min(r["ttft_p99_s"] for r in runs),
                                    max(r["ttft_p99_s"] for r in runs))
        rows.append((lp, l, raw, fit, speed, var, (step, row, switch, resume, suspend)))

    def ratio(a, b):
        return f"{b / a:.3f}" if a else "-"

    has_speed = any(r[4] is not None for r in rows)
    has_var = any(r[5] is not None for r in rows)
    print(f"\n{'policy':<11}{'metric':<15}{'live':>9}{'sim':>9}{'sim/live':>10}{'sim fit':>9}"
          f"{'fit/live':>10}" + (f"{'fit(t)':>9}{'(t)/live':>10}" if has_speed else "") +
          (f"{'sim var':>9}{'var/live':>10}" if has_var else ""))
    for lp, l, raw, fit, speed, var, costs in rows:
        sims = [raw, fit] + ([speed] if speed is not None else []) + ([var] if var is not None else [])
        table = [
            ("TTFT p50 ms", l["ttft_p50_s"] * 1e3, [x["ttft_p50_s"] * 1e3 for x in sims]),
            ("TTFT p99 ms", l["ttft_p99_s"] * 1e3, [x["ttft_p99_s"] * 1e3 for x in sims]),
            ("SLO met %", l["slo_attainment"] * 100, [x["slo_attainment"] * 100 for x in sims]),
            ("memory GB*s", l["memory_gb_s"], [x["memory_gb_hours"] * 3600 for x in sims]),
            ("cold starts", l["cold_starts"], [x["cold_starts"] for x in sims]),
            ("resumes", sum(m["resumes"] for m in l["models"]), [x["resumes"] for x in sims]),
            ("device s", sum(m["device_busy_s"] for m in l["models"]),
             [x["device_busy_s"] for x in sims]),
        ]
        for name, a, bs in table:
            print(f"{lp:<11}{name:<15}{a:>9.1f}" +
                  "".join(f"{b:>9.1f}{ratio(a, b):>10}" for b in bs))
        step, row, switch, resume, suspend = costs
        fmt_ms = lambda v: "-" if v is None else f"{v * 1e3:.2f}"
        if var is not None:
            lo, hi = var["p99_range"]
            print(f"{lp:<11}sim var: median of {VAR_SEEDS} seeds; TTFT p99 {lo * 1e3:.0f}-{hi * 1e3:.0f} "
                  f"ms over them ({lo / l['ttft_p99_s']:.3f}-{hi / l['ttft_p99_s']:.3f} of live)")
        print(f"{lp:<11}live costs: step {step * 1e3:.2f} ms + {row * 1e3:.3f} ms/row, switch "
              f"{fmt_ms(switch)} ms, resume "
              f"{fmt_ms(resume)} ms, suspend {fmt_ms(suspend)} ms")

    cold_agreement(out, [lp for lp, *_ in rows])


@functools.lru_cache(maxsize=None)
def live_iterations(out, policy):
    """The policy's live iterations in grant order (read once), each with `rows` (prompt and
    decode rows), `switch` (another engine ran the device's previous iteration; the first has
    none before it) and `device_s` (device_time); () without OUT/live-iterations.csv."""
    import csv
    try:
        its = [r for r in csv.DictReader(open(f"{out}/live-iterations.csv"))
               if r["policy"] == policy]
    except OSError:
        return ()
    its.sort(key=lambda r: float(r["granted_s"]))
    for i, r in enumerate(its):
        r["rows"] = int(r["prefill_rows"]) + int(r["decode_rows"])
        r["switch"] = i > 0 and its[i - 1]["model"] != r["model"]
        r["device_s"] = device_time(its, i)
    return tuple(its)


def fitted_cost(r, step, row, switch):
    """An iteration's time by the fitted cost model (the one `tessera sim` runs)."""
    return step + row * (r["rows"] - 1) + (switch if r["switch"] else 0.0)


def fit_iterations(out, policy):
    """(step, row, switch) seconds: least squares of every live iteration's device time
    (device_time) on 1, rows - 1 and switch; None without the iteration log."""
    sums = [[0.0] * 4 for _ in range(3)]  # the normal equations, right-hand side last
    n = 0
    for r in live_iterations(out, policy):
        if r["rows"] == 0:
            continue
        x = (1.0, r["rows"] - 1.0, 1.0 if r["switch"] else 0.0)
        y = r["device_s"]
        for i in range(3):
            for j in range(3):
                sums[i][j] += x[i] * x[j]
            sums[i][3] += x[i] * y
        n += 1
    if n < 3 or sums[2][2] == 0.0:
        return None
    # Gaussian elimination with partial pivoting on the 3 x 4 system.
    a = sums
    for c in range(3):
        p = max(range(c, 3), key=lambda k: abs(a[k][c]))
        a[c], a[p] = a[p], a[c]
        for k in range(3):
            if k != c:
                f = a[k][c] / a[c][c]
                a[k] = [a[k][j] - f * a[c][j] for j in range(4)]
    return tuple(a[i][3] / a[i][i] for i in range(3))


def device_speed(out, policy, step, row, switch, window_s):
    """Writes OUT/device-speed-POLICY.csv: per window of window_s replay seconds, the live
    iterations' device time over their fitted cost (ratio of the sums; 1 in a window with fewer
    than 5 iterations, so that a simulated iteration where the live device was idle takes no
    stale factor), for `tessera sim --device-speed`. Returns the path, or None without
    OUT/live-iterations.csv."""
    its = live_iterations(out, policy)
    if not its:
        return None
    windows = {}
    for r in its:
        if r["rows"] == 0:
            continue
        w = windows.setdefault(int(float(r["granted_s"]) // window_s), [0.0, 0.0, 0])
        w[0] += r["device_s"]
        w[1] += fitted_cost(r, step, row, switch)
        w[2] += 1
    path = f"{out}/device-speed-{policy}.csv"
    with open(path, "w") as f:
        f.write("t_s,factor\n")
        for w in range(max(windows) + 1):  # every window: one without iterations is 1
            t, c, n = windows.get(w, (0.0, 0.0, 0))
            f.write(f"{w * window_s:.6f},{t / c if n >= 5 else 1.0:.4f}\n")
    return path


def device_time(its, k):
    """The device's time for iteration k of `its` (grant order): from its grant to the next
    grant, when its release granted the next (the next grant falls before its release returned),
    else to its release. Not the engine's held time, which after a hand-off also counts the
    releasing thread waiting for a core while the next holder already runs."""
    g, rel = float(its[k]["granted_s"]), float(its[k]["released_s"])
    if k + 1 < len(its) and float(its[k + 1]["granted_s"]) <= rel:
        return float(its[k + 1]["granted_s"]) - g
    return rel - g


def step_multipliers(out, policy, step, row, switch):
    """Writes OUT/step-multipliers-POLICY.csv from the live iterations: the device's time over the
    fitted cost step + row x (rows - 1) (+ switch after a hand-off), whether another engine ran
    the device's previous iteration, and whether it ran prompt rows. Returns the path, or None
    without OUT/live-iterations.csv."""
    its = live_iterations(out, policy)
    if not its:
        return None
    path = f"{out}/step-multipliers-{policy}.csv"
    with open(path, "w") as f:
        f.write("multiplier,switch,prompt\n")
        for r in its:
            if r["rows"] == 0:
                continue
            prompt = int(int(r["prefill_rows"]) > 0)
            f.write(f"{r['device_s'] / fitted_cost(r, step, row, switch):.4f},"
                    f"{int(r['switch'])},{prompt}\n")
    return path


def cold_agreement(out, policies):
    """Request by request (the same schedule, in arrival order): which requests were cold starts
    live, in the fitted simulation, or both. Needs the `cold` column of `bench fleet
    --requests-out`."""
    import csv
    try:
        live_rows = list(csv.DictReader(open(f"{out}/live-requests.csv")))
    except OSError:
        return
    if not live_rows or "cold" not in live_rows[0]:
        return
    print(f"\n{'policy':<11}{'cold: live':>11}{'sim fit':>9}{'both':>6}{'live only':>11}{'sim only':>10}")
    for p in policies:
        lv = [r for r in live_rows if r["policy"] == p]
        try:
            sv = list(csv.DictReader(open(f"{out}/sim-requests-{p}.csv")))
        except OSError:
            continue
        key = lambda r: (r["model"], round(float(r["t_s"]), 3))
        lc = {key(r) for r in lv if r["cold"] == "1"}
        sc = {key(r) for r in sv if r["cold"] == "1"}
        print(f"{p:<11}{len(lc):>11}{len(sc):>9}{len(lc & sc):>6}{len(lc - sc):>11}{len(sc - lc):>10}")


if __name__ == "__main__":
    main()
