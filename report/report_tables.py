"""Every table of one report, computed once from the runs' samples (``compute_tables``), and what a report
wrote (``ReportResult``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from evalcore.report_section import Section
from report.comparisons import Comparisons, comparing
from report.completeness import missing_parts
from report.judgments import judge_csvs
from report.model_groups import ModelCatalogue
from report.runs import scan_samples
from report.sections import RunsContext, benchmark_sections


@dataclass
class ReportResult:
    html: Path | None
    markdown: Path | None
    csvs: list[Path] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    missing: pl.DataFrame | None = None
    n_samples_shown: int = 0


@dataclass
class Tables:
    missing: pl.DataFrame
    judge_csvs: dict[str, pl.DataFrame] = field(default_factory=dict)  # report.judgments.judge_csvs
    # every registered benchmark's own sections (report.sections.benchmark_sections)
    sections: list[Section] = field(default_factory=list)


GROUP_BY = ("none", "open_closed")


def improvement(run_dirs: Sequence[str | Path], df: pl.DataFrame | None = None,
                comparisons: Comparisons | None = None, *, n_boot: int, seed: int,
                source: str = "comparisons") -> dict[str, pl.DataFrame]:
    """The comparing benchmark's tables of the runs (``Benchmark.comparison_tables``, e.g. GraphVerse Tables
    3 / 8 / 11 / 13) as ``comparisons`` asks (None: the benchmark's default), for the command line's printout
    (the report's own come with the benchmark's sections). An arm the runs do not hold raises
    ``ComparisonError``, one line naming ``source`` and the field."""
    bench = comparing()
    if bench is None or (not run_dirs and df is None):
        return {}
    # lazy for the command line: the benchmark reads which arms exist from a few columns before anything else
    lf = scan_samples(run_dirs) if df is None else df.lazy()
    ctx = RunsContext(bench.name, lf, [Path(p) for p in run_dirs], n_boot, seed, comparisons=comparisons)
    return bench.comparison_tables(ctx, source)


def compute_tables(run_dirs: Sequence[str | Path], df: pl.DataFrame, *, n_boot: int, seed: int,
                   lvlm_mode: str, group_by: str = "none", catalogue: ModelCatalogue | None = None,
                   comparisons: Comparisons | None = None) -> Tables:
    """``catalogue``: the caller's model registry entries (``report.model_groups``), for the benchmarks'
    grouping by model access (``group_by``) and model families. ``comparisons``: which arm is the baseline of which
    in the improvement tables (``improvement``)."""
    return Tables(
        missing=missing_parts(list(run_dirs)),
        judge_csvs=judge_csvs(list(run_dirs)),
        sections=benchmark_sections(df, run_dirs, n_boot=n_boot, seed=seed, group_by=group_by, lvlm_mode=lvlm_mode,
                                    catalogue=catalogue, comparisons=comparisons),
    )
