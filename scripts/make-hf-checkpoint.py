#!/usr/bin/env python3
"""Writes a small random-weight Hugging Face checkpoint directory, from the formats' own rules,
with the Python standard library only (no numpy, safetensors, transformers or torch):

    scripts/make-hf-checkpoint.py OUT_DIR [--family llama|mistral|qwen2|qwen3] [--dtype f32|f16|bf16]
        [--shards N] [--seed S] [--dim 128] [--layers 2] [--heads 4] [--kv-heads 2] [--ffn 256]
        [--merges 300] [--corpus FILE]

OUT_DIR gets
  - config.json: the transformers config of the family's *ForCausalLM class (model_type,
    hidden_act silu, torch_dtype, bos/eos ids, rope_theta, rms_norm_eps, ...);
  - model.safetensors, or N shards model-0000i-of-0000N.safetensors with
    model.safetensors.index.json (metadata.total_size, weight_map): each an 8-byte little-endian
    header length, a JSON header ({name: {dtype, shape, data_offsets}}, "__metadata__":
    {"format": "pt"}) padded with spaces to a multiple of 8 bytes, then the tensors' bytes,
    row-major, tiling the buffer in header order;
  - tokenizer.json and tokenizer_config.json: a BPE vocabulary this script trains on a built-in
    text (or --corpus), in the form the family's real tokenizers have:
      llama:   SentencePiece-style BPE (byte_fallback, <0xNN> byte tokens, <unk> <s> </s>),
               spaces as U+2581 by a Prepend + Replace normalizer (Llama 2's tokenizer.json);
      mistral: the same vocabulary kind with a Metaspace pre-tokenizer (prepend_scheme "first",
               split false), as newer Mistral tokenizer.json files have;
      qwen2, qwen3: byte-level BPE (GPT-2's byte-to-unicode alphabet) after Qwen2's Split regex,
               an NFC normalizer, <|endoftext|> <|im_start|> <|im_end|> added tokens.
Tensor names, shapes ([out, in]) and layouts are transformers': model.embed_tokens.weight,
model.layers.N.self_attn.{q,k,v,o}_proj.weight, mlp.{gate,up,down}_proj.weight,
input_layernorm / post_attention_layernorm, model.norm.weight, lm_head.weight (absent when
tied: qwen2); qwen2 adds q/k/v biases, qwen3 q_norm/k_norm. Q and K rows are in HF's half-split
rotary order (rotate_half pairs row i with row i + head_dim/2), which the llama-family converter
permutes; the weights are random so any matrix is a valid HF one, and loaders must apply that
permutation for the directory and its GGUF to agree with llama.cpp.

Weights: normal, seeded (--seed), scaled so greedy decoding varies from token to token (embeddings
std 1, 0.05 when tied to the output, projections 1/sqrt(fan_in) x 1.5, lm_head 0.35 so logits have a spread of a few units,
norm weights 1 +- 0.1). F16 and BF16 values are rounded to nearest even from the f32 draws.
"""
import argparse
import json
import math
import os
import random
import re
import struct
import sys

