"""Run folders and their per-sample rows, as every report table reads them.

A table's ``src`` is a run folder, a list of run folders, or an already loaded per-sample frame
(``samples(...)`` output or any frame with the ``SampleRecord`` columns): ``frame_of`` and ``runs_of`` turn it
into rows and run folders. The same (version, sample key) seen in two run folders is counted once, and
NPHardEval4V tables are computed per dataset ``version`` (``per_version``): instance ids repeat across
versions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from evalcore import benchmarks
from evalcore.records import KEY_COLUMNS, SAMPLE_SCHEMA, primary_parse, read_samples
from evalcore.report_section import empty_table, per_version  # noqa: F401  (the tables' helpers, here too)
from evalcore.report_section import text_only_models as infer_text_only
from evalcore.shards import read_shards, shard_files

# Every registered benchmark's report part is the sections its `Benchmark.report_sections` make
# (`report.sections`); the report names no benchmark itself.
RUN_MANIFEST = "manifest.json"

Source = str | Path | Sequence[str | Path] | pl.DataFrame | pl.LazyFrame


@dataclass(frozen=True)
class Run:
    """One run folder: ``label`` is the manifest's run_id (the folder name without a manifest)."""

    path: Path
    label: str
    manifest: dict[str, Any] | None

    @property
    def config(self) -> dict[str, Any]:
        return (self.manifest or {}).get("config") or {}

    @property
    def status(self) -> str:
        return str((self.manifest or {}).get("status", "unknown"))


def as_paths(run_dirs: str | Path | Sequence[str | Path]) -> list[Path]:
    if isinstance(run_dirs, str | Path):
        return [Path(run_dirs)]
    return [Path(p) for p in run_dirs]


def load_runs(run_dirs: str | Path | Sequence[str | Path]) -> list[Run]:
    """The run folders with their manifests (None when a folder has no readable manifest.json)."""
    runs = []
    for p in as_paths(run_dirs):
        manifest = None
        mpath = p / RUN_MANIFEST
        if mpath.is_file():
            try:
                manifest = json.loads(mpath.read_text())
            except (ValueError, OSError, RecursionError):  # not JSON, not UTF-8, unreadable: as if absent
                manifest = None
            if not isinstance(manifest, dict):
                manifest = None
        label = str((manifest or {}).get("run_id") or p.name)
        runs.append(Run(path=p, label=label, manifest=manifest))
    return runs


HEAVY_COLUMNS: tuple[str, ...] = ("raw_response", "error", "trace", "pot_stdout")
"""Free text of any length; no metric reads it. ``samples(..., light=True)`` leaves it out."""
LIGHT_COLUMNS: tuple[str, ...] = tuple(c for c in SAMPLE_SCHEMA if c not in HEAVY_COLUMNS)


def scan_run_samples(run_dir: str | Path) -> pl.LazyFrame:
    """The run's per-sample Parquet as a lazy frame (``SAMPLE_SCHEMA``; a column appended to the schema after a
    shard was written reads as null there), each sample key once: a key found in several shards (a shard copied
    by hand) is counted from the first shard only, and each shard whose rows were dropped is named on stderr."""
    files = shard_files(Path(run_dir, "samples"))
    if not files:
        return pl.LazyFrame(schema=SAMPLE_SCHEMA)
    lf = pl.scan_parquet(files, schema=SAMPLE_SCHEMA, hive_partitioning=False, missing_columns="insert")
    if _has_duplicates(Path(run_dir, "samples"), tuple(files)):
        lf = lf.unique(subset=KEY_COLUMNS, keep="first", maintain_order=True)
    return lf


@lru_cache(maxsize=64)
def _has_duplicates(root: Path, files: tuple[Path, ...]) -> bool:
    """Whether some key is in two shards (read from the key columns only; the lines naming the shards whose
    rows are dropped go to stderr, once)."""
    return read_shards(root, SAMPLE_SCHEMA, KEY_COLUMNS, what="sample", columns=KEY_COLUMNS).height < sum(
        pl.scan_parquet(f).select(pl.len()).collect().item() for f in files)


