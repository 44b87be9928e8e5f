"""The report's run-folder API in one namespace, for notebooks, the HTML report and the explorer: the runs, their
per-sample rows and what a partial run lacks, as Polars frames over one or several run folders
(``from report import analysis; df = analysis.samples(runs, light=True)``).

A benchmark's own tables live in its package and take such a frame (the report names no benchmark):
``nphe4v.report_tables.leaderboard(analysis.frame_of(runs))`` (NPHardEval4V's ER / AA / RA with intervals,
per task, class profile, heatmaps, prompt-mode ablation, LVLM vs LLM), ``nphe4v.consistency``,
``nphe4v.failure_analysis``, ``gie.report_tables.graphverse(frame)`` (GraphVerse's accuracy tables) and, with
the judge's output through ``report.sections.RunsContext``, ``gie.report_tables.graphverse_judged``.

* **Versions stay apart.** Instance ids repeat across dataset versions, so every table carries a ``version``
  column. The same (version, sample key) seen in two run folders is counted once (``samples``).
* Each run's answers are graded with the parse its config leads with (``parser``: ``evalcore.records.primary_parse``).
* ``missing_parts`` lists what a partial run lacks, so a report of a partial run says so.
"""

from report.completeness import missing_parts
from report.judgments import (
    JUDGE_CSVS,
    JUDGE_DIR,
    LEGACY_JUDGE_DIR,
    judge_csvs,
    judge_table,
    judgments,
    run_judgments,
)
from report.model_groups import ACCESS_ORDER, ModelCatalogue, model_info
from report.runs import (
    HEAVY_COLUMNS,
    LIGHT_COLUMNS,
    RUN_MANIFEST,
    Run,
    Source,
    configured_models,
    default_benchmark,
    frame_of,
    instance_data,
    load_runs,
    long_texts,
    read_run_samples,
    run_datasets,
    samples,
    scan_run_samples,
    scan_samples,
    text_only_models,
)
from report.sections import DEFAULT_BOOT, DEFAULT_LVLM_MODE, DEFAULT_SEED, RunsContext, benchmark_sections

__all__ = [
    "ACCESS_ORDER", "DEFAULT_BOOT", "DEFAULT_LVLM_MODE", "DEFAULT_SEED", "HEAVY_COLUMNS", "JUDGE_CSVS", "JUDGE_DIR",
    "LEGACY_JUDGE_DIR", "LIGHT_COLUMNS", "RUN_MANIFEST", "ModelCatalogue", "Run", "RunsContext", "Source",
    "benchmark_sections", "configured_models", "default_benchmark", "frame_of", "instance_data", "judge_csvs",
    "judge_table", "judgments", "load_runs", "long_texts", "missing_parts", "model_info", "read_run_samples",
    "run_datasets", "run_judgments", "samples", "scan_run_samples", "scan_samples", "text_only_models",
]
