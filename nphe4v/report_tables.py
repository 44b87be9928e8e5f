"""NPHardEval4V report tables, per dataset version, each number with its 95 % interval and the counts it
rests on: leaderboard, per task, per complexity class (Figure 4), heatmaps (Figures 7, 9), prompt-mode
ablation (Figure 8), LVLMs vs text-only LLMs (Figure 6).

Metric values come from ``nphe4v.metrics``; proportions of counts (ER, RA, per-level accuracy) get the Wilson
interval of the pooled count (``evalcore.stats``: ``ER_lo``/``ER_hi`` = Wilson of Σ parsable / Σ n; it
equals ER's plain mean over level rows whenever the levels hold equally many questions, which the generator
guarantees), AA and RA_corrected the instance bootstrap (``nphe4v.bootstrap``). Every table takes the samples
as a frame (``report.analysis`` gives them run folders too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from evalcore.report_section import Frame, as_frame, empty_table, per_version
from evalcore.report_section import text_only_models as shared_text_only
from evalcore.schema import PROMPT_MODES, RECOGNITION_MODE
from evalcore.stats import wilson_interval_exprs
from nphe4v import metrics
from nphe4v.bootstrap import AA_COLUMNS, _bootstrap
from nphe4v.metrics import COMPLEXITY_CLASSES, POOLED, TEXT_ONLY_MODES
from nphe4v.tasks import TASK_CLASS, TASK_MODULES

NAME = "nphardeval4v"  # nphe4v.benchmark.NPHardEval4V.name (not imported: it imports this package lazily)
Source = Frame  # the samples: every table takes the runs' per-sample frame (report.analysis reads run folders)


def frame_of(src: Frame) -> pl.DataFrame:
    return as_frame(src, NAME)


def nph_rows(df: pl.DataFrame) -> pl.DataFrame:
    return df.filter(pl.col("benchmark") == NAME)

DEFAULT_BOOT = 500
DEFAULT_SEED = 0
DEFAULT_LVLM_MODE = "figure+limited_text"
LLM_MODE = "full_text_only"


def wilson_columns(k: str, n: str, name: str) -> list[pl.Expr]:
    """``{name}_lo``/``{name}_hi``: the Wilson interval (``evalcore.stats``) of ``k / n`` as fractions, null
    where n == 0."""
    lo, hi = wilson_interval_exprs(k, n)
    return [lo.alias(f"{name}_lo"), hi.alias(f"{name}_hi")]


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
        # a text-only mode sends no picture: no recognition counts, hence no RA interval (RA is null there)
        .with_columns(
            pl.when(pl.col("prompt_mode").is_in(list(TEXT_ONLY_MODES))).then(0).otherwise(pl.col(c)).alias(c)
            for c in ("n_rec", "recognised", "n_control", "false_yes")
        )
        .with_columns(*wilson_columns("parsable", "n", "ER"), *wilson_columns("recognised", "n_rec", "RA"))
    )
    cols = ["model", "prompt_mode"]
    for c in ("ER", "RA", "RA_corrected", *AA_COLUMNS):
        cols += [c, f"{c}_lo", f"{c}_hi"]
    cols += ["ER_paper", "AA_paper", "RA_var", "n", "parsable", "correct", "n_instances", "n_rec", "recognised",
             "n_control", "false_yes"]
    return out.select(cols)


LEADERBOARD_COLUMNS: tuple[str, ...] = (
    "version", "model", "prompt_mode",
    *(f"{c}{s}" for c in ("ER", "RA", "RA_corrected", *AA_COLUMNS) for s in ("", "_lo", "_hi")),
    "ER_paper", "AA_paper", "RA_var", "n", "parsable", "correct", "n_instances", "n_rec", "recognised", "n_control", "false_yes",
)


def leaderboard(src: Source, *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED) -> pl.DataFrame:
    """``metrics.leaderboard`` per version (rows per model x prompt mode, plus ``pooled``) with 95% intervals
    beside each number (``X_lo``/``X_hi``: Wilson for ER and RA, instance bootstrap for RA_corrected and AA)
    and the counts they rest on: ``n`` answer questions, ``parsable``, ``correct``, ``n_instances``, ``n_rec``
    instances with recognition data (``recognised`` of them by majority), ``n_control`` with a mismatched
    control (``false_yes`` of them). full_text_only sends no picture: its RA columns are null, its recognition
    counts 0, and its AA has no RA factor (``RA_NOTE``). ``ER_paper`` / ``AA_paper``: ER and AA_All with the
    papers' parse of every answer (``metrics.leaderboard``; no interval; null for runs that predate it)."""
    df = nph_rows(frame_of(src))
    out = per_version(df, lambda p: _leaderboard_one(p, n_boot, seed))
    return empty_table(LEADERBOARD_COLUMNS) if out is None else out.select(LEADERBOARD_COLUMNS)


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
            .with_columns(*wilson_columns("parsable", "n", "ER"))
            .select("model", "task", "complexity", "prompt_mode", "AA", "AA_lo", "AA_hi", "AA_peer",
                    "ER", "ER_lo", "ER_hi", "RA", "RA_mean", "RA_corrected", "n", "parsable", "correct",
                    "n_instances")
        )

    out = per_version(nph_rows(frame_of(src)), one)
    cols = ["version", "model", "task", "complexity", "prompt_mode", "AA", "AA_lo", "AA_hi", "AA_peer", "ER",
            "ER_lo", "ER_hi", "RA", "RA_mean", "RA_corrected", "n", "parsable", "correct", "n_instances"]
    return empty_table(cols) if out is None else out


