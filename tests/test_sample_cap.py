"""The report's sample browser at many models (issue 20.1): a fixed total cap whatever the number of models,
stratified so that every (benchmark, task, outcome) present keeps rows and the models rotate."""

from __future__ import annotations

import random

import polars as pl
import pytest

from report.html.sample_browser import select_samples

TASKS = {"nphardeval4v": ["TSP", "GCP", "SPP", "BSP"], "graphverse": ["CN", "DIAM", "MIS"]}
OUTCOMES = [("ok", "correct"), ("ok", "wrong"), ("ok", None), ("model_error", None)]


def _frame(n_models: int, seed: int) -> pl.DataFrame:
    rnd = random.Random(seed)
    rows = []
    for m in range(n_models):
        for bench, tasks in TASKS.items():
            for task in tasks:
                for i in range(12):
                    status, verdict = rnd.choice(OUTCOMES)
                    rows.append({"version": "v1", "benchmark": bench, "model": f"m{m:03d}", "task": task,
                                 "level": 1 + i % 3, "instance_id": f"{task}-{i}", "variant": "",
                                 "prompt_mode": "figure+full_text", "repeat": 0, "status": status,
                                 "verdict": verdict})
    return pl.DataFrame(rows)


@pytest.mark.parametrize(("n_models", "seed"), [(3, 1), (40, 2), (100, 3)])
def test_the_cap_is_fixed_and_keeps_every_stratum(n_models, seed) -> None:
    df = _frame(n_models, seed)
    cap = 150
    got = select_samples(df, per_group=4, max_rows=cap)
    assert got.height == min(cap, df.height, n_models * sum(map(len, TASKS.values())) * 4)
    # at most per_group per (benchmark, version, model, task) still holds
    assert got.group_by("benchmark", "version", "model", "task").len()["len"].max() <= 4
    present = set(df.with_columns(o=pl.when(pl.col("status") != "ok").then(pl.col("status"))
                                  .otherwise(pl.col("verdict").fill_null("parse_error")))
                  .select("benchmark", "task", "o").unique().iter_rows())
    shown = set(got.select("benchmark", "task", "outcome").unique().iter_rows())
    assert shown == present  # every task x outcome of the run keeps a row
    # the models rotate: with 40 or 100 models, a 150-row cap shows far more than a handful of them
    assert got["model"].n_unique() >= min(n_models, 40)
    # deterministic
    assert got.equals(select_samples(df, per_group=4, max_rows=cap))
