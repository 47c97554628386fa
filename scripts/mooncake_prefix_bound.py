#!/usr/bin/python3
"""Upper bounds on the prefix-cache hit rate a router can reach on a Mooncake trace, from its
hash ids alone (unlimited cache per replica): every request on the replica that holds its longest
cached prefix (affinity), against requests dealt round-robin over R replicas. Hit rate = leading
blocks found / blocks looked up, as the replicas' counters count them.
  scripts/mooncake_prefix_bound.py TRACE.jsonl [N_REQUESTS] [REPLICAS]   (defaults: 2000, 4)"""
import json
import sys

path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
replicas = int(sys.argv[3]) if len(sys.argv) > 3 else 4
rows = []
with open(path) as f:
    for line in f:
        if len(rows) >= n:
            break
        rows.append(json.loads(line)["hash_ids"])


def hit_rate(pick):
    caches = [set() for _ in range(replicas)]
    hits = looked = 0
    for i, ids in enumerate(rows):
        cache = caches[pick(i, ids, caches)]
        for b in ids:
            if b not in cache:
                break
            hits += 1
        looked += len(ids)
        cache.update(ids)
    return hits / looked


def affinity(i, ids, caches):
    best, best_len = i % replicas, 0  # nothing cached anywhere: round-robin
    for k, c in enumerate(caches):
        m = 0
        for b in ids:
            if b not in c:
                break
            m += 1
        if m > best_len:
            best, best_len = k, m
    return best


print(f"{path}: first {len(rows)} requests, {replicas} replicas, mean {sum(map(len, rows)) / len(rows):.1f} "
      f"blocks per prompt")
print(f"round-robin: {100 * hit_rate(lambda i, ids, caches: i % replicas):.1f}%")
print(f"affinity:    {100 * hit_rate(affinity):.1f}%")
