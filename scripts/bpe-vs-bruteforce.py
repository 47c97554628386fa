#!/usr/bin/env python3
"""Checks the first merges of a `tessera train-tokenizer` vocabulary against a brute-force BPE.

The reference shares no code with Tessera: it splits the text with GPT-2's expression (ASCII
classes from Python's `re`, so the text must be ASCII; the Brown corpus is), counts the words, and
before every merge recounts every adjacent pair of every word. It follows the trainer's rules:
the most frequent pair wins, ties go to the smaller (left id, right id) with byte b = id b and
learned tokens numbered from 256 in order, and each merge rewrites a word from the left. It then
compares its first --merges merges with tokenizer.ggml.merges of the GGUF.

    build/release/tessera train-tokenizer -f .cache/corpus/brown.txt -o /tmp/tok.gguf \\
        --vocab-size 8192 --holdout 0
    scripts/bpe-vs-bruteforce.py --text .cache/corpus/brown.txt --gguf /tmp/tok.gguf

Train with --holdout 0 (the reference reads the whole text) and the default --pre gpt-2.
Python 3 standard library only. Exit status 1 on the first difference.
"""
import argparse
import collections
import re
import struct
import sys
import time

# GPT-2's pre-tokenizer expression with ASCII classes (\p{L} -> letters, \p{N} -> digits).
GPT2_ASCII = re.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""", re.ASCII)


def byte_alphabet():
    """GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other 68
    bytes for U+0100 onwards, in byte order."""
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def read_gguf_merges(path):
    """tokenizer.ggml.merges of a GGUF file (a minimal reader: metadata only)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    pos = 4
    (version, n_tensors, n_kv) = struct.unpack_from("<IQQ", data, pos)
    pos += 20
    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
              11: "<q", 12: "<d"}

    def read_string():
        nonlocal pos
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        s = data[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def read_value(t):
        nonlocal pos
        if t == 8:
            return read_string()
        if t == 9:
            (et, n) = struct.unpack_from("<IQ", data, pos)
            pos += 12
            return [read_value(et) for _ in range(n)]
        fmt = scalar[t]
        (v,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v

    for _ in range(n_kv):
        key = read_string()
        (t,) = struct.unpack_from("<I", data, pos)
        pos += 4
        value = read_value(t)
        if key == "tokenizer.ggml.merges":
            return value
    sys.exit(f"{path}: no tokenizer.ggml.merges")


def brute_force_merges(text, k):
    alphabet = byte_alphabet()
    counts = collections.Counter(m.group(0) for m in GPT2_ASCII.finditer(text))
    words = [([b for b in w.encode("ascii")], n) for w, n in counts.items()]
    tokens = [alphabet[b] for b in range(256)]  # id -> spelling
    ids = {s: i for i, s in enumerate(tokens)}
    merges = []
    while len(merges) < k:
        pairs = collections.Counter()
        for syms, n in words:
            for a, b in zip(syms, syms[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        joined = tokens[best[0]] + tokens[best[1]]
        if joined in ids:
            sys.exit(f"'{joined}' would be made a second time: BPE should never do that")
        new = len(tokens)
        tokens.append(joined)
        ids[joined] = new
        merges.append(f"{tokens[best[0]]} {tokens[best[1]]}")
        for i, (syms, n) in enumerate(words):
            out, j = [], 0
            while j < len(syms):
                if j + 1 < len(syms) and syms[j] == best[0] and syms[j + 1] == best[1]:
                    out.append(new)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            words[i] = (out, n)
    return merges


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--text", required=True, help="the text the GGUF was trained on (ASCII)")
    p.add_argument("--gguf", required=True, help="the vocabulary `tessera train-tokenizer` wrote")
    p.add_argument("--merges", type=int, default=50, help="how many merges to recompute")
    a = p.parse_args()
    with open(a.text, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as e:
        sys.exit(f"{a.text}: not ASCII at byte {e.start}; this reference handles ASCII text only")
    theirs = read_gguf_merges(a.gguf)
    t0 = time.time()
    ours = brute_force_merges(text, a.merges)
    print(f"brute force: {len(ours)} merges in {time.time() - t0:.1f} s")
    for i, m in enumerate(ours):
        if i >= len(theirs) or theirs[i] != m:
            got = theirs[i] if i < len(theirs) else "(none)"
            print(f"merge {i} differs: brute force '{m}', {a.gguf} '{got}'")
            return 1
    print(f"the first {len(ours)} merges agree (last: '{ours[-1]}')" if ours else "no merges")
    return 0


if __name__ == "__main__":
    sys.exit(main())