def class_profile(src: Source, *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                  board: pl.DataFrame | None = None) -> pl.DataFrame:
    """Figure 4's numbers: per version, model and complexity class (P, NPC, NPH), all prompt modes pooled:
    ``metrics.aggregate`` AA, ER, RA, RA_corrected, with AA's bootstrap interval (from the pooled leaderboard
    row; pass ``board`` to reuse one already computed), Wilson intervals for ER and RA, and counts."""
    df = nph_rows(frame_of(src))
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

    out = per_version(df, one)
    cols = ["version", "model", "complexity", "AA", "AA_lo", "AA_hi", "ER", "ER_lo", "ER_hi", "RA", "RA_lo",
            "RA_hi", "RA_corrected", "n", "parsable", "n_rec", "recognised"]
    if out is None:
        return empty_table(cols)
    if aa_ci is not None:
        out = out.join(aa_ci, on=["version", "model", "complexity"], how="left")
    else:
        out = out.with_columns(AA_lo=pl.lit(None, pl.Float64), AA_hi=pl.lit(None, pl.Float64))
    order = {c: i for i, c in enumerate(COMPLEXITY_CLASSES)}
    return (
        out.with_columns(*wilson_columns("parsable", "n", "ER"), *wilson_columns("recognised", "n_rec", "RA"))
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
            # the picture modes share one RA; full_text_only has none (null), so skip it
            RA=pl.col("RA").drop_nulls().first(),
            false_yes_rate=pl.col("false_yes_rate").drop_nulls().first(),
            RA_corrected=pl.col("RA_corrected").drop_nulls().first(),
        )
        rec = _rec_counts(part, ["model", "task", "level"]).select("model", "task", "level", "n_rec", "recognised")
        if prompt_mode in TEXT_ONLY_MODES:  # no picture in this mode: nothing was recognised
            rec = rec.clear()
        return (
            cells.join(rec, on=["model", "task", "level"], how="left")
            .with_columns(pl.col("n_rec").fill_null(0), pl.col("recognised").fill_null(0))
            .with_columns(accuracy=pl.col("correct") / pl.col("n"))
            .with_columns(*wilson_columns("correct", "n", "acc"), *wilson_columns("recognised", "n_rec", "RA"))
        )

    out = per_version(nph_rows(frame_of(src)), one)
    cols = ["version", "model", "task", "complexity", "level", "n", "correct", "parsable", "accuracy", "acc_lo",
            "acc_hi", "wa", "n_rec", "recognised", "RA", "RA_lo", "RA_hi", "false_yes_rate", "RA_corrected"]
    if out is None:
        return empty_table(cols)
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


