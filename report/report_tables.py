"""Every table of one report, computed once from the runs' samples (``compute_tables``), and what a report
wrote (``ReportResult``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from evalcore.report_section import Section
from report import analysis
from report.comparisons import ComparisonError, Comparisons, auto_comparisons, missing_arms
from report.graphverse_tables import vgr_samples
from report.improvement_tables import arms_present, improvement_tables
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
    board: pl.DataFrame
    tasks: pl.DataFrame
    profile: pl.DataFrame
    heat: pl.DataFrame
    ablation: pl.DataFrame
    llm: pl.DataFrame
    consistency: pl.DataFrame
    missing: pl.DataFrame
    graphverse: dict[str, pl.DataFrame]
    text_only: set[str]
    judged: dict[str, pl.DataFrame] = field(default_factory=dict)  # analysis.graphverse_judged
    judge_csvs: dict[str, pl.DataFrame] = field(default_factory=dict)  # analysis.judge_csvs
    consistency_summary: pl.DataFrame | None = None  # analysis.consistency_summary (Appendix B)
    failures: dict[str, pl.DataFrame] = field(default_factory=dict)  # analysis.failure_categories (§5.3)
    open_closed: pl.DataFrame | None = None  # analysis.open_closed (Figure 4), with --group-by open_closed
    gv_families: pl.DataFrame | None = None  # analysis.graphverse_families (GraphVerse Table 2)
    answer_checks: pl.DataFrame | None = None  # analysis.answer_checks (stated values, the papers' parse)
    improvement: dict[str, pl.DataFrame] = field(default_factory=dict)  # improvement_tables (Tables 3/8/11/13)
    # the sections of the other registered benchmarks with samples here (report.sections.benchmark_sections)
    plugins: list[Section] = field(default_factory=list)


GROUP_BY = ("none", "open_closed")


def improvement(run_dirs: Sequence[str | Path], df: pl.DataFrame | None = None,
                comparisons: Comparisons | None = None, *, n_boot: int, seed: int,
                source: str = "comparisons") -> dict[str, pl.DataFrame]:
    """GraphVerse Tables 3 / 8 / 11 / 13 of the runs (``report.improvement_tables``) as ``comparisons`` asks;
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
    return improvement_tables(vgr_samples(list(run_dirs), df), spec, n_boot=n_boot, seed=seed)


def compute_tables(run_dirs: Sequence[str | Path], df: pl.DataFrame, *, n_boot: int, seed: int,
                   lvlm_mode: str, group_by: str = "none", catalogue: ModelCatalogue | None = None,
                   comparisons: Comparisons | None = None) -> Tables:
    """``catalogue``: the caller's model registry entries (``report.model_groups``), for Figure 4's open /
    closed grouping and GraphVerse Table 2's families. ``comparisons``: which arm is the baseline of which in
    GraphVerse's improvement tables (``improvement``)."""
    board = analysis.leaderboard(df, n_boot=n_boot, seed=seed)
    tasks = analysis.per_task(df, n_boot=n_boot, seed=seed)
    text_only = analysis.text_only_models(list(run_dirs))
    consistency = analysis.version_consistency(df, board=board, tasks_table=tasks)
    judged = analysis.graphverse_judged(list(run_dirs), df)
    return Tables(
        board=board,
        tasks=tasks,
        profile=analysis.class_profile(df, board=board),
        heat=analysis.heatmap_table(df),
        ablation=analysis.prompt_mode_ablation(df, board=board),
        llm=analysis.lvlm_vs_llm(df, lvlm_mode=lvlm_mode, text_only=text_only, board=board),
        consistency=consistency,
        missing=analysis.missing_parts(list(run_dirs)),
        graphverse=analysis.graphverse(df),
        text_only=text_only,
        judged=judged,
        judge_csvs=analysis.judge_csvs(list(run_dirs)),
        consistency_summary=analysis.consistency_summary(consistency),
        failures=analysis.failure_categories(list(run_dirs), df),
        open_closed=analysis.open_closed(board, catalogue) if group_by == "open_closed" else None,
        gv_families=analysis.graphverse_families(df, judged, catalogue),
        answer_checks=analysis.answer_checks(df),
        improvement=improvement(run_dirs, df, comparisons, n_boot=n_boot, seed=seed),
        plugins=benchmark_sections(df, run_dirs, n_boot=n_boot, seed=seed, group_by=group_by, lvlm_mode=lvlm_mode,
                                   catalogue=catalogue),
    )