# A few KB of plain text written for this script (not copied from anywhere), with some non-ASCII
# characters so that byte fallback and multi-byte UTF-8 are exercised.
BUILTIN_TEXT = """
Once upon a time there was a small robot that lived in a quiet town by the sea. Every morning
the robot walked to the harbour, counted the boats, and wrote the number in a little notebook.
One day the robot counted twelve boats, the next day eleven, and the day after that only nine.
The robot wondered where the boats had gone, so it asked the old fisherman who sat on the pier.
"The boats go where the fish go," said the fisherman, "and the fish go where the water is cold."
The robot thought about this for a long time. It did not know how to be cold, and it did not know
how to be a fish, but it knew how to count, and counting was a way of understanding the world.
So the robot began to count other things: the gulls above the water, the waves against the wall,
the children who ran along the beach after school, the lamps that came on when the sun went down.
After a year the notebook was full, and the robot started a second one, then a third and a fourth.
The people of the town liked the robot. They brought it tea, which it could not drink, and bread,
which it could not eat, and they told it stories, which it wrote down between the numbers.
A café opened near the harbour; its owner, Zoë, painted the walls blue and the chairs yellow.
She said the robot's notebooks were the town's history — more honest than any newspaper.
When the winter storms came the boats stayed home, and the robot counted raindrops instead.
It counted 1,204 drops on the window in one minute, and 3,517 in the next, and then it stopped,
because the numbers were changing too quickly to mean anything at all. Naïve, said the gulls.
In spring the fish came back, and the boats followed them, and the robot counted twelve again.
The fisherman smiled and said: "You see? Everything that leaves comes back if you wait for it."
The robot wrote that sentence in the notebook, and under it, carefully, the number twelve.
Later that year a teacher brought her class to the pier to meet the robot. The children asked
many questions: how old it was, whether it slept, what it dreamed about, why it liked numbers.
The robot answered each question as well as it could. It was seven years old; it did not sleep;
it dreamed, if that was the word, about long columns of figures that added up exactly right.
It liked numbers because they were patient, and because two people who counted the same thing
carefully would always arrive at the same answer, even if they had never met each other.
"""


# ---- tokenizer training -------------------------------------------------------------------------

def train_bpe(words, n_merges):
    """words: {tuple_of_symbols: count}. Returns the merges in order (pairs of strings). Ties are
    broken by the pair's text so the result does not depend on dict order."""
    words = dict(words)
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], tuple(-ord(ch) for ch in kv[0][0] + "\0" + kv[0][1])))
        if best[1] < 2:
            break
        a, b = best[0]
        merges.append((a, b))
        merged = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + c
        words = merged
    return merges


