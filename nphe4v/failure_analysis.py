"""The failure categories of the paper's §5.3, computed from the samples instead of by hand.

Every NPHardEval4V answer sample that is not correct (infra errors excluded) falls in exactly one category,
the first that applies in this order:

1. ``unparsable`` — no answer could be read (``status == "model_error"`` or verdict ``parse_error``);
2. ``perception_error`` — the answer names an entity the instance does not have (an item id, a node, a city,
   a vertex, a meeting, a time slot or an array position), found from the instance data, or from the
   verifier's reason when the dataset is unavailable;
3. ``wrong_decision`` — a wrong YES/NO on a decision task (TSP-D, GCP-D);
4. ``suboptimal`` — a feasible answer that is not optimal (the verifier's reason says so);
5. ``infeasible`` — every other wrong answer: a constraint broken, or a stated value that does not match.

The verdict itself always comes from the exact verifier; this module only sorts the wrong ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from evalcore.schema import RECOGNITION_MODE
from nphe4v.report_tables import NAME as NPH_BENCHMARK
from nphe4v.report_tables import Source, frame_of, nph_rows
from nphe4v.tasks import TASK_MODULES

CATEGORIES: tuple[str, ...] = ("unparsable", "perception_error", "wrong_decision", "suboptimal", "infeasible")
DECISION_TASKS = frozenset({"TSP-D", "GCP-D"})

# The verifiers' own wording for "feasible, but not optimal" (tests/test_failure_analysis.py runs the real
# verifiers on feasible suboptimal answers, so a change of wording there fails a test here).
_SUBOPTIMAL = re.compile(
    r"not minimal|below the optimum|the minimum is|^feasible, but|exceeds the optimum|is not the shortest",
    re.IGNORECASE,
)
# Without the dataset, the verifiers' wording for an entity the instance does not have.
_UNKNOWN_BY_REASON = re.compile(r"unknown (item|meeting|vertex|city|node)|out of range|not a (city|vertex)",
                                re.IGNORECASE)


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
        return int(v)
    return None


def _outside(values: Any, allowed: set[int]) -> list[str]:
    items = values if isinstance(values, list) else [values]
    return [str(v) for v in items if _as_int(v) not in allowed]


def _bsp(data: Mapping[str, Any], ans: Mapping[str, Any]) -> list[str]:
    if "Position" not in ans:
        return []
    return _outside(ans["Position"], set(range(len(data.get("array") or []))))


def _path(count_key: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]]:
    def check(data: Mapping[str, Any], ans: Mapping[str, Any]) -> list[str]:
        path = ans.get("Path")
        if not isinstance(path, list):
            return []
        return _outside(path, set(range(int(data.get(count_key) or 0))))

    return check


def _ksp(data: Mapping[str, Any], ans: Mapping[str, Any]) -> list[str]:
    ids = ans.get("SelectedItemIds")
    if not isinstance(ids, list):
        return []
    return _outside(ids, {int(it["id"]) for it in data.get("items") or []})


def _gcp(data: Mapping[str, Any], ans: Mapping[str, Any]) -> list[str]:
    coloring = ans.get("Coloring")
    if not isinstance(coloring, Mapping):
        return []
    return _outside(list(coloring), set(range(1, int(data.get("num_vertices") or 0) + 1)))


def _msp(data: Mapping[str, Any], ans: Mapping[str, Any]) -> list[str]:
    schedule = ans.get("Schedule")
    if not isinstance(schedule, Mapping):
        return []
    bad = _outside(list(schedule), {int(m["id"]) for m in data.get("meetings") or []})
    slots = set(range(int(data.get("num_slots") or 0)))
    for v in schedule.values():
        bad += [f"slot {s}" for s in _outside(v, slots)]
    return bad


_ENTITY_CHECKS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]]] = {
    "BSP": _bsp, "SPP": _path("num_nodes"), "TSP": _path("num_cities"), "KSP": _ksp, "GCP": _gcp, "MSP": _msp,
}


def unknown_entities(task: str, data: Mapping[str, Any], parsed_answer: str | Mapping[str, Any] | None) -> list[str]:
    """The entities a (canonical, parsed) answer names that the instance ``data`` does not have; [] for tasks
    whose answer names no entity (EDP, the decision tasks) or when the answer cannot be read."""
    check = _ENTITY_CHECKS.get(task)
    if check is None or parsed_answer is None:
        return []
    ans: Any = parsed_answer
    if isinstance(ans, str):
        try:
            ans = json.loads(ans)
        except json.JSONDecodeError:
            return []
    if not isinstance(ans, Mapping):
        return []
    try:
        return check(data, ans)
    except (TypeError, ValueError, KeyError):  # hostile answers or odd data never sink the report
        return []


def is_suboptimal(reason: str | None) -> bool:
    """Whether a verifier's reason says "feasible, but not optimal"."""
    return bool(_SUBOPTIMAL.search(reason or ""))


def categorise(task: str, status: str | None, verdict: str | None, suboptimal: bool,
               names_unknown: bool) -> str | None:
    """The §5.3 category of one answer sample (``suboptimal``: ``is_suboptimal(reason)``); None for a correct
    answer or an infra error."""
    if status == "infra_error" or (status == "ok" and verdict == "correct"):
        return None
    if status != "ok" or verdict != "wrong":
        return "unparsable"
    if names_unknown:
        return "perception_error"
    if task in DECISION_TASKS:
        return "wrong_decision"
    if suboptimal:
        return "suboptimal"
    return "infeasible"


