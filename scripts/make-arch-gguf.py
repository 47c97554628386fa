#!/usr/bin/env python3
"""Writes a random-weight GGUF of one model family with llama.cpp's own gguf-py, for
cross-checking Tessera against llama.cpp on files neither of them wrote (scripts/arch-vs-llamacpp.sh).

Tensor names come from gguf-py's TENSOR_NAMES, keys from GGUFWriter's methods (so the file
is what llama.cpp's converters would write for that family). Weights are f32 (both engines then
run the same arithmetic up to summation order); the tokenizer metadata is copied from another GGUF
(e.g. one written by `tessera synth`, whose generated SentencePiece vocabulary both engines read).

Run with numpy and gguf-py:
  PYTHONPATH=/work/peers/llama.cpp/gguf-py /usr/bin/python3 scripts/make-arch-gguf.py \
      --arch qwen3 --vocab-from tiny.gguf --out qwen3.gguf
Families: llama, qwen2 (Q/K/V biases), qwen3 (per-head Q/K RMSNorm), mistral (llama tensors
under the name "mistral", with --sliding-window), phi3 (fused attn_qkv, ffn_up holding gate
then up), gemma2 (post-attention and post-FFN norms, soft-capping keys, --sliding-window on
every other layer), gemma3 (gemma2's tensors plus per-head Q/K norms, no attention cap,
--sliding-window on 5 of every 6 layers, the global layers with --rope-base and a linear
--rope-scale). Gemma files have no output.weight and add_space_prefix false, as llama.cpp's
converter writes them. llama.cpp has no "mistral" architecture (it
converts Mistral 7B to "llama"), so --as-llama writes a mistral model's tensors under "llama".
"""
import argparse

import numpy as np

import gguf


def tokenizer_fields(path):
    """tokenizer.* of the GGUF at `path`, as (key, value) pairs in file order."""
    reader = gguf.GGUFReader(path)
    out = []
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            out.append((key, field))
    return out


