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
from report.model_groups import ModelCatalogue, model_info
from report.runs import OWN_SECTIONS, configured_models, instance_data, load_runs

DEFAULT_LVLM_MODE = "figure+limited_text"


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
            from judge import vgr

            frames = []
            for r in load_runs(list(self.run_dirs)):
                js = vgr.read_judgments(r.path / "judgments")
                if js.is_empty():
                    continue
                ident = vgr.default_judge(r.path, js)
                judge, template = ident if ident is not None else (None, None)
                js = vgr.select(js, judge, template, 0).filter(pl.col("benchmark") == self.benchmark)
                if not js.is_empty():
                    frames.append(js)
            self._judgments = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
        return None if self._judgments.is_empty() else self._judgments


@dataclass
class BenchmarkSections:
    """The benchmarks' sections in registry order, split around the benchmarks the report still draws itself
    (``report.runs.OWN_SECTIONS``): ``before`` them and ``after``."""

    before: list[Section] = field(default_factory=list)
    after: list[Section] = field(default_factory=list)

    @property
    def all(self) -> list[Section]:
        return [*self.before, *self.after]


def benchmark_sections(df: pl.DataFrame, run_dirs: Sequence[str | Path] = (), *, n_boot: int = 500, seed: int = 0,
                       group_by: str = "none", lvlm_mode: str = DEFAULT_LVLM_MODE,
                       catalogue: ModelCatalogue | None = None, skip: Sequence[str] = (),
                       say_absent: bool = True) -> BenchmarkSections:
    """The sections of every registered benchmark (``Benchmark.report_sections``) over its samples in ``df``
    (answers already graded with each run's parser, ``analysis.samples``) but those in ``skip``; with
    ``say_absent``, a benchmark without samples here has one line saying so."""
    present = set(df["benchmark"].unique().to_list()) if "benchmark" in df.columns else set()
    out = BenchmarkSections()
    part = out.before
    for b in benchmarks.registry().values():
        if b.name in OWN_SECTIONS:
            part = out.after
            continue
        if b.name in skip or (b.name not in present and not say_absent):
            continue
        if b.name not in present:
            empty = f"No {b.title} samples in these runs."
            part.append(Section(f"bench-{b.name}", b.title, (Text(empty, markdown=empty, style="empty"),)))
            continue
        ctx = RunsContext(b.name, df.lazy().filter(pl.col("benchmark") == b.name), [Path(p) for p in run_dirs],
                          n_boot, seed, group_by, lvlm_mode, catalogue)
        part += b.report_sections(ctx)
    return out
