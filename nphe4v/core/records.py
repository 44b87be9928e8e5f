"""The per-sample Parquet sink: incremental, atomic shards, exactly once per key across reruns.

One writer (the driver) appends shards under samples/<benchmark>/<model>/; each shard is written to a
temporary name and renamed, so a crash leaves whole shards only. On start the sink reads the keys already
written; the planner skips them, so a rerun computes only what is missing, whatever the worker count.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from nphe4v.core.schema import SampleKey, SampleRecord
from nphe4v.core.secrets import redact_frame

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
}
assert list(SAMPLE_SCHEMA) == list(SampleRecord.model_fields), "sink schema out of step with SampleRecord"


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def key_str(row: dict) -> str:
    return "|".join(str(row[c]) for c in KEY_COLUMNS)


def samples_glob(run_dir: str | Path) -> str:
    return f"{run_dir}/samples/**/*.parquet"


class SinkError(ValueError):
    """A sample shard that cannot be read; one line naming the file."""


def read_samples(run_dir: str | Path) -> pl.DataFrame:
    files = sorted(Path(run_dir, "samples").glob("**/*.parquet"))
    if not files:
        return pl.DataFrame(schema=SAMPLE_SCHEMA)
    try:
        # shards written before a column was appended read back with that column null
        return pl.scan_parquet(
            files, schema=SAMPLE_SCHEMA, hive_partitioning=False, missing_columns="insert"
        ).collect()
    except Exception as e:  # polars raises several unrelated types for a damaged file
        raise _corrupt_shard(files, e) from None


def _corrupt_shard(files: list[Path], err: Exception) -> SinkError:
    """Name the damaged shard (the combined scan's error does not say which file)."""
    for f in files:
        try:
            pl.read_parquet(f, columns=KEY_COLUMNS)
        except Exception as e:
            err, bad = e, f
            break
    else:
        bad = files[0].parent.parent
    first = (str(err).strip().splitlines() or [""])[0][:200]
    return SinkError(f"{bad}: unreadable sample shard ({type(err).__name__}: {first}); move it out of "
                     "samples/ and rerun: its samples are recomputed")


class SampleSink:
    def __init__(self, run_dir: str | Path, flush_rows: int = 4000, flush_seconds: float = 2.0) -> None:
        self.root = Path(run_dir) / "samples"
        self.root.mkdir(parents=True, exist_ok=True)
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self.done: set[str] = set()
        self._pending: list[dict] = []
        self._last_flush = time.monotonic()
        self.written = 0
        existing = read_samples(run_dir)
        for row in existing.select(KEY_COLUMNS).iter_rows(named=True):
            self.done.add(key_str(row))
        self.resumed = len(self.done)

    def is_done(self, key: SampleKey | str) -> bool:
        return (key if isinstance(key, str) else key.as_str()) in self.done

    def add(self, records: Iterable[SampleRecord]) -> int:
        """Queue records; returns how many were new (a key seen before is dropped, never written twice)."""
        n = 0
        for rec in records:
            row = rec.model_dump()
            k = key_str(row)
            if k in self.done:
                continue
            self.done.add(k)
            self._pending.append(row)
            n += 1
        if len(self._pending) >= self.flush_rows or time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()
        return n

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        frame = redact_frame(pl.DataFrame(self._pending, schema=SAMPLE_SCHEMA), keep=KEY_COLUMNS)
        self._pending = []
        for (bench, model), part in frame.group_by(["benchmark", "model"], maintain_order=True):
            folder = self.root / slug(str(bench)) / slug(str(model))
            folder.mkdir(parents=True, exist_ok=True)
            name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
            tmp = folder / f".{name}.tmp"
            part.write_parquet(tmp, compression="zstd")
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, folder / name)
            self.written += part.height
