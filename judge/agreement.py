"""Agreement between judges, repeats and humans (GraphVerse paper D.1 / D.2).

* `judge_deltas` — Table 10 shape, per model: per task (and All), VGR of the default judge and of each other
  setting (an alternative judge, a repeat of the default judge), with `delta` = setting − default.
* `compare` — two judges on the same samples: mean VGR each, mean difference, mean absolute difference,
  Pearson r, agreement of the judges' own final-answer flags (never part of the score). The rule-based scorer vs an LLM judge is the standing cross-check.
* `human_agreement` — Table 9 shape: per task and model, the human VGR, the judge's, and human − judge.

All of them pair rows by the sample key, so only samples both sides scored count (`n`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalcore.records import KEY_COLUMNS
from judge.vgr import select

ALL = "All"


def _scores(judgments: pl.DataFrame, judge: str, template: str | None, repeat: int, name: str) -> pl.DataFrame:
    # a response a judge could not read (VGR v4: vgr_score null, "unreadable") has nothing to compare
    df = select(judgments, judge, template, repeat).filter((pl.col("status") == "ok") & pl.col("vgr_score").is_not_null())
    # what the judge itself said about the final answer (F is the verifier's for every judge, so comparing
    # F would always agree)
    return df.select(*KEY_COLUMNS, "task", pl.col("vgr_score").alias(name),
                     pl.coalesce("judge_final_match", "final_answer_match").alias(f"{name}_match"))


def _task_sorted(df: pl.DataFrame) -> pl.DataFrame:
    # tasks by name, the pooled row last (the judge restates no benchmark's task order)
    return df.with_columns(_o=(pl.col("task") == ALL).cast(pl.Int64)) \
        .sort(["_o", "task"]).drop("_o")


def _with_all(df: pl.DataFrame, key: Sequence[str], aggs: list[pl.Expr]) -> pl.DataFrame:
    per = df.group_by([*key, "task"]).agg(aggs)
    pooled = df.group_by(list(key)).agg(aggs).with_columns(task=pl.lit(ALL)) if key else \
        df.select(aggs).with_columns(task=pl.lit(ALL))
    return pl.concat([per, pooled.select(per.columns)], how="vertical")


def compare(judgments: pl.DataFrame, a: tuple[str, str | None, int], b: tuple[str, str | None, int],
            by: Sequence[str] = ()) -> pl.DataFrame:
    """Per task (+ All): n, vgr_a, vgr_b, diff (b − a), abs_diff, pearson, final_match_agreement."""
    sa = _scores(judgments, a[0], a[1], a[2], "a")
    sb = _scores(judgments, b[0], b[1], b[2], "b").drop("task")
    both = sa.join(sb, on=KEY_COLUMNS, how="inner")
    aggs = [
        pl.len().cast(pl.Int64).alias("n"),
        pl.col("a").mean().alias("vgr_a"),
        pl.col("b").mean().alias("vgr_b"),
        (pl.col("b") - pl.col("a")).mean().alias("diff"),
        (pl.col("b") - pl.col("a")).abs().mean().alias("abs_diff"),
        pl.corr("a", "b").alias("pearson"),
        (pl.col("a_match") == pl.col("b_match")).mean().alias("final_match_agreement"),
    ]
    if both.is_empty():
        return pl.DataFrame(schema={**{k: pl.String for k in by}, "task": pl.String, "n": pl.Int64})
    out = _with_all(both, by, aggs)
    return _task_sorted(out.select(*by, "task", "n", "vgr_a", "vgr_b", "diff", "abs_diff", "pearson",
                                   "final_match_agreement"))


def judge_deltas(judgments: pl.DataFrame, default: tuple[str, str | None, int],
                 settings: Sequence[tuple[str, str, str | None, int]],
                 by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Table 10 (long form), per model: setting, judge, judge_repeat, model, task (+ All), n, vgr,
    default_vgr, delta (setting − default). The paper reports it for one responding model (Gemini-3-Pro);
    with several, each keeps its own rows: a pooled delta would let one model's shift hide another's.
    `settings` are (label, judge, template, repeat); the default appears as its own rows."""
    keys = list(by)
    base = _scores(judgments, default[0], default[1], default[2], "d")
    rows = []
    for label, judge, template, repeat in [("default", default[0], default[1], default[2]), *settings]:
        s = _scores(judgments, judge, template, repeat, "s").drop("task")
        both = base.join(s, on=KEY_COLUMNS, how="inner")
        if both.is_empty():
            continue
        aggs = [pl.len().cast(pl.Int64).alias("n"), pl.col("s").mean().alias("vgr"),
                pl.col("d").mean().alias("default_vgr")]
        t = _with_all(both, keys, aggs).with_columns(
            setting=pl.lit(label), judge=pl.lit(judge), judge_repeat=pl.lit(repeat, dtype=pl.Int64),
            delta=pl.col("vgr") - pl.col("default_vgr"),
        )
        t = t.select("setting", "judge", "judge_repeat", *keys, "task", "n", "vgr", "default_vgr", "delta")
        rows.append(_task_sorted(t).sort(keys, maintain_order=True) if keys else _task_sorted(t))
    if not rows:
        return pl.DataFrame(schema={"setting": pl.String, "judge": pl.String, "judge_repeat": pl.Int64,
                                    **{k: pl.String for k in keys}, "task": pl.String, "n": pl.Int64,
                                    "vgr": pl.Float64, "default_vgr": pl.Float64, "delta": pl.Float64})
    return pl.concat(rows, how="vertical")


