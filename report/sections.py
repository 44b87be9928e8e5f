"""The benchmarks' own report sections: every registered benchmark with samples in the runs is asked for its
sections (`Benchmark.report_sections`, `evalcore.report_section`) with a `RunsContext` over the runs; the
report renders them without knowing the benchmark (report/html/section_view.py, report/templates/sections.j2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from evalcore import benchmarks
from evalcore.report_section import Section
from report.model_groups import ModelCatalogue, model_info
from report.runs import OWN_SECTIONS, load_runs

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


def benchmark_sections(df: pl.DataFrame, run_dirs: Sequence[str | Path] = (), *, n_boot: int = 500, seed: int = 0,
                       group_by: str = "none", lvlm_mode: str = DEFAULT_LVLM_MODE,
                       catalogue: ModelCatalogue | None = None) -> list[Section]:
    """The sections of every registered benchmark with samples in ``df`` (answers already graded with each
    run's parser, ``analysis.samples``) that the report does not yet draw itself (``report.runs.OWN_SECTIONS``),
    in registry order."""
    present = set(df["benchmark"].unique().to_list()) if "benchmark" in df.columns else set()
    out: list[Section] = []
    for b in benchmarks.registry().values():
        if b.name not in present or b.name in OWN_SECTIONS:
            continue
        ctx = RunsContext(b.name, df.lazy().filter(pl.col("benchmark") == b.name), [Path(p) for p in run_dirs],
                          n_boot, seed, group_by, lvlm_mode, catalogue)
        out += b.report_sections(ctx)
    return out
