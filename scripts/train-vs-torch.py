#!/usr/bin/env python3
"""Trains the same llama model with Tessera and with PyTorch, side by side.

Tessera trains first (`tessera train --init-out --data-order-out --json`): it writes its initial
parameters (safetensors, GGUF tensor names) and every step's training windows (.npy). PyTorch then
builds the same model from those parameters (RMSNorm, RoPE in GGML's adjacent-pair layout,
grouped-query causal attention, SwiGLU, an untied output matrix), trains on the same windows in
the same order with the same optimizer (AdamW with decoupled weight decay on the matrices but not
the embedding or the norms, Tessera's global-norm clipping, linear warmup then cosine, gradient
accumulation), and the script prints both loss curves with their relative difference and each
engine's training tokens/s (optimizer steps only; Tessera's end-of-run validation is excluded
from its time, and PyTorch runs none).

    scripts/train-vs-torch.py --tessera build/release/tessera --text .cache/corpus/brown.txt

Both run f32 on --threads threads, one after the other (so neither competes with the other).
Needs numpy and torch; reads the files with numpy only. Exit status 1 when the curves differ by
more than --tolerance (relative) at some step.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np


def read_safetensors(path):
    """{name: np.ndarray} of an F32 safetensors file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {t['dtype']}, expected F32")
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"]).copy()
    return out


