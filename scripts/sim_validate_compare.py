#!/usr/bin/env python3
"""The comparison half of scripts/sim-validate.sh: simulates the live run's exact schedule once per
policy and prints live and simulated side by side.

Each policy is simulated twice: with the `bench model` costs as measured, and with their
memory-bound terms (decode's weight pass, KV reads) scaled so that the simulated device time of
the run's requests equals the device time the live engines held (`device_busy_s` in the live
record). This machine's memory bandwidth drifts up to 2x within minutes while prefill's compute
does not, so a cost record taken minutes before the live run can be far off for decode. The fit
uses device time only; TTFT, SLO attainment, memory-seconds and cold starts stay predictions.

usage: sim_validate_compare.py TESSERA OUT SPAN ACTIVE_BYTES KEEP_ALIVE_S HISTOGRAM_BIN_S TTFT_SLO_S
"""
import json
import subprocess
import sys

PAIRS = [("always-on", "dedicated"), ("fixed", "keep-alive"), ("adaptive", "adaptive")]


def main():
    t, out, span, active, keep, binw, slo = sys.argv[1:8]
    live = {p["policy"]: p for p in json.load(open(f"{out}/live.json"))["policies"]}

    def simulate(policy, scale, requests_out=None):
        cmd = [t, "sim", "--schedule", f"{out}/schedule.csv", "--schedule-span", span,
               "--bench-record", f"{out}/model.json", "--resume-record", f"{out}/resume.json",
               "--active-bytes", active, "--max-running", "2", "--shared-device",
               "--keep-alive", keep, "--histogram-bin", binw, "--ttft-slo", slo,
               "--policy", policy, "--memory-scale", f"{scale:.6f}", "--json", f"{out}/sim-one.json"]
        if requests_out:
            cmd += ["--requests-out", requests_out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.load(open(f"{out}/sim-one.json"))["policies"][0]

    rows = []
    for lp, sp in PAIRS:
        if lp not in live:
            continue
        l = live[lp]
        target = sum(m["device_busy_s"] for m in l["models"])
        lo, hi = 0.25, 4.0
        for _ in range(24):  # simulated device time grows with the scale: bisect
            mid = (lo * hi) ** 0.5
            if simulate(sp, mid)["device_busy_s"] < target:
                lo = mid
            else:
                hi = mid
        scale = (lo * hi) ** 0.5
        raw = simulate(sp, 1.0)
        fit = simulate(sp, scale, f"{out}/sim-requests-{lp}.csv")
        rows.append((lp, l, raw, fit, scale, target))

    def ratio(a, b):
        return f"{b / a:.3f}" if a else "-"

    print(f"\n{'policy':<11}{'metric':<15}{'live':>9}{'sim':>9}{'sim/live':>10}{'sim fit':>9}"
          f"{'fit/live':>10}")
    for lp, l, raw, fit, scale, target in rows:
        table = [
            ("TTFT p50 ms", l["ttft_p50_s"] * 1e3, raw["ttft_p50_s"] * 1e3, fit["ttft_p50_s"] * 1e3),
            ("TTFT p99 ms", l["ttft_p99_s"] * 1e3, raw["ttft_p99_s"] * 1e3, fit["ttft_p99_s"] * 1e3),
            ("SLO met %", l["slo_attainment"] * 100, raw["slo_attainment"] * 100,
             fit["slo_attainment"] * 100),
            ("memory GB*s", l["memory_gb_s"], raw["memory_gb_hours"] * 3600,
             fit["memory_gb_hours"] * 3600),
            ("cold starts", l["cold_starts"], raw["cold_starts"], fit["cold_starts"]),
            ("device s", target, raw["device_busy_s"], fit["device_busy_s"]),
        ]
        for name, a, b, c in table:
            print(f"{lp:<11}{name:<15}{a:>9.1f}{b:>9.1f}{ratio(a, b):>10}{c:>9.1f}{ratio(a, c):>10}")
        print(f"{lp:<11}{'memory scale':<15}{'':>9}{1.0:>9.3f}{'':>10}{scale:>9.3f}")
        print(f"{lp:<11}{'requests':<15}{l['requests']:>9}{raw['requests']:>9}{'':>10}"
              f"{fit['requests']:>9}")


if __name__ == "__main__":
    main()
