"""Percentile bootstrap over instances for the NPHardEval4V intervals that are not plain proportions
(AA per class and overall, RA_corrected).

Instances are resampled with replacement inside each (task, level) stratum, the same draw for every model and
prompt mode (so models stay comparable); each replicate is scored with the definitions of
``metrics.level_table`` / ``metrics.aggregate`` from per-instance counts (``tests/test_report.py`` checks the
bounds against re-scoring resampled sample tables with ``metrics.leaderboard`` / ``metrics.per_task``), and
``numpy.random.default_rng(seed)`` fixes the draws (same inputs and seed -> same bounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from evalcore.bootstrap import instance_draws, percentile_bounds
from evalcore.schema import RECOGNITION_MODE
from nphe4v import metrics
from nphe4v.metrics import COMPLEXITY_CLASSES, POOLED, TEXT_ONLY_MODES
from nphe4v.tasks import TASK_CLASS

AA_COLUMNS: tuple[str, ...] = ("AA_P", "AA_NPC", "AA_NPH", "AA_All")
_BOOT_LB_COLUMNS: tuple[str, ...] = ("RA_corrected", *AA_COLUMNS)
_METRIC_COLUMNS = ["model", "task", "level", "instance_id", "variant", "prompt_mode", "status", "verdict",
                   "parsed_answer"]


# the draws and bounds are the shared core's (GraphVerse's improvement tables use the same ones)
_draws = instance_draws
_bounds = percentile_bounds


_MODEL_CHUNK = 16
_BOOT_CACHE: dict[tuple[int, int, int, int], tuple[pl.DataFrame, pl.DataFrame]] = {}


def _bootstrap(part: pl.DataFrame, n_boot: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``_bootstrap_uncached``, remembered for the last few inputs (the leaderboard and per-task tables of one
    report share one bootstrap)."""
    key = (part.height, int(part.select(_METRIC_COLUMNS).hash_rows(seed=0).sum() or 0), n_boot, seed)
    if key not in _BOOT_CACHE:
        if len(_BOOT_CACHE) >= 4:
            _BOOT_CACHE.pop(next(iter(_BOOT_CACHE)))
        _BOOT_CACHE[key] = _bootstrap_uncached(part, n_boot, seed)
    return _BOOT_CACHE[key]


