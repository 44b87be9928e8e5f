"""The judge card over a whole GraphVerse testmini (the suite runs it on one instance per task): prints the
card's table and grade line for the judge and the wall and CPU time of the card, generation and scoring.

    python bench/bench_judge_card.py [--data DIR | --split testmini --seed N --workers 2] [--judge rule-based]
                                     [--out DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from split_source import add_split_args, split_folder  # noqa: E402

from cluster.judge_card import run_card  # noqa: E402
from evalcore.dataset import load_dataset  # noqa: E402
from judge.card import markdown  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_split_args(ap)
    ap.add_argument("--judge", default="rule-based")
    ap.add_argument("--out", type=Path, default=None, help="card folder (default: a temporary one)")
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    with split_folder(args) as data, tempfile.TemporaryDirectory() as tmp:
        insts = list(load_dataset(data, check_images=False).instances)[: args.limit]
        out = args.out or Path(tmp) / "card"
        t0, c0 = time.perf_counter(), time.process_time()
        run = run_card(insts, args.judge, out, dataset=str(data))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(markdown(run.rows))
        print(run.grade)
        print(f"{len(run.cases)} responses over {run.doc['instances']} instances "
              f"({len(run.mislabelled)} left out as mislabelled): {wall:.1f} s wall, {cpu:.1f} s CPU, "
              f"{len(run.cases) / cpu:.0f} responses/s CPU (generation, verification and judging)")


if __name__ == "__main__":
    main()
