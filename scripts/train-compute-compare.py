#!/usr/bin/env python3
"""Runs `tessera train` with --compute f32 and --compute bf16, alternating, and prints each run's
training tokens/s (evaluations excluded), the medians, and the step losses of both side by side.

    scripts/train-compute-compare.py --tessera build/release/tessera --rounds 3 -- \
        -f brown.txt --dim 384 --layers 6 --heads 6 --kv-heads 6 --ffn 1152 --ctx 256 \
        --vocab-size 4096 --batch 8 --steps 10 --warmup 2 --eval-every 0 --eval-windows 8 -t 2

Everything after `--` goes to `tessera train` as is (plus -o, -q, --json and --compute). The
loss table is from the last round (every round trains the same steps: same seed, same data).
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", default="build/release/tessera")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("train_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    extra = [x for x in a.train_args if x != "--"]
    tps = {"f32": [], "bf16": []}
    last = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for compute in ("f32", "bf16"):
                cmd = [a.tessera, "train", *extra, "-o", f"{tmp}/{compute}.gguf", "-q", "--json",
                       "--compute", compute]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                j = json.loads(out.strip().splitlines()[-1])
                tps[compute].append(j["tokens_per_second"])
                last[compute] = j
                print(f"round {r + 1} {compute:5s} {j['tokens_per_second']:10.1f} tokens/s  "
                      f"final validation loss {j['final_val_loss']:.4f}", flush=True)
    mf, mb = statistics.median(tps["f32"]), statistics.median(tps["bf16"])
    print(f"median tokens/s: f32 {mf:.1f}, bf16 {mb:.1f}; bf16 / f32 = {mb / mf:.3f}")
    print(" step      f32 loss     bf16 loss    rel diff")
    worst = 0.0
    for sf, sb in zip(last["f32"]["steps"], last["bf16"]["steps"]):
        rel = abs(sb["loss"] - sf["loss"]) / abs(sf["loss"])
        worst = max(worst, rel)
        vf = f"  val {sf['val_loss']:.4f} / {sb['val_loss']:.4f}" if "val_loss" in sf else ""
        print(f"{sf['step']:5d}  {sf['loss']:12.6f}  {sb['loss']:12.6f}  {rel:10.2e}{vf}")
    print(f"max relative difference of the training loss: {worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