def _instance_stats(base: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What a replicate's ``metrics.level_table`` reads, per instance: (answer counts per model, prompt mode,
    task, level and instance: n, parsable, correct, recognised ∧ parsable, recognised ∧ correct — the
    definitions of ``metrics._level_lazy``; recognition flags per model, task, level and instance from
    ``metrics.recognition_table``)."""
    rec = metrics.recognition_table(base)
    verdict = pl.col("verdict").cast(pl.String)
    parsable = (pl.col("status") == "ok") & verdict.is_in(["correct", "wrong"]).fill_null(False)
    keys = ["model", "task", "level", "instance_id"]
    answers = (
        base.filter(pl.col("prompt_mode") != RECOGNITION_MODE)
        .with_columns(_p=parsable)
        .with_columns(_c=pl.col("_p") & (verdict == "correct"))
        .join(rec.select(*keys, "recognised"), on=keys, how="left")
        # a text-only mode sends no picture: every question counts as recognised (metrics._level_lazy)
        .with_columns(_r=pl.col("recognised").fill_null(True) | pl.col("prompt_mode").is_in(list(TEXT_ONLY_MODES)))
        .group_by(["model", "prompt_mode", "task", "level", "instance_id"])
        .agg(
            n=pl.len().cast(pl.Float64),
            p=pl.col("_p").sum().cast(pl.Float64),
            c=pl.col("_c").sum().cast(pl.Float64),
            rp=(pl.col("_r") & pl.col("_p")).sum().cast(pl.Float64),
            cr=(pl.col("_r") & pl.col("_c")).sum().cast(pl.Float64),
        )
    )
    flags = rec.select(
        *keys,
        has_rec=pl.col("recognised").is_not_null().cast(pl.Float64),
        rec=pl.col("recognised").fill_null(False).cast(pl.Float64),
        has_ctl=pl.col("false_yes").is_not_null().cast(pl.Float64),
        fy=pl.col("false_yes").fill_null(False).cast(pl.Float64),
    )
    return answers, flags


def _dense(rows: pl.DataFrame, col_of: dict[str, int], k: int, group_cols: list[str],
           stats: Sequence[str]) -> tuple[list[tuple], dict[str, np.ndarray]]:
    """Per-instance stats of one stratum as dense (k instances x groups) matrices, one per stat."""
    groups = rows.select(group_cols).unique(maintain_order=True)
    gkeys = [tuple(r) for r in groups.iter_rows()]
    gidx = {g: j for j, g in enumerate(gkeys)}
    mats = {st: np.zeros((k, len(gkeys))) for st in stats}
    gi = np.array([gidx[tuple(r)] for r in rows.select(group_cols).iter_rows()], dtype=np.int64)
    ii = np.array([col_of[i] for i in rows["instance_id"].to_list()], dtype=np.int64)
    for st in stats:
        mats[st][ii, gi] = rows[st].to_numpy()
    return gkeys, mats


def _bootstrap_uncached(part: pl.DataFrame, n_boot: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Percentile intervals for one version's NPHardEval4V rows: (leaderboard bounds per model and prompt mode
    incl. pooled, per-task AA bounds per model, task and prompt mode incl. pooled).

    A replicate replaces every (task, level) stratum's instances by ``_draws`` (with replacement; an instance
    drawn twice counts twice) and is scored as ``metrics.level_table`` + ``metrics.aggregate`` would score the
    resampled sample table. Every level metric is a sum over instances of per-instance counts, so a replicate
    is the draw-count matrix (replicates x instances) times the per-instance counts (``_instance_stats``):
    the cost grows with instances x groups x replicates, not with samples x replicates.
    ``tests/test_report.py`` checks the bounds against re-scoring resampled tables with metrics.leaderboard."""
    lb_keys, pt_keys = ["model", "prompt_mode"], ["model", "task", "prompt_mode"]
    empty_lb = pl.DataFrame(schema={**{k: pl.String for k in lb_keys},
                                    **{f"{c}_{s}": pl.Float64 for c in _BOOT_LB_COLUMNS for s in ("lo", "hi")}})
    empty_pt = pl.DataFrame(schema={**{k: pl.String for k in pt_keys}, "AA_lo": pl.Float64, "AA_hi": pl.Float64})
    base = part.filter(pl.col("status") != "infra_error").select(_METRIC_COLUMNS)
    if n_boot <= 0 or base.filter(pl.col("prompt_mode") != RECOGNITION_MODE).is_empty():
        return empty_lb, empty_pt
    answers, flags = _instance_stats(base)
    draws = _draws(base, n_boot, seed)
    counts = draws.group_by("b", "instance_id").len()
    inst = base.select("task", "level", "instance_id").unique().sort("task", "level", "instance_id")
    cnt_by = counts.join(inst, on="instance_id").partition_by(["task", "level"], as_dict=True)
    # models are independent given the shared draws: a few at a time keeps the (model, mode, task, level,
    # replicate) arrays small however many models the run holds (the rows come out in the same sorted order)
    all_models = sorted(answers["model"].unique().to_list())
    lb_rows: list[dict[str, Any]] = []
    pt_rows: list[dict[str, Any]] = []
    for i in range(0, len(all_models), _MODEL_CHUNK):
        chunk = all_models[i:i + _MODEL_CHUNK]
        lb, pt = _bootstrap_models(answers.filter(pl.col("model").is_in(chunk)),
                                   flags.filter(pl.col("model").is_in(chunk)), inst, cnt_by, n_boot)
        lb_rows += lb
        pt_rows += pt
    return (pl.DataFrame(lb_rows, schema=empty_lb.schema), pl.DataFrame(pt_rows, schema=empty_pt.schema))


