"""The report's tables in one namespace, for notebooks, the HTML report and the explorer: Polars frames over
one or several run folders. The tables live in the modules named below; this module only gathers their
public names (``from report import analysis; analysis.leaderboard(runs)``).

Every public function takes ``src``: a run folder, a list of run folders, or an already loaded per-sample
frame (``samples(...)`` output or any frame with the ``SampleRecord`` columns). Metric values always come
from ``nphe4v.metrics`` (and ``gie.metrics`` for GraphVerse); the report's modules only add what a report needs
around them:

* **Versions stay apart.** Instance ids repeat across dataset versions (``bsp-L01-000`` exists in every
  version), so NPHardEval4V metrics are computed per ``version`` and every table carries a ``version`` column.
  The same (version, sample key) seen in two run folders is counted once.
* **Intervals beside every accuracy-type number** (95%):
  - proportions of counts (ER, RA, per-level accuracy) get the Wilson score interval of the pooled count
    (``evalcore.stats.wilson_interval``, in ``nphe4v.report_tables``)
    (``ER_lo``/``ER_hi`` = Wilson of Σ parsable / Σ n; it equals ER's plain mean over level rows whenever the
    levels hold equally many questions, which the generator guarantees);
  - AA (and RA_corrected, which is not a plain proportion) get a percentile bootstrap over instances:
    instances are resampled with replacement inside each (task, level) stratum, the same draw for every model
    and prompt mode (so models stay comparable), each replicate is scored with the definitions of
    ``metrics.level_table`` / ``metrics.aggregate`` from per-instance counts (a test checks the bounds against
    re-scoring resampled sample tables with ``metrics.leaderboard`` / ``metrics.per_task``), and
    ``numpy.random.default_rng(seed)`` fixes the draws (same inputs and seed -> same bounds).
* **Paper summaries**: Appendix B (``consistency_summary``), §5.3 failure categories (``failure_categories``),
  Figure 4's closed vs open grouping (``open_closed``, given the caller's model catalogue), GraphVerse
  Table 2 (``graphverse_families``).
  - every table also carries its counts (``n`` questions, ``n_instances``, ``n_rec`` recognition instances).
* ``missing_parts`` lists what a partial run lacks, so a report of a partial run says so.
"""


from collections.abc import Callable
from functools import wraps
from typing import Any

import polars as pl

from gie import report_tables as _gv
from gie.benchmark import BENCHMARK as _gv_plugin
from gie.report_tables import FAILURE_MODES, table2_labels
from nphe4v import consistency as _consistency
from nphe4v import failure_analysis as _failures
from nphe4v import report_tables as _nph
from nphe4v.bootstrap import AA_COLUMNS
from nphe4v.consistency import NEAR_ZERO_VARIANCE, consistency_summary
from nphe4v.report_tables import (
    DEFAULT_BOOT,
    DEFAULT_LVLM_MODE,
    DEFAULT_SEED,
    LEADERBOARD_COLUMNS,
    LLM_MODE,
    wilson_columns,
)
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
    frame_of,
    instance_data,
    load_runs,
    long_texts,
    read_run_samples,
    run_datasets,
    runs_of,
    samples,
    scan_run_samples,
    text_only_models,
)

NPH_BENCHMARK = _nph.NAME
GV_BENCHMARK = _gv_plugin.name


def _from_runs(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a table of the plug-in's, over a frame of samples) over a ``Source``: run folders are read first."""

    @wraps(fn)
    def table(src: Source, *args: Any, **kwargs: Any) -> Any:
        return fn(frame_of(src), *args, **kwargs)

    return table


leaderboard = _from_runs(_nph.leaderboard)
per_task = _from_runs(_nph.per_task)
class_profile = _from_runs(_nph.class_profile)
heatmap_table = _from_runs(_nph.heatmap_table)
prompt_mode_ablation = _from_runs(_nph.prompt_mode_ablation)
answer_checks = _from_runs(_nph.answer_checks)
version_consistency = _from_runs(_consistency.version_consistency)


def lvlm_vs_llm(src: Source, *, text_only: set[str] | None = None, **kwargs: Any) -> pl.DataFrame:
    return _nph.lvlm_vs_llm(frame_of(src), text_only=text_only_models(src) if text_only is None else text_only,
                            **kwargs)


graphverse = _from_runs(_gv.graphverse)


def graphverse_judged(src: Source, df: pl.DataFrame | None = None) -> dict[str, pl.DataFrame]:
    """``gie.report_tables.graphverse_judged`` with the judge's output of the runs (``report.sections``)."""
    from report.sections import RunsContext

    frame = frame_of(src) if df is None else df
    ctx = RunsContext(GV_BENCHMARK, frame.lazy(), [r.path for r in runs_of(src)])
    return _gv.graphverse_judged(frame, ctx)


def graphverse_families(df: pl.DataFrame, judged: dict[str, pl.DataFrame] | None = None,
                        catalogue: ModelCatalogue | None = None) -> pl.DataFrame:
    """``gie.report_tables.graphverse_families`` with model families from the caller's ``catalogue``."""
    models = df["model"].unique().to_list() if "model" in df.columns else []
    return _gv.graphverse_families(df, judged, model_info(models, catalogue))


def failure_categories(src: Source, df: pl.DataFrame | None = None) -> dict[str, pl.DataFrame]:
    """``nphe4v.failure_analysis.failure_categories`` with the instances of the runs' datasets."""
    return _failures.failure_categories(frame_of(src) if df is None else df,
                                        instance_data(runs_of(src), NPH_BENCHMARK))


__all__ = [
    "AA_COLUMNS", "ACCESS_ORDER", "configured_models", "DEFAULT_BOOT", "DEFAULT_LVLM_MODE", "DEFAULT_SEED", "FAILURE_MODES",
    "GV_BENCHMARK", "HEAVY_COLUMNS", "JUDGE_CSVS", "JUDGE_DIR", "LEADERBOARD_COLUMNS", "LEGACY_JUDGE_DIR",
    "LIGHT_COLUMNS", "LLM_MODE", "NEAR_ZERO_VARIANCE", "NPH_BENCHMARK", "RUN_MANIFEST", "ModelCatalogue", "Run",
    "Source", "answer_checks", "class_profile", "consistency_summary", "failure_categories", "graphverse",
    "graphverse_families", "graphverse_judged", "heatmap_table", "instance_data", "judge_csvs", "judge_table",
    "judgments", "leaderboard", "load_runs", "long_texts", "lvlm_vs_llm", "missing_parts", "model_info",
    "per_task", "prompt_mode_ablation", "read_run_samples", "run_datasets", "run_judgments",
    "samples", "scan_run_samples", "table2_labels", "text_only_models", "version_consistency", "wilson_columns",
]