def byte_to_unicode():
    """GPT-2's reversible byte -> printable character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
# An approximation of QWEN2_REGEX for Python's re (no \p{..}), used only to find training words.
QWEN2_APPROX = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d|[^\r\n\w]?[^\W\d_]+|\d| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def spm_tokenizer(text, n_merges, family):
    sp = "\u2581"
    norm = sp + " ".join(text.split()).replace(" ", sp)
    words = {}
    for w in re.findall(sp + "[^" + sp + "]*", norm):
        words[tuple(w)] = words.get(tuple(w), 0) + 1
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    chars = {}
    for w, c in words.items():
        for ch in w:
            chars[ch] = chars.get(ch, 0) + c
    for ch, _ in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0])):
        vocab.setdefault(ch, len(vocab))
    merges = train_bpe(words, n_merges)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in ("<unk>", "<s>", "</s>")]
    model = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
             "vocab": vocab, "merges": [a + " " + b for a, b in merges]}
    decoder = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": sp}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    if family == "mistral":
        normalizer = None
        pre = {"type": "Metaspace", "replacement": sp, "prepend_scheme": "first", "split": False}
        decoder = {"type": "Metaspace", "replacement": sp, "prepend_scheme": "first", "split": False}
    else:
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": sp},
            {"type": "Replace", "pattern": {"String": " "}, "content": sp}]}
        pre = None
    post = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post, "decoder": decoder,
           "model": model}
    cfg = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
           "unk_token": "<unk>", "pad_token": None, "clean_up_tokenization_spaces": False,
           "legacy": False, "model_max_length": 2048, "tokenizer_class": "LlamaTokenizer"}
    return tok, cfg, len(vocab), {"bos": 1, "eos": 2}


def byte_level_tokenizer(text, n_merges):
    b2u = byte_to_unicode()
    words = {}
    for w in QWEN2_APPROX.findall(text):
        key = tuple(b2u[b] for b in w.encode("utf-8"))
        words[key] = words.get(key, 0) + 1
    vocab = {b2u[b]: b for b in range(256)}  # ids in byte order
    merges = train_bpe(words, n_merges)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    added = []
    for t in specials:
        added.append({"id": len(vocab) + len(added), "content": t, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
             "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
             "vocab": vocab, "merges": [[a, b] for a, b in merges]}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": {"type": "NFC"},
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "Split", "pattern": {"Regex": QWEN2_REGEX}, "behavior": "Isolated", "invert": False},
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
           "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                              "use_regex": False},
           "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
           "model": model}
    eot = added[0]["id"]
    cfg = {"add_prefix_space": False, "bos_token": None, "eos_token": "<|endoftext|>",
           "pad_token": "<|endoftext|>", "unk_token": None, "errors": "replace", "model_max_length": 32768,
           "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer",
           "chat_template": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                            "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
                            "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"}
    return tok, cfg, len(vocab) + len(added), {"bos": eot, "eos": eot}


# ---- tensors ------------------------------------------------------------------------------------

def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def encode(values, dtype):
    if dtype == "F32":
        return struct.pack("<%df" % len(values), *values)
    if dtype == "F16":
        return struct.pack("<%de" % len(values), *values)  # IEEE half, round to nearest even
    out = bytearray()
    for v in values:  # BF16: the top half of the f32 bits, rounded to nearest even
        u = f32_bits(v)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        out += struct.pack("<H", u & 0xFFFF)
    return bytes(out)


class Tensors:
    def __init__(self, rng, dtype):
        self.rng, self.dtype, self.items = rng, dtype, []

    def normal(self, name, shape, std, mean=0.0):
        n = math.prod(shape)
        g = self.rng.gauss
        self.add(name, shape, [mean + std * g(0.0, 1.0) for _ in range(n)])

    def add(self, name, shape, values):
        # transformers keeps norms and biases in the checkpoint's dtype too.
        self.items.append((name, list(shape), self.dtype, encode(values, self.dtype)))


def write_safetensors(path, items):
    header, offset = {}, 0
    for name, shape, dtype, data in items:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, data in items:
            f.write(data)
    return offset


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--family", default="llama", choices=["llama", "mistral", "qwen2", "qwen3"])
    ap.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=0, help="qwen3 only (0: dim / heads)")
    ap.add_argument("--ffn", type=int, default=256)
    ap.add_argument("--merges", type=int, default=300)
    ap.add_argument("--corpus", help="train the tokenizer on this UTF-8 file instead of the built-in text")
    a = ap.parse_args()
    if a.shards < 1:
        sys.exit("--shards must be at least 1")
    text = open(a.corpus, encoding="utf-8").read() if a.corpus else BUILTIN_TEXT
    fam = a.family
    if fam in ("llama", "mistral"):
        tok, tok_cfg, n_vocab, ids = spm_tokenizer(text, a.merges, fam)
    else:
        tok, tok_cfg, n_vocab, ids = byte_level_tokenizer(text, a.merges)

    d, L, H, KV, F = a.dim, a.layers, a.heads, a.kv_heads, a.ffn
    hd = a.head_dim if (fam == "qwen3" and a.head_dim) else d // H
    tied = fam == "qwen2"
    cls = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
           "qwen3": "Qwen3ForCausalLM"}[fam]
    torch_dtype = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[a.dtype]
    config = {"architectures": [cls], "model_type": fam, "hidden_act": "silu", "hidden_size": d,
              "intermediate_size": F, "num_hidden_layers": L, "num_attention_heads": H,
              "num_key_value_heads": KV, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0 if fam in ("llama", "mistral") else 1000000.0, "rope_scaling": None,
              "tie_word_embeddings": tied, "vocab_size": n_vocab, "torch_dtype": torch_dtype,
              "bos_token_id": ids["bos"], "eos_token_id": ids["eos"], "initializer_range": 0.02,
              "use_cache": True, "transformers_version": "4.46.0"}
    if fam == "llama":
        config.update({"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1})
    if fam == "mistral":
        config["sliding_window"] = None
    if fam in ("qwen2", "qwen3"):
        config.update({"use_sliding_window": False, "sliding_window": None, "max_window_layers": L})
    if fam == "qwen3":
        config.update({"head_dim": hd, "attention_bias": False})

    rng = random.Random(a.seed)
    t = Tensors(rng, {"f32": "F32", "f16": "F16", "bf16": "BF16"}[a.dtype])
    proj = lambda fan_in: 1.5 / math.sqrt(fan_in)
    # Tied output (qwen2): small embeddings, so the logits follow the blocks, not the input token.
    t.normal("model.embed_tokens.weight", [n_vocab, d], 0.05 if tied else 1.0)
    for i in range(L):
        p = "model.layers.%d." % i
        t.normal(p + "input_layernorm.weight", [d], 0.1, 1.0)
        # Q/K rows in HF's rotary order: within each head, rows i and i + hd/2 form a rotated pair.
        t.normal(p + "self_attn.q_proj.weight", [H * hd, d], proj(d))
        t.normal(p + "self_attn.k_proj.weight", [KV * hd, d], proj(d))
        t.normal(p + "self_attn.v_proj.weight", [KV * hd, d], proj(d))
        if fam == "qwen2":
            t.normal(p + "self_attn.q_proj.bias", [H * hd], 0.1)
            t.normal(p + "self_attn.k_proj.bias", [KV * hd], 0.1)
            t.normal(p + "self_attn.v_proj.bias", [KV * hd], 0.1)
        if fam == "qwen3":
            t.normal(p + "self_attn.q_norm.weight", [hd], 0.1, 1.0)
            t.normal(p + "self_attn.k_norm.weight", [hd], 0.1, 1.0)
        t.normal(p + "self_attn.o_proj.weight", [d, H * hd], proj(H * hd))
        t.normal(p + "post_attention_layernorm.weight", [d], 0.1, 1.0)
        t.normal(p + "mlp.gate_proj.weight", [F, d], proj(d))
        t.normal(p + "mlp.up_proj.weight", [F, d], proj(d))
        t.normal(p + "mlp.down_proj.weight", [d, F], proj(F))
    t.normal("model.norm.weight", [d], 0.1, 1.0)
    if not tied:
        t.normal("lm_head.weight", [n_vocab, d], 0.35)

    os.makedirs(a.out, exist_ok=True)
    for f in os.listdir(a.out):  # a rerun into the same directory must not leave stale shards
        if f.endswith(".safetensors") or f == "model.safetensors.index.json":
            os.remove(os.path.join(a.out, f))
    items = t.items
    if a.shards == 1:
        total = write_safetensors(os.path.join(a.out, "model.safetensors"), items)
    else:
        # Contiguous runs of tensors of about equal bytes, in the order above (as transformers'
        # save_pretrained splits by max_shard_size).
        size = sum(len(x[3]) for x in items)
        groups, cur, acc = [], [], 0
        for it in items:
            cur.append(it)
            acc += len(it[3])
            if acc >= size * (len(groups) + 1) / a.shards and len(groups) < a.shards - 1:
                groups.append(cur)
                cur = []
        groups.append(cur)
        if len(groups) < a.shards:  # more shards than tensors would leave empty files
            sys.exit("--shards %d is more than this model's tensors can fill" % a.shards)
        weight_map, total = {}, 0
        for k, g in enumerate(groups):
            name = "model-%05d-of-%05d.safetensors" % (k + 1, a.shards)
            total += write_safetensors(os.path.join(a.out, name), g)
            for it in g:
                weight_map[it[0]] = name
        with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=2)
    with open(os.path.join(a.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tok_cfg, f, ensure_ascii=False, indent=2)
    print("make-hf-checkpoint: %s: %s %s, %d tensors in %d shard(s), %d bytes, vocab %d (%d merges)" %
          (a.out, cls, a.dtype, len(items), a.shards, total, n_vocab, len(tok["model"]["merges"])))


if __name__ == "__main__":
    main()