def _bootstrap_models(answers: pl.DataFrame, flags: pl.DataFrame, inst: pl.DataFrame,
                      cnt_by: dict[Any, pl.DataFrame], n_boot: int) -> tuple[list[dict], list[dict]]:
    """The leaderboard and per-task bound rows of the models in ``answers`` (see ``_bootstrap_uncached``)."""
    ans_by = answers.partition_by(["task", "level"], as_dict=True)
    flg_by = flags.partition_by(["task", "level"], as_dict=True)
    meta: list[tuple[str, str, str, int]] = []  # (model, prompt_mode, task, level) per group row
    was, racs = [], []
    for (task, level), grp in inst.group_by(["task", "level"], maintain_order=True):
        ids = grp["instance_id"].to_list()
        col_of = {iid: j for j, iid in enumerate(ids)}
        rows = ans_by.get((task, level))
        if rows is None:
            continue
        c = np.zeros((n_boot, len(ids)))
        cnt = cnt_by[(task, level)]
        c[cnt["b"].to_numpy(), np.array([col_of[i] for i in cnt["instance_id"].to_list()])] = cnt["len"].to_numpy()
        gkeys, m = _dense(rows, col_of, len(ids), ["model", "prompt_mode"], ("n", "p", "c", "rp", "cr"))
        n, p, cr, rp = (c @ m[k] for k in ("n", "p", "cr", "rp"))
        # recognition per model: RA = 1 and no control where the replicate drew no instance with data, or
        # where the mode sends no picture
        ra = np.ones_like(n)
        fyr = np.full_like(n, np.nan)
        frows = flg_by.get((task, level))
        if frows is not None:
            mkeys, f = _dense(frows, col_of, len(ids), ["model"], ("has_rec", "rec", "has_ctl", "fy"))
            mcol = {mk[0]: j for j, mk in enumerate(mkeys)}
            nrec, rec, nctl, fy = (c @ f[k] for k in ("has_rec", "rec", "has_ctl", "fy"))
            for j, (model, _mode) in enumerate(gkeys):
                if model in mcol and _mode not in TEXT_ONLY_MODES:
                    q = mcol[model]
                    with np.errstate(invalid="ignore", divide="ignore"):
                        ra[:, j] = np.where(nrec[:, q] > 0, rec[:, q] / np.where(nrec[:, q] > 0, nrec[:, q], 1), 1.0)
                        fyr[:, j] = np.where(nctl[:, q] > 0, fy[:, q] / np.where(nctl[:, q] > 0, nctl[:, q], 1),
                                             np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            a_prime = np.where(rp > 0, cr / np.where(rp > 0, rp, 1), 0.0)
            wa = np.where(n > 0, a_prime * ra * p / np.where(n > 0, n, 1), np.nan)
            rac = np.where((n > 0) & ~np.isnan(fyr), np.maximum(0.0, ra - fyr), np.nan)
        was.append(wa.T)
        racs.append(rac.T)
        meta += [(model, mode, str(task), int(level)) for model, mode in gkeys]
    if not meta:
        return [], []
    # one dense array (model, mode, task, level, replicate): every aggregate below is a sum over axes
    models = sorted({m[0] for m in meta})
    modes = sorted({m[1] for m in meta})
    tasks = sorted({m[2] for m in meta})
    levels = sorted({m[3] for m in meta})
    ix = [np.array([{v: i for i, v in enumerate(vals)}[m[a]] for m in meta], dtype=np.int64)
          for a, vals in enumerate((models, modes, tasks, levels))]
    shape = (len(models), len(modes), len(tasks), len(levels), n_boot)
    wa, rac = np.full(shape, np.nan), np.full(shape, np.nan)
    wa[ix[0], ix[1], ix[2], ix[3]] = np.vstack(was)
    rac[ix[0], ix[1], ix[2], ix[3]] = np.vstack(racs)
    exists = np.zeros(shape[:4], dtype=bool)
    exists[ix[0], ix[1], ix[2], ix[3]] = True
    lvl = np.array(levels, dtype=np.float64)[None, None, None, :, None]
    present = ~np.isnan(wa)
    num = np.where(present, wa * lvl, 0.0)
    den = np.where(present, lvl, 0.0)
    has = ~np.isnan(rac)
    rac0, hasf = np.where(has, rac, 0.0), has.astype(np.float64)
    cls = np.array([TASK_CLASS.get(t) or "" for t in tasks])

    def ratio(a: np.ndarray, b: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        n, d = a.sum(axis=axes), b.sum(axis=axes)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(d > 0, n / np.where(d > 0, d, 1.0), np.nan)

    def lb_block(axes: tuple[int, ...]) -> dict[str, np.ndarray]:
        out = {"RA_corrected": ratio(rac0, hasf, axes), "AA_All": ratio(num, den, axes)}
        for cl in COMPLEXITY_CLASSES:
            t = cls == cl
            out[f"AA_{cl}"] = ratio(num[:, :, t], den[:, :, t], axes) if t.any() else \
                np.full(ratio(num, den, axes).shape, np.nan)
        return out

    lb_rows: list[dict[str, Any]] = []
    per_mode, pooled = lb_block((2, 3)), lb_block((1, 2, 3))
    bounds_mode = {c: _bounds(v.reshape(-1, n_boot)) for c, v in per_mode.items()}
    bounds_pool = {c: _bounds(v) for c, v in pooled.items()}
    any_mode = exists.any(axis=(2, 3))
    for mi, model in enumerate(models):
        for pi, mode in enumerate(modes):
            if any_mode[mi, pi]:
                row: dict[str, Any] = {"model": model, "prompt_mode": mode}
                for c, (lo, hi) in bounds_mode.items():
                    row[f"{c}_lo"], row[f"{c}_hi"] = lo[mi * len(modes) + pi], hi[mi * len(modes) + pi]
                lb_rows.append(row)
        row = {"model": model, "prompt_mode": POOLED}
        for c, (lo, hi) in bounds_pool.items():
            row[f"{c}_lo"], row[f"{c}_hi"] = lo[mi], hi[mi]
        lb_rows.append(row)
    pt_rows: list[dict[str, Any]] = []
    lo_m, hi_m = _bounds(ratio(num, den, (3,)).reshape(-1, n_boot))  # (model, mode, task)
    lo_p, hi_p = _bounds(ratio(num, den, (1, 3)).reshape(-1, n_boot))  # (model, task)
    any_task = exists.any(axis=3)
    for mi, model in enumerate(models):
        for ti, task in enumerate(tasks):
            for pi, mode in enumerate(modes):
                if any_task[mi, pi, ti]:
                    k = (mi * len(modes) + pi) * len(tasks) + ti
                    pt_rows.append({"model": model, "task": task, "prompt_mode": mode, "AA_lo": lo_m[k],
                                    "AA_hi": hi_m[k]})
            if any_task[mi, :, ti].any():
                k = mi * len(tasks) + ti
                pt_rows.append({"model": model, "task": task, "prompt_mode": POOLED, "AA_lo": lo_p[k],
                                "AA_hi": hi_p[k]})
    return lb_rows, pt_rows
