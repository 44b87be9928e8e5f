"""VGR-Score tables: read a run's judgments, join them to the per-sample table, aggregate like Acc.

Judgments live under RUN_DIR/judgments/ (Parquet shards, `judge.schema.JUDGMENT_SCHEMA`), keyed like
samples plus the judge identity (`judge`, `judge_template`) and `judge_repeat`. One run may hold several
judges and repeats; `select` picks one (default: the run's default judge, recorded in
judgments/manifest.json, repeat 0).

Aggregation conventions (as `gie.metrics` does for Acc): only GraphVerse rows; samples with
`status == "infra_error"` are never judged; `judge_error` rows have no score and are left out of means
(counted in `judge_errors`); a sample's VGR is in [0, 100], a group's VGR is the mean over its scored samples.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalcore.records import KEY_COLUMNS, read_samples
from judge.schema import JUDGE_KEY_COLUMNS, JUDGMENT_SCHEMA

JUDGMENTS_DIR = "judgments"
JUDGE_MANIFEST = "manifest.json"
# Task and edit order are the caller's (the benchmark's catalogue, e.g. `gie.catalogue.TASK_NAMES`,
# `EDIT_KINDS`): the judge restates no benchmark list. Without one, groups sort by name.
VGR_COLUMNS = ("n", "judge_errors", "vgr")

Frame = pl.DataFrame | pl.LazyFrame


def judgments_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / JUDGMENTS_DIR


def read_judgments(*dirs: str | Path) -> pl.DataFrame:
    """All judgment rows under the given judgments folders (RUN_DIR/judgments or an --out folder)."""
    files: list[Path] = []
    for d in dirs:
        p = Path(d)
        if p.name != JUDGMENTS_DIR:
            # a run (or --out) folder: only its judgments/, never the samples beside it (a run made
            # without a judge has no judgments/ and then holds no judgment)
            p = p / JUDGMENTS_DIR
        files += sorted(p.glob("**/*.parquet")) if p.is_dir() else []
    if not files:
        return pl.DataFrame(schema=JUDGMENT_SCHEMA)
    # judgments written before a column was added (n_dropped) read with it null
    df = pl.read_parquet(files, schema=JUDGMENT_SCHEMA, hive_partitioning=False, missing_columns="insert")
    # a rerun into --out with the run's own judge writes the same judgments again: one row per judgment key
    # (the first folder's wins), or every agreement table would pair each sample with itself n times
    return df.unique(subset=JUDGE_KEY_COLUMNS, keep="first", maintain_order=True)


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    p = judgments_dir(run_dir) / JUDGE_MANIFEST
    if not p.exists():
        return {}
    return json.loads(p.read_text())


def default_judge(run_dir: str | Path | None, judgments: pl.DataFrame) -> tuple[str, str] | None:
    """(judge, judge_template) of the run's default judge: the manifest's, else the only judge present,
    else the rule-based scorer when present. None when nothing was judged."""
    if run_dir is not None:
        d = read_manifest(run_dir).get("default")
        if d:
            return d["judge"], d["judge_template"]
    ids = judgments.select("judge", "judge_template").unique().sort(["judge", "judge_template"]).rows()
    if not ids:
        return None
    if len(ids) == 1:
        return ids[0][0], ids[0][1]
    rule = [r for r in ids if r[0] == "rule-based"]
    return (rule[-1][0], rule[-1][1]) if rule else (ids[0][0], ids[0][1])


def select(judgments: pl.DataFrame, judge: str | None = None, template: str | None = None,
           judge_repeat: int = 0) -> pl.DataFrame:
    """The rows of one judge (identity, template) and one judge repeat. Without `template`, the judge's
    most frequent template (the current one in practice)."""
    df = judgments.filter(pl.col("judge_repeat") == judge_repeat)
    if judge is not None:
        df = df.filter(pl.col("judge") == judge)
    if template is None and not df.is_empty():
        # a tie (an old run rescored in full by a newer template) goes to the higher version: rule-v3 over rule-v2
        counts = df.group_by("judge_template").len().sort(["len", "judge_template"], descending=[True, True])
        template = counts["judge_template"][0]
    if template is not None:
        df = df.filter(pl.col("judge_template") == template)
    return df


def join(samples: Frame, judgments: pl.DataFrame) -> pl.DataFrame:
    """Samples plus `vgr_score`, `judge`, `judge_snapshot`, `judge_template`, `judge_repeat`, `judge_status`
    (left join on the sample key; give `judgments` for one judge and repeat, see `select`)."""
    s = samples.collect() if isinstance(samples, pl.LazyFrame) else samples
    if judgments.select(KEY_COLUMNS).is_duplicated().any():
        raise ValueError("judgments hold several rows per sample: select one judge and repeat first")
    j = judgments.select(
        *KEY_COLUMNS, "vgr_score", "judge", "judge_snapshot", "judge_template", "judge_repeat",
        pl.col("status").alias("judge_status"),
    )
    return s.join(j, on=KEY_COLUMNS, how="left")


def samples_with_vgr(run_dir: str | Path, judge: str | None = None, template: str | None = None,
                     judge_repeat: int = 0) -> pl.DataFrame:
    """The run's per-sample table with the VGR-Score and identity of one judge (default: the run's)."""
    js = read_judgments(run_dir)
    if judge is None:
        d = default_judge(run_dir, js)
        if d is not None:
            judge, template = d
    return join(read_samples(run_dir), select(js, judge, template, judge_repeat))


# ------------------------------------------------------------------------------------------- aggregation


def _rows(frame: Frame) -> pl.LazyFrame:
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    cols = lf.collect_schema().names()
    # judged rows only (a judgment's status is set): the judge names no benchmark; samples of one it does not
    # judge have no judgment and drop out here
    if "status" in cols and "judge_status" in cols:  # a joined samples table
        lf = lf.filter(pl.col("status") != "infra_error").with_columns(_judge_status=pl.col("judge_status"))
    else:  # a judgments table
        lf = lf.with_columns(_judge_status=pl.col("status"))
    return lf.filter(pl.col("_judge_status").is_not_null())


def _order(lf: pl.LazyFrame, keys: Sequence[str], task_order: Sequence[str] = (),
           edit_order: Sequence[str] = ()) -> pl.LazyFrame:
    exprs: list[pl.Expr] = []
    for k in keys:
        order = {"task": task_order, "variant": edit_order}.get(k)
        if order:
            exprs.append(pl.col(k).replace_strict({v: i for i, v in enumerate(order)}, default=len(order),
                                                  return_dtype=pl.Int64))
        exprs.append(pl.col(k))
    return lf.sort(exprs, nulls_last=True) if exprs else lf


def vgr_table(frame: Frame, by: Sequence[str] = ("model", "task"), *, task_order: Sequence[str] = (),
              edit_order: Sequence[str] = ()) -> pl.DataFrame:
    """Mean VGR-Score per group: columns ``*by, n, judge_errors, vgr, coverage, vgr_floor`` (n counts judged
    samples; ``coverage`` is the share of them with a score: VGR v4 leaves a response its reader cannot read
    unscored, `vgr_score` null, and ``vgr`` is the mean over the scored ones; ``vgr_floor`` is the mean over
    all judged samples with an unscored one counted 0), tasks and edits in the caller's order (`task_order`,
    `edit_order`; others after, by name).

    Why both: ``vgr`` does not penalise a notation the reader lacks, but a model can raise it by making its weak
    responses unreadable (a wrong answer with one misread line is null, not 0). ``vgr_floor`` cannot be raised
    that way (a null never counts more than a score) and equals ``vgr`` at full coverage."""
    keys = list(by)
    ok = pl.col("_judge_status") == "ok"
    aggs = [
        ok.sum().cast(pl.Int64).alias("n"),
        (pl.col("_judge_status") == "judge_error").sum().cast(pl.Int64).alias("judge_errors"),
        pl.col("vgr_score").filter(ok).mean().alias("vgr"),
        (pl.col("vgr_score").filter(ok).is_not_null().sum() / ok.sum()).alias("coverage"),
        pl.col("vgr_score").filter(ok).fill_null(0.0).mean().alias("vgr_floor"),
    ]
    lf = _rows(frame)
    out = lf.group_by(keys).agg(aggs) if keys else lf.select(aggs)
    return _order(out, keys, task_order, edit_order).collect()


def vgr_wide(frame: Frame, task_order: Sequence[str] = ()) -> pl.DataFrame:
    """Model x task VGR (seed Table 1 shape): one row per model, a column per task present, ``All`` = the
    mean over all of the model's scored samples."""
    long = vgr_table(frame, ("model", "task"))
    if long.is_empty():
        return pl.DataFrame(schema={"model": pl.String, "All": pl.Float64})
    pooled = vgr_table(frame, ("model",)).select("model", pl.col("vgr").alias("All"))
    wide = long.pivot(on="task", index="model", values="vgr")
    present = set(long["task"].to_list())
    cols = [t for t in task_order if t in present] + sorted(present - set(task_order))
    return wide.join(pooled, on="model", how="left").select("model", *cols, "All").sort("model")


def vgr_by_edit(frame: Frame, by: Sequence[str] = ("model",), edit_order: Sequence[str] = ()) -> pl.DataFrame:
    """VGR per edit kind (``variant``) within each group, with ``delta_vs_none`` (vs unedited samples)."""
    out = vgr_table(frame, [*by, "variant"], edit_order=edit_order)
    base = out.filter(pl.col("variant") == "none").select(*by, pl.col("vgr").alias("_base"))
    joined = out.join(base, on=list(by), how="left") if by else out.join(base, how="cross")
    return joined.with_columns(delta_vs_none=pl.col("vgr") - pl.col("_base")).drop("_base")
