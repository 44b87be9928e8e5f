"""Every image of a GraphVerse split checked for legibility (label overlap, an edge through a foreign node,
discs too close, weight-label clashes, nodes off the canvas). The test suite checks a stratified sample of
testmini (tests/test_gie_legibility.py); this is the exhaustive audit.

    PYTHONPATH=. .venv/bin/python bench/bench_legibility.py [--split testmini] [--seed 2026] [--workers 2] [--data DIR]

Prints images checked, instances with a problem, problems per kind, the first few problems, and the time.
Exit status 1 when any image has a problem.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from split_source import add_split_args, split_folder  # noqa: E402

from evalcore.dataset import load_dataset  # noqa: E402
from gie.legibility_audit import instance_legibility_problems  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_args(ap)
    args = ap.parse_args()
    with split_folder(args) as root:
        ds = load_dataset(root)
        t0 = time.perf_counter()
        images, bad, kinds, first = 0, 0, Counter(), []
        for inst in ds.instances:
            images += len(inst.images)
            problems = instance_legibility_problems(inst, root)
            bad += bool(problems)
            for p in problems:
                kinds[p.split(": ", 1)[1].split(" ")[0]] += 1
            first += problems[: max(0, 5 - len(first))]
        print(f"images={images} instances={len(ds.instances)} instances_with_problems={bad} "
              f"problems={sum(kinds.values())} check_s={time.perf_counter() - t0:.1f}")
        for kind, n in kinds.most_common():
            print(f"  {kind}: {n}")
        for p in first:
            print(f"  e.g. {p}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
