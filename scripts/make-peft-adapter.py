#!/usr/bin/env python3
"""Writes a random LoRA adapter in PEFT's on-disk format, for tests and demos.

    scripts/make-peft-adapter.py OUT_DIR --dim 128 --layers 2 --heads 4 --kv-heads 2 --ffn 384
        [--rank 8] [--alpha 16] [--targets q_proj,v_proj,down_proj] [--seed 1] [--std 0.05]
        [--dtype f32|f16|bf16] [--gguf OUT.gguf]   (also the same adapter as a GGUF LoRA; needs
        gguf-py on PYTHONPATH)

OUT_DIR gets adapter_config.json and adapter_model.safetensors, written from the formats' own
rules with numpy only (no PEFT, safetensors or torch packages): tensors named
base_model.model.model.layers.N.<module>.lora_A.weight ([r, in]) and .lora_B.weight ([out, r]),
F32 (or F16/BF16 with --dtype: the values rounded to it, the same in both files), little-endian,
the JSON header padded with spaces to 8 bytes, offsets tiling the buffer.
q_proj/k_proj B rows are in Hugging Face's (half-split RoPE) order; the --gguf copy has them
permuted to GGML's adjacent-pair order, as llama.cpp's convert_lora_to_gguf.py writes them.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

MODULES = {
    "q_proj": ("self_attn", "attn_q"), "k_proj": ("self_attn", "attn_k"),
    "v_proj": ("self_attn", "attn_v"), "o_proj": ("self_attn", "attn_output"),
    "gate_proj": ("mlp", "ffn_gate"), "up_proj": ("mlp", "ffn_up"), "down_proj": ("mlp", "ffn_down"),
}


def shapes(a, module):
    head_dim = a.dim // a.heads
    return {
        "q_proj": (a.dim, a.heads * head_dim), "k_proj": (a.dim, a.kv_heads * head_dim),
        "v_proj": (a.dim, a.kv_heads * head_dim), "o_proj": (a.heads * head_dim, a.dim),
        "gate_proj": (a.dim, a.ffn), "up_proj": (a.dim, a.ffn), "down_proj": (a.ffn, a.dim),
    }[module]  # (in, out)


def rope_permute_rows(b, n_heads):
    """HF half-split rows -> GGML adjacent pairs: row h*hd + 2i + j takes h*hd + j*hd/2 + i."""
    out_dim = b.shape[0]
    hd = out_dim // n_heads
    return b.reshape(n_heads, 2, hd // 2, *b.shape[1:]).swapaxes(1, 2).reshape(b.shape)


def to_bf16_bits(x):
    """float32 -> bfloat16 bits (uint16), rounded to nearest even."""
    bits = np.ascontiguousarray(x, dtype="<f4").view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def write_safetensors(path, tensors, metadata, dtype="F32"):
    header = {"__metadata__": metadata}
    offset = 0
    for name, arr in tensors:
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, arr in tensors:
            f.write(np.ascontiguousarray(arr).tobytes())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--kv-heads", type=int, required=True)
    p.add_argument("--ffn", type=int, required=True)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16.0)
    p.add_argument("--targets", default="q_proj,v_proj,down_proj")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--std", type=float, default=0.05)
    p.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    p.add_argument("--gguf")
    a = p.parse_args()
    store = {"f32": lambda x: x.astype("<f4"), "f16": lambda x: x.astype("<f2"), "bf16": to_bf16_bits}[a.dtype]
    targets = a.targets.split(",")
    for t in targets:
        if t not in MODULES:
            sys.exit(f"unknown target {t}; known: {', '.join(MODULES)}")
    rng = np.random.default_rng(a.seed)
    tensors, pairs = [], []
    for layer in range(a.layers):
        for t in targets:
            n_in, n_out = shapes(a, t)
            A = store(rng.normal(0, a.std, (a.rank, n_in)).astype(np.float32))
            B = store(rng.normal(0, a.std, (n_out, a.rank)).astype(np.float32))
            stem = f"base_model.model.model.layers.{layer}.{MODULES[t][0]}.{t}"
            tensors += [(stem + ".lora_A.weight", A), (stem + ".lora_B.weight", B)]
            pairs.append((layer, t, A, B))
    os.makedirs(a.out, exist_ok=True)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": a.rank, "lora_alpha": a.alpha,
              "target_modules": targets, "lora_dropout": 0.0, "bias": "none",
              "fan_in_fan_out": False, "use_rslora": False, "use_dora": False,
              "modules_to_save": None, "rank_pattern": {}, "alpha_pattern": {},
              "base_model_name_or_path": None, "inference_mode": True}
    with open(os.path.join(a.out, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(a.out, "adapter_model.safetensors"), tensors, {"format": "pt"},
                      a.dtype.upper())
    if a.gguf:
        import gguf  # gguf-py, e.g. PYTHONPATH=/path/to/llama.cpp/gguf-py
        w = gguf.GGUFWriter(a.gguf, "llama")
        w.add_string("general.type", "adapter")
        w.add_string("adapter.type", "lora")
        w.add_float32("adapter.lora.alpha", a.alpha)
        for layer, t, A, B in pairs:
            if t in ("q_proj", "k_proj"):
                B = rope_permute_rows(B, a.heads if t == "q_proj" else a.kv_heads)
            name = f"blk.{layer}.{MODULES[t][1]}.weight"
            raw = gguf.GGMLQuantizationType.BF16 if a.dtype == "bf16" else None
            w.add_tensor(name + ".lora_a", A, raw_dtype=raw)  # numpy [r, in] -> GGUF ne {in, r}
            w.add_tensor(name + ".lora_b", np.ascontiguousarray(B), raw_dtype=raw)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    print(f"wrote {a.out} ({len(pairs)} matrices, rank {a.rank}, alpha {a.alpha}, {a.dtype})"
          + (f" and {a.gguf}" if a.gguf else ""))


if __name__ == "__main__":
    main()
