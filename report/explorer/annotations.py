"""Human step scores of GraphVerse responses (GraphVerse paper, Table 9): the queue, the files, the VGR of a person.

A person labels a response's key steps with the judge's own step schema (`judge.schema.JudgeStep`: claim,
kind, relevant, correct, error_type); the human VGR is `judge.schema.vgr_of` over those steps with F = the
exact verifier's verdict on the final answer, exactly as a judge's score is made, so human − judge compares
step labels only.

Storage: RUN_DIR/annotations/<annotator>-<session>.parquet, one file per annotator session, written only by
that session (rows are only ever added; each save rewrites the session's file atomically under a temporary
name). Resume reads every file: a person's later score of the same sample replaces the earlier one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalcore.parquet_file import write_parquet
from evalcore.records import KEY_COLUMNS
from judge.schema import JUDGMENT_SCHEMA, JudgeStep, distinct_steps, vgr_of

ANNOTATIONS_DIR = "annotations"
# GraphVerse paper, Appendix D.1: two annotators, five tasks, 25 randomly sampled responses per task (Table 9 is per model:
# we sample 25 per task and model); the page's defaults, any task or count can be asked for
PAPER_TASKS = ("DIAM", "SD", "CYC", "COL", "GED")
PAPER_PER_CELL = 25
ANNOTATOR_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
# A human annotation sits beside the judge's judgments of the same response (the agreement tables join
# them), so its identity and step columns are the judgment's own, taken from judge.schema; only who
# annotated, when, and the human VGR-Score are its own.
_RESPONSE_COLUMNS = ("run_id", *KEY_COLUMNS, "task")
_STEP_COLUMNS = ("steps", "n_steps", "final_answer_match")  # steps: JSON list of JudgeStep fields;
# final_answer_match: the exact verifier's verdict (F), never the person's
ANNOTATION_SCHEMA: dict[str, pl.DataType] = {
    **{c: JUDGMENT_SCHEMA[c] for c in _RESPONSE_COLUMNS},
    "annotator": pl.String(),
    "session": pl.String(),
    "annotated_at": pl.String(),  # ISO 8601 UTC
    **{c: JUDGMENT_SCHEMA[c] for c in _STEP_COLUMNS},
    "human_vgr": pl.Float64(),
    "response_sha256": pl.String(),
}


class AnnotationError(ValueError):
    """A submitted annotation that cannot be stored; one line naming the field."""


class Submission(BaseModel):
    """What the annotation form posts for one response."""

    model_config = ConfigDict(extra="forbid")

    annotator: str = Field(pattern=ANNOTATOR_PATTERN)
    run: str
    key: dict[str, Any]
    steps: list[JudgeStep] = Field(default_factory=list, max_length=64)

    @field_validator("key")
    @classmethod
    def _key(cls, v: dict[str, Any]) -> dict[str, Any]:
        missing = [c for c in KEY_COLUMNS if c not in v]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        return v


def annotations_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / ANNOTATIONS_DIR


def read_annotations(run_dir: str | Path) -> pl.DataFrame:
    """Every annotation row of a run (all annotators and sessions), the latest per annotator and sample."""
    d = Path(run_dir)
    if d.name != ANNOTATIONS_DIR:
        d = annotations_dir(d)
    files = sorted(d.glob("*.parquet")) if d.is_dir() else []
    if not files:
        return pl.DataFrame(schema=ANNOTATION_SCHEMA)
    try:
        df = pl.read_parquet(files, schema=ANNOTATION_SCHEMA, hive_partitioning=False, missing_columns="insert")
    except Exception as e:  # polars raises several unrelated types for a damaged file
        raise AnnotationError(f"{d}: unreadable annotation file ({type(e).__name__}: "
                              f"{(str(e).strip().splitlines() or [''])[0][:200]})") from None
    return (df.sort("annotated_at")
            .unique(subset=["annotator", "run_id", *KEY_COLUMNS], keep="last", maintain_order=True))


def human_scores(run_dir: str | Path) -> pl.DataFrame:
    """The annotations as `judge.agreement.human_agreement` takes them (the shape of `read_human_csv`):
    sample key, `human_vgr` averaged over annotators, `annotators`."""
    df = read_annotations(run_dir)
    keys = ["model", "instance_id", "variant", "prompt_mode", "repeat"]
    return df.group_by(keys).agg(pl.col("human_vgr").mean(), pl.len().alias("annotators")).sort(keys)


def queue_order(rows: pl.DataFrame, seed: int = 0, per_cell: int = PAPER_PER_CELL) -> pl.DataFrame:
    """The order a person sees responses in: within each (task, model) a seeded shuffle keeping the first
    `per_cell` (0: all), then round-robin over the (task, model) cells, so any prefix of the queue covers
    the cells evenly."""
    if rows.is_empty():
        return rows
    h = pl.concat_str([pl.lit(str(seed)), *[pl.col(c).cast(pl.String) for c in ["run", *KEY_COLUMNS]]],
                      separator="\x1f")
    return (rows.with_columns(_h=h.map_elements(lambda s: hashlib.sha256(s.encode()).hexdigest(),
                                                return_dtype=pl.String))
            .with_columns(_r=pl.col("_h").rank("ordinal").over("task", "model"))
            .filter((pl.col("_r") <= per_cell) if per_cell > 0 else pl.lit(True))
            .sort("_r", "task", "model", "_h").drop("_h", "_r"))


def sha256_text(text: str | None) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()


class SessionWriter:
    """One annotator session's file: rows only added, the file rewritten atomically on each save."""

    def __init__(self, run_dir: str | Path, annotator: str) -> None:
        if not re.match(ANNOTATOR_PATTERN, annotator):
            raise AnnotationError(f"annotator {annotator!r}: letters, digits, . _ - (at most 64)")
        self.dir = annotations_dir(run_dir)
        self.annotator = annotator
        self.session = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        self.path = self.dir / f"{annotator}-{self.session}.parquet"
        self.rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, sample: dict[str, Any], steps: list[JudgeStep]) -> dict[str, Any]:
        steps = distinct_steps(steps)
        final = sample.get("status") == "ok" and sample.get("verdict") == "correct"
        row = {
            "run_id": sample.get("run_id"),
            **{c: sample[c] for c in KEY_COLUMNS},
            "task": sample.get("task"),
            "annotator": self.annotator,
            "session": self.session,
            "annotated_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "steps": json.dumps([s.model_dump() for s in steps], ensure_ascii=False),
            "n_steps": len(steps),
            "final_answer_match": final,
            "human_vgr": vgr_of(steps, final),
            "response_sha256": sha256_text(sample.get("raw_response")),
        }
        with self._lock:
            self.rows.append(row)
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp = self.dir / f".{self.path.name}.tmp"
            write_parquet(pl.DataFrame(self.rows, schema=ANNOTATION_SCHEMA), tmp, fsync=True)
            os.replace(tmp, self.path)
        return row
