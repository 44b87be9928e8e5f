"""Every table of one report, computed once from the runs' samples (``compute_tables``), and what a report
wrote (``ReportResult``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from evalcore.report_section import Section
from gie.comparisons import ComparisonError, Comparisons, auto_comparisons, missing_arms
from gie.improvement_tables import BENCHMARK, arms_present, improvement_tables
from report import analysis
from report.judgments import judged_samples
from report.model_groups import ModelCatalogue
from report.runs import scan_run_samples
from report.sections import benchmark_sections


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
    """GraphVerse Tables 3 / 8 / 11 / 13 of the runs (``gie.improvement_tables``) as ``comparisons`` asks, for
    the command line's printout (the report's own come with the benchmark's sections);
    without a spec, each model's other prompt modes (PoT) against its direct inference (``auto_comparisons``).
    An arm the runs do not hold raises ``ComparisonError``, one line naming ``source`` and the field."""
    if not run_dirs and df is None:
        return {}
    if df is None:  # the CLI: which arms exist, from four columns, before reading anything else
        present = arms_present(pl.concat([scan_run_samples(p).select("benchmark", "model", "prompt_mode", "status")
                                          for p in run_dirs], how="vertical"))
    else:
        present = arms_present(df)
    spec = comparisons if comparisons is not None else auto_comparisons(present)
    errors = missing_arms(spec, present, source)
    if errors:
        raise ComparisonError(errors[0])
    if spec.empty:  # most reports: no judgments read twice for nothing
        return {}
    return improvement_tables(judged_samples(list(run_dirs), BENCHMARK, df), spec, n_boot=n_boot, seed=seed)


def compute_tables(run_dirs: Sequence[str | Path], df: pl.DataFrame, *, n_boot: int, seed: int,
                   lvlm_mode: str, group_by: str = "none", catalogue: ModelCatalogue | None = None,
                   comparisons: Comparisons | None = None) -> Tables:
    """``catalogue``: the caller's model registry entries (``report.model_groups``), for the benchmarks'
    grouping by model access (``group_by``) and model families. ``comparisons``: which arm is the baseline of which
    in the improvement tables (``improvement``)."""
    return Tables(
        missing=analysis.missing_parts(list(run_dirs)),
        judge_csvs=analysis.judge_csvs(list(run_dirs)),
        sections=benchmark_sections(df, run_dirs, n_boot=n_boot, seed=seed, group_by=group_by, lvlm_mode=lvlm_mode,
                                    catalogue=catalogue, comparisons=comparisons),
    )