InstanceData = Mapping[tuple[str, str], Mapping[str, Any]]
"""(version, instance_id) -> the instance's ``data``."""


def failure_samples(samples: pl.DataFrame, instances: InstanceData | None = None) -> pl.DataFrame:
    """Per failed NPHardEval4V answer sample: the key columns, ``reason`` and ``category``. With
    ``instances``, perception errors come from the instance data; without (or for an instance not in it),
    from the verifier's reason. Each distinct (instance, parsed answer) is checked once and ``categorise``
    runs once per distinct (task, status, verdict, flags): a run of many models costs little more than one."""
    cols = ["model", "version", "task", "level", "instance_id", "prompt_mode", "repeat", "status", "verdict",
            "reason", "parsed_answer"]
    df = samples
    if "benchmark" in df.columns:
        df = df.filter(pl.col("benchmark") == NPH_BENCHMARK)
    if "version" not in df.columns:
        df = df.with_columns(version=pl.lit(""))
    df = df.filter(
        (pl.col("prompt_mode") != RECOGNITION_MODE)
        & (pl.col("status") != "infra_error")
        & ~((pl.col("status") == "ok") & (pl.col("verdict") == "correct").fill_null(False))
    ).select(cols)
    wrong = (pl.col("status") == "ok") & (pl.col("verdict") == "wrong").fill_null(False)
    df = df.with_columns(
        _sub=pl.col("reason").fill_null("").str.contains("(?i)" + _SUBOPTIMAL.pattern),
        _by_reason=pl.col("reason").fill_null("").str.contains("(?i)" + _UNKNOWN_BY_REASON.pattern),
    )
    checkable = df.filter(wrong & pl.col("task").is_in(list(_ENTITY_CHECKS))).select(
        "version", "instance_id", "task", "parsed_answer").unique()
    found = []
    for version, iid, task, ans in checkable.iter_rows():
        data = instances.get((version, iid)) if instances else None
        found.append(None if data is None else bool(unknown_entities(task, data, ans)))
    checked = checkable.with_columns(_unk=pl.Series(found, dtype=pl.Boolean))
    df = df.join(checked, on=["version", "instance_id", "task", "parsed_answer"], how="left", nulls_equal=True,
                 maintain_order="left")
    # no instance data: fall back to the verifier's reason
    df = df.with_columns(_unk=wrong & pl.coalesce(pl.col("_unk"), pl.col("_by_reason")))
    combos = df.select("task", "status", "verdict", "_sub", "_unk").unique()
    cats = [categorise(t, st, v, bool(sub), bool(unk)) for t, st, v, sub, unk in combos.iter_rows()]
    combos = combos.with_columns(category=pl.Series(cats, dtype=pl.String))
    df = df.join(combos, on=["task", "status", "verdict", "_sub", "_unk"], how="left", nulls_equal=True,
                 maintain_order="left")
    return df.select(*[c for c in cols if c != "parsed_answer"], "category")


def failure_summary(failures: pl.DataFrame, answers: pl.DataFrame, by: tuple[str, ...] = ("model",)) -> pl.DataFrame:
    """Per group: ``n`` answer samples (infra excluded), ``n_failed`` and, per category, the count and the share
    of the failures (``<category>_share``; the shares of a group with failures sum to 1)."""
    keys = list(by)
    n = answers.filter(
        (pl.col("prompt_mode") != RECOGNITION_MODE) & (pl.col("status") != "infra_error")
    ).group_by(keys).agg(n=pl.len().cast(pl.Int64))
    counts = failures.group_by(keys).agg(
        pl.len().cast(pl.Int64).alias("n_failed"),
        *[(pl.col("category") == c).sum().cast(pl.Int64).alias(c) for c in CATEGORIES],
    )
    out = n.join(counts, on=keys, how="left").with_columns(
        pl.col("n_failed").fill_null(0), *[pl.col(c).fill_null(0) for c in CATEGORIES]
    )
    shares = [
        pl.when(pl.col("n_failed") > 0).then(pl.col(c) / pl.col("n_failed")).otherwise(None).alias(f"{c}_share")
        for c in CATEGORIES
    ]
    return out.with_columns(shares).select(
        *keys, "n", "n_failed", *CATEGORIES, *[f"{c}_share" for c in CATEGORIES]
    ).sort(keys)


def failure_categories(src: Source, instances: InstanceData | None = None) -> dict[str, pl.DataFrame]:
    """The report's §5.3 tables: the failure categories per model, and per model and task; ``{}`` without
    NPHardEval4V answer samples. ``instances``: the instances' data (``failure_samples``) when known."""
    nph = nph_rows(frame_of(src))
    if nph.filter(pl.col("prompt_mode") != RECOGNITION_MODE).is_empty():
        return {}
    fails = failure_samples(nph, instances)
    per_task = failure_summary(fails, nph, ("model", "task"))
    order = {t: i for i, t in enumerate(TASK_MODULES)}
    per_task = per_task.sort("model", pl.col("task").replace_strict(order, default=99, return_dtype=pl.Int64))
    return {"by_model": failure_summary(fails, nph, ("model",)), "by_model_task": per_task}
