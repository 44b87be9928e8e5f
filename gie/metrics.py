"""GraphVerse metrics: accuracy per task, per edit, single vs paired images, Poly vs NP-hard (seed Table 2).

Pure functions over a run's per-sample table (`SampleRecord` rows as a polars DataFrame or LazyFrame, e.g.
``pl.scan_parquet(f"{run}/samples/**/*.parquet")``); each returns a collected DataFrame. Only the columns
benchmark, model, task, variant, status and verdict are read (and witness_valid, value_consistent by
`witness_validity`).

Conventions:

* Only ``benchmark == "graphverse"`` rows count (a run may mix benchmarks).
* ``status == "infra_error"`` rows are dropped first: an infrastructure failure says nothing about the model,
  so adding such rows never changes a metric.
* A sample is correct iff ``status == "ok"`` and ``verdict == "correct"``; wrong answers, parse errors and
  model errors all count as not correct. Repeats count as separate samples.
* ``acc`` is a percentage; ``ci_low``/``ci_high`` bound it with the Wilson score 95% interval, which stays
  inside [0, 100] and is sensible at n = 1 or acc = 0/100, unlike the normal approximation.
* ``variant`` carries the edit kind: none, patch, composition, focus, recolor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from evalcore.stats import Z95, wilson_interval, wilson_interval_exprs
from gie.catalogue import EDIT_KINDS, PAIRED_TASKS, POLY_TASKS, TASK_NAMES

Frame = pl.DataFrame | pl.LazyFrame

BENCHMARK = "graphverse"
SETTINGS: tuple[str, ...] = ("single", "paired")
ACC_COLUMNS: tuple[str, ...] = ("n", "correct", "acc", "ci_low", "ci_high")

_ORDERS: dict[str, dict[str, int]] = {
    "task": {t: i for i, t in enumerate(TASK_NAMES)},
    "variant": {e: i for i, e in enumerate(EDIT_KINDS)},
    "setting": {s: i for i, s in enumerate(SETTINGS)},
}


DIRECT_MODE = "vision"  # GraphVerse's direct inference (evalcore.prompting.VISION_MODE)


def mode_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """GraphVerse rows of another prompt mode than direct inference (program-of-thought, `pot`) as rows of their
    own: the model reads `<model> (pot)`, as the paper's Table 3 lists "Gemini-3-Pro Coder" beside Gemini-3-Pro.
    Every GraphVerse table groups by model, so PoT is reported beside direct inference and never pooled with
    it. A model name cannot hold a space (`cluster.config.MODEL_NAME_PATTERN`): no label collides with a model.
    Parentheses, not brackets: the terminal tables (rich) would read `[pot]` as markup and drop it. Samples and
    judgments are labelled alike, so their join on the key columns still matches."""
    if "prompt_mode" not in frame.columns or frame.is_empty():
        return frame
    other = ((pl.col("benchmark") == BENCHMARK) & pl.col("prompt_mode").is_not_null()
             & (pl.col("prompt_mode") != DIRECT_MODE))
    return frame.with_columns(
        model=pl.when(other).then(pl.format("{} ({})", pl.col("model"), pl.col("prompt_mode")))
        .otherwise(pl.col("model")))


def _rows(samples: Frame) -> pl.LazyFrame:
    lf = samples.lazy() if isinstance(samples, pl.DataFrame) else samples
    return lf.filter(
        (pl.col("benchmark") == BENCHMARK) & (pl.col("status") != "infra_error")
    ).with_columns(
        _correct=((pl.col("status") == "ok") & (pl.col("verdict").cast(pl.String) == "correct")).fill_null(False)
    )


def _sorted(lf: pl.LazyFrame, keys: Sequence[str]) -> pl.LazyFrame:
    """Tasks, edits and settings in their canonical order (unknown values after the known ones), the rest
    alphabetically."""
    if not keys:
        return lf
    exprs: list[pl.Expr] = []
    for k in keys:
        if k in _ORDERS:
            order = _ORDERS[k]
            exprs.append(pl.col(k).replace_strict(order, default=len(order), return_dtype=pl.Int64))
        exprs.append(pl.col(k))
    return lf.sort(exprs, nulls_last=True)


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (``evalcore.stats.wilson_interval``), in percent. (0, 100)
    for n = 0: no data bounds nothing."""
    ci = wilson_interval(correct, n, z)
    return (0.0, 100.0) if ci is None else (100 * ci[0], 100 * ci[1])


