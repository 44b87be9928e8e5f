"""The benchmarks' own report sections: every registered benchmark with samples in the runs is asked for its
sections (`Benchmark.report_sections`, `evalcore.report_section`) with a `RunsContext` over the runs; the
report renders them without knowing the benchmark (report/html/section_view.py, report/templates/sections.j2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from evalcore import benchmarks
from evalcore.report_section import Section, Text
from report.judge_cards import card_lines
from report.judgments import judge_csvs, judgments
from report.model_groups import ModelCatalogue, model_info
from report.runs import configured_models, instance_data, load_runs

DEFAULT_LVLM_MODE = "figure+limited_text"
DEFAULT_BOOT = 500  # the report's bootstrap replicates (`nphe4v report --n-boot`)
DEFAULT_SEED = 0  # and their seed


@dataclass
class RunsContext:
    """`evalcore.report_section.ReportContext` over run folders (``run_dirs``, possibly none: a frame alone)
    for the benchmark ``benchmark``; ``samples`` is its rows only."""

    benchmark: str
    samples: pl.LazyFrame
    run_dirs: Sequence[Path] = ()
    n_boot: int = 500
    seed: int = 0
    group_by: str = "none"
    lvlm_mode: str = DEFAULT_LVLM_MODE
    catalogue: ModelCatalogue | None = None
    comparisons: Any = None
    _judgments: pl.DataFrame | None = field(default=None, init=False, repr=False)

    def text_only_models(self) -> set[str]:
        return {str(m.get("name")) for r in load_runs(list(self.run_dirs))
                for m in r.config.get("models") or [] if m.get("text_only")}

    def configured_models(self) -> dict[str, bool]:
        return configured_models(list(self.run_dirs))

    def instance_data(self) -> dict[tuple[str, str], Mapping[str, Any]]:
        return instance_data(load_runs(list(self.run_dirs)), self.benchmark)

    def model_info(self, models: Sequence[str]) -> pl.DataFrame:
        return model_info(models, self.catalogue)

    def judgments(self) -> pl.DataFrame | None:
        if self._judgments is None:
            js = judgments(list(self.run_dirs), self.benchmark) if self.run_dirs else None
            self._judgments = pl.DataFrame() if js is None else js
        return None if self._judgments.is_empty() else self._judgments

    def judge_join(self, samples: pl.DataFrame, judgments: pl.DataFrame) -> pl.DataFrame:
        from judge import vgr

        # per run: sample keys repeat across runs (the same models on several versions); vgr.join wants one
        # judgment per sample key
        return pl.concat([vgr.join(part, judgments.filter(pl.col("run_id") == rid))
                          for (rid,), part in samples.group_by(["run_id"], maintain_order=True)], how="vertical")

    def vgr_table(self, joined: pl.DataFrame, by: Sequence[str], *, task_order: Sequence[str] = (),
                  edit_order: Sequence[str] = ()) -> pl.DataFrame:
        from judge import vgr

        return vgr.vgr_table(joined, tuple(by), task_order=task_order, edit_order=edit_order)

    def failure_modes(self, judgments: pl.DataFrame) -> pl.DataFrame:
        from judge import failure_modes

        return failure_modes.by_response(judgments)

    def judge_cards(self) -> pl.DataFrame | None:
        runs = load_runs(list(self.run_dirs))
        return card_lines([r.path for r in runs], [r.label for r in runs])

    def judge_files(self) -> dict[str, pl.DataFrame]:
        return {k: v for k, v in judge_csvs(list(self.run_dirs)).items() if k != "judge_card"}


def benchmark_sections(df: pl.DataFrame, run_dirs: Sequence[str | Path] = (), *, n_boot: int = 500, seed: int = 0,
                       group_by: str = "none", lvlm_mode: str = DEFAULT_LVLM_MODE,
                       catalogue: ModelCatalogue | None = None, comparisons: Any = None,
                       skip: Sequence[str] = (), say_absent: bool = True) -> list[Section]:
    """The sections of every registered benchmark (``Benchmark.report_sections``) over its samples in ``df``
    (answers already graded with each run's parser, ``analysis.samples``) but those in ``skip``; with
    ``say_absent``, a benchmark without samples here has one line saying so."""
    present = set(df["benchmark"].unique().to_list()) if "benchmark" in df.columns else set()
    out: list[Section] = []
    for b in benchmarks.registry().values():
        if b.name in skip or (b.name not in present and not say_absent):
            continue
        if b.name not in present:
            empty = f"No {b.title} samples in these runs."
            out.append(Section(f"bench-{b.name}", b.title, (Text(empty, markdown=empty, style="empty"),)))
            continue
        ctx = RunsContext(b.name, df.lazy().filter(pl.col("benchmark") == b.name), [Path(p) for p in run_dirs],
                          n_boot, seed, group_by, lvlm_mode, catalogue, comparisons)
        out += b.report_sections(ctx)
    return out
