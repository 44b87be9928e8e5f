"""What redaction costs at the write boundaries: `redact_frame` over a sample shard the size of a paper run
(the sink calls it once per flush) and `redact` over a report-sized HTML string.

    python bench/bench_redact.py [--rows 400000] [--html-mb 10]

Rows look like real responses (XML-ish answers, some mentioning tasks and tokens); 1 % echo a known key,
1 % carry a key-shaped token or a URL with `?api_key=`. Prints rows/s and MB/s and checks nothing leaked.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl  # noqa: E402

from evalcore import secrets  # noqa: E402

KEY = "BenchKey" + "7f3a9c1e5b2d4086"
PLAIN = [
    "<root><reasoning>Start at node 0, take the cheapest edge to 3 (weight 2), then 3->5 (4). "
    "The task-level constraint holds.</reasoning><final_answer>{'Path': '0->3->5', 'TotalDistance': '6'}"
    "</final_answer></root>",
    "I think the answer is Yes: the graph can be coloured with 3 colours. Token budget permitting, "
    "here is the colouring: 1:A 2:B 3:C 4:A.",
    '{"Feasible": "YES", "TotalValue": 41, "SelectedItemIds": [0, 2, 5]}',
]


def rows(n: int, rng: random.Random) -> list[str]:
    out = []
    for i in range(n):
        text = PLAIN[i % len(PLAIN)] * rng.randint(1, 4)
        r = rng.random()
        if r < 0.01:
            text += f" (the provider says your key {KEY} is rate limited)"
        elif r < 0.02:
            text += " see https://api.example.com/v1?api_key=abcdEFGH12345678 or sk-proj-0123456789abcdef"
        out.append(text)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=400_000)
    p.add_argument("--html-mb", type=float, default=10.0)
    args = p.parse_args()
    os.environ["NPHE4V_BENCH_REDACT_KEY"] = KEY
    secrets.register_env("NPHE4V_BENCH_REDACT_KEY")
    rng = random.Random(0)
    texts = rows(args.rows, rng)
    frame = pl.DataFrame({"model": ["m"] * len(texts), "raw_response": texts, "error": [None] * len(texts),
                          "reason": ["wrong path"] * len(texts)})
    mb = sum(map(len, texts)) / 1e6
    t0 = time.perf_counter()
    out = secrets.redact_frame(frame, keep=("model",))
    dt = time.perf_counter() - t0
    joined = "\n".join(out["raw_response"].to_list())
    leaked = KEY in joined or "abcdEFGH12345678" in joined or "sk-proj-0123" in joined
    print(f"redact_frame: {args.rows} rows ({mb:.0f} MB of text) in {dt:.2f} s = {args.rows / dt:,.0f} rows/s, "
          f"{mb / dt:.0f} MB/s; leaked: {'YES' if leaked else 'no'}")

    html = ("<tr><td>" + "</td><td>".join(texts[:2000]) + "</td></tr>\n")
    html = html * max(1, int(args.html_mb * 1e6 / len(html)))
    t0 = time.perf_counter()
    clean = secrets.redact(html)
    dt = time.perf_counter() - t0
    print(f"redact(html): {len(html) / 1e6:.1f} MB in {dt:.2f} s = {len(html) / 1e6 / dt:.0f} MB/s; "
          f"leaked: {'YES' if KEY in clean else 'no'}")


if __name__ == "__main__":
    main()
