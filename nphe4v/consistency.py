"""The same models across dataset versions (Appendix B of the NPHardEval4V paper): per model and task the
spread of AA over versions, and the summary of those variances."""

from __future__ import annotations

import polars as pl

from nphe4v.metrics import POOLED
from nphe4v.report_tables import DEFAULT_SEED, Source, leaderboard, per_task
from nphe4v.tasks import TASK_MODULES

NEAR_ZERO_VARIANCE = 1e-3


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
