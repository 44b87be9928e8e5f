"""Tables as the shared ``tables.j2`` macros render them: a frame becomes a view (columns, and per row the
cells' text, interval, sort value and alignment), the same for the report's page and the explorer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from report.html.format import fmt, fmt_cell
from report.html.templating import report_environment


def _bounds(ci: Sequence[str] | Mapping[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return dict(ci) if isinstance(ci, Mapping) else {c: (f"{c}_lo", f"{c}_hi") for c in ci}


def sort_value(v: Any) -> str:
    return "" if v is None else (f"{v:.9g}" if isinstance(v, float) else str(v))


def is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def table_view(df: pl.DataFrame, ci: Sequence[str] | Mapping[str, tuple[str, str]] = (), hide: Sequence[str] = (),
               digits: int = 3, max_rows: int | None = None, csv_name: str = "",
               cols: Sequence[str] | None = None) -> dict[str, Any]:
    """The view of ``df`` for the table macros: a column c in ``ci`` shows ``c [lo, hi]`` (``ci`` names the
    columns, bounds ``c_lo`` / ``c_hi``, or maps each to its bound columns) and the bound columns are not shown;
    ``max_rows``: the first rows only, with a note pointing at the CSV ``csv_name`` that holds them all."""
    bounds = _bounds(ci)
    total = df.height
    if max_rows is not None and df.height > max_rows:
        df = df.head(max_rows)
    hidden = {b for pair in bounds.values() for b in pair} | set(hide)
    cols = [c for c in (cols if cols is not None else df.columns) if c not in hidden]
    rows = []
    for r in df.iter_rows(named=True):
        cells = []
        for c in cols:
            v = r.get(c)
            text, interval = fmt_cell(c, v, digits), ""
            if c in bounds and v is not None:
                text = fmt(v, digits)
                lo, hi = r.get(bounds[c][0]), r.get(bounds[c][1])
                if lo is not None and hi is not None:
                    interval = f"[{fmt(lo, digits)}, {fmt(hi, digits)}]"
            cells.append({"text": text, "ci": interval, "sort": sort_value(v), "num": is_num(v)})
        rows.append({"cells": cells, "model": r.get("model")})
    return {"cols": cols, "ci_cols": [c for c in cols if c in bounds], "rows": rows, "total": total,
            "shown": len(rows), "csv_name": csv_name}


def html_table(df: pl.DataFrame, ci: Sequence[str] = (), hide: Sequence[str] = (), table_id: str = "",
               caption: str = "", digits: int = 3, max_rows: int | None = None, csv_name: str = "") -> str:
    """A sortable table of the report (the ``sortable`` macro of ``tables.j2``); see ``table_view``."""
    macros = report_environment().get_template("tables.j2").module
    return str(macros.sortable(table_view(df, ci, hide, digits, max_rows, csv_name), table_id, caption))  # type: ignore[attr-defined]


def _coverage_note(j: dict[str, Any]) -> str:
    """The tooltip's coverage clause: the share scored and, below full coverage, the floor (unscored = 0)."""
    cov, floor = j.get("vgr_coverage"), j.get("vgr_floor")
    if cov is None or cov >= 1:
        return ""
    return f", {cov:.0%} scored" + ("" if floor is None else f" (floor {floor:.1f} with unscored as 0)")


def papers_view(accuracy: pl.DataFrame, vgr: pl.DataFrame | None = None, digits: int = 1) -> dict[str, Any]:
    """GraphVerse as the papers' Table 1 for the ``papers`` macro: a row per model, a column per task (in the
    order of ``accuracy``) and ``All`` (every sample of the model, pooled), each cell Acc (%) with its count and
    Wilson interval in the tooltip; with ``vgr`` (``graphverse_judged``'s ``acc_vgr``: per model and task,
    ``task = "All"`` included) each task has VGR-S (%) beside Acc, ↑ / ↓ where VGR-S is above / below Acc.
    Sorting uses the number; a missing value sorts last."""
    from evalcore.stats import wilson_interval

    tasks = list(dict.fromkeys(accuracy["task"].to_list())) if not accuracy.is_empty() else []
    pooled = accuracy.group_by("model").agg(pl.col("n").sum(), pl.col("correct").sum())
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for r in accuracy.iter_rows(named=True):
        cells[(r["model"], r["task"])] = r
    for r in pooled.iter_rows(named=True):
        ci = wilson_interval(r["correct"], r["n"])  # in percent below; n >= 1 per model
        lo, hi = (0.0, 100.0) if ci is None else (100 * ci[0], 100 * ci[1])
        cells[(r["model"], "All")] = {**r, "acc": 100 * r["correct"] / r["n"], "ci_low": lo, "ci_high": hi}
    judged = {(r["model"], r["task"]): r for r in vgr.iter_rows(named=True)} if vgr is not None else {}
    rows = []
    for model in sorted(pooled["model"].to_list()):
        out = []
        for task in [*tasks, "All"]:
            a = cells.get((model, task))
            if a is None:
                out.append({"text": "—", "sort": "", "title": "", "arrow": "", "vgr": False})
            else:
                out.append({"text": fmt(a["acc"], digits), "sort": sort_value(a["acc"]), "arrow": "", "vgr": False,
                            "title": f"{a['correct']}/{a['n']} correct; Wilson 95% "
                                     f"[{fmt(a['ci_low'], digits)}, {fmt(a['ci_high'], digits)}]"})
            if vgr is not None:
                j = judged.get((model, task)) or {}
                v = j.get("vgr")
                out.append({"text": fmt(v, digits), "sort": sort_value(v), "arrow": j.get("arrow") or "",
                            "vgr": True, "title": f"VGR-S over {j.get('n_vgr') or 0} judged samples"
                                                  + _coverage_note(j)
                                                  + (f", {j['judge_errors']} judge errors" if j.get("judge_errors")
                                                     else "")})
        # a PoT arm reads "model (pot)" (gie.metrics.mode_rows; a model name holds no space): its samples
        # are the model's in that prompt mode
        base, _, mode = model.partition(" (")
        rows.append({"model": model, "cells": out, "base": base, "mode": mode[:-1] if mode.endswith(")") else ""})
    return {"tasks": [*tasks, "All"], "paired": vgr is not None, "rows": rows}
