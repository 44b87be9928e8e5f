"""NPHardEval4V metrics: Recognition Accuracy (RA), Instruction-following Effective Rate (ER),
Aggregated Accuracy (AA) — pure functions over a run's per-sample table.

Every public function accepts a polars ``DataFrame`` or ``LazyFrame`` holding ``SampleRecord`` rows (e.g.
``pl.scan_parquet(f"{run}/samples/**/*.parquet")``) and returns a collected ``DataFrame`` with stable column
names. Only the columns model, task, level, instance_id, variant, prompt_mode, status, verdict and
parsed_answer are read, plus verdict_paper / parsed_paper for the papers'-parser columns (absent or null in runs
that predate them: those columns are then null).

Conventions (shared by every function):

* ``status == "infra_error"`` rows are dropped before anything is counted: an infrastructure failure is
  neither a wrong answer nor an unparsable one, so adding such rows never changes a metric.
* ``status == "model_error"`` rows are *unparsable* whatever their verdict.
* A *question* is one answer sample: one (instance, prompt mode, repeat) row. Repeats count as questions.
* Answer samples are every row whose ``prompt_mode`` is not ``"recognition"``.
* Recognition samples have ``prompt_mode == "recognition"``, ``variant`` ``"match"`` or ``"mismatch"`` and
  ``parsed_answer`` the JSON string ``"true"`` (model said YES) / ``"false"`` / None (unparsable).
* Level weights are ``w_l = l`` (1..10, Σ = 55 for a full group), as in the paper and the peer notebook.
* Recognition applies only where there is a picture: the papers define RA as the recognition "of the problems
  in the visual prompts". Rows of a prompt mode that sends no image (``TEXT_ONLY_MODES``: full_text_only) get
  RA (and RA_mean, RA_var, false_yes_rate, RA_corrected) null, every question counts as recognised, and their
  ``wa`` has no RA factor (factor 1).
* RA is n/a where no recognition experiment ran: a (model, task, level) without recognition rows gets RA,
  RA_mean, RA_var and RA_corrected null (printed "n/a"), not the peer notebook's RA = 1, so a run without the
  experiment never shows a recognition score it did not measure. Its AA still takes RA as 1 (the notebook's
  fallback: every question counts as recognised, factor 1), so AA does not depend on the display.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from evalcore.records import PARSERS, primary_parse  # noqa: F401  (the shared core's: every benchmark's runs)
from evalcore.records import answer_row as _answer_row
from evalcore.records import with_paper_columns as _with_paper_columns
from evalcore.schema import PROMPT_MODES, RECOGNITION_MODE
from nphe4v.tasks import TASK_CLASS, TASK_MODULES

Frame = pl.DataFrame | pl.LazyFrame

POOLED = "pooled"
"""``prompt_mode`` label of rows that pool all prompt modes (the peer summary notebook's aggregation; the papers'
Figure 6 shows figure+limited_text alone)."""

COMPLEXITY_CLASSES: tuple[str, ...] = ("P", "NPC", "NPH")

TEXT_ONLY_MODES: tuple[str, ...] = ("full_text_only",)
"""Prompt modes that send no picture: nothing to recognise, so no RA factor and no recognised-only filter."""

RA_NOTE = ("RA is n/a on full_text_only: that mode sends no picture, so there is nothing to recognise (the papers "
           "define RA as the recognition \"of the problems in the visual prompts\"); its AA has no RA factor and "
           "no recognised-only filter, and a pooled row's RA averages the picture modes. RA is also n/a where no "
           "recognition experiment ran for a model, task and level; AA takes RA = 1 there (every question counts "
           "as recognised), as the peer notebook does.")
"""The footnote every printed leaderboard carries."""

LEADERBOARD_COLUMNS: tuple[str, ...] = (
    "model", "prompt_mode", "ER", "RA", "RA_corrected", "AA_P", "AA_NPC", "AA_NPH", "AA_All", "RA_var", "n",
    "ER_paper", "AA_paper",
)

_REC_KEY = ["model", "task", "level", "instance_id"]
_MODE_ORDER: dict[str, int] = {m: i for i, m in enumerate((*PROMPT_MODES, POOLED))}
_TASK_ORDER: dict[str, int] = {t: i for i, t in enumerate(TASK_MODULES)}


def _lazy(frame: Frame) -> pl.LazyFrame:
    return frame.lazy() if isinstance(frame, pl.DataFrame) else frame


def _order(col: str, order: dict[str, int]) -> pl.Expr:
    """Sort key: known values in the given order, unknown values after them."""
    return pl.col(col).replace_strict(order, default=len(order), return_dtype=pl.Int64)


def _sorted(lf: pl.LazyFrame, keys: Sequence[str]) -> pl.LazyFrame:
    exprs: list[pl.Expr] = []
    for k in keys:
        if k == "task":
            exprs.append(_order("task", _TASK_ORDER))
        elif k == "prompt_mode":
            exprs.append(_order("prompt_mode", _MODE_ORDER))
        exprs.append(pl.col(k))
    return lf.sort(exprs, nulls_last=True)


# --------------------------------------------------------------------------------------------------------
# Recognition experiment
# --------------------------------------------------------------------------------------------------------


def _recognition_lazy(samples: Frame) -> pl.LazyFrame:
    ans = pl.col("parsed_answer").cast(pl.String).str.strip_chars().str.strip_chars('"').str.to_lowercase()
    rows = (
        _lazy(samples)
        .filter((pl.col("prompt_mode") == RECOGNITION_MODE) & (pl.col("status") != "infra_error"))
        .with_columns(
            _ok=(pl.col("status") == "ok") & ans.is_in(["true", "false"]).fill_null(False),
            _yes=(pl.col("status") == "ok") & (ans == "true").fill_null(False),
        )
    )
    aggs: list[pl.Expr] = []
    for v in ("match", "mismatch"):
        is_v = pl.col("variant") == v
        aggs += [
            pl.col("_yes").filter(is_v).sum().cast(pl.Int64).alias(f"yes_count_{v}"),
            pl.col("_ok").filter(is_v).sum().cast(pl.Int64).alias(f"parsed_{v}"),
            is_v.sum().cast(pl.Int64).alias(f"asks_{v}"),
        ]
    out = rows.group_by(_REC_KEY).agg(aggs)
    derived: list[pl.Expr] = []
    for v, flag in (("match", "recognised"), ("mismatch", "false_yes")):
        yes, parsed, asks = pl.col(f"yes_count_{v}"), pl.col(f"parsed_{v}"), pl.col(f"asks_{v}")
        mean = yes / asks
        derived += [
            # the paper: YES in more than half of the asks (3 of 5); an unparsable ask is not a YES
            pl.when(asks > 0).then(2 * yes > asks).otherwise(None).alias(flag),
            # the project's earlier variant: majority of the parsed asks only (kept for comparison)
            pl.when(asks > 0).then(2 * yes > parsed).otherwise(None).alias(f"{flag}_of_parsed"),
            pl.when(asks > 0).then(mean).otherwise(None).alias(f"mean_yes_{v}"),
            # the paper's "variance of the responses": population variance of the asks' 0/1 outcomes
            pl.when(asks > 0).then(mean * (1 - mean)).otherwise(None).alias(f"var_yes_{v}"),
        ]
    cols = [
        *_REC_KEY,
        "yes_count_match", "parsed_match", "asks_match", "recognised", "recognised_of_parsed", "mean_yes_match",
        "var_yes_match",
        "yes_count_mismatch", "parsed_mismatch", "asks_mismatch", "false_yes", "false_yes_of_parsed",
        "mean_yes_mismatch", "var_yes_mismatch",
    ]
    return _sorted(out.with_columns(derived).select(cols), _REC_KEY)


def recognition_table(samples: Frame) -> pl.DataFrame:
    """Per (model, task, level, instance_id): the outcome of the recognition experiment.

    Over the non-infra recognition asks of the instance, separately for ``variant`` match and mismatch:

    * ``yes_count_v`` = #asks whose parsed answer is YES; ``parsed_v`` = #asks with a parsed yes/no
      (``status == "ok"`` and ``parsed_answer`` in {"true", "false"}); ``asks_v`` = #asks.
    * ``recognised`` (the paper's rule, the default) = ``yes_count_match > asks_match / 2``: with 5 asks, "YES
      at least 3 of 5"; an unparsable ask (or a model_error) is not a YES. Null when the instance has no match
      asks. ``recognised_of_parsed`` = ``yes_count_match > parsed_match / 2`` (majority of the parsed asks only;
      the project's earlier rule, kept as an extra column: 2 YES, 1 NO, 2 unparsable is recognised there).
    * ``mean_yes_match`` (peer notebook's mean rule) = ``yes_count_match / asks_match`` — the mean of the binary
      outcomes, an unparsable ask counting as "not yes"; ``var_yes_match`` = their population variance
      ``mean · (1 − mean)`` (the paper's "mean and variance of the model's responses").
    * ``false_yes`` / ``false_yes_of_parsed`` / ``mean_yes_mismatch`` / ``var_yes_mismatch``: the same rules on
      the mismatched control pair (image of this instance, text of another): ``false_yes`` = YES in more than
      half of the asks where the truth is NO.
    """
    return _recognition_lazy(samples).collect()


# --------------------------------------------------------------------------------------------------------
# Per-level table
# --------------------------------------------------------------------------------------------------------


def _text_only() -> pl.Expr:
    return pl.col("prompt_mode").is_in(list(TEXT_ONLY_MODES))


def _level_lazy(samples: Frame) -> pl.LazyFrame:
    lf = _lazy(samples)
    rec = _recognition_lazy(lf)

    verdict = pl.col("verdict").cast(pl.String)
    parsable = (pl.col("status") == "ok") & verdict.is_in(["correct", "wrong"]).fill_null(False)
    questions = (
        lf.filter((pl.col("prompt_mode") != RECOGNITION_MODE) & (pl.col("status") != "infra_error"))
        .with_columns(_parsable=parsable)
        .with_columns(_correct=pl.col("_parsable") & (verdict == "correct"))
        .join(rec.select(*_REC_KEY, "recognised"), on=_REC_KEY, how="left")
        # no recognition evidence for this instance, or no picture in this mode -> counted as recognised
        .with_columns(_rec=pl.col("recognised").fill_null(True) | _text_only())
    )
    keys = ["model", "task", "prompt_mode", "level"]
    per_level = questions.group_by(keys).agg(
        n=pl.len().cast(pl.Int64),
        parsable=pl.col("_parsable").sum().cast(pl.Int64),
        correct=pl.col("_correct").sum().cast(pl.Int64),
        recognised_parsable=(pl.col("_rec") & pl.col("_parsable")).sum().cast(pl.Int64),
        correct_recognised=(pl.col("_rec") & pl.col("_correct")).sum().cast(pl.Int64),
    )
    rec_level = rec.group_by(["model", "task", "level"]).agg(
        n_rec=pl.col("recognised").is_not_null().sum().cast(pl.Int64),
        _ra=pl.col("recognised").mean(),
        _ra_mean=_fmean(pl.col("mean_yes_match")),
        RA_var=_fmean(pl.col("var_yes_match")),
        false_yes_rate=pl.col("false_yes").mean(),  # booleans: exact
    )
    # RA as measured: null where no recognition experiment ran (shown n/a); `ra` is what AA uses there (1,
    # every question recognised, the peer notebook's fallback)
    measured = pl.col("_ra")
    ra = measured.fill_null(1.0)
    rp = pl.col("recognised_parsable")

    def pictured(expr: pl.Expr) -> pl.Expr:
        """`expr` in a mode that sends a picture, null in a text-only mode (nothing was there to recognise)."""
        return pl.when(_text_only()).then(None).otherwise(expr)

    out = (
        per_level.join(rec_level, on=["model", "task", "level"], how="left")
        .with_columns(
            complexity=pl.col("task").replace_strict(TASK_CLASS, default=None, return_dtype=pl.String),
            n_rec=pl.when(_text_only()).then(0).otherwise(pl.col("n_rec").fill_null(0)),
            ER=pl.col("parsable") / pl.col("n"),
            RA=pictured(measured),
            RA_mean=pictured(pl.col("_ra_mean")),
            RA_var=pictured(pl.col("RA_var")),
            false_yes_rate=pictured(pl.col("false_yes_rate")),
            RA_corrected=pictured(
                pl.when(pl.col("false_yes_rate").is_not_null())
                .then(pl.max_horizontal(pl.lit(0.0), ra - pl.col("false_yes_rate")))
                .otherwise(None)
            ),
            A_prime=pl.when(rp > 0).then(pl.col("correct_recognised") / rp).otherwise(0.0),
        )
        .with_columns(
            # a text-only mode has no RA factor (RA is null there)
            wa=pl.col("A_prime") * pl.col("RA").fill_null(1.0) * pl.col("ER"),
            wa_peer=pl.col("correct") / pl.col("n") * pl.col("RA_mean").fill_null(1.0),
        )
        .select(
            "model", "task", "complexity", "prompt_mode", "level",
            "n", "parsable", "correct", "recognised_parsable", "correct_recognised", "n_rec",
            "ER", "RA", "RA_mean", "RA_var", "false_yes_rate", "RA_corrected", "A_prime", "wa", "wa_peer",
        )
    )
    return _sorted(out, keys)


def level_table(samples: Frame) -> pl.DataFrame:
    """Per (model, task, complexity, prompt_mode, level), over the level's answer questions (infra excluded):

    * ``n`` = #questions, ``parsable`` = #(status ok and verdict correct|wrong), ``correct`` = #correct.
    * ``ER = parsable / n``.
    * ``RA`` (the paper's rule) = share of the level's instances with ``recognised`` true on the match pair;
      ``RA_mean`` (peer notebook) = mean of ``mean_yes_match`` over the level's instances; ``RA_var`` = mean of
      ``var_yes_match`` (the variance over the asks; null without recognition data). ``n_rec`` = #instances
      with recognition data. **If the model has no recognition rows for this task/level, RA = RA_mean = null
      (n/a: no experiment ran) and every question counts as recognised**; wa then takes RA as 1 (the notebook's
      fallback). An instance without recognition rows
      inside a level that has some also counts as recognised. **In a text-only mode (full_text_only) RA, RA_mean,
      RA_var, false_yes_rate and RA_corrected are null, n_rec = 0 and every question counts as recognised**:
      no picture was sent, so there was nothing to recognise.
    * ``false_yes_rate`` = share of instances with ``false_yes`` on the mismatched control;
      ``RA_corrected = max(0, RA - false_yes_rate)`` (an always-YES model gets 0); null without a control.
    * ``A_prime = #(correct ∧ recognised) / #(recognised ∧ parsable)``, 0 when the denominator is 0
      (recognised = the paper's rule, per instance, shared by the instance's questions in every mode).
    * ``wa = A_prime · RA · ER`` (RA taken as 1 in a text-only mode and where no recognition experiment ran). When everything is recognised,
      ``A_prime · ER = correct / n``.
    * ``wa_peer = correct / n · RA_mean`` — the peer notebook's level score (its A'·ER = C/10, mean-rule RA;
      RA_mean taken as 1 in a text-only mode and without recognition data).
    * ``complexity`` = P | NPC | NPH from ``TASK_CLASS`` (null for unknown tasks).
    """
    return _level_lazy(samples).collect()


# --------------------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------------------


def _fsum(x: pl.Expr) -> pl.Expr:
    """Σ of a group's floats (nulls skipped) in one order, their own: a group-by hands a group's rows over in
    whatever order it read them (shard order, Ray's arrival order, polars' threads), and a float sum in another
    order differs in its last bit, so a cell of .8525 printed .852 on one run and .853 on the next. Summed in
    sorted order, the same samples give the same bits however they were read. A running sum, not `sum()`: the
    query optimiser drops a sort in front of an order-free aggregation (measured: `sort().sum()` still gave 6
    different sums over 40 shuffles of 70 values, `sort().cum_sum().last()` one)."""
    return x.drop_nulls().sort().cum_sum().last()


def _fmean(x: pl.Expr) -> pl.Expr:
    """The mean of a group's floats (nulls skipped; null when none), order-free as `_fsum`."""
    return _fsum(x) / x.drop_nulls().len()


def _weighted(score: str, mask: pl.Expr | None = None) -> pl.Expr:
    """Σ l·score / Σ l over the (masked) rows; null when there are no rows."""
    w = pl.col("level").cast(pl.Float64)
    num = w * pl.col(score)
    if mask is not None:
        num, w = num.filter(mask), w.filter(mask)
    return pl.when(w.sum() > 0).then(_fsum(num) / w.sum()).otherwise(None)  # Σ l: integers, exact in any order


def _aggregate_lazy(levels: Frame, by: Sequence[str]) -> pl.LazyFrame:
    lf = _lazy(levels)
    aggs = [
        _weighted("wa").alias("AA"),
        *(_weighted("wa", pl.col("complexity") == c).alias(f"AA_{c}") for c in COMPLEXITY_CLASSES),
        _weighted("wa_peer").alias("AA_peer"),
        _fmean(pl.col("ER")).alias("ER"),
        _fmean(pl.col("RA")).alias("RA"),
        _fmean(pl.col("RA_mean")).alias("RA_mean"),
        _fmean(pl.col("RA_corrected")).alias("RA_corrected"),
        _fmean(pl.col("RA_var")).alias("RA_var"),
        pl.col("n").sum().cast(pl.Int64).alias("n_questions"),
        pl.len().cast(pl.Int64).alias("n_rows"),
    ]
    if not by:
        return lf.select(aggs)
    return _sorted(lf.group_by(list(by)).agg(aggs), by)


def aggregate(levels: Frame, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Aggregate a ``level_table`` over the rows S of each ``by`` group (``by=[]``: one overall row).

    * ``AA = Σ_S l·wa / Σ_S l`` (weights w_l = l; Σ = 55 for one full 10-level task×mode) — the paper's AA_All
      when S covers all tasks.
    * ``AA_P``, ``AA_NPC``, ``AA_NPH``: the same ratio over the rows of S whose task is in that class;
      null when S has no such rows.
    * ``AA_peer``: the same ratio over ``wa_peer``.
    * ``ER``, ``RA``, ``RA_mean``, ``RA_corrected``, ``RA_var``: plain means over the rows of S (nulls skipped).
    * ``n_questions = Σ_S n`` (infra excluded), ``n_rows = |S|``.
    """
    return _aggregate_lazy(levels, list(by)).collect()


def _with_pooled(levels: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    """Aggregates per (*by, prompt_mode) plus rows with prompt_mode "pooled" over all modes."""
    per_mode = _aggregate_lazy(levels, [*by, "prompt_mode"])
    pooled = _aggregate_lazy(levels, list(by)).with_columns(prompt_mode=pl.lit(POOLED))
    return _sorted(pl.concat([per_mode, pooled], how="diagonal"), [*by, "prompt_mode"])


def _paper_board(samples: Frame) -> pl.LazyFrame:
    """ER_paper, AA_paper per (model, prompt_mode) incl. pooled: ER and AA_All with the papers' parse; null for
    a group with an answer row that has no papers' verdict (a run that predates the column)."""
    lf = _with_paper_columns(samples)
    board = _with_pooled(_level_lazy(primary_parse(lf, "paper")), ["model"]).select(
        "model", "prompt_mode", pl.col("ER").alias("ER_paper"), pl.col("AA").alias("AA_paper"))
    gaps = lf.filter(_answer_row()).select("model", "prompt_mode", _gap=pl.col("verdict_paper").is_null())
    per_mode = gaps.group_by("model", "prompt_mode").agg(pl.col("_gap").any())
    pooled = gaps.group_by("model").agg(pl.col("_gap").any()).with_columns(prompt_mode=pl.lit(POOLED))
    complete = pl.concat([per_mode, pooled.select(per_mode.collect_schema().names())])
    return board.join(complete, on=["model", "prompt_mode"], how="left").with_columns(
        pl.when(pl.col("_gap").fill_null(True)).then(None).otherwise(pl.col(c)).alias(c)
        for c in ("ER_paper", "AA_paper")).drop("_gap")


def leaderboard(samples: Frame) -> pl.DataFrame:
    """One row per (model, prompt_mode) plus one per model with prompt_mode "pooled" (all modes pooled, as the
    peer summary notebook does), columns exactly ``LEADERBOARD_COLUMNS``: ER, RA, RA_corrected, RA_var = plain means over the
    group's level rows (RA_var: the variance over the recognition asks, null without recognition data; the RA
    columns are null on full_text_only, which sends no picture, and the pooled row's RA averages the picture
    modes only);
    AA_P/AA_NPC/AA_NPH/AA_All = level-weighted AA over the class's / all tasks (null for a class
    without rows); n = #answer questions (infra excluded); ER_paper / AA_paper = ER and AA_All with the papers'
    parse of every answer (``verdict_paper``; null where a run predates it). Sorted by model, then limited,
    text, full, pooled.
    """
    levels = _level_lazy(samples)
    return (
        _with_pooled(levels, ["model"])
        .rename({"AA": "AA_All", "n_questions": "n"})
        .join(_paper_board(samples), on=["model", "prompt_mode"], how="left", maintain_order="left")
        .select(LEADERBOARD_COLUMNS)
        .collect()
    )


def per_task(samples: Frame) -> pl.DataFrame:
    """AA per (model, task, prompt_mode), plus prompt_mode "pooled" per (model, task) (the paper's per-task AA:
    ``(1/3) Σ_p Σ_l l·wa / 55`` for full data). Columns: model, task, complexity, prompt_mode, AA, AA_peer, ER,
    RA, RA_mean, RA_corrected, n."""
    levels = _level_lazy(samples)
    return (
        _with_pooled(levels, ["model", "task"])
        .with_columns(complexity=pl.col("task").replace_strict(TASK_CLASS, default=None, return_dtype=pl.String))
        .rename({"n_questions": "n"})
        .select(
            "model", "task", "complexity", "prompt_mode",
            "AA", "AA_peer", "ER", "RA", "RA_mean", "RA_corrected", "n",
        )
        .collect()
    )
