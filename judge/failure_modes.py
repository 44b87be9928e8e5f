"""Failure-mode breakdown per model (GraphVerse paper §5.4, Figure 3) from the judge's step labels.

An incorrect response (its final answer does not match: the sample's verifier verdict is not `correct`)
is attributed to one failure mode: the error type of its FIRST incorrect step (the earliest error is the
one the rest of the reasoning builds on) — perception, visual_reasoning (VR) or text_reasoning (TR).
An incorrect response whose steps are all correct, or that has no steps, is `unattributed`.
`by_response` gives shares of incorrect responses; `by_step` the shares of all incorrect steps.
"""

from __future__ import annotations

import json

import polars as pl

from judge.schema import ERROR_TYPES

MODES: tuple[str, ...] = (*ERROR_TYPES, "unattributed")


def _first_error(steps_json: str | None) -> str:
    if not steps_json:
        return "unattributed"
    try:
        steps = json.loads(steps_json)
    except json.JSONDecodeError:
        return "unattributed"
    for s in steps:
        if not s.get("correct", True):
            t = s.get("error_type")
            return t if t in ERROR_TYPES else "unattributed"
    return "unattributed"


def _incorrect(judgments: pl.DataFrame) -> pl.DataFrame:
    df = judgments.filter(pl.col("status") == "ok")
    wrong = pl.col("sample_verdict").fill_null("") != "correct"
    return df.filter(wrong)


def by_response(judgments: pl.DataFrame, by: tuple[str, ...] = ("model",)) -> pl.DataFrame:
    """Per group: n_incorrect and, per mode, the count and the share (%) of incorrect responses."""
    df = _incorrect(judgments)
    df = df.with_columns(mode=pl.col("steps").map_elements(_first_error, return_dtype=pl.String))
    if df.is_empty():
        return pl.DataFrame(schema={**{k: pl.String for k in by}, "n_incorrect": pl.Int64})
    counts = df.group_by([*by, "mode"]).len()
    wide = counts.pivot(on="mode", index=list(by), values="len").fill_null(0)
    for m in MODES:
        if m not in wide.columns:
            wide = wide.with_columns(pl.lit(0, dtype=pl.UInt32).alias(m))
    wide = wide.with_columns(n_incorrect=pl.sum_horizontal(*MODES).cast(pl.Int64))
    shares = [(100 * pl.col(m) / pl.col("n_incorrect")).alias(f"{m}_pct") for m in MODES]
    return wide.with_columns(*shares).select(
        *by, "n_incorrect", *[pl.col(m).cast(pl.Int64) for m in MODES], *[f"{m}_pct" for m in MODES]
    ).sort(list(by))


def by_step(judgments: pl.DataFrame, by: tuple[str, ...] = ("model",)) -> pl.DataFrame:
    """Per group: incorrect steps of incorrect responses by error type, counts and shares (%)."""
    df = _incorrect(judgments)
    if df.is_empty():
        return pl.DataFrame(schema={**{k: pl.String for k in by}, "n_error_steps": pl.Int64})
    cols = {m: f"n_{m}" for m in ERROR_TYPES}
    out = df.group_by(list(by)).agg(*[pl.col(c).sum().alias(m) for m, c in cols.items()])
    out = out.with_columns(n_error_steps=pl.sum_horizontal(*ERROR_TYPES).cast(pl.Int64))
    shares = [
        pl.when(pl.col("n_error_steps") > 0).then(100 * pl.col(m) / pl.col("n_error_steps")).otherwise(None)
        .alias(f"{m}_pct") for m in ERROR_TYPES
    ]
    return out.with_columns(*shares).select(*by, "n_error_steps", *ERROR_TYPES,
                                            *[f"{m}_pct" for m in ERROR_TYPES]).sort(list(by))
