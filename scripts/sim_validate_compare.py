#!/usr/bin/env python3
"""The comparison half of scripts/sim-validate.sh: simulates the live run's exact schedule once per
policy and prints live and simulated side by side.

Each policy is simulated twice:
  sim      with the costs `bench model` and `bench resume` measured just before the live run;
  sim fit  with the unit costs the live run itself paid: a step's weight pass and per-row time
           fitted to the live engines' device accounting (device time held by iterations with
           prompt rows and by decode-only ones, as the engines held it, and their rows), and the mean resume and
           suspension times the live controller timed.
This machine's speed drifts (memory bandwidth up to 2x within minutes), so a cost record taken
minutes before a run can be far off; the second row separates the simulator's dynamics (queueing,
batching, device sharing, the policies) from that drift. Neither row uses any latency or cold
start of the live run: TTFT, SLO attainment, memory-seconds and cold starts stay predictions.

With SIM_ARBITRATION=1 in the environment both simulate the shared device as the live one is
run: one iteration at a time by the live DeviceScheduler's rule, batches composed as the engine
composes them with its 512 rows per step (`tessera sim --device-arbitration --max-batch-tokens
512`) instead of processor sharing. With the live run's iterations (OUT/live-iterations.csv,
`bench fleet --iterations-out`) a third simulation, "sim var", adds how the live iterations'
times varied about the fitted cost: each live iteration's held time over the fitted cost of its
rows, marked contended when another engine waited for the device at its grant, drawn per
iteration (`tessera sim --step-multipliers`); the draws make each run one sample of the tail, so
this column is the median of SIM_VAR_SEEDS (9) seeds, with the p99 range over them.

usage: sim_validate_compare.py TESSERA OUT SPAN ACTIVE_BYTES KEEP_ALIVE_S HISTOGRAM_BIN_S TTFT_SLO_S
"""
import json
import os
import statistics
import subprocess
import sys

VAR_SEEDS = int(os.environ.get("SIM_VAR_SEEDS", "9"))
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

    def live_costs(l):
        """(decode step s, per-row s, resume s, suspend s; None where not measured)."""
        ms = l["models"]
        total = lambda k: sum(m[k] for m in ms)
        td = total("decode_held_s") / total("decode_grants")
        rd = total("decode_rows") / total("decode_grants")
        tp = total("prefill_held_s") / total("prefill_grants")
        rp = total("prefill_rows") / total("prefill_grants")
        row = (tp - td) / (rp - rd)
        step = td - row * (rd - 1)
        resumes, suspends = total("resumes"), total("suspends")
        resume = sum(m["mean_resume_s"] * m["resumes"] for m in ms) / resumes if resumes else None
        suspend = (sum(m["mean_suspend_s"] * m["suspends"] for m in ms) / suspends
                   if suspends else None)
        return step, row, resume, suspend

    rows = []
    for lp, sp in PAIRS:
        if lp not in live:
            continue
        l = live[lp]
        step, row, resume, suspend = live_costs(l)
        extra = ["--decode-step-s", f"{step:.9f}", "--row-s", f"{row:.9f}"]
        if resume is not None:
            extra += ["--resume-s", f"{resume:.6f}"]
        if suspend is not None:
            extra += ["--suspend-s", f"{suspend:.6f}"]
        raw = simulate(sp, [])
        fit = simulate(sp, extra, f"{out}/sim-requests-{lp}.csv")
        var = None
        if os.environ.get("SIM_ARBITRATION") == "1":
            mult = step_multipliers(out, lp, step, row)
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
        rows.append((lp, l, raw, fit, var, (step, row, resume, suspend)))

    def ratio(a, b):
        return f"{b / a:.3f}" if a else "-"

    has_var = any(r[4] is not None for r in rows)
    print(f"\n{'policy':<11}{'metric':<15}{'live':>9}{'sim':>9}{'sim/live':>10}{'sim fit':>9}"
          f"{'fit/live':>10}" + (f"{'sim var':>9}{'var/live':>10}" if has_var else ""))
    for lp, l, raw, fit, var, costs in rows:
        sims = [raw, fit] + ([var] if var is not None else [])
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
        step, row, resume, suspend = costs
        fmt_ms = lambda v: "-" if v is None else f"{v * 1e3:.2f}"
        if var is not None:
            lo, hi = var["p99_range"]
            print(f"{lp:<11}sim var: median of {VAR_SEEDS} seeds; TTFT p99 {lo * 1e3:.0f}-{hi * 1e3:.0f} "
                  f"ms over them ({lo / l['ttft_p99_s']:.3f}-{hi / l['ttft_p99_s']:.3f} of live)")
        print(f"{lp:<11}live costs: step {step * 1e3:.2f} ms + {row * 1e3:.3f} ms/row, resume "
              f"{fmt_ms(resume)} ms, suspend {fmt_ms(suspend)} ms")

    cold_agreement(out, [lp for lp, *_ in rows])


def step_multipliers(out, policy, step, row):
    """Writes OUT/step-multipliers-POLICY.csv from the live iterations: the device's time over the
    fitted cost step + row x (rows - 1), whether another engine waited for the device at the grant
    (some other iteration asked before it and was granted after) and whether it ran prompt rows. Returns the path, or None
    without OUT/live-iterations.csv."""
    import bisect
    import csv
    try:
        its = [r for r in csv.DictReader(open(f"{out}/live-iterations.csv"))
               if r["policy"] == policy]
    except OSError:
        return None
    waits = sorted((float(r["asked_s"]), float(r["granted_s"])) for r in its)
    asked = [a for a, _ in waits]
    grants = sorted(float(r["granted_s"]) for r in its)
    path = f"{out}/step-multipliers-{policy}.csv"
    with open(path, "w") as f:
        f.write("multiplier,contended,prompt\n")
        for r in its:
            rows = int(r["prefill_rows"]) + int(r["decode_rows"])
            if rows == 0:
                continue
            g, rel = float(r["granted_s"]), float(r["released_s"])
            k = bisect.bisect_left(asked, g)
            # Clients are few: another waiting at g asked within the last few asks before g.
            contended = any(waits[i][1] > g + 1e-7 and waits[i][0] < g
                            for i in range(max(0, k - 16), k))
            # The device's time: from this grant to the next, when this release granted it (the
            # next grant falls before this release returned); else to this release. Not the
            # engine's held time, which after a hand-off also counts the releasing thread waiting
            # for a core while the next holder already runs.
            j = bisect.bisect_right(grants, g)
            end = grants[j] if j < len(grants) and grants[j] <= rel else rel
            prompt = int(int(r["prefill_rows"]) > 0)
            f.write(f"{(end - g) / (step + row * (rows - 1)):.4f},{int(contended)},{prompt}\n")
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
