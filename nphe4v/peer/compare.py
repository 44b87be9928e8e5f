"""Our exact solvers against the peer answers files: per instance, whether the two agree, ours is better,
or theirs cannot be compared; a frame and a summary of the comparison."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from evalcore.coerce import as_yes_no
from nphe4v.peer.formats import PER_LEVEL, TASK_FOLDERS, CompareStatus, PeerRecord
from nphe4v.tasks import get_task

_TOL = 1e-6


def _num(x: Any) -> float | None:
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, int | float) and math.isfinite(x):
        return float(x)
    return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _TOL * max(1.0, abs(a), abs(b))


def _decision(gold_answer: dict[str, Any]) -> bool | None:
    for key, val in gold_answer.items():
        if key.lower() == "feasible":
            return as_yes_no(val)
    return None


def _row(rec: PeerRecord, theirs: Any, ours: Any, status: CompareStatus, note: str = "") -> dict[str, Any]:
    return {
        "task": rec.task,
        "level": rec.level,
        "peer_index": rec.peer_index,
        "theirs": _num(theirs),
        "ours": _num(ours),
        "status": status,
        "note": note,
        "their_tour": None,
        "our_tour": None,
    }


def _cmp_value(rec: PeerRecord, theirs: Any, ours: float | None) -> dict[str, Any]:
    if theirs is None and ours is None:
        return _row(rec, None, None, "equal", "no path")
    t = _num(theirs)
    if t is None and theirs is not None:
        return _row(rec, None, ours, "theirs_not_comparable", f"their value {theirs!r:.30} is not a number")
    if t is not None and ours is not None and _close(t, ours):
        return _row(rec, t, ours, "equal")
    return _row(rec, t, ours, "MISMATCH", "exact task: values differ")


def _cmp_bsp(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    ours = get_task("BSP").solve(get_task("BSP").load(rec.data)).value
    theirs = ans.get("Position")
    row = _cmp_value(rec, theirs, ours)
    if row["status"] == "MISMATCH" and isinstance(theirs, int) and 0 <= theirs < len(rec.data["array"]):
        if rec.data["array"][theirs] == rec.data["target"]:  # duplicates: another index of the target
            row.update(status="equal", note="different index of a duplicated target")
    return row


def _cmp_simple(key: str) -> Any:
    def cmp(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
        spec = get_task(rec.task)
        if key not in ans:
            return _row(rec, None, None, "theirs_not_comparable", f"answer lacks {key!r}")
        return _cmp_value(rec, ans[key], spec.solve(spec.load(rec.data)).value)

    return cmp


def _coloring_problem(edges: list[list[int]], coloring: Any) -> str | None:
    """Why `coloring` ({"v": colour}) is not a proper colouring of the edges, or None."""
    if not isinstance(coloring, dict):
        return "no coloring"
    col = {str(k): v for k, v in coloring.items()}
    for u, v in edges:
        if str(u) not in col or str(v) not in col:
            return f"vertex {u if str(u) not in col else v} uncoloured"
        if col[str(u)] == col[str(v)]:
            return f"edge {u}-{v} monochromatic"
    return None


def _chi(rec: PeerRecord) -> float | None:
    spec = get_task("GCP")
    data = {"num_vertices": rec.data["num_vertices"], "edges": rec.data["edges"]}
    return spec.solve(spec.load(data)).value


def _cmp_gcp(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    theirs = _num(ans.get("num_colors"))
    if theirs is None:
        return _row(rec, None, None, "theirs_not_comparable", "answer lacks num_colors")
    problem = _coloring_problem(rec.data["edges"], ans.get("coloring"))
    ours = _chi(rec)
    if problem:
        return _row(rec, theirs, ours, "theirs_not_comparable", f"their coloring invalid: {problem}")
    used = len(set(ans["coloring"].values()))
    if ours is None:
        return _row(rec, theirs, ours, "MISMATCH", "our gold has no value")
    if _close(theirs, ours):
        return _row(rec, theirs, ours, "equal")
    if ours < theirs:
        return _row(rec, theirs, ours, "ours_better", f"greedy uses {used} colours, chi = {ours:g}")
    return _row(rec, theirs, ours, "MISMATCH", f"their valid coloring uses {used} < our chi {ours:g}")


def _cmp_gcpd(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    spec = get_task("GCP-D")
    ours = _decision(spec.solve(spec.load(rec.data)).answer)
    theirs = as_yes_no(ans.get("Feasible"))
    if theirs is None or ours is None:
        return _row(
            rec,
            theirs,
            ours,
            "theirs_not_comparable" if ours is not None else "MISMATCH",
            "no yes/no decision" + (" in their answer" if ours is not None else " in our gold"),
        )
    if theirs == ours:
        return _row(rec, theirs, ours, "equal")
    k = rec.data["k"]
    nc = _num(ans.get("num_colors"))
    if not theirs:
        if nc is not None and nc > k:
            return _row(
                rec, theirs, ours, "ours_better", f"greedy used {nc:g} colours > k={k}; chi = {_chi(rec):g}"
            )
        return _row(rec, theirs, ours, "theirs_not_comparable", f"they say NO with num_colors={nc} <= k={k}")
    problem = _coloring_problem(rec.data["edges"], ans.get("coloring"))
    if problem:
        return _row(rec, theirs, ours, "theirs_not_comparable", f"they say YES, coloring invalid: {problem}")
    return _row(rec, theirs, ours, "MISMATCH", f"their valid coloring fits k={k}, we say NO")


def _tour_problem(rec: PeerRecord, path: Any, total: Any) -> tuple[str | None, float | None]:
    """(why their Path is not a Hamiltonian cycle of this matrix with length TotalDistance, its length)."""
    n = rec.data["num_cities"]
    dist = rec.data["distances"]
    if not isinstance(path, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in path):
        return "Path is not a list of city ids", None
    if not path or path[0] != path[-1]:
        return "Path is not closed", None
    if any(not 0 <= c < n for c in path):
        return f"Path uses cities outside 0..{n - 1}", None
    if len(path) != n + 1 or set(path[:-1]) != set(range(n)):
        return "Path is a walk revisiting cities, not a tour", None
    length = sum(dist[a][b] for a, b in zip(path, path[1:], strict=False))
    t = _num(total)
    if t is None or not (_close(length, t) or abs(length - t) <= 0.01 * n):
        return f"Path length {length:g} != TotalDistance {total} (answer does not match this matrix)", None
    return None, length


def _tsp_optimum(rec: PeerRecord) -> float | None:
    spec = get_task("TSP")
    data = {k: rec.data[k] for k in ("num_cities", "distances", "coords")}
    return spec.solve(spec.load(data)).value


def _cmp_tsp(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    problem, length = _tour_problem(rec, ans.get("Path"), ans.get("TotalDistance"))
    if problem or length is None:
        return _row(rec, ans.get("TotalDistance"), None, "theirs_not_comparable", problem or "")
    ours = _tsp_optimum(rec)
    if ours is None:
        row = _row(rec, length, None, "MISMATCH", "our gold has no value")
    elif _close(length, ours):
        row = _row(rec, length, ours, "equal")
    elif ours < length:
        row = _row(rec, length, ours, "ours_better", "their tour is not optimal")
    else:
        row = _row(rec, length, ours, "MISMATCH", "their Hamiltonian tour is shorter than our optimum")
    row.update(their_tour=length, our_tour=ours)
    return row


def _cmp_tspd(rec: PeerRecord, ans: dict[str, Any]) -> dict[str, Any]:
    spec = get_task("TSP-D")
    ours = _decision(spec.solve(spec.load(rec.data)).answer)
    theirs = as_yes_no(ans.get("Feasible"))
    if ours is None:
        return _row(rec, theirs, None, "MISMATCH", "no yes/no decision in our gold")
    if theirs is None:
        return _row(rec, None, ours, "theirs_not_comparable", "no yes/no decision in their answer")
    threshold = rec.data["threshold"]
    problem, length = _tour_problem(rec, ans.get("Path"), ans.get("TotalDistance"))
    opt = None
    if length is not None:  # their tour is a real Hamiltonian cycle: it bounds our optimum from above
        opt = _tsp_optimum(rec)
    row = _tspd_status(rec, theirs, ours, threshold, problem, length, opt, _num(ans.get("TotalDistance")))
    row.update(their_tour=length, our_tour=opt)
    return row


def _tspd_status(
    rec: PeerRecord,
    theirs: bool,
    ours: bool,
    threshold: float,
    problem: str | None,
    length: float | None,
    opt: float | None,
    total: float | None,
) -> dict[str, Any]:
    note = problem or ""
    if length is not None:
        if opt is None:
            return _row(rec, theirs, ours, "MISMATCH", "our TSP gold has no value")
        note = f"their tour {length:g}, our optimum {opt:g}, threshold {threshold:g}"
        if opt > length + _TOL * max(1.0, length):
            return _row(rec, theirs, ours, "MISMATCH", note + ": our optimum is worse than their tour")
        if length <= threshold and not ours:
            return _row(rec, theirs, ours, "MISMATCH", note + ": their tour fits the threshold, we say NO")
    if theirs == ours:
        return _row(rec, theirs, ours, "equal", note)
    if not theirs and total is not None and total > threshold:
        note = f"their approximate tour {total:g} > threshold {threshold:g}"
        return _row(rec, theirs, ours, "ours_better", note)
    return _row(rec, theirs, ours, "MISMATCH", note or "decisions differ")


_COMPARERS = {
    "BSP": _cmp_bsp,
    "EDP": _cmp_simple("Operations"),
    "SPP": _cmp_simple("TotalDistance"),
    "KSP": _cmp_simple("TotalValue"),
    "GCP": _cmp_gcp,
    "GCP-D": _cmp_gcpd,
    "TSP": _cmp_tsp,
    "TSP-D": _cmp_tspd,
}


def _answers_by_level(answers: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    by_level: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for i, a in enumerate(answers):
        lvl = a.get("level")
        by_level[lvl if isinstance(lvl, int) and not isinstance(lvl, bool) else i // PER_LEVEL + 1].append(a)
    return by_level


def compare_with_answers(
    records: Iterable[PeerRecord], answers: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """One row per instance of every task that has an answers file: {task, level, peer_index, theirs,
    ours, status, note}. Answers are paired with records by level, then position within the level.

    status: "equal"; "ours_better" (fewer colours, shorter tour, or their greedy/approximate decision is
    wrong); "theirs_not_comparable" (their TSP walk revisits cities or does not match the matrix, invalid
    colouring, no answer for the instance); "MISMATCH" (their answer beats our exact solver, or differs on
    an exact task: a bug on our side). Records must come from one version (one record per task/index).
    """
    by_task: dict[str, list[PeerRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    rows: list[dict[str, Any]] = []
    for task in TASK_FOLDERS:
        if task not in answers or task not in by_task:
            continue
        recs = sorted(by_task[task], key=lambda r: r.peer_index)
        if len({r.peer_index for r in recs}) != len(recs):
            raise ValueError(f"{task}: duplicate peer_index; pass the records of a single version")
        ans_by_level = _answers_by_level(answers[task])
        recs_by_level: dict[int, list[PeerRecord]] = defaultdict(list)
        for r in recs:
            recs_by_level[r.level].append(r)
        for level, level_recs in sorted(recs_by_level.items()):
            level_ans = ans_by_level.get(level, [])
            for j, rec in enumerate(level_recs):
                if j >= len(level_ans):
                    rows.append(
                        _row(
                            rec,
                            None,
                            None,
                            "theirs_not_comparable",
                            f"no answer (answers file has {len(level_ans)} for level {level})",
                        )
                    )
                    continue
                rows.append(_COMPARERS[task](rec, level_ans[j]))
    return rows


def comparison_frame(rows: list[dict[str, Any]]) -> Any:
    """The rows of `compare_with_answers` as a polars DataFrame with a fixed schema."""
    import polars as pl

    schema = {
        "task": pl.String,
        "level": pl.Int64,
        "peer_index": pl.Int64,
        "theirs": pl.Float64,
        "ours": pl.Float64,
        "status": pl.String,
        "note": pl.String,
        "their_tour": pl.Float64,
        "our_tour": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


def summarize(rows: list[dict[str, Any]]) -> Any:
    """Counts per task and status as a polars DataFrame (one column per status)."""
    import polars as pl

    statuses = ["equal", "ours_better", "theirs_not_comparable", "MISMATCH"]
    order = {t: i for i, t in enumerate(TASK_FOLDERS)}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(statuses, 0))
    for r in rows:
        counts[r["task"]][r["status"]] += 1
    table = [
        {"task": t, **c, "total": sum(c.values())}
        for t, c in sorted(counts.items(), key=lambda x: order[x[0]])
    ]
    schema = {"task": pl.String, **{s: pl.Int64 for s in statuses}, "total": pl.Int64}
    return pl.DataFrame(table, schema=schema)
