"""The per-sample record format (SAMPLE_SCHEMA, the key columns) and its sink, RUN_DIR/samples/.

The sink is a `evalcore.shards.ShardWriter` over samples/<benchmark>/<model>/: atomic shards, exactly once
per key across reruns. On start it reads the keys already written; the planner skips them, so a rerun
computes only what is missing, whatever the worker count.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from evalcore.schema import RECOGNITION_MODE, SampleKey, SampleRecord
from evalcore.shards import ShardWriter, key_of, read_shards

KEY_COLUMNS = ["model", "benchmark", "instance_id", "variant", "prompt_mode", "repeat"]

SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "model": pl.String(),
    "benchmark": pl.String(),
    "version": pl.String(),
    "task": pl.String(),
    "level": pl.Int64(),
    "instance_id": pl.String(),
    "variant": pl.String(),
    "prompt_mode": pl.String(),
    "repeat": pl.Int64(),
    "status": pl.String(),
    "verdict": pl.String(),
    "reason": pl.String(),
    "raw_response": pl.String(),
    "parsed_answer": pl.String(),
    "gold_value": pl.Float64(),
    "error": pl.String(),
    "prompt_sha256": pl.String(),
    "image_sha256": pl.String(),
    "template_version": pl.String(),
    "latency_s": pl.Float64(),
    "prompt_tokens": pl.Int64(),
    "completion_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "attempts": pl.Int64(),
    "schema_version": pl.String(),
    "trace": pl.String(),
    "witness_valid": pl.Boolean(),
    "value_consistent": pl.Boolean(),
    "parsed_paper": pl.String(),
    "verdict_paper": pl.String(),
    "pot_stdout": pl.String(),
    "pot_error": pl.String(),
}
assert list(SAMPLE_SCHEMA) == list(SampleRecord.model_fields), "sink schema out of step with SampleRecord"


def key_str(row: dict) -> str:
    return key_of(row, KEY_COLUMNS)


def samples_glob(run_dir: str | Path) -> str:
    return f"{run_dir}/samples/**/*.parquet"


def read_samples(run_dir: str | Path) -> pl.DataFrame:
    """Every sample of the run; ShardError (one line naming the file) for a damaged shard."""
    return read_shards(Path(run_dir, "samples"), SAMPLE_SCHEMA, KEY_COLUMNS, what="sample")


class SampleSink:
    """The run's samples: queued in the driver, written every `flush_rows` rows or `flush_seconds` seconds."""

    # class-wide defaults, so a test can make the shard boundaries deterministic for a whole run
    FLUSH_ROWS = 4000
    FLUSH_SECONDS = 2.0

    def __init__(self, run_dir: str | Path, flush_rows: int | None = None,
                 flush_seconds: float | None = None) -> None:
        self.shards = ShardWriter(
            Path(run_dir) / "samples", SAMPLE_SCHEMA, KEY_COLUMNS, partition_by=["benchmark", "model"],
            what="sample", flush_rows=self.FLUSH_ROWS if flush_rows is None else flush_rows,
            flush_seconds=self.FLUSH_SECONDS if flush_seconds is None else flush_seconds)
        self.root = self.shards.root
        self.done = self.shards.done  # the same set: keys written, or queued to be
        self.resumed = self.shards.resumed

    @property
    def written(self) -> int:
        return self.shards.written

    def is_done(self, key: SampleKey | str) -> bool:
        return (key if isinstance(key, str) else key.as_str()) in self.done

    def add(self, records: Iterable[SampleRecord]) -> int:
        """Queue records; returns how many were new (a key seen before is dropped, never written twice)."""
        return len(self.shards.add(records))

    def flush(self) -> None:
        self.shards.flush()

    def flush_if_due(self) -> None:
        self.shards.flush_if_due()


# ------------------------------------------------------------------ which parse the metrics read
PARSERS: tuple[str, ...] = ("tolerant", "paper")
"""Which parse of an answer is primary (a run config's ``parser``): our tolerant extractor (the default) or the
papers' rule (a benchmark's `paper_verdict`). Both are always computed; the other one stays in its own columns."""


def answer_row() -> pl.Expr:
    """The rows a verdict is read from: answers (not recognition probes) that reached the model."""
    return (pl.col("prompt_mode") != RECOGNITION_MODE) & (pl.col("status") != "infra_error")


def with_paper_columns(samples: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """The frame with ``verdict_paper`` / ``parsed_paper`` (null where a run predates them)."""
    lf = (samples.lazy() if isinstance(samples, pl.DataFrame) else samples)
    names = lf.collect_schema().names()
    return lf.with_columns(pl.lit(None, pl.String).alias(c) for c in ("verdict_paper", "parsed_paper")
                           if c not in names)


def primary_parse(samples: pl.DataFrame | pl.LazyFrame, parser: str = "tolerant") -> pl.LazyFrame:
    """The samples as the metrics should read them under a run's ``parser`` (``PARSERS``): unchanged for
    "tolerant"; for "paper", every answer row's ``verdict`` / ``parsed_answer`` is the papers' parse
    (``verdict_paper`` / ``parsed_paper``; a row without it counts as unparsable). Recognition rows never change."""
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {', '.join(PARSERS)}, not {parser!r}")
    lf = with_paper_columns(samples)
    if parser == "tolerant":
        return lf
    return lf.with_columns(
        pl.when(answer_row()).then(pl.col(paper)).otherwise(pl.col(ours)).alias(ours)
        for ours, paper in (("verdict", "verdict_paper"), ("parsed_answer", "parsed_paper"))
    )
