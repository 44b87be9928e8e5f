"""EDP shortcuts per level: how often answering without aligning is right, on our generator and on the peer's.

Prints, per level, over N generated instances (default 1000): the share where the answer equals the strings'
length (the shortcut issue 31 found right in 46-64 % of the papers' instances), the share of the most frequent
answer (the best constant), the share where the position-by-position count (`heuristic`, Hamming + length
difference) is right, and the same length and position-by-position shares for the peer's way of drawing (two
independent random strings of the same length and alphabet). Gold is the exact DP in both.

    .venv/bin/python bench/bench_edp_shortcut.py [--n 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import string
import time
from collections import Counter

from nphe4v.tasks.edp import edit_distance, generate, heuristic, params


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{'level':>5} {'len':>4} {'=length':>8} {'best const':>11} {'hamming ok':>11} {'peer =length':>13} "
          f"{'peer hamming':>13} {'ms/inst':>8}")
    worst = 0.0
    for level in range(1, 11):
        p = params(level)
        n, alphabet = p["length"], string.ascii_lowercase[: p["alphabet_size"]]
        t = time.process_time()
        datas = [generate(level, random.Random(f"{args.seed}-{level}-{i}")) for i in range(args.n)]
        ms = (time.process_time() - t) / args.n * 1000
        dists = [edit_distance(d.string_a, d.string_b) for d in datas]
        counts = Counter(dists)
        value, top = counts.most_common(1)[0]
        ham = sum(heuristic(d)["Operations"] == g for d, g in zip(datas, dists, strict=True)) / args.n
        rng = random.Random(f"peer-{args.seed}-{level}")
        peer = peer_ham = 0
        for _ in range(args.n):
            a = "".join(rng.choice(alphabet) for _ in range(n))
            b = "".join(rng.choice(alphabet) for _ in range(n))
            gold = edit_distance(a, b)
            peer += gold == n
            peer_ham += gold == sum(x != y for x, y in zip(a, b, strict=True))
        share = counts[n] / args.n
        worst = max(worst, share)
        print(f"{level:>5} {n:>4} {share:>8.3f} {f'{value}: {top / args.n:.3f}':>11} {ham:>11.3f} "
              f"{peer / args.n:>13.3f} {peer_ham / args.n:>13.3f} {ms:>8.2f}")
    print(f"worst level, answer = length: {worst:.3f} (target <= 0.15)")


if __name__ == "__main__":
    main()