def warmup_cosine_lr(step, warmup, total, peak, min_ratio):
    """Tessera's schedule (src/train/optimizer.cpp), step 0-based."""
    if warmup > 0 and step < warmup:
        return peak * (step + 1) / warmup
    if step >= total or total <= warmup:
        return peak * min_ratio
    progress = (step - warmup) / (total - warmup)
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def build_torch_model(torch, w, a):
    """The forward pass as a function of a dict of leaf tensors (the GGUF names)."""
    F = torch.nn.functional
    C, H, G, L = a.dim, a.heads, a.kv_heads, a.layers
    D = C // H
    T = a.ctx
    # GGML's "normal" RoPE: the pair (2i, 2i+1) turns by pos * base^(-2i/D).
    i = torch.arange(D // 2, dtype=torch.float64)
    theta = torch.arange(T, dtype=torch.float64)[:, None] * torch.pow(10000.0, -2.0 * i / D)[None, :]
    cos = torch.cos(theta).float()[None, :, None, :]  # [1, T, 1, D/2]
    sin = torch.sin(theta).float()[None, :, None, :]
    mask = torch.full((T, T), float("-inf")).triu(1)

    def rmsnorm(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * g

    def rope(x):  # [B, T, heads, D]
        x2 = x.reshape(*x.shape[:-1], D // 2, 2)
        a0, a1 = x2[..., 0], x2[..., 1]
        return torch.stack((a0 * cos - a1 * sin, a0 * sin + a1 * cos), dim=-1).reshape(x.shape)

    def forward(tokens, targets):
        B = tokens.shape[0]
        x = w["token_embd.weight"][tokens]
        for l in range(L):
            p = lambda n: w[f"blk.{l}.{n}.weight"]
            h = rmsnorm(x, p("attn_norm"))
            q = rope((h @ p("attn_q").T).view(B, T, H, D))
            k = rope((h @ p("attn_k").T).view(B, T, G, D))
            v = (h @ p("attn_v").T).view(B, T, G, D)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, heads, T, D]
            k = k.repeat_interleave(H // G, dim=1)  # query head h reads kv head h // (H/G)
            v = v.repeat_interleave(H // G, dim=1)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + mask, dim=-1) @ v
            x = x + att.transpose(1, 2).reshape(B, T, C) @ p("attn_output").T
            h = rmsnorm(x, p("ffn_norm"))
            x = x + (F.silu(h @ p("ffn_gate").T) * (h @ p("ffn_up").T)) @ p("ffn_down").T
        logits = rmsnorm(x, w["output_norm.weight"]) @ w["output.weight"].T
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))

    return forward


def run_tessera(a, tmp):
    init, order, out = (os.path.join(tmp, n) for n in ("init.safetensors", "order.npy", "t.gguf"))
    cmd = [a.tessera, "train", "-f", a.text, "-o", out, "--init-out", init, "--data-order-out", order,
           "--dim", str(a.dim), "--layers", str(a.layers), "--heads", str(a.heads),
           "--kv-heads", str(a.kv_heads), "--ffn", str(a.ffn), "--ctx", str(a.ctx),
           "--vocab-size", str(a.vocab_size), "--batch", str(a.batch), "--accum", str(a.accum),
           "--steps", str(a.steps), "--lr", repr(a.lr), "--warmup", str(a.warmup),
           "--min-lr-ratio", repr(a.min_lr_ratio), "--weight-decay", repr(a.weight_decay),
           "--beta2", repr(a.beta2), "--clip", repr(a.clip), "--eval-every", "0",
           "--eval-windows", "1", "--seed", str(a.seed), "-t", str(a.threads), "--json", "--quiet"]
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"tessera train failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout), read_safetensors(init), np.load(order)


def run_torch(a, init, order):
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    w = {n: torch.tensor(t, requires_grad=True) for n, t in init.items()}
    forward = build_torch_model(torch, w, a)
    # Decay the matrices except the embedding (Tessera's mask); betas, eps as Tessera's AdamW.
    decay = [t for n, t in w.items() if t.dim() == 2 and n != "token_embd.weight"]
    rest = [t for n, t in w.items() if not (t.dim() == 2 and n != "token_embd.weight")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, a.beta2), eps=1e-8, foreach=False)
    params = list(w.values())
    windows = torch.from_numpy(order.astype(np.int64))  # [steps, accum*batch, T+1]
    losses, seconds = [], 0.0
    for step in range(a.steps):
        t0 = time.perf_counter()
        for p in params:
            p.grad = None
        loss_sum = 0.0
        for m in range(a.accum):
            win = windows[step, m * a.batch:(m + 1) * a.batch]
            loss = forward(win[:, :-1], win[:, 1:])
            (loss / a.accum).backward()
            loss_sum += loss.item()
        # Tessera's clipping: scale by clip / norm when the global norm exceeds clip (no epsilon,
        # unlike torch.nn.utils.clip_grad_norm_).
        with torch.no_grad():
            norm = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in params))
            if a.clip > 0 and norm > a.clip:
                for p in params:
                    p.grad.mul_(a.clip / norm)
            lr = warmup_cosine_lr(step, a.warmup, a.steps, a.lr, a.min_lr_ratio)
            for g in opt.param_groups:
                g["lr"] = lr
            opt.step()
        seconds += time.perf_counter() - t0
        losses.append(loss_sum / a.accum)
    return losses, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default="build/release/tessera")
    ap.add_argument("--text", default=".cache/corpus/brown.txt")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=176)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--vocab-size", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tolerance", type=float, default=1e-4,
                    help="largest relative loss difference accepted at any step")
    ap.add_argument("--json", help="also write the comparison here")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tj, init, order = run_tessera(a, tmp)
    n_params = sum(t.size for t in init.values())
    t_losses = [s["loss"] for s in tj["steps"]]
    p_losses, p_seconds = run_torch(a, init, order)
    tokens = a.steps * a.accum * a.batch * a.ctx
    t_tps, p_tps = tj["tokens"] / tj["seconds"], tokens / p_seconds

    print(f"model: dim {a.dim}, {a.layers} layers, {a.heads} heads ({a.kv_heads} kv), ffn {a.ffn}, "
          f"vocab {init['output.weight'].shape[0]}, ctx {a.ctx}: {n_params / 1e6:.2f} M parameters; "
          f"{a.accum} x {a.batch} x {a.ctx} tokens per step, {a.steps} steps, {a.threads} threads")
    print(f"{'step':>5} {'tessera':>10} {'torch':>10} {'rel diff':>10}")
    worst = 0.0
    for i, (t, p) in enumerate(zip(t_losses, p_losses)):
        rel = abs(t - p) / abs(p)
        worst = max(worst, rel)
        print(f"{i + 1:>5} {t:>10.6f} {p:>10.6f} {rel:>10.2e}")
    print(f"max relative difference {worst:.2e} (tolerance {a.tolerance:.0e}): "
          f"{'agree' if worst <= a.tolerance else 'DIFFER'}")
    print(f"tokens/s: tessera {t_tps:.1f}, torch {p_tps:.1f} (torch {torch_version()}); "
          f"tessera / torch = {t_tps / p_tps:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"parameters": int(n_params), "tessera_loss": t_losses, "torch_loss": p_losses,
                       "max_rel_diff": worst, "tessera_tokens_per_s": t_tps,
                       "torch_tokens_per_s": p_tps, "args": vars(a)}, f, indent=1)
    return 0 if worst <= a.tolerance else 1


def torch_version():
    import torch
    return torch.__version__


if __name__ == "__main__":
    sys.exit(main())