def text_only_models(src: Source, configured: Mapping[str, bool] | None = None) -> set[str]:
    """Models run as text-only LLMs: ``configured`` maps the runs' configured models to their ``text_only``
    flag; a model not configured there is text-only when its NPHardEval4V answer rows are all full_text_only
    and it has no recognition rows (``evalcore.report_section.text_only_models``)."""
    return shared_text_only(frame_of(src), NAME, configured, LLM_MODE)


def lvlm_vs_llm(src: Source, *, lvlm_mode: str = DEFAULT_LVLM_MODE, text_only: set[str] | None = None,
                n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                board: pl.DataFrame | None = None) -> pl.DataFrame:
    """Figure 6: AA (bootstrap interval) and ER (Wilson interval) per complexity class, for LVLMs on
    ``lvlm_mode`` and text-only LLMs (``text_only_models``) on full_text_only; one row per (version, kind,
    model, complexity) and, per kind, a ``model = "mean"`` row (plain mean over that kind's models; no
    interval). ``kind`` is "LVLM" or "LLM"."""
    df = nph_rows(frame_of(src))
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
        ).with_columns(*wilson_columns("parsable", "n", "ER"))
        return er

    er = per_version(df, one)
    if er is None:
        return empty_table(cols)
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


ANSWER_CHECK_COLUMNS: tuple[str, ...] = (
    "version", "model", "task", "n", "n_stated", "inconsistent", "inconsistent_share", "n_paper",
    "parsable", "parsable_paper", "verdict_differs",
)


def answer_checks(src: Source) -> pl.DataFrame:
    """Per version, model and task, over the answer samples (infra excluded): how often a stated value disagrees
    with the answer's own witness, and how often the papers' parse grades differently from ours.

    ``n_stated`` = answers whose stated value was compared with a valid witness (``value_consistent`` not
    null), ``inconsistent`` = those with ``value_consistent`` false (the witness decided the verdict anyway),
    ``inconsistent_share`` = inconsistent / n_stated (null for 0); ``n_paper`` = answers with a papers' verdict
    (0 for runs that predate it), ``parsable`` / ``parsable_paper`` = answers each parse could read,
    ``verdict_differs`` = answers whose two verdicts differ."""
    df = nph_rows(frame_of(src))
    for c, dtype in (("value_consistent", pl.Boolean), ("verdict_paper", pl.String)):
        if c not in df.columns:
            df = df.with_columns(pl.lit(None, dtype).alias(c))
    answers = df.filter((pl.col("prompt_mode") != RECOGNITION_MODE) & (pl.col("status") != "infra_error"))
    readable = ("correct", "wrong")
    out = answers.group_by("version", "model", "task").agg(
        n=pl.len().cast(pl.Int64),
        n_stated=pl.col("value_consistent").is_not_null().sum().cast(pl.Int64),
        inconsistent=(pl.col("value_consistent") == False).fill_null(False).sum().cast(pl.Int64),  # noqa: E712
        n_paper=pl.col("verdict_paper").is_not_null().sum().cast(pl.Int64),
        parsable=((pl.col("status") == "ok") & pl.col("verdict").is_in(readable)).fill_null(False).sum()
        .cast(pl.Int64),
        parsable_paper=pl.col("verdict_paper").is_in(readable).fill_null(False).sum().cast(pl.Int64),
        verdict_differs=(pl.col("verdict_paper").is_not_null() & (pl.col("verdict") != pl.col("verdict_paper")))
        .fill_null(False).sum().cast(pl.Int64),
    ).with_columns(inconsistent_share=pl.when(pl.col("n_stated") > 0)
                   .then(pl.col("inconsistent") / pl.col("n_stated")).otherwise(None))
    if out.is_empty():
        return empty_table(ANSWER_CHECK_COLUMNS)
    order = {t: i for i, t in enumerate(TASK_MODULES)}
    return out.select(ANSWER_CHECK_COLUMNS).sort(
        "version", "model", pl.col("task").replace_strict(order, default=99, return_dtype=pl.Int64), "task")
