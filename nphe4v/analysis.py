"""Analysis helpers for notebooks and the HTML report: Polars frames over one or several run folders.

Every public function takes ``src``: a run folder, a list of run folders, or an already loaded per-sample
frame (``samples(...)`` output or any frame with the ``SampleRecord`` columns). Metric values always come
from ``nphe4v.metrics`` (and ``gie.metrics`` for GraphVerse); this module only adds what a report needs
around them:

* **Versions stay apart.** Instance ids repeat across dataset versions (``bsp-L01-000`` exists in every
  version), so NPHardEval4V metrics are computed per ``version`` and every table carries a ``version`` column.
  The same (version, sample key) seen in two run folders is counted once.
* **Intervals beside every accuracy-type number** (95%):
  - proportions of counts (ER, RA, per-level accuracy) get the Wilson score interval of the pooled count
    (``ER_lo``/``ER_hi`` = Wilson of Σ parsable / Σ n; it equals ER's plain mean over level rows whenever the
    levels hold equally many questions, which the generator guarantees);
  - AA (and RA_corrected, which is not a plain proportion) get a percentile bootstrap over instances:
    instances are resampled with replacement inside each (task, level) stratum, the same draw for every model
    and prompt mode (so models stay comparable), each replicate is scored with the definitions of
    ``metrics.level_table`` / ``metrics.aggregate`` from per-instance counts (a test checks the bounds against
    re-scoring resampled sample tables with ``metrics.leaderboard`` / ``metrics.per_task``), and
    ``numpy.random.default_rng(seed)`` fixes the draws (same inputs and seed -> same bounds).
* **Paper summaries**: Appendix B (``consistency_summary``), §5.3 failure categories (``failure_categories``),
  Figure 4's closed vs open grouping (``open_closed``), GraphVerse Table 2 (``graphverse_families``).
  - every table also carries its counts (``n`` questions, ``n_instances``, ``n_rec`` recognition instances).
* ``missing_parts`` lists what a partial run lacks, so a report of a partial run says so.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from nphe4v import metrics
from nphe4v.core.records import KEY_COLUMNS, SAMPLE_SCHEMA, read_samples
from nphe4v.core.schema import PROMPT_MODES, RECOGNITION_MODE
from nphe4v.metrics import COMPLEXITY_CLASSES, POOLED
from nphe4v.tasks import TASK_CLASS, TASK_MODULES

NPH_BENCHMARK = "nphardeval4v"
GV_BENCHMARK = "graphverse"
Z95 = 1.959963984540054
DEFAULT_BOOT = 500
DEFAULT_SEED = 0
DEFAULT_LVLM_MODE = "figure+limited_text"
LLM_MODE = "full_text_only"
RUN_MANIFEST = "manifest.json"
JUDGE_DIR = "judgments"  # where cluster.judge_stage / jobs/judge_rerun.py write (judge.vgr)

AA_COLUMNS: tuple[str, ...] = ("AA_P", "AA_NPC", "AA_NPH", "AA_All")
_BOOT_LB_COLUMNS: tuple[str, ...] = ("RA_corrected", *AA_COLUMNS)
_METRIC_COLUMNS = ["model", "task", "level", "instance_id", "variant", "prompt_mode", "status", "verdict",
                   "parsed_answer"]
_SEP = "\x1f"

Source = str | Path | Sequence[str | Path] | pl.DataFrame | pl.LazyFrame


# --------------------------------------------------------------------------------------------------------
# Runs and samples
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One run folder: ``label`` is the manifest's run_id (the folder name without a manifest)."""

    path: Path
    label: str
    manifest: dict[str, Any] | None

    @property
    def config(self) -> dict[str, Any]:
        return (self.manifest or {}).get("config") or {}

    @property
    def status(self) -> str:
        return str((self.manifest or {}).get("status", "unknown"))


def _as_paths(run_dirs: str | Path | Sequence[str | Path]) -> list[Path]:
    if isinstance(run_dirs, str | Path):
        return [Path(run_dirs)]
    return [Path(p) for p in run_dirs]


def load_runs(run_dirs: str | Path | Sequence[str | Path]) -> list[Run]:
    """The run folders with their manifests (None when a folder has no readable manifest.json)."""
    runs = []
    for p in _as_paths(run_dirs):
        manifest = None
        mpath = p / RUN_MANIFEST
        if mpath.is_file():
            try:
                manifest = json.loads(mpath.read_text())
            except json.JSONDecodeError:
                manifest = None
        label = str((manifest or {}).get("run_id") or p.name)
        runs.append(Run(path=p, label=label, manifest=manifest))
    return runs


HEAVY_COLUMNS: tuple[str, ...] = ("raw_response", "error", "trace")
"""Free text of any length; no metric reads it. ``samples(..., light=True)`` leaves it out."""
LIGHT_COLUMNS: tuple[str, ...] = tuple(c for c in SAMPLE_SCHEMA if c not in HEAVY_COLUMNS)


def scan_run_samples(run_dir: str | Path) -> pl.LazyFrame:
    """The run's per-sample Parquet as a lazy frame (``SAMPLE_SCHEMA``; a column appended to the schema after a
    shard was written reads as null there)."""
    files = sorted(Path(run_dir, "samples").glob("**/*.parquet"))
    if not files:
        return pl.LazyFrame(schema=SAMPLE_SCHEMA)
    return pl.scan_parquet(files, schema=SAMPLE_SCHEMA, hive_partitioning=False, missing_columns="insert")


