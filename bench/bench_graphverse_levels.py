"""Easy vs hard accuracy of the built-in baselines on GraphVerse testmini (issue 9, item 7).

    PYTHONPATH=. .venv/bin/python bench/bench_graphverse_levels.py [--data DIR] [--seed 2026] [--workers 2]

Generates testmini (or reads an existing folder with --data) and scores, for every instance, the oracle
(gold answer), the heuristic (the textbook one of `gie.answers.heuristic`; "greedy" is the same baseline
under NPHardEval4V's name) and the random baseline, each through the task's own parse and exact verify.
Prints accuracy per task and level, the overall easy/hard figures and the drop.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.dataset import load_dataset  # noqa: E402
from evalcore.rng import rng_for  # noqa: E402
from evalcore.schema import ParseError  # noqa: E402
from gie.catalogue import TASK_NAMES  # noqa: E402
from gie.dataset import generate_split  # noqa: E402
from gie.tasks import get_task  # noqa: E402

BASELINES = ("oracle", "heuristic", "random")


def _correct(spec, data, gold, answer) -> bool:  # type: ignore[no-untyped-def]
    parsed = spec.parse(answer)
    if isinstance(parsed, ParseError):
        return False
    return spec.verify(data, gold, parsed).verdict == "correct"


def score(path: Path, seed: int) -> dict[tuple[str, str, str], list[int]]:
    """(baseline, task, level) -> [correct, total]."""
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for inst in load_dataset(path).instances:
        spec = get_task(inst.task)
        data = spec.load(inst.data)
        level = inst.meta["level"]
        answers = {
            "oracle": inst.gold.answer,
            "heuristic": spec.heuristic(data),
            "random": spec.random_answer(data, rng_for(seed, "random", inst.instance_id)),
        }
        for b, ans in answers.items():
            cell = out[(b, inst.task, level)]
            cell[0] += _correct(spec, data, inst.gold, ans)
            cell[1] += 1
    return out


def _pct(c: list[int]) -> str:
    return f"{100 * c[0] / c[1]:5.1f}" if c[1] else "    -"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="an existing GraphVerse testmini folder")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--workers", type=int, default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = a.data
        if path is None:
            path = Path(tmp) / "testmini"
            generate_split(path, "testmini", a.seed, workers=a.workers)
        res = score(path, a.seed)
    print(f"GraphVerse testmini (seed {a.seed}): accuracy % per baseline, easy / hard")
    print(f"{'task':6s} " + "  ".join(f"{b + ' easy':>14s} {b + ' hard':>14s}" for b in BASELINES))
    for t in TASK_NAMES:
        cells = [(_pct(res[(b, t, 'easy')]), _pct(res[(b, t, 'hard')])) for b in BASELINES]
        print(f"{t:6s} " + "  ".join(f"{e:>14s} {h:>14s}" for e, h in cells))
    print()
    for b in BASELINES:
        tot = {lv: [sum(res[(b, t, lv)][i] for t in TASK_NAMES) for i in (0, 1)] for lv in ("easy", "hard")}
        e, h = (100 * tot[lv][0] / max(tot[lv][1], 1) for lv in ("easy", "hard"))
        print(f"{b:10s} overall easy {e:5.1f}  hard {h:5.1f}  drop {e - h:5.1f} points "
              f"(n = {tot['easy'][1]} / {tot['hard'][1]})")


if __name__ == "__main__":
    main()