def _acc_exprs() -> list[pl.Expr]:
    # groups come from group_by, so n >= 1 here and the interval is never null
    lo, hi = wilson_interval_exprs("correct", "n")
    return [
        (100 * pl.col("correct") / pl.col("n").cast(pl.Float64)).alias("acc"),
        (100 * lo).alias("ci_low"),
        (100 * hi).alias("ci_high"),
    ]


def _accuracy_lazy(rows: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    keys = list(by)
    aggs = [pl.len().cast(pl.Int64).alias("n"), pl.col("_correct").sum().cast(pl.Int64).alias("correct")]
    grouped = rows.group_by(keys).agg(aggs) if keys else rows.select(aggs)
    return _sorted(grouped.with_columns(_acc_exprs()).select(*keys, *ACC_COLUMNS), keys)


def accuracy(samples: Frame, by: Sequence[str] = ("model", "task")) -> pl.DataFrame:
    """Acc (%) per group with n, #correct and the Wilson 95% interval: columns ``*by, n, correct, acc,
    ci_low, ci_high``. ``by=()`` gives one pooled row."""
    return _accuracy_lazy(_rows(samples), by).collect()


def acc_table(samples: Frame) -> pl.DataFrame:
    """Model x task Acc (%) as in the seed's Table 1: one row per model, one column per task present (in the
    canonical task order) and ``All`` = pooled accuracy over all of the model's samples."""
    rows = _rows(samples)
    long = _accuracy_lazy(rows, ["model", "task"]).collect()
    pooled = _accuracy_lazy(rows, ["model"]).collect().select("model", pl.col("acc").alias("All"))
    if long.is_empty():
        return pl.DataFrame(schema={"model": pl.String, "All": pl.Float64})
    wide = long.pivot(on="task", index="model", values="acc")
    present = set(long["task"].to_list())
    known = [t for t in TASK_NAMES if t in present]
    others = sorted(present - set(TASK_NAMES))
    return wide.join(pooled, on="model", how="left").select("model", *known, *others, "All").sort("model")


def by_edit(samples: Frame, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Acc per edit kind (``variant``) within each ``by`` group, plus ``delta_vs_none`` = acc - acc of the
    unedited ("none") samples of the same group (null when the group has none)."""
    keys = [*by, "variant"]
    out = _accuracy_lazy(_rows(samples), keys).collect()
    base = out.filter(pl.col("variant") == "none").select(*by, pl.col("acc").alias("_base"))
    joined = out.join(base, on=list(by), how="left") if by else out.join(base, how="cross")
    return joined.with_columns(delta_vs_none=pl.col("acc") - pl.col("_base")).drop("_base")


def single_vs_paired(samples: Frame, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Acc of single-image tasks vs paired-image tasks (GED, MCS), pooled over samples: one row per
    (``by`` group, setting), with the Wilson interval."""
    rows = _rows(samples).with_columns(
        setting=pl.when(pl.col("task").is_in(list(PAIRED_TASKS))).then(pl.lit("paired")).otherwise(pl.lit("single"))
    )
    return _accuracy_lazy(rows, [*by, "setting"]).collect()


def poly_vs_nph(samples: Frame, families: Mapping[str, str] | None = None) -> pl.DataFrame:
    """Seed Table 2: per model family, the mean Acc on Poly tasks (SD, DIAM, CN) and on NP-hard tasks
    (the other eight), and ``rel_drop`` = (Poly - NPH) / Poly as a fraction.

    Per model, a group's score is the mean of its per-task Acc (the tasks weigh equally, as the columns of
    Table 1 do); a family's score is the mean over its models that have tasks in that group. Without
    ``families`` (or for a model it does not list) each model is its own family. Columns: family, models,
    Poly, NPH, rel_drop (null when Poly is null or 0).
    """
    per_task = _accuracy_lazy(_rows(samples), ["model", "task"]).collect()
    if per_task.is_empty():
        return pl.DataFrame(schema={"family": pl.String, "models": pl.Int64, "Poly": pl.Float64,
                                    "NPH": pl.Float64, "rel_drop": pl.Float64})
    fam = dict(families or {})
    per_model = (
        per_task.with_columns(_poly=pl.col("task").is_in(list(POLY_TASKS)))
        .group_by("model")
        .agg(
            Poly=pl.col("acc").filter(pl.col("_poly")).mean(),
            NPH=pl.col("acc").filter(~pl.col("_poly")).mean(),
        )
        .with_columns(family=pl.col("model").replace_strict(fam, default=pl.col("model"), return_dtype=pl.String))
    )
    out = per_model.group_by("family").agg(
        models=pl.len().cast(pl.Int64), Poly=pl.col("Poly").mean(), NPH=pl.col("NPH").mean()
    )
    poly = pl.col("Poly")
    return out.with_columns(
        rel_drop=pl.when(poly.is_not_null() & (poly != 0)).then((poly - pl.col("NPH")) / poly).otherwise(None)
    ).select("family", "models", "Poly", "NPH", "rel_drop").sort("family")


def witness_validity(samples: Frame, by: Sequence[str] = ("model", "task")) -> pl.DataFrame:
    """How often a given path / set / tour / mapping is valid, apart from the verdict (``witness_valid``):
    columns ``*by, answered, with_witness, valid_witness, valid_pct`` (% of answers with a witness whose
    witness is valid), plus ``correct_invalid_witness`` = correct answers whose witness is invalid (a right
    value-scored answer backed by a wrong path or mapping). And whether a value stated beside a feasible
    witness agrees with it (``value_consistent``): ``with_value`` answers where it could be compared,
    ``consistent_pct`` the % that agree, ``correct_inconsistent_value`` correct answers whose stated value
    disagrees with their witness (an optimal tour with a misstated Length). Only parsed answers (verdict
    correct / wrong) count; a sample table written before a column existed gives null percentages."""
    lf = _rows(samples)
    names = lf.collect_schema().names()
    for column in ("witness_valid", "value_consistent"):
        if column not in names:
            lf = lf.with_columns(pl.lit(None, dtype=pl.Boolean).alias(column))
    answered = lf.filter(pl.col("verdict").cast(pl.String).is_in(["correct", "wrong"]))
    w, c = pl.col("witness_valid"), pl.col("value_consistent")
    keys = list(by)
    aggs = [
        pl.len().cast(pl.Int64).alias("answered"),
        w.is_not_null().sum().cast(pl.Int64).alias("with_witness"),
        w.fill_null(False).sum().cast(pl.Int64).alias("valid_witness"),
        (pl.col("_correct") & w.is_not_null() & ~w.fill_null(True)).sum().cast(pl.Int64)
        .alias("correct_invalid_witness"),
        c.is_not_null().sum().cast(pl.Int64).alias("with_value"),
        c.fill_null(False).sum().cast(pl.Int64).alias("_consistent"),
        (pl.col("_correct") & c.is_not_null() & ~c.fill_null(True)).sum().cast(pl.Int64)
        .alias("correct_inconsistent_value"),
    ]
    grouped = answered.group_by(keys).agg(aggs) if keys else answered.select(aggs)
    pct = pl.when(pl.col("with_witness") > 0).then(100 * pl.col("valid_witness") / pl.col("with_witness"))
    agree = pl.when(pl.col("with_value") > 0).then(100 * pl.col("_consistent") / pl.col("with_value"))
    out = grouped.with_columns(valid_pct=pct.otherwise(None), consistent_pct=agree.otherwise(None))
    cols = [*keys, "answered", "with_witness", "valid_witness", "valid_pct", "correct_invalid_witness",
            "with_value", "consistent_pct", "correct_inconsistent_value"]
    return _sorted(out.select(cols), keys).collect()