def read_run_samples(run_dir: str | Path, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """``nphe4v.core.records.read_samples`` (only ``columns`` when given), tolerating shards written before a column
    was appended to the schema (the missing column reads as null)."""
    if columns is None:
        try:
            return read_samples(run_dir)
        except pl.exceptions.ColumnNotFoundError:
            pass
    lf = scan_run_samples(run_dir)
    return (lf if columns is None else lf.select(list(columns))).collect()


def samples(run_dirs: str | Path | Sequence[str | Path], *, light: bool = False) -> pl.DataFrame:
    """All per-sample rows of the run folders (``SAMPLE_SCHEMA`` columns plus ``run`` = run label), the same
    (version, sample key) counted once (the first folder given wins). ``light``: without the
    ``HEAVY_COLUMNS`` (responses, errors, traces), which no table needs; the report reads them for the rows it
    shows only (``long_texts``)."""
    cols = list(LIGHT_COLUMNS) if light else list(SAMPLE_SCHEMA)
    frames = [read_run_samples(r.path, cols if light else None).with_columns(run=pl.lit(r.label))
              for r in load_runs(run_dirs)]
    if not frames:
        return pl.DataFrame(schema={**{c: SAMPLE_SCHEMA[c] for c in cols}, "run": pl.String()})
    df = pl.concat(frames, how="vertical")
    return df.unique(subset=["version", *KEY_COLUMNS], keep="first", maintain_order=True)


def long_texts(runs: Sequence[Run], keys: pl.DataFrame, columns: Sequence[str], max_chars: int) -> pl.DataFrame:
    """For the samples in ``keys`` (columns run, version and the key columns): each of ``columns`` cut to
    ``max_chars`` characters and its full length as ``<column>_len``. Read with the streaming engine and
    filtered by key inside the scan, so a run's responses are never all in memory at once."""
    key_cols = ["run", "version", *KEY_COLUMNS]
    frames = []
    for r in runs:
        want = keys.filter(pl.col("run") == r.label)
        if want.is_empty():
            continue
        lf = scan_run_samples(r.path).with_columns(run=pl.lit(r.label))
        frames.append(
            lf.join(want.lazy(), on=key_cols, how="semi")
            .select(*key_cols,
                    *[pl.col(c).str.slice(0, max_chars).alias(c) for c in columns],
                    *[pl.col(c).str.len_chars().alias(f"{c}_len") for c in columns])
            .collect(engine="streaming")
            .unique(subset=key_cols, keep="first")
        )
    if not frames:
        return pl.DataFrame(schema={**{c: pl.String for c in ("run", "version", *KEY_COLUMNS)}, "repeat": pl.Int64,
                                    **{c: pl.String for c in columns}, **{f"{c}_len": pl.UInt32 for c in columns}})
    return pl.concat(frames, how="vertical")


def _frame(src: Source) -> pl.DataFrame:
    if isinstance(src, pl.LazyFrame):
        src = src.collect()
    if isinstance(src, pl.DataFrame):
        df = src
        if "run" not in df.columns:
            df = df.with_columns(run=pl.col("run_id") if "run_id" in df.columns else pl.lit(""))
        if "benchmark" not in df.columns:
            df = df.with_columns(benchmark=pl.lit(NPH_BENCHMARK))
        if "version" not in df.columns:
            df = df.with_columns(version=pl.lit(""))
        return df
    # no table reads responses, errors or traces
    return samples(src, light=True)


def _runs_of(src: Source) -> list[Run]:
    if isinstance(src, pl.DataFrame | pl.LazyFrame):
        return []
    return load_runs(src)


def _nph(df: pl.DataFrame) -> pl.DataFrame:
    return df.filter(pl.col("benchmark") == NPH_BENCHMARK)


def _versions(df: pl.DataFrame) -> list[str]:
    return sorted(str(v) for v in df["version"].unique().to_list() if v is not None)


def _per_version(df: pl.DataFrame, fn) -> pl.DataFrame | None:
    """Apply ``fn(part) -> DataFrame`` to each version's rows; concat with ``version`` first."""
    outs = []
    for v in _versions(df):
        out = fn(df.filter(pl.col("version") == v))
        outs.append(out.with_columns(version=pl.lit(v)).select("version", *out.columns))
    if not outs:
        return None
    return pl.concat(outs, how="diagonal_relaxed")


# --------------------------------------------------------------------------------------------------------
# Intervals
# --------------------------------------------------------------------------------------------------------


def wilson(k: float, n: float, z: float = Z95) -> tuple[float, float] | tuple[None, None]:
    """Wilson score interval of the proportion k / n (as fractions); (None, None) when n == 0."""
    if n <= 0:
        return None, None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / denom
    lo = 0.0 if k <= 0 else max(0.0, centre - half)
    hi = 1.0 if k >= n else min(1.0, centre + half)
    return lo, hi


def wilson_exprs(k: str, n: str, name: str, z: float = Z95) -> list[pl.Expr]:
    """``{name}_lo``/``{name}_hi``: the Wilson interval of ``k / n`` as expressions (null where n == 0)."""
    nn = pl.col(n).cast(pl.Float64)
    p = pl.col(k).cast(pl.Float64) / nn
    z2 = z * z
    denom = 1 + z2 / nn
    centre = (p + z2 / (2 * nn)) / denom
    half = z * (p * (1 - p) / nn + z2 / (4 * nn * nn)).clip(lower_bound=0.0).sqrt() / denom
    ok = pl.col(n) > 0
    # k = 0 and k = n give exactly 0 and 1 (the formula's rounding would leave 1e-17 crumbs)
    lo = pl.when(pl.col(k) <= 0).then(0.0).otherwise((centre - half).clip(lower_bound=0.0))
    hi = pl.when(pl.col(k) >= pl.col(n)).then(1.0).otherwise((centre + half).clip(upper_bound=1.0))
    return [
        pl.when(ok).then(lo).otherwise(None).alias(f"{name}_lo"),
        pl.when(ok).then(hi).otherwise(None).alias(f"{name}_hi"),
    ]


def _draws(part: pl.DataFrame, n_boot: int, seed: int) -> pl.DataFrame:
    """Bootstrap draws: for replicate ``b`` and each (task, level) stratum of k instances (ids sorted), k ids
    drawn with replacement. Columns: b, instance_id (drawn), pos (draw position inside the stratum)."""
    inst = part.select("task", "level", "instance_id").unique().sort("task", "level", "instance_id")
    rng = np.random.default_rng(seed)
    bs, ids_out, pos = [], [], []
    for _key, grp in inst.group_by(["task", "level"], maintain_order=True):
        ids = np.array(grp["instance_id"].to_list(), dtype=object)
        k = len(ids)
        idx = rng.integers(0, k, size=(n_boot, k))
        bs.append(np.repeat(np.arange(n_boot, dtype=np.int64), k))
        pos.append(np.tile(np.arange(k, dtype=np.int64), n_boot))
        ids_out.append(ids[idx.ravel()])
    if not bs:
        return pl.DataFrame(schema={"b": pl.Int64, "instance_id": pl.String, "pos": pl.Int64})
    return pl.DataFrame({
        "b": np.concatenate(bs),
        "instance_id": pl.Series(np.concatenate(ids_out).tolist(), dtype=pl.String),
        "pos": np.concatenate(pos),
    })


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
        .with_columns(_r=pl.col("recognised").fill_null(True))
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


def _bounds(x: np.ndarray) -> tuple[list[float | None], list[float | None]]:
    """2.5 % and 97.5 % percentiles (linear interpolation) over the replicates of each row, NaNs skipped."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(x, [0.025, 0.975], axis=1, method="linear") if x.size else np.zeros((2, 0))
    return ([None if np.isnan(v) else float(v) for v in q[0]], [None if np.isnan(v) else float(v) for v in q[1]])


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
    ans_by = answers.partition_by(["task", "level"], as_dict=True)
    flg_by = flags.partition_by(["task", "level"], as_dict=True)
    cnt_by = counts.join(inst, on="instance_id").partition_by(["task", "level"], as_dict=True)

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
        # recognition per model: RA = 1 and no control where the replicate drew no instance with data
        ra = np.ones_like(n)
        fyr = np.full_like(n, np.nan)
        frows = flg_by.get((task, level))
        if frows is not None:
            mkeys, f = _dense(frows, col_of, len(ids), ["model"], ("has_rec", "rec", "has_ctl", "fy"))
            mcol = {mk[0]: j for j, mk in enumerate(mkeys)}
            nrec, rec, nctl, fy = (c @ f[k] for k in ("has_rec", "rec", "has_ctl", "fy"))
            for j, (model, _mode) in enumerate(gkeys):
                if model in mcol:
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
        return empty_lb, empty_pt
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
    return (pl.DataFrame(lb_rows, schema=empty_lb.schema), pl.DataFrame(pt_rows, schema=empty_pt.schema))


# --------------------------------------------------------------------------------------------------------
# Leaderboard, per task, per class
# --------------------------------------------------------------------------------------------------------


def _rec_counts(part: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    rec = metrics.recognition_table(part).with_columns(
        complexity=pl.col("task").replace_strict(TASK_CLASS, default=None, return_dtype=pl.String)
    )
    return rec.group_by(list(by)).agg(
        n_rec=pl.col("recognised").is_not_null().sum().cast(pl.Int64),
        recognised=pl.col("recognised").fill_null(False).sum().cast(pl.Int64),
        n_control=pl.col("false_yes").is_not_null().sum().cast(pl.Int64),
        false_yes=pl.col("false_yes").fill_null(False).sum().cast(pl.Int64),
    )


def _question_counts(part: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    answers = part.filter((pl.col("prompt_mode") != RECOGNITION_MODE) & (pl.col("status") != "infra_error"))
    levels = metrics.level_table(part)
    q = levels.group_by(list(by)).agg(
        n=pl.col("n").sum().cast(pl.Int64),
        parsable=pl.col("parsable").sum().cast(pl.Int64),
        correct=pl.col("correct").sum().cast(pl.Int64),
    )
    inst_by = [c for c in by if c in answers.columns]
    inst = answers.group_by(inst_by).agg(n_instances=pl.col("instance_id").n_unique().cast(pl.Int64))
    return q.join(inst, on=inst_by, how="left")


def _with_pooled_counts(part: pl.DataFrame) -> pl.DataFrame:
    per_mode = _question_counts(part, ["model", "prompt_mode"])
    pooled = _question_counts(part, ["model"]).with_columns(prompt_mode=pl.lit(POOLED))
    return pl.concat([per_mode, pooled.select(per_mode.columns)])


def _leaderboard_one(part: pl.DataFrame, n_boot: int, seed: int) -> pl.DataFrame:
    board = metrics.leaderboard(part)
    counts = _with_pooled_counts(part)
    rec = _rec_counts(part, ["model"])
    ci, _ = _bootstrap(part, n_boot, seed)
    out = (
        board.join(counts, on=["model", "prompt_mode"], how="left")
        .join(rec, on="model", how="left")
        .join(ci, on=["model", "prompt_mode"], how="left")
        .with_columns(pl.col(c).fill_null(0) for c in ("n_rec", "recognised", "n_control", "false_yes"))
        .with_columns(*wilson_exprs("parsable", "n", "ER"), *wilson_exprs("recognised", "n_rec", "RA"))
    )
    cols = ["model", "prompt_mode"]
    for c in ("ER", "RA", "RA_corrected", *AA_COLUMNS):
        cols += [c, f"{c}_lo", f"{c}_hi"]
    cols += ["RA_var", "n", "parsable", "correct", "n_instances", "n_rec", "recognised", "n_control", "false_yes"]
    return out.select(cols)


LEADERBOARD_COLUMNS: tuple[str, ...] = (
    "version", "model", "prompt_mode",
    *(f"{c}{s}" for c in ("ER", "RA", "RA_corrected", *AA_COLUMNS) for s in ("", "_lo", "_hi")),
    "RA_var", "n", "parsable", "correct", "n_instances", "n_rec", "recognised", "n_control", "false_yes",
)


def _empty(columns: Sequence[str], strings: Sequence[str] = ("version", "model", "prompt_mode", "task",
                                                             "complexity", "kind")) -> pl.DataFrame:
    return pl.DataFrame(schema={c: (pl.String if c in strings else pl.Float64) for c in columns})


def leaderboard(src: Source, *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED) -> pl.DataFrame:
    """``metrics.leaderboard`` per version (rows per model x prompt mode, plus ``pooled``) with 95% intervals
    beside each number (``X_lo``/``X_hi``: Wilson for ER and RA, instance bootstrap for RA_corrected and AA)
    and the counts they rest on: ``n`` answer questions, ``parsable``, ``correct``, ``n_instances``, ``n_rec``
    instances with recognition data (``recognised`` of them by majority), ``n_control`` with a mismatched
    control (``false_yes`` of them)."""
    df = _nph(_frame(src))
    out = _per_version(df, lambda p: _leaderboard_one(p, n_boot, seed))
    return _empty(LEADERBOARD_COLUMNS) if out is None else out.select(LEADERBOARD_COLUMNS)


def per_task(src: Source, *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED) -> pl.DataFrame:
    """``metrics.per_task`` per version (AA per model x task x prompt mode, plus ``pooled``) with the instance
    bootstrap interval ``AA_lo``/``AA_hi``, Wilson ``ER_lo``/``ER_hi`` and the counts n, parsable, correct."""

    def one(part: pl.DataFrame) -> pl.DataFrame:
        pt = metrics.per_task(part)
        _, ci = _bootstrap(part, n_boot, seed)
        per_mode = _question_counts(part, ["model", "task", "prompt_mode"])
        pooled = _question_counts(part, ["model", "task"]).with_columns(prompt_mode=pl.lit(POOLED))
        counts = pl.concat([per_mode, pooled.select(per_mode.columns)]).drop("n")
        return (
            pt.join(counts, on=["model", "task", "prompt_mode"], how="left")
            .join(ci, on=["model", "task", "prompt_mode"], how="left")
            .with_columns(*wilson_exprs("parsable", "n", "ER"))
            .select("model", "task", "complexity", "prompt_mode", "AA", "AA_lo", "AA_hi", "AA_peer",
                    "ER", "ER_lo", "ER_hi", "RA", "RA_mean", "RA_corrected", "n", "parsable", "correct",
                    "n_instances")
        )

    out = _per_version(_nph(_frame(src)), one)
    cols = ["version", "model", "task", "complexity", "prompt_mode", "AA", "AA_lo", "AA_hi", "AA_peer", "ER",
            "ER_lo", "ER_hi", "RA", "RA_mean", "RA_corrected", "n", "parsable", "correct", "n_instances"]
    return _empty(cols) if out is None else out


def class_profile(src: Source, *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                  board: pl.DataFrame | None = None) -> pl.DataFrame:
    """Figure 4's numbers: per version, model and complexity class (P, NPC, NPH), all prompt modes pooled:
    ``metrics.aggregate`` AA, ER, RA, RA_corrected, with AA's bootstrap interval (from the pooled leaderboard
    row; pass ``board`` to reuse one already computed), Wilson intervals for ER and RA, and counts."""
    df = _nph(_frame(src))
    if board is None:
        board = leaderboard(df, n_boot=n_boot, seed=seed)
    pooled = board.filter(pl.col("prompt_mode") == POOLED)
    aa_ci = pl.concat([
        pooled.select("version", "model", pl.lit(c).alias("complexity"),
                      pl.col(f"AA_{c}_lo").alias("AA_lo"), pl.col(f"AA_{c}_hi").alias("AA_hi"))
        for c in COMPLEXITY_CLASSES
    ]) if pooled.height else None

    def one(part: pl.DataFrame) -> pl.DataFrame:
        levels = metrics.level_table(part)
        agg = metrics.aggregate(levels, by=["model", "complexity"]).select(
            "model", "complexity", "AA", "ER", "RA", "RA_corrected"
        )
        q = levels.group_by(["model", "complexity"]).agg(
            n=pl.col("n").sum().cast(pl.Int64), parsable=pl.col("parsable").sum().cast(pl.Int64)
        )
        rec = _rec_counts(part, ["model", "complexity"]).select("model", "complexity", "n_rec", "recognised")
        return (
            agg.join(q, on=["model", "complexity"], how="left")
            .join(rec, on=["model", "complexity"], how="left")
            .with_columns(pl.col("n_rec").fill_null(0), pl.col("recognised").fill_null(0))
        )

    out = _per_version(df, one)
    cols = ["version", "model", "complexity", "AA", "AA_lo", "AA_hi", "ER", "ER_lo", "ER_hi", "RA", "RA_lo",
            "RA_hi", "RA_corrected", "n", "parsable", "n_rec", "recognised"]
    if out is None:
        return _empty(cols)
    if aa_ci is not None:
        out = out.join(aa_ci, on=["version", "model", "complexity"], how="left")
    else:
        out = out.with_columns(AA_lo=pl.lit(None, pl.Float64), AA_hi=pl.lit(None, pl.Float64))
    order = {c: i for i, c in enumerate(COMPLEXITY_CLASSES)}
    return (
        out.with_columns(*wilson_exprs("parsable", "n", "ER"), *wilson_exprs("recognised", "n_rec", "RA"))
        .select(cols)
        .sort("version", "model", pl.col("complexity").replace_strict(order, default=9, return_dtype=pl.Int64))
    )


def heatmap_table(src: Source, prompt_mode: str = POOLED) -> pl.DataFrame:
    """Figures 7 and 9: per version, model, task and level, of the given prompt mode (``pooled``: all modes):

    * ``accuracy = correct / n`` over the answer questions with its Wilson interval ``acc_lo``/``acc_hi``;
      ``wa`` = the level's weighted score A'·RA·ER from ``metrics.level_table`` (mean over modes when pooled);
    * ``RA`` (metrics' per-level RA; 1 without recognition data) with the Wilson interval of ``recognised /
      n_rec`` (null without data), ``false_yes_rate`` and ``RA_corrected``.
    """

    def one(part: pl.DataFrame) -> pl.DataFrame:
        levels = metrics.level_table(part)
        if prompt_mode != POOLED:
            levels = levels.filter(pl.col("prompt_mode") == prompt_mode)
        keys = ["model", "task", "complexity", "level"]
        cells = levels.group_by(keys).agg(
            n=pl.col("n").sum().cast(pl.Int64),
            correct=pl.col("correct").sum().cast(pl.Int64),
            parsable=pl.col("parsable").sum().cast(pl.Int64),
            wa=pl.col("wa").mean(),
            RA=pl.col("RA").first(),
            false_yes_rate=pl.col("false_yes_rate").first(),
            RA_corrected=pl.col("RA_corrected").first(),
        )
        rec = _rec_counts(part, ["model", "task", "level"]).select("model", "task", "level", "n_rec", "recognised")
        return (
            cells.join(rec, on=["model", "task", "level"], how="left")
            .with_columns(pl.col("n_rec").fill_null(0), pl.col("recognised").fill_null(0))
            .with_columns(accuracy=pl.col("correct") / pl.col("n"))
            .with_columns(*wilson_exprs("correct", "n", "acc"), *wilson_exprs("recognised", "n_rec", "RA"))
        )

    out = _per_version(_nph(_frame(src)), one)
    cols = ["version", "model", "task", "complexity", "level", "n", "correct", "parsable", "accuracy", "acc_lo",
            "acc_hi", "wa", "n_rec", "recognised", "RA", "RA_lo", "RA_hi", "false_yes_rate", "RA_corrected"]
    if out is None:
        return _empty(cols)
    order = {t: i for i, t in enumerate(TASK_MODULES)}
    return out.select(cols).sort(
        "version", "model", pl.col("task").replace_strict(order, default=99, return_dtype=pl.Int64), "task", "level"
    )


def prompt_mode_ablation(src: Source, *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                         board: pl.DataFrame | None = None) -> pl.DataFrame:
    """Figure 8: per version and model, AA_All (with interval), AA per class, ER and n for each prompt mode the
    model answered, ``delta_vs_limited`` = AA_All − AA_All on figure+limited_text (null without that mode) and
    ``best`` = the mode with the highest AA_All for that model (ties: the first in the paper's mode order)."""
    if board is None:
        board = leaderboard(src, n_boot=n_boot, seed=seed)
    rows = board.filter(pl.col("prompt_mode") != POOLED)
    base = rows.filter(pl.col("prompt_mode") == DEFAULT_LVLM_MODE).select(
        "version", "model", pl.col("AA_All").alias("_base")
    )
    order = {m: i for i, m in enumerate(PROMPT_MODES)}
    rank = pl.col("prompt_mode").replace_strict(order, default=9, return_dtype=pl.Int64)
    out = (
        rows.join(base, on=["version", "model"], how="left")
        .with_columns(delta_vs_limited=pl.col("AA_All") - pl.col("_base"), _rank=rank)
        .sort("version", "model", "_rank")
    )
    best = (
        out.sort("version", "model", pl.col("AA_All").fill_null(-1.0), "_rank", descending=[False, False, True, False])
        .group_by(["version", "model"], maintain_order=True)
        .agg(pl.col("prompt_mode").first().alias("_best"))
    )
    return (
        out.join(best, on=["version", "model"], how="left")
        .with_columns(best=pl.col("prompt_mode") == pl.col("_best"))
        .select("version", "model", "prompt_mode", "AA_All", "AA_All_lo", "AA_All_hi", "AA_P", "AA_NPC",
                "AA_NPH", "ER", "ER_lo", "ER_hi", "n", "delta_vs_limited", "best")
    )


def text_only_models(src: Source) -> set[str]:
    """Models run as text-only LLMs: ``text_only: true`` in a run manifest's config; without manifests, a model
    whose NPHardEval4V answer rows are all full_text_only and that has no recognition rows."""
    runs = _runs_of(src)
    flagged: set[str] = set()
    known: set[str] = set()
    for r in runs:
        for m in r.config.get("models") or []:
            known.add(str(m.get("name")))
            if m.get("text_only"):
                flagged.add(str(m.get("name")))
    df = _nph(_frame(src))
    if df.is_empty():
        return flagged
    modes = df.group_by("model").agg(pl.col("prompt_mode").unique().alias("modes"))
    for row in modes.iter_rows(named=True):
        if row["model"] in known:
            continue
        if set(row["modes"]) == {LLM_MODE}:
            flagged.add(row["model"])
    return flagged


def lvlm_vs_llm(src: Source, *, lvlm_mode: str = DEFAULT_LVLM_MODE, text_only: set[str] | None = None,
                n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                board: pl.DataFrame | None = None) -> pl.DataFrame:
    """Figure 6: AA (bootstrap interval) and ER (Wilson interval) per complexity class, for LVLMs on
    ``lvlm_mode`` and text-only LLMs (``text_only_models``) on full_text_only; one row per (version, kind,
    model, complexity) and, per kind, a ``model = "mean"`` row (plain mean over that kind's models; no
    interval). ``kind`` is "LVLM" or "LLM"."""
    df = _nph(_frame(src))
    llms = text_only_models(src) if text_only is None else set(text_only)
    if board is None:
        board = leaderboard(df, n_boot=n_boot, seed=seed)
    cols = ["version", "kind", "model", "prompt_mode", "complexity", "AA", "AA_lo", "AA_hi", "ER", "ER_lo",
            "ER_hi", "n"]

    def one(part: pl.DataFrame) -> pl.DataFrame:
        levels = metrics.level_table(part)
        er = levels.group_by(["model", "prompt_mode", "complexity"]).agg(
            ER=pl.col("ER").mean(),
            n=pl.col("n").sum().cast(pl.Int64),
            parsable=pl.col("parsable").sum().cast(pl.Int64),
        ).with_columns(*wilson_exprs("parsable", "n", "ER"))
        return er

    er = _per_version(df, one)
    if er is None:
        return _empty(cols)
    aa = pl.concat([
        board.filter(pl.col("prompt_mode") != POOLED).select(
            "version", "model", "prompt_mode", pl.lit(c).alias("complexity"), pl.col(f"AA_{c}").alias("AA"),
            pl.col(f"AA_{c}_lo").alias("AA_lo"), pl.col(f"AA_{c}_hi").alias("AA_hi"))
        for c in COMPLEXITY_CLASSES
    ])
    kind = pl.when(pl.col("model").is_in(sorted(llms))).then(pl.lit("LLM")).otherwise(pl.lit("LVLM"))
    rows = (
        er.join(aa, on=["version", "model", "prompt_mode", "complexity"], how="left")
        .with_columns(kind=kind)
        .filter(
            ((pl.col("kind") == "LLM") & (pl.col("prompt_mode") == LLM_MODE))
            | ((pl.col("kind") == "LVLM") & (pl.col("prompt_mode") == lvlm_mode))
        )
        .select(cols)
    )
    means = rows.group_by(["version", "kind", "prompt_mode", "complexity"]).agg(
        model=pl.lit("mean"), AA=pl.col("AA").mean(), ER=pl.col("ER").mean(), n=pl.col("n").sum()
    ).with_columns(AA_lo=pl.lit(None, pl.Float64), AA_hi=pl.lit(None, pl.Float64),
                   ER_lo=pl.lit(None, pl.Float64), ER_hi=pl.lit(None, pl.Float64)).select(cols)
    corder = {c: i for i, c in enumerate(COMPLEXITY_CLASSES)}
    return pl.concat([rows, means]).sort(
        "version",
        pl.col("kind").replace_strict({"LVLM": 0, "LLM": 1}, default=2, return_dtype=pl.Int64),
        pl.col("model") == "mean",
        "model",
        pl.col("complexity").replace_strict(corder, default=9, return_dtype=pl.Int64),
    )


def version_consistency(src: Source, *, prompt_mode: str = POOLED, n_boot: int = 0,
                        seed: int = DEFAULT_SEED, board: pl.DataFrame | None = None,
                        tasks_table: pl.DataFrame | None = None) -> pl.DataFrame:
    """The same models across dataset versions: per model and task (plus task ``All`` = AA_All), over the
    versions holding that model x task: ``n_versions``, ``versions``, ``AA_min``, ``AA_mean``, ``AA_max``,
    ``AA_var`` (sample variance, ddof = 1; null for one version), ``AA_std`` and ``n`` (questions summed over
    versions). ``prompt_mode`` picks one mode or ``pooled``."""
    if tasks_table is None:
        tasks_table = per_task(src, n_boot=n_boot, seed=seed)
    if board is None:
        board = leaderboard(src, n_boot=n_boot, seed=seed)
    pt = tasks_table.filter(pl.col("prompt_mode") == prompt_mode).select("version", "model", "task", "complexity",
                                                                         "AA", "n")
    allrow = board.filter(pl.col("prompt_mode") == prompt_mode).select(
        "version", "model", pl.lit("All").alias("task"), pl.lit(None, pl.String).alias("complexity"),
        pl.col("AA_All").alias("AA"), "n")
    both = pl.concat([pt, allrow], how="vertical_relaxed")
    out = both.group_by(["model", "task"]).agg(
        complexity=pl.col("complexity").first(),
        n_versions=pl.col("version").n_unique().cast(pl.Int64),
        versions=pl.col("version").unique().sort().str.join(","),
        AA_min=pl.col("AA").min(),
        AA_mean=pl.col("AA").mean(),
        AA_max=pl.col("AA").max(),
        AA_var=pl.col("AA").var(ddof=1),
        AA_std=pl.col("AA").std(ddof=1),
        n=pl.col("n").sum().cast(pl.Int64),
    )
    order = {t: i for i, t in enumerate([*TASK_MODULES, "All"])}
    return out.sort("model", pl.col("task").replace_strict(order, default=99, return_dtype=pl.Int64), "task")


# --------------------------------------------------------------------------------------------------------
# GraphVerse
# --------------------------------------------------------------------------------------------------------


def graphverse(src: Source) -> dict[str, pl.DataFrame]:
    """GraphVerse tables from ``gie.metrics`` (accuracy per model x task with Wilson interval in percent,
    the model x task ``acc_table``, ``by_edit``, ``single_vs_paired``, ``poly_vs_nph``); ``{}`` when the
    source has no GraphVerse rows."""
    df = _frame(src).filter(pl.col("benchmark") == GV_BENCHMARK)
    if df.is_empty():
        return {}
    from gie import metrics as gm

    return {
        "accuracy": gm.accuracy(df, by=("model", "task")),
        "acc_table": gm.acc_table(df),
        "by_edit": gm.by_edit(df, by=("model",)),
        "single_vs_paired": gm.single_vs_paired(df, by=("model",)),
        "poly_vs_nph": gm.poly_vs_nph(df),
    }


# --------------------------------------------------------------------------------------------------------
# Judge output (GraphVerse VGR-Score and step labels), when present
# --------------------------------------------------------------------------------------------------------

LEGACY_JUDGE_DIR = "judge"  # pre-judge-service layout: Parquet keyed like the samples, free-form columns
JUDGE_CSVS: tuple[tuple[str, str], ...] = (
    ("judge_deltas", "judge_deltas.csv"),  # Table 10 shape (jobs/judge_rerun.py)
    ("human_agreement", "human_agreement.csv"),  # Table 9 shape (jobs/judge_rerun.py --human)
    ("judge_agreement", "judge_agreement.csv"),
)
FAILURE_MODES: tuple[str, ...] = ("perception", "visual_reasoning", "text_reasoning", "unattributed")


def run_judgments(run_dir: str | Path) -> pl.DataFrame:
    """The run's judgments of its default judge (``judge.vgr.default_judge``), judge repeat 0, GraphVerse
    rows only (``judge.vgr.select``); empty when the judge has not run."""
    from judge import vgr

    js = vgr.read_judgments(Path(run_dir) / JUDGE_DIR)
    if js.is_empty():
        return js
    ident = vgr.default_judge(run_dir, js)
    judge, template = ident if ident is not None else (None, None)
    return vgr.select(js, judge, template, 0).filter(pl.col("benchmark") == GV_BENCHMARK)


def judgments(src: Source) -> pl.DataFrame | None:
    """The default judge's judgments of every run (``run_judgments``), None when no run has any."""
    frames = [j for j in (run_judgments(r.path) for r in _runs_of(src)) if not j.is_empty()]
    return pl.concat(frames, how="vertical") if frames else None


def judge_table(run_dirs: Source) -> pl.DataFrame | None:
    """Per-sample judge output keyed like the samples, for the sample browser and ``missing_parts``: per run,
    the default judge's judgments (``run_judgments``) or, for runs judged before the judge service, Parquet
    files under ``RUN/judge/`` (or a ``judge`` column of a frame); None when neither exists."""
    if isinstance(run_dirs, pl.DataFrame | pl.LazyFrame):
        df = _frame(run_dirs)
        return df.select(*KEY_COLUMNS, "judge") if "judge" in df.columns else None
    frames = []
    for r in load_runs(run_dirs):
        js = run_judgments(r.path)
        if not js.is_empty():
            frames.append(js)
            continue
        legacy = r.path / LEGACY_JUDGE_DIR
        files = sorted(legacy.glob("**/*.parquet")) if legacy.is_dir() else []
        if files:
            frames.append(pl.read_parquet(files))
    if not frames:
        return None
    return pl.concat(frames, how="diagonal_relaxed")


def _arrow(acc: float | None, vgr: float | None) -> str:
    """↑ where VGR-S > Acc, ↓ where lower, "" when equal at the shown precision (one decimal) or missing."""
    if acc is None or vgr is None:
        return ""
    a, v = round(acc, 1), round(vgr, 1)
    return "↑" if v > a else "↓" if v < a else ""


def _acc_vgr(df: pl.DataFrame, joined: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    from gie import metrics as gm
    from judge import vgr

    acc = gm.accuracy(df, by=tuple(by)).select(*by, pl.col("n").alias("n_acc"), "acc")
    v = vgr.vgr_table(joined, tuple(by)).select(*by, pl.col("n").alias("n_vgr"), "judge_errors", "vgr")
    out = acc.join(v, on=list(by), how="left") if by else pl.concat([acc, v], how="horizontal")
    return out.with_columns(
        arrow=pl.struct("acc", "vgr").map_elements(lambda r: _arrow(r["acc"], r["vgr"]), return_dtype=pl.String)
    )


def graphverse_judged(src: Source, df: pl.DataFrame | None = None) -> dict[str, pl.DataFrame]:
    """GraphVerse with the judge (seed Table 1, per edit, Figure 3); ``{}`` without GraphVerse samples or
    judgments. Acc comes from ``gie.metrics``, VGR-S from ``judge.vgr`` over the samples joined to the
    default judge's judgments, failure modes from ``judge.failure_modes.by_response``. Tables:

    * ``acc_vgr`` — per model and task, plus ``task = "All"`` (all of the model's samples): ``n_acc``, ``acc``,
      ``n_vgr`` (scored samples), ``judge_errors``, ``vgr`` and ``arrow`` (↑ VGR-S above Acc, ↓ below,
      empty when equal at one decimal);
    * ``acc_vgr_wide`` — the same as model x task cells ``"Acc / VGR-S ↑"``;
    * ``edit_vgr`` — per model and edit (``variant``): the same columns;
    * ``failure_modes`` — per model over incorrect responses: ``n_incorrect`` and the share (fraction) of
      each mode (perception, visual_reasoning, text_reasoning, unattributed; they sum to 1).

    ``df``: the runs' samples when already loaded (``samples(src)``)."""
    from judge import failure_modes, vgr

    df = (_frame(src) if df is None else df).filter(pl.col("benchmark") == GV_BENCHMARK)
    js = judgments(src) if _runs_of(src) else None
    if df.is_empty() or js is None:
        return {}
    # per run: sample keys repeat across runs (the same models on several versions); vgr.join wants one
    # judgment per sample key
    joined = pl.concat([vgr.join(part, js.filter(pl.col("run_id") == rid))
                        for (rid,), part in df.group_by(["run_id"], maintain_order=True)], how="vertical")
    per_task = _acc_vgr(df, joined, ("model", "task"))
    pooled = _acc_vgr(df, joined, ("model",)).with_columns(task=pl.lit("All")).select(per_task.columns)
    tasks = [t for t in vgr.TASK_ORDER if t in set(per_task["task"].to_list())]
    tasks += sorted(set(per_task["task"].to_list()) - set(tasks))
    order = {t: i for i, t in enumerate([*tasks, "All"])}
    acc_vgr = pl.concat([per_task, pooled]).sort(
        "model", pl.col("task").replace_strict(order, default=len(order), return_dtype=pl.Int64))

    def cell(r: dict) -> str:
        a = "—" if r["acc"] is None else f"{r['acc']:.1f}"
        v = "—" if r["vgr"] is None else f"{r['vgr']:.1f}"
        return f"{a} / {v}{(' ' + r['arrow']) if r['arrow'] else ''} (n={r['n_acc']}/{r['n_vgr'] or 0})"

    wide = acc_vgr.with_columns(
        cell=pl.struct("acc", "vgr", "arrow", "n_acc", "n_vgr").map_elements(cell, return_dtype=pl.String)
    ).pivot(on="task", index="model", values="cell").select("model", *tasks, "All").sort("model")
    edit_order = {e: i for i, e in enumerate(vgr.EDIT_ORDER)}
    edit = _acc_vgr(df, joined, ("model", "variant")).sort(
        "model", pl.col("variant").replace_strict(edit_order, default=len(edit_order), return_dtype=pl.Int64))
    fm = failure_modes.by_response(js.filter(pl.col("model").is_in(df["model"].unique().to_list())))
    if fm.is_empty() or "n_incorrect" not in fm.columns or fm.height == 0:
        fm = pl.DataFrame(schema={"model": pl.String, "n_incorrect": pl.Int64,
                                  **{m: pl.Float64 for m in FAILURE_MODES}})
    else:
        fm = fm.select("model", "n_incorrect", *[(pl.col(f"{m}_pct") / 100).alias(m) for m in FAILURE_MODES])
    return {"acc_vgr": acc_vgr, "acc_vgr_wide": wide, "edit_vgr": edit, "failure_modes": fm}


def judge_csvs(src: Source) -> dict[str, pl.DataFrame]:
    """The agreement tables ``jobs/judge_rerun.py`` wrote into the run folders (``judge_deltas``: Table 10
    shape; ``human_agreement``: Table 9 shape; ``judge_agreement``), with a ``run`` column; a name is absent
    when no run holds its CSV (not run yet)."""
    out: dict[str, pl.DataFrame] = {}
    for name, fname in JUDGE_CSVS:
        frames = []
        for r in _runs_of(src):
            p = r.path / fname
            if p.is_file():
                try:
                    t = pl.read_csv(p)
                except (pl.exceptions.PolarsError, OSError):
                    continue
                frames.append(t.with_columns(run=pl.lit(r.label)).select("run", *t.columns))
        if frames:
            out[name] = pl.concat(frames, how="diagonal_relaxed")
    return out


# --------------------------------------------------------------------------------------------------------
# What a partial run lacks
# --------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=16)
def _load_dataset_cached(path: str):
    from nphe4v.core.dataset import load_dataset

    return load_dataset(path, check_images=False)


def run_datasets(run: Run) -> list[tuple[dict[str, Any], Any]]:
    """(manifest dataset entry, loaded Dataset or None when its folder is gone) for each dataset of a run."""
    out = []
    for d in (run.manifest or {}).get("datasets") or []:
        ds = None
        path = d.get("path")
        if path and Path(path, "manifest.json").is_file():
            try:
                ds = _load_dataset_cached(str(path))
            except Exception:  # an unreadable dataset only costs the prompt/expected-count details
                ds = None
        out.append((d, ds))
    return out


_PAIRED: dict[str, dict[str, str]] = {}


def _paired(ds) -> dict[str, str]:
    """The planner's recognition-control partners of a dataset (which instances have one does not depend on
    the seed), computed once per dataset folder."""
    from nphe4v.recognition import mismatch_partners

    key = str(ds.root)
    if key not in _PAIRED:
        _PAIRED[key] = mismatch_partners(ds, 0)
    return _PAIRED[key]


def _expected(cfg: Mapping[str, Any], model: Mapping[str, Any], ds) -> dict[str, int]:
    """Samples the planner issues for one model on one dataset, by prompt mode (mirrors cluster.plan)."""
    n = len(ds.instances)
    repeats = int(cfg.get("repeats") or 1)
    bench = ds.manifest.benchmark
    if bench == GV_BENCHMARK:
        modes = ["vision"]
    elif model.get("text_only"):
        modes = [LLM_MODE]
    else:
        modes = list(cfg.get("prompt_modes") or PROMPT_MODES)
    exp = {m: n * repeats for m in modes}
    rec = cfg.get("recognition") or {}
    if bench == NPH_BENCHMARK and not model.get("text_only") and rec.get("enabled", True):
        asks = int(rec.get("asks") or 5)
        paired = _paired(ds) if bool(rec.get("controls", True)) else {}
        exp[RECOGNITION_MODE] = sum(asks * (1 + (i.instance_id in paired)) for i in ds.instances)
    return exp


def missing_parts(src: Source) -> pl.DataFrame:
    """What the runs lack, one row each: ``run``, ``benchmark``, ``model``, ``part`` (run | model | samples |
    prompt_mode | recognition | infra_error | judge | dataset) and ``detail`` (a sentence for the report).
    Empty when nothing is missing. Checks: manifest present and status complete; every configured model has
    rows; sample counts against what the planner issues (dataset needed); every configured prompt mode and
    the recognition experiment present; infra errors; GraphVerse judge output present."""
    rows: list[dict[str, str]] = []

    def add(run: str, bench: str, model: str, part: str, detail: str) -> None:
        rows.append({"run": run, "benchmark": bench, "model": model, "part": part, "detail": detail})

    runs = _runs_of(src)
    if not runs:
        df = _frame(src)
        _missing_in_frame(df, "", add)
        return _missing_frame(rows)
    for run in runs:
        df = read_run_samples(run.path, LIGHT_COLUMNS)
        if run.manifest is None:
            add(run.label, "", "", "run", f"{run.path}: no manifest.json: models, modes and expected counts unknown")
            _missing_in_frame(df.with_columns(run=pl.lit(run.label)), run.label, add)
            continue
        if run.status != "complete":
            add(run.label, "", "", "run",
                f"run status is {run.status!r} (attempt {run.manifest.get('attempts', '?')}): results are partial")
        cfg = run.config
        models = cfg.get("models") or []
        for entry, ds in run_datasets(run):
            bench, version = str(entry.get("benchmark")), str(entry.get("version"))
            part = df.filter((pl.col("benchmark") == bench) & (pl.col("version") == version))
            if ds is None:
                add(run.label, bench, "", "dataset",
                    f"dataset {version!r} not found at {entry.get('path')}: expected counts, prompts and images "
                    "unavailable")
            for m in models:
                name = str(m.get("name"))
                mrows = part.filter(pl.col("model") == name)
                if mrows.is_empty():
                    add(run.label, bench, name, "model", f"{name}: no samples on {bench} {version!r}")
                    continue
                infra = mrows.filter(pl.col("status") == "infra_error").height
                if infra:
                    add(run.label, bench, name, "infra_error",
                        f"{name}: {infra} infra_error samples on {bench} {version!r} (excluded from metrics; "
                        "rerun into the same folder to retry them)")
                done = mrows.filter(pl.col("status") != "infra_error").group_by("prompt_mode").len()
                have = dict(zip(done["prompt_mode"].to_list(), done["len"].to_list(), strict=True))
                if ds is not None:
                    for mode, exp in _expected(cfg, m, ds).items():
                        got = int(have.get(mode, 0))
                        if got == 0:
                            part_name = "recognition" if mode == RECOGNITION_MODE else "prompt_mode"
                            extra = " (RA falls back to 1)" if mode == RECOGNITION_MODE else ""
                            add(run.label, bench, name, part_name,
                                f"{name}: no {mode} samples on {bench} {version!r}{extra}")
                        elif got < exp:
                            add(run.label, bench, name, "samples",
                                f"{name}: {mode}: {got} of {exp} samples on {bench} {version!r}")
                else:
                    wanted = [LLM_MODE] if m.get("text_only") else list(cfg.get("prompt_modes") or PROMPT_MODES)
                    if bench == GV_BENCHMARK:
                        wanted = ["vision"]
                    for mode in wanted:
                        if mode not in have:
                            add(run.label, bench, name, "prompt_mode",
                                f"{name}: no {mode} samples on {bench} {version!r}")
        gv = df.filter(pl.col("benchmark") == GV_BENCHMARK)
        if not gv.is_empty():
            gv_models = gv["model"].unique().to_list()
            judge = judge_table([run.path])
            has_judge = judge is not None and "model" in judge.columns and \
                not judge.filter(pl.col("model").is_in(gv_models)).is_empty()
            if not has_judge:
                add(run.label, GV_BENCHMARK, "", "judge",
                    "judge not yet run: GraphVerse reasoning-step labels are absent (final-answer accuracy only)")
    return _missing_frame(rows)


def _missing_in_frame(df: pl.DataFrame, run: str, add) -> None:
    """Checks possible without a manifest: infra errors, and modes some models have but others lack."""
    if df.is_empty():
        add(run, "", "", "run", "no samples at all")
        return
    for (bench, model), part in df.group_by(["benchmark", "model"], maintain_order=True):
        infra = part.filter(pl.col("status") == "infra_error").height
        if infra:
            add(run, str(bench), str(model), "infra_error",
                f"{model}: {infra} infra_error samples on {bench} (excluded from metrics)")
    nph = _nph(df)
    if nph.is_empty():
        return
    llms = text_only_models(nph)
    all_modes = [m for m in PROMPT_MODES if m in set(nph["prompt_mode"].to_list())]
    has_rec = RECOGNITION_MODE in set(nph["prompt_mode"].to_list())
    for model in sorted(set(nph["model"].to_list())):
        if model in llms:
            continue
        modes = set(nph.filter(pl.col("model") == model)["prompt_mode"].to_list())
        for mode in all_modes:
            if mode not in modes:
                add(run, NPH_BENCHMARK, model, "prompt_mode", f"{model}: no {mode} samples")
        if has_rec and RECOGNITION_MODE not in modes:
            add(run, NPH_BENCHMARK, model, "recognition", f"{model}: no recognition samples (RA falls back to 1)")


def _missing_frame(rows: list[dict[str, str]]) -> pl.DataFrame:
    schema = {"run": pl.String, "benchmark": pl.String, "model": pl.String, "part": pl.String, "detail": pl.String}
    return pl.DataFrame(rows, schema=schema)


# --------------------------------------------------------------------------------------------------------
# Paper summaries: Appendix B consistency, §5.3 failure categories, Figure 4 grouping, GraphVerse Table 2
# --------------------------------------------------------------------------------------------------------

NEAR_ZERO_VARIANCE = 1e-3
ACCESS_ORDER: tuple[str, ...] = ("closed", "open", "builtin", "unregistered")


def consistency_summary(consistency: pl.DataFrame, near_zero: float = NEAR_ZERO_VARIANCE) -> pl.DataFrame:
    """Appendix B of the paper: over the (model, task) points of ``version_consistency`` (tasks only, not the
    ``All`` row) that have a variance (two or more versions): ``n_points``, ``n_models``, ``var_min``,
    ``var_mean``, ``var_max`` of AA's variance across versions, and ``near_zero_share`` = share of points with
    variance below ``near_zero`` (the paper: "approximately half of the variances are near zero")."""
    pts = consistency.filter((pl.col("task") != "All") & pl.col("AA_var").is_not_null())
    return pts.select(
        n_points=pl.len().cast(pl.Int64),
        n_models=pl.col("model").n_unique().cast(pl.Int64),
        var_min=pl.col("AA_var").min(),
        var_mean=pl.col("AA_var").mean(),
        var_max=pl.col("AA_var").max(),
        near_zero_share=pl.when(pl.len() > 0).then((pl.col("AA_var") < near_zero).mean()).otherwise(None),
    )


def _registry():
    from cluster.registry import load_registry

    try:
        return load_registry()
    except Exception:  # a broken registry costs only the grouping, never the report
        return None


def _derived_family(title: str) -> str:
    m = re.match(r"[A-Za-z]+", title)
    return m.group(0) if m else title


def model_info(models: Sequence[str]) -> pl.DataFrame:
    """Per model name: ``access`` (open | closed | builtin from ``cluster/models.yaml``; ``unregistered`` for
    a model the registry does not list) and ``family`` (the registry's ``family``, else the leading letters of
    its title or name, e.g. "GPT" for "GPT-4o")."""
    reg = _registry()
    by_name = reg.by_name if reg is not None else {}
    rows = []
    for name in sorted(set(models)):
        e = by_name.get(name)
        rows.append({
            "model": name,
            "access": e.access if e is not None else "unregistered",
            "family": (e.family or _derived_family(e.title)) if e is not None else _derived_family(name),
        })
    return pl.DataFrame(rows, schema={"model": pl.String, "access": pl.String, "family": pl.String})


def open_closed(board: pl.DataFrame) -> pl.DataFrame:
    """Figure 4's grouping: per version and model access (closed, open, builtin, unregistered), over the pooled
    leaderboard rows of its models: ``n_models``, ``models`` and the plain means of AA_P, AA_NPC, AA_NPH,
    AA_All, ER and RA."""
    cols = ["version", "access", "n_models", "models", "AA_P", "AA_NPC", "AA_NPH", "AA_All", "ER", "RA"]
    pooled = board.filter(pl.col("prompt_mode") == POOLED)
    if pooled.is_empty():
        return _empty(cols, strings=("version", "access", "models")).with_columns(pl.col("n_models").cast(pl.Int64))
    info = model_info(pooled["model"].to_list())
    order = {a: i for i, a in enumerate(ACCESS_ORDER)}
    return (
        pooled.join(info, on="model", how="left")
        .group_by(["version", "access"])
        .agg(
            n_models=pl.len().cast(pl.Int64),
            models=pl.col("model").sort().str.join(", "),
            **{c: pl.col(c).mean() for c in ("AA_P", "AA_NPC", "AA_NPH", "AA_All", "ER", "RA")},
        )
        .sort("version", pl.col("access").replace_strict(order, default=len(order), return_dtype=pl.Int64))
        .select(cols)
    )


def access_groups(board: pl.DataFrame) -> list[tuple[str, list[str]]]:
    """Radar panels for Figure 4's grouping: (access, its models) in ACCESS_ORDER."""
    models = board.filter(pl.col("prompt_mode") == POOLED)["model"].unique().to_list() if not board.is_empty() else []
    info = model_info(models)
    out = []
    for a in ACCESS_ORDER:
        ms = sorted(info.filter(pl.col("access") == a)["model"].to_list())
        if ms:
            out.append((a, ms))
    return out


def instance_data(runs: Sequence[Run]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(version, instance_id) -> the instance's data, for every NPHardEval4V dataset of the runs still on disk."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for run in runs:
        for entry, ds in run_datasets(run):
            if ds is None or str(entry.get("benchmark")) != NPH_BENCHMARK:
                continue
            version = str(entry.get("version"))
            for inst in ds.instances:
                out[(version, inst.instance_id)] = inst.data
    return out


def failure_categories(src: Source, df: pl.DataFrame | None = None) -> dict[str, pl.DataFrame]:
    """The paper's §5.3 failure categories (``nphe4v.failure_analysis``) per model, and per model and task;
    ``{}`` without NPHardEval4V answer samples. ``df``: the runs' samples when already loaded."""
    from nphe4v import failure_analysis as fa

    nph = _nph(_frame(src) if df is None else df)
    if nph.filter(pl.col("prompt_mode") != RECOGNITION_MODE).is_empty():
        return {}
    fails = fa.failure_samples(nph, instance_data(_runs_of(src)))
    per_task = fa.failure_summary(fails, nph, ("model", "task"))
    order = {t: i for i, t in enumerate(TASK_MODULES)}
    per_task = per_task.sort("model", pl.col("task").replace_strict(order, default=99, return_dtype=pl.Int64))
    return {"by_model": fa.failure_summary(fails, nph, ("model",)), "by_model_task": per_task}


def graphverse_families(df: pl.DataFrame, judged: Mapping[str, pl.DataFrame] | None = None) -> pl.DataFrame:
    """GraphVerse Table 2: per model family (``model_info``), Acc on Poly and NP-hard tasks with the relative
    drop (``gie.metrics.poly_vs_nph``) and, when the judge has run, VGR-S the same way (per model the mean of
    its per-task VGR-S over the group's tasks, per family the mean over its models). Percent; drops as
    fractions."""
    from gie import metrics as gm
    from gie.catalogue import POLY_TASKS

    gv = df.filter(pl.col("benchmark") == GV_BENCHMARK)
    cols = {"family": pl.String, "models": pl.Int64, "Acc_Poly": pl.Float64, "Acc_NPH": pl.Float64,
            "Acc_drop": pl.Float64, "VGR_Poly": pl.Float64, "VGR_NPH": pl.Float64, "VGR_drop": pl.Float64}
    if gv.is_empty():
        return pl.DataFrame(schema=cols)
    info = model_info(gv["model"].unique().to_list())
    fam = dict(zip(info["model"].to_list(), info["family"].to_list(), strict=True))
    acc = gm.poly_vs_nph(gv, fam).rename({"Poly": "Acc_Poly", "NPH": "Acc_NPH", "rel_drop": "Acc_drop"})
    av = (judged or {}).get("acc_vgr")
    if av is None or av.is_empty():
        out = acc.with_columns(VGR_Poly=pl.lit(None, pl.Float64), VGR_NPH=pl.lit(None, pl.Float64),
                               VGR_drop=pl.lit(None, pl.Float64))
    else:
        per_model = (
            av.filter(pl.col("task") != "All")
            .with_columns(_poly=pl.col("task").is_in(list(POLY_TASKS)))
            .group_by("model")
            .agg(VGR_Poly=pl.col("vgr").filter(pl.col("_poly")).mean(),
                 VGR_NPH=pl.col("vgr").filter(~pl.col("_poly")).mean())
            .with_columns(family=pl.col("model").replace_strict(fam, default=pl.col("model"), return_dtype=pl.String))
        )
        vgr = per_model.group_by("family").agg(pl.col("VGR_Poly").mean(), pl.col("VGR_NPH").mean())
        poly = pl.col("VGR_Poly")
        vgr = vgr.with_columns(
            VGR_drop=pl.when(poly.is_not_null() & (poly != 0)).then((poly - pl.col("VGR_NPH")) / poly).otherwise(None)
        )
        out = acc.join(vgr, on="family", how="left")
    return out.select(list(cols)).sort("family")