def copy_tokenizer(writer, path):
    fields = dict(tokenizer_fields(path))
    writer.add_tokenizer_model(fields["tokenizer.ggml.model"].contents())
    tokens = fields["tokenizer.ggml.tokens"].contents()
    writer.add_token_list(tokens)
    if "tokenizer.ggml.scores" in fields:
        writer.add_token_scores(fields["tokenizer.ggml.scores"].contents())
    if "tokenizer.ggml.token_type" in fields:
        writer.add_token_types(fields["tokenizer.ggml.token_type"].contents())
    for key, add in (("tokenizer.ggml.bos_token_id", writer.add_bos_token_id),
                     ("tokenizer.ggml.eos_token_id", writer.add_eos_token_id),
                     ("tokenizer.ggml.unknown_token_id", writer.add_unk_token_id)):
        if key in fields:
            add(int(fields[key].contents()))
    for key, add in (("tokenizer.ggml.add_bos_token", writer.add_add_bos_token),
                     ("tokenizer.ggml.add_eos_token", writer.add_add_eos_token)):
        if key in fields:
            add(bool(fields[key].contents()))
    return len(tokens)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", required=True, choices=["llama", "qwen2", "qwen3", "mistral", "phi3",
                                                        "gemma2", "gemma3"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab-from", required=True, help="GGUF whose tokenizer.* keys are copied")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=0, help="0: dim / heads")
    ap.add_argument("--ffn", type=int, default=256)
    ap.add_argument("--sliding-window", type=int, default=0,
                    help="mistral, gemma2, gemma3: the window (0: none)")
    ap.add_argument("--attn-softcap", type=float, default=50.0, help="gemma2: attention cap")
    ap.add_argument("--final-softcap", type=float, default=None,
                    help="gemma2 (default 30), gemma3 (default none): final logit cap")
    ap.add_argument("--embd-std", type=float, default=1.0,
                    help="token_embd's standard deviation (gemma scales it by sqrt(dim))")
    ap.add_argument("--rope-base", type=float, default=10000.0,
                    help="rope.freq_base (gemma3: of the global layers)")
    ap.add_argument("--rope-scale", type=float, default=0.0,
                    help="linear rope.scaling.factor (0: none)")
    ap.add_argument("--as-llama", action="store_true",
                    help="write under general.architecture = llama (what llama.cpp loads)")
    ap.add_argument("--tied", action="store_true", help="no output.weight (tied to token_embd)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=0.08, help="weight standard deviation")
    a = ap.parse_args()

    name = "llama" if a.as_llama else a.arch
    hd = a.head_dim or a.dim // a.heads
    qd, kvd = a.heads * hd, a.kv_heads * hd
    rng = np.random.default_rng(a.seed)

    w = gguf.GGUFWriter(a.out, name)
    # No family name in general.name: llama.cpp's vocabulary loader keys special-token fix-ups
    # on it (a "phi3" name expects Phi-3's own tokens, which the copied vocabulary lacks).
    w.add_name("synthetic gguf-py model")
    n_vocab = copy_tokenizer(w, a.vocab_from)
    w.add_context_length(512)
    w.add_embedding_length(a.dim)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ffn)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(a.rope_base)
    if a.rope_scale:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(a.rope_scale)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(n_vocab)
    gemma = a.arch in ("gemma2", "gemma3")
    if a.sliding_window:
        if a.arch != "mistral" and not gemma:
            ap.error("--sliding-window is for mistral, gemma2 and gemma3")
        w.add_sliding_window(a.sliding_window)
    if a.arch == "gemma2":
        w.add_attn_logit_softcapping(a.attn_softcap)
    final_softcap = a.final_softcap if a.final_softcap is not None else (
        30.0 if a.arch == "gemma2" else 0.0)
    if gemma and final_softcap:
        w.add_final_logit_softcapping(final_softcap)
    if gemma:
        w.add_add_space_prefix(False)
        a.tied = True
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    def tensor(kind, shape, bid=None, suffix="weight", mean=0.0, std=None):
        tname = gguf.TENSOR_NAMES[kind].format(bid=bid) + "." + suffix
        v = rng.normal(mean, a.scale if std is None else std, size=shape).astype(np.float32)
        w.add_tensor(tname, v)  # numpy [rows, cols] -> GGUF ne = [cols, rows]

    T = gguf.MODEL_TENSOR
    tensor(T.TOKEN_EMBD, (n_vocab, a.dim), std=a.embd_std)
    for i in range(a.layers):
        tensor(T.ATTN_NORM, (a.dim,), i, mean=1.0, std=0.1)
        if a.arch == "phi3":
            tensor(T.ATTN_QKV, (qd + 2 * kvd, a.dim), i)
        else:
            tensor(T.ATTN_Q, (qd, a.dim), i)
            tensor(T.ATTN_K, (kvd, a.dim), i)
            tensor(T.ATTN_V, (kvd, a.dim), i)
        if a.arch == "qwen2":
            tensor(T.ATTN_Q, (qd,), i, suffix="bias", std=0.5)
            tensor(T.ATTN_K, (kvd,), i, suffix="bias", std=0.5)
            tensor(T.ATTN_V, (kvd,), i, suffix="bias", std=0.5)
        if a.arch in ("qwen3", "gemma3"):
            tensor(T.ATTN_Q_NORM, (hd,), i, mean=1.0, std=0.2)
            tensor(T.ATTN_K_NORM, (hd,), i, mean=1.0, std=0.2)
        tensor(T.ATTN_OUT, (a.dim, qd), i)
        if gemma:  # norm weights as the converter stores them: 1 + w
            tensor(T.ATTN_POST_NORM, (a.dim,), i, mean=1.0, std=0.1)
        tensor(T.FFN_NORM, (a.dim,), i, mean=1.0, std=0.1)
        if a.arch == "phi3":
            tensor(T.FFN_UP, (2 * a.ffn, a.dim), i)
        else:
            tensor(T.FFN_GATE, (a.ffn, a.dim), i)
            tensor(T.FFN_UP, (a.ffn, a.dim), i)
        tensor(T.FFN_DOWN, (a.dim, a.ffn), i)
        if gemma:
            tensor(T.FFN_POST_NORM, (a.dim,), i, mean=1.0, std=0.1)
    tensor(T.OUTPUT_NORM, (a.dim,), mean=1.0, std=0.1)
    if not a.tied:
        tensor(T.OUTPUT, (n_vocab, a.dim))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
