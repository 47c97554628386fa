#!/usr/bin/python3
"""Open-loop replay of an arrival schedule (`tessera bench fleet --arrivals-out`: model,t_s,
input_tokens,output_tokens) against an OpenAI-compatible endpoint such as `tessera cluster`'s
router: each request is sent at its time on a thread of its own, streamed, and its TTFT taken
from the scheduled arrival to the first content chunk. Prints one JSON record.
Usage: cluster_replay.py SCHEDULE.csv URL TTFT_SLO_S
"""
import csv
import json
import sys
import threading
import time
import urllib.request

schedule, url, slo = sys.argv[1], sys.argv[2].rstrip("/"), float(sys.argv[3])
rows = list(csv.DictReader(open(schedule)))
results = []
lock = threading.Lock()


def send(row, t0):
    at = t0 + float(row["t_s"])
    time.sleep(max(0.0, at - time.time()))
    body = {"model": row["model"], "prompt": "hello " * max(1, int(row["input_tokens"]) // 2),
            "max_tokens": int(row["output_tokens"]), "stream": True, "ignore_eos": True}
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    ttft, ok, err = None, False, ""
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            for line in r:
                if ttft is None and line.startswith(b"data: {"):
                    ttft = time.time() - at
                if line.strip() == b"data: [DONE]":
                    ok = True
    except Exception as e:  # noqa: BLE001 - every failure is counted, never raised
        err = str(e)
    with lock:
        results.append({"model": row["model"], "t_s": float(row["t_s"]), "ttft_s": ttft, "ok": ok, "error": err})


t0 = time.time() + 1.0
threads = [threading.Thread(target=send, args=(row, t0)) for row in rows]
for t in threads:
    t.start()
for t in threads:
    t.join()
ttfts = sorted(r["ttft_s"] for r in results if r["ok"] and r["ttft_s"] is not None)


def pct(p):
    return ttfts[min(len(ttfts) - 1, int(p * len(ttfts)))] if ttfts else None


print(json.dumps({
    "requests": len(results),
    "ok": sum(r["ok"] for r in results),
    "failed": [r for r in results if not r["ok"]][:5],
    "slo_s": slo,
    "slo_attainment": sum(1 for r in results if r["ok"] and r["ttft_s"] <= slo) / max(1, len(results)),
    "ttft_p50_s": pct(0.5),
    "ttft_p99_s": pct(0.99),
    "span_s": max((float(r["t_s"]) for r in rows), default=0.0),
}))
