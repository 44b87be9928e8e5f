"""Audit the GraphVerse edit designs over the testmini rows of the focus, patch and recolour cells.

Prints, per edit:
  focus    rows without a same-colour distractor group; rows whose gold is unchanged when the edit is
           ignored (answered on the whole drawn graph), and when only "largest" is ignored (answered
           on every node of the focus colour)
  focus, recolor (per level)
           rows whose edited asked graph (the focus target, the recolouring's constrained side) is below
           the level's node range (`asked_below_min`), rows whose edited question is degenerate (a
           clique, a one-node MIS / MVC), and the median asked / drawn node counts
  patch    rows whose perturbed patches hold no node and no edge (only a caption or legend moved)
  recolor  rows drawn in a single colour before recolouring; rows whose question does not state the
           recolouring condition (anchor and direction)

The rows are generated exactly as `generate_split(..., "testmini", seed)` would (same jobs, same seeds), so
the same command run on two versions of the code compares their designs. Usage:

    PYTHONPATH=$PWD python bench/audit_graphverse_edits.py [--seed 0] [--workers 2] [--per-cell N] [--edits focus]
        [--data DIR]   # audit an already generated testmini folder instead of regenerating its rows
        [--sizes-only] # only the asked-graph size / degeneracy checks (fast)
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import networkx as nx

EDITS = ("focus", "patch", "recolor")


def _gold_key(task: str, gold: Any) -> Any:
    from gie.tasks import get_config

    return get_config(task).gold_key(gold)


def audit_one(args: tuple[int, Any, bool]) -> tuple[str, str, dict[str, Any]]:
    from gie import answers
    from gie.dataset import generate_one
    from gie.graphs import from_node_link
    from gie.tasks import get_config, get_task
    from gie.tasks.construction import edited_question_problem

    seed, job, sizes_only = args
    inst = job if hasattr(job, "instance_id") else generate_one(seed, job)[0]
    data, task, kind = inst.data, inst.task, inst.meta["edit"]
    level = inst.meta["level"]
    edit = data["edit"]
    graphs = [from_node_link(g) for g in data["graphs"]]
    asked = [from_node_link(a) for a in data["asked"]]
    query = data.get("query", {})
    out: dict[str, Any] = {}
    if kind in ("focus", "recolor"):
        spec = get_task(task)
        problem = edited_question_problem(get_config(task), spec.load(data), level)
        out[f"{level}:asked_below_min"] = bool(problem and "below" in problem)
        out[f"{level}:degenerate"] = bool(problem and "degenerate" in problem)
        out[f"_{level}:sizes"] = (min(asked[i].number_of_nodes() for i in edit["targets"]),
                                  max(g.number_of_nodes() for g in graphs))
    if sizes_only:
        return task, kind, out
    if kind == "focus":
        gold = answers.solve(task, asked, query)
        whole = answers.solve(task, graphs, query)
        out["no_distractor"] = any(not d.get("distractors") for d in edit["details"])
        out["unchanged_if_ignored"] = _gold_key(task, gold) == _gold_key(task, whole)
        all_c = list(graphs)
        for li, meta in zip(edit["targets"], edit["details"], strict=True):
            g = graphs[li]
            all_c[li] = nx.Graph(g.subgraph([n for n in g if g.nodes[n].get("color") == meta["color"]]))
        try:
            every = answers.solve(task, all_c, query)
            out["unchanged_if_largest_ignored"] = _gold_key(task, gold) == _gold_key(task, every)
        except Exception:  # e.g. a query endpoint outside the c* nodes: ignoring "largest" is not even askable
            out["unchanged_if_largest_ignored"] = False
    elif kind == "patch":
        out["moves_no_node_or_edge"] = any(
            all(not (pp["nodes"] or pp["edges"]) for pp in d["per_patch"]) for d in edit["details"]
        )
    else:
        out["single_colour_before"] = any(
            len({graphs[li].nodes[n].get("color") for n in graphs[li]}) == 1 for li in edit["targets"]
        )
        question = get_task(task).text(get_task(task).load(data)).question
        out["condition_not_stated"] = any(
            not (d["anchor"] in question and d["direction"] in question) for d in edit["details"]
        )
    return task, kind, out


def main() -> None:
    from gie.dataset import plan

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--per-cell", type=int, default=None, help="only the first N rows of each task x edit cell")
    ap.add_argument("--edits", default=",".join(EDITS), help="comma-separated subset of " + ", ".join(EDITS))
    ap.add_argument("--data", type=Path, help="an already generated testmini folder (its --seed must match)")
    ap.add_argument("--sizes-only", action="store_true",
                    help="only the asked-graph checks (skips the whole-graph exact solves of the focus checks)")
    a = ap.parse_args()
    wanted = set(a.edits.split(","))
    if a.data is not None:
        from evalcore.dataset import load_dataset

        jobs: list[Any] = [i for i in load_dataset(a.data).instances if i.meta["edit"] in wanted]
    else:
        jobs = [j for j in plan("testmini", a.seed) if j.edit in EDITS and j.edit in wanted]
    if a.per_cell is not None:
        seen: Counter[tuple[str, str]] = Counter()
        kept = []
        for j in jobs:
            edit = j.meta["edit"] if a.data is not None else j.edit
            if seen[(j.task, edit)] < a.per_cell:
                kept.append(j)
                seen[(j.task, edit)] += 1
        jobs = kept
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=a.workers) as pool:
        results = list(pool.map(audit_one, [(a.seed, j, a.sizes_only) for j in jobs], chunksize=4))
    rows: Counter[tuple[str, str]] = Counter()  # rows that carry each flag (level flags: that level's rows)
    hits: dict[str, Counter[str]] = {}
    per_task: dict[tuple[str, str], Counter[str]] = {}
    sizes: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for task, edit, flags in results:
        for k, v in flags.items():
            if k.startswith("_"):
                sizes.setdefault((edit, k[1:].split(":")[0]), []).append(v)
                continue
            rows[(edit, k)] += 1
            hits.setdefault(edit, Counter())[k] += int(v)
            per_task.setdefault((edit, k), Counter())[task] += int(v)
    print(f"testmini seed {a.seed}: {len(results)} rows audited in {time.perf_counter() - t0:.0f} s")
    for edit in EDITS:
        for k, v in sorted(hits.get(edit, Counter()).items()):
            detail = ", ".join(f"{t} {n}" for t, n in sorted(per_task[(edit, k)].items()) if n)
            print(f"  {edit:8s} {k:30s} {v:4d} / {rows[(edit, k)]:4d}" + (f"   ({detail})" if detail else ""))
    for (edit, level), got in sorted(sizes.items()):
        asked = sorted(x for x, _ in got)
        drawn = sorted(y for _, y in got)
        print(f"  {edit:8s} {level:5s} asked nodes min {asked[0]} median {asked[len(asked) // 2]}, drawn median "
              f"{drawn[len(drawn) // 2]} ({len(got)} rows)")


if __name__ == "__main__":
    main()