HUMAN_SCORE_COLUMNS = ("human_vgr", "vgr", "score", "human")


def read_human_csv(path: str | Path) -> pl.DataFrame:
    """Human VGR scores: columns model, instance_id, a score column (human_vgr | vgr | score | human, on
    0..100), optional variant / prompt_mode / repeat (defaults: any, the single one) and annotator.
    Several annotators of one sample are averaged."""
    df = pl.read_csv(path, infer_schema_length=10_000)
    score = next((c for c in HUMAN_SCORE_COLUMNS if c in df.columns), None)
    missing = [c for c in ("model", "instance_id") if c not in df.columns]
    if score is None or missing:
        raise ValueError(f"{path}: needs columns model, instance_id and one of {', '.join(HUMAN_SCORE_COLUMNS)}"
                         + (f" (missing {', '.join(missing)})" if missing else ""))
    df = df.with_columns(pl.col(score).cast(pl.Float64).alias("human_vgr"))
    keys = ["model", "instance_id", *[c for c in ("variant", "prompt_mode", "repeat") if c in df.columns]]
    return df.group_by(keys).agg(pl.col("human_vgr").mean(), pl.len().alias("annotators"))


def human_agreement(human: pl.DataFrame, judgments: pl.DataFrame, judge: tuple[str, str | None, int]
                    ) -> pl.DataFrame:
    """Table 9 (long form): task, model, n, human, judge, diff (human − judge)."""
    js = _scores(judgments, judge[0], judge[1], judge[2], "judge")
    keys = [c for c in ("model", "instance_id", "variant", "prompt_mode", "repeat") if c in human.columns]
    h = human
    if "repeat" in h.columns:
        h = h.with_columns(pl.col("repeat").cast(pl.Int64))
    both = h.join(js, on=keys, how="inner")
    aggs = [pl.len().cast(pl.Int64).alias("n"), pl.col("human_vgr").mean().alias("human"),
            pl.col("judge").mean().alias("judge")]
    if both.is_empty():
        return pl.DataFrame(schema={"task": pl.String, "model": pl.String, "n": pl.Int64, "human": pl.Float64,
                                    "judge": pl.Float64, "diff": pl.Float64})
    out = _with_all(both, ("model",), aggs).with_columns(diff=pl.col("human") - pl.col("judge"))
    return _task_sorted(out.select("task", "model", "n", "human", "judge", "diff").sort("model"))