def read_run_samples(run_dir: str | Path, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """``evalcore.records.read_samples`` (only ``columns`` when given), tolerating shards written before a column
    was appended to the schema (the missing column reads as null)."""
    if columns is None:
        try:
            return read_samples(run_dir)
        except pl.exceptions.ColumnNotFoundError:
            pass
    lf = scan_run_samples(run_dir)
    return (lf if columns is None else lf.select(list(columns))).collect()


def samples(run_dirs: str | Path | Sequence[str | Path], *, light: bool = False) -> pl.DataFrame:
    """All per-sample rows of the run folders (``SAMPLE_SCHEMA`` columns plus ``run`` = run label), the same
    (version, sample key) counted once (the first folder given wins). ``light``: without the
    ``HEAVY_COLUMNS`` (responses, errors, traces), which no table needs; the report reads them for the rows it
    shows only (``long_texts``)."""
    cols = list(LIGHT_COLUMNS) if light else list(SAMPLE_SCHEMA)
    # each run's answers are graded with the parse its config leads with (`parser`, records.primary_parse)
    frames = [primary_parse(read_run_samples(r.path, cols if light else None),
                                    str(r.config.get("parser") or "tolerant")).collect().with_columns(
                  run=pl.lit(r.label))
              for r in load_runs(run_dirs)]
    if not frames:
        return pl.DataFrame(schema={**{c: SAMPLE_SCHEMA[c] for c in cols}, "run": pl.String()})
    df = pl.concat(frames, how="vertical")
    return df.unique(subset=["version", *KEY_COLUMNS], keep="first", maintain_order=True)


def scan_samples(run_dirs: str | Path | Sequence[str | Path]) -> pl.LazyFrame:
    """``samples(run_dirs, light=True)`` as a lazy frame: a query of a few columns reads only those."""
    frames = [primary_parse(scan_run_samples(r.path).select(LIGHT_COLUMNS), str(r.config.get("parser") or "tolerant"))
              .with_columns(run=pl.lit(r.label)) for r in load_runs(run_dirs)]
    if not frames:
        return pl.LazyFrame(schema={**{c: SAMPLE_SCHEMA[c] for c in LIGHT_COLUMNS}, "run": pl.String()})
    return pl.concat(frames, how="vertical").unique(subset=["version", *KEY_COLUMNS], keep="first",
                                                    maintain_order=True)


def long_texts(runs: Sequence[Run], keys: pl.DataFrame, columns: Sequence[str], max_chars: int) -> pl.DataFrame:
    """For the samples in ``keys`` (columns run, version and the key columns): each of ``columns`` cut to
    ``max_chars`` characters and its full length as ``<column>_len``. Read with the streaming engine and
    filtered by key inside the scan, so a run's responses are never all in memory at once."""
    key_cols = ["run", "version", *KEY_COLUMNS]
    frames = []
    for r in runs:
        want = keys.filter(pl.col("run") == r.label)
        if want.is_empty():
            continue
        lf = scan_run_samples(r.path).with_columns(run=pl.lit(r.label))
        frames.append(
            lf.join(want.lazy(), on=key_cols, how="semi")
            .select(*key_cols,
                    *[pl.col(c).str.slice(0, max_chars).alias(c) for c in columns],
                    *[pl.col(c).str.len_chars().alias(f"{c}_len") for c in columns])
            .collect(engine="streaming")
            .unique(subset=key_cols, keep="first")
        )
    if not frames:
        return pl.DataFrame(schema={**{c: pl.String for c in ("run", "version", *KEY_COLUMNS)}, "repeat": pl.Int64,
                                    **{c: pl.String for c in columns}, **{f"{c}_len": pl.UInt32 for c in columns}})
    return pl.concat(frames, how="vertical")


def frame_of(src: Source) -> pl.DataFrame:
    if isinstance(src, pl.LazyFrame):
        src = src.collect()
    if isinstance(src, pl.DataFrame):
        df = src
        if "run" not in df.columns:
            df = df.with_columns(run=pl.col("run_id") if "run_id" in df.columns else pl.lit(""))
        if "benchmark" not in df.columns:
            df = df.with_columns(benchmark=pl.lit(default_benchmark()))
        if "version" not in df.columns:
            df = df.with_columns(version=pl.lit(""))
        return df
    # no table reads responses, errors or traces
    return samples(src, light=True)


def runs_of(src: Source) -> list[Run]:
    if isinstance(src, pl.DataFrame | pl.LazyFrame):
        return []
    return load_runs(src)


def default_benchmark() -> str:
    """The benchmark a hand-made frame without a ``benchmark`` column holds, and whose rows the checks of a run
    folder without a manifest read: the registry's default (a run config's dataset entry naming none)."""
    return benchmarks.default().name


def configured_models(src: Source) -> dict[str, bool]:
    """Every model the runs' configs name, with its ``text_only`` flag."""
    out: dict[str, bool] = {}
    for r in runs_of(src):
        for m in r.config.get("models") or []:
            name = str(m.get("name"))
            out[name] = out.get(name, False) or bool(m.get("text_only"))
    return out


def text_only_models(src: Source) -> set[str]:
    """The runs' text-only LLMs: the runs' configured ``text_only`` models, and a model whose rows of the
    default benchmark are all full_text_only (``evalcore.report_section.text_only_models``)."""
    return infer_text_only(frame_of(src), default_benchmark(), configured_models(src))


@lru_cache(maxsize=16)
def _load_dataset_cached(path: str):
    from evalcore.dataset import load_dataset

    return load_dataset(path, check_images=False)


def run_datasets(run: Run) -> list[tuple[dict[str, Any], Any]]:
    """(manifest dataset entry, loaded Dataset or None when its folder is gone) for each dataset of a run."""
    out = []
    for d in (run.manifest or {}).get("datasets") or []:
        ds = None
        path = d.get("path")
        if path and Path(path, "manifest.json").is_file():
            try:
                ds = _load_dataset_cached(str(path))
            except Exception:  # an unreadable dataset only costs the prompt/expected-count details
                ds = None
        out.append((d, ds))
    return out


def instance_data(runs: Sequence[Run], benchmark: str) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(version, instance_id) -> the instance's data, for every dataset of ``benchmark`` of the runs still on
    disk."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for run in runs:
        for entry, ds in run_datasets(run):
            if ds is None or str(entry.get("benchmark")) != benchmark:
                continue
            version = str(entry.get("version"))
            for inst in ds.instances:
                out[(version, inst.instance_id)] = inst.data
    return out
