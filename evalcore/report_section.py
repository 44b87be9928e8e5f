"""What a benchmark's part of a report is made of, so the benchmark owns its tables and figures and the report
draws them without knowing the benchmark (`Benchmark.report_sections`).

A section is a titled list of blocks: a table (a polars frame and how to show it), a figure *spec* (a frame and
the axes of one of the few figure kinds the report can draw: no drawing code in a benchmark), a paragraph, or a
collapsed group of blocks. Beside its blocks a section names the CSV files the report writes for it. The report
renders every section the same way in HTML, Markdown and the explorer (report/templates), writes its CSVs and
its figures' SVG / PNG files.

`ReportContext` is what the report hands a benchmark to compute its section from: the benchmark's graded
samples and the runs' settings; a benchmark needing more from the runs asks through it, never by importing
the report (the report is above the benchmarks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import polars as pl

ACCESS_ORDER: tuple[str, ...] = ("closed", "open", "builtin", "unregistered")
"""A model's access (`ReportContext.model_info`), in the order groups of models are shown."""

FigureKind = Literal["bars", "radar", "heatmap", "mode_bars", "class_bars", "mode_shares"]
FIGURE_KINDS: tuple[str, ...] = ("bars", "radar", "heatmap", "mode_bars", "class_bars", "mode_shares")


@dataclass(frozen=True)
class Table:
    """A table shown in the page: ``caption`` is its heading; a column c in ``ci`` shows ``c [c_lo, c_hi]``
    (the bound columns are not shown), columns in ``hide`` are not shown; ``max_rows``: the first rows only,
    with a note pointing at the CSV ``csv_name`` that holds them all. ``markdown``: the frame the Markdown
    summary shows instead (None: the same); ``in_markdown`` / ``in_page`` False: not in the summary / page."""

    frame: pl.DataFrame
    caption: str = ""
    digits: int = 3
    ci: tuple[str, ...] | Mapping[str, tuple[str, str]] = ()  # or column -> its (low, high) bound columns
    hide: tuple[str, ...] = ()
    max_rows: int | None = None
    csv_name: str = ""
    id: str = ""
    markdown: pl.DataFrame | None = None
    in_markdown: bool = True
    in_page: bool = True


@dataclass(frozen=True)
class Figure:
    """A figure the report draws (``kind``, one of ``FIGURE_KINDS``) from ``data``, saved as ``name``.svg / .png.

    * ``bars``: columns ``label`` (a row of bars), ``series`` (a bar in the row), ``value`` and, for interval
      whiskers, ``lo`` / ``hi`` (null for none); ``params``: ``x_max`` (default 1), ``panel_width`` (620),
      ``panel_title``;
    * ``radar``: per-class profile rows (columns version, model, complexity, AA, ER, RA; classes P, NPC,
      NPH); ``params``: ``groups`` [(panel title, [series, ...]), ...] (default: four series per panel);
    * ``heatmap``: model x (task, level) cells (columns version, model, task, level and the ``value`` column
      in [0, 1] that ``params`` names, with ``lo`` / ``hi`` / ``count`` column names); ``params`` also
      ``task_order`` (the columns' tasks in order), ``task_class`` (task -> P, NPC or NPH: a bar over each
      class's tasks) and ``empty`` (the text of a figure without rows);
    * ``mode_bars``: per model one bar per prompt mode (columns version, model, prompt_mode, AA_All with
      AA_All_lo / AA_All_hi);
    * ``class_bars``: per kind of model and complexity class, AA and ER panels (columns version, kind, model,
      complexity, AA, ER and their _lo / _hi);
    * ``mode_shares``: per model one stacked bar of failure-mode shares (columns model, n_incorrect and a
      fraction per mode: perception, visual_reasoning, text_reasoning, unattributed).
    Every kind: ``params`` ``empty``, the text of a figure without rows. ``title`` is drawn in the figure,
    ``caption`` written under it."""

    name: str
    kind: FigureKind
    data: pl.DataFrame
    title: str = ""
    caption: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Text:
    """A paragraph: ``html`` is the page's text (the benchmark's own markup: it must hold no untrusted value;
    None: not in the page), ``markdown`` the summary's (None: not in the summary; it may hold its own
    ``##`` headings)."""

    html: str | None
    markdown: str | None = None
    heading: str = ""
    style: str = "note"  # the paragraph's class in the page: "note", or "empty" (what a section lacks)
    escape: bool = False  # ``html`` is plain text (it holds a model name, say): escaped in the page


@dataclass(frozen=True)
class Details:
    """Blocks shown collapsed under ``summary`` in the page (not in the Markdown summary)."""

    summary: str
    blocks: tuple[Block, ...]


Block = Table | Figure | Text | Details


@dataclass(frozen=True)
class Section:
    """One titled part of the report (an ``<h2>`` with anchor ``anchor`` and a link ``nav`` in the page's
    navigation: None the title, "" none), its blocks in order, and ``csvs``: name -> frame, each written as
    ``<name>.csv``. ``md_title``: its heading in the Markdown summary (None: the title; "": none)."""

    anchor: str
    title: str
    blocks: tuple[Block, ...] = ()
    csvs: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    nav: str | None = None
    md_title: str | None = None

    def tables(self) -> list[Table]:
        return [b for b in walk(self.blocks) if isinstance(b, Table)]

    def figures(self) -> list[Figure]:
        return [b for b in walk(self.blocks) if isinstance(b, Figure)]


def walk(blocks: Sequence[Block]) -> list[Block]:
    """Every block, a group's blocks after it, in order."""
    out: list[Block] = []
    for b in blocks:
        out.append(b)
        if isinstance(b, Details):
            out += walk(b.blocks)
    return out


@dataclass(frozen=True)
class ModeBoard:
    """A benchmark's leaderboard as the explorer shows it, one prompt mode at a time (`Benchmark.mode_board`):
    rows per version, model and prompt_mode (``pooled``: every mode together, shown first); the ``ci`` columns
    show ``<c>_lo`` / ``<c>_hi``; the bound columns in ``boot_bounds`` only the instance bootstrap fills (slow: the
    explorer computes them once, in the background, and keeps them in the run's interval cache); ``sort``: the
    column rows are ranked by, highest first; ``note``: the text above it (plain text); ``id``: the table's."""

    table: pl.DataFrame
    columns: tuple[str, ...]
    ci: tuple[str, ...] = ()
    boot_bounds: tuple[str, ...] = ()
    pooled: str = "pooled"
    sort: str = ""
    note: str = ""
    id: str = ""


@dataclass(frozen=True)
class PapersBoard:
    """A benchmark's accuracy as a paper's table in the explorer (`Benchmark.papers_board`): ``accuracy`` per
    model and task (columns model, task, n, correct, acc, ci_low, ci_high: percent, Wilson bounds) and, when
    judged, ``vgr`` per model and task (``task = "All"`` too; columns n_vgr, vgr, ...) shown beside it;
    ``id``: the table's."""

    accuracy: pl.DataFrame
    vgr: pl.DataFrame | None = None
    id: str = ""


class ComparisonError(ValueError):
    """A wrong comparisons spec (`Benchmark.parse_comparisons`), or one naming an arm the runs lack: one line
    naming the file and the field."""


class ReportContext(Protocol):
    """What the report gives a benchmark's `report_sections`: its samples (answers already graded with each
    run's parser; responses and traces left out), the run folders and the report's settings."""

    samples: pl.LazyFrame  # this benchmark's rows only
    run_dirs: Sequence[Path]
    n_boot: int  # bootstrap replicates for the intervals
    seed: int  # their seed
    group_by: str  # "none" or "open_closed" (`nphe4v report --group-by`)
    lvlm_mode: str  # the prompt mode an LVLM is compared in with text-only LLMs
    comparisons: Any  # the report's spec of which arm is the baseline of which (`--comparisons`), None: default

    def text_only_models(self) -> set[str]:
        """The models the runs' configs mark `text_only`."""
        ...

    def model_info(self, models: Sequence[str]) -> pl.DataFrame:
        """Per model its registry entry's ``access`` and ``family`` (``unregistered`` when none)."""
        ...

    def judgments(self) -> pl.DataFrame | None:
        """The default judge's judgments (repeat 0) of this benchmark's samples, None when the judge has not run
        (or the samples come without run folders)."""
        ...

    def judge_join(self, samples: pl.DataFrame, judgments: pl.DataFrame) -> pl.DataFrame:
        """``samples`` with ``judgments``' ``vgr_score`` and ``judge_status`` (joined per run on the sample key:
        keys repeat across runs), null where the judge has not scored a sample."""
        ...

    def vgr_table(self, joined: pl.DataFrame, by: Sequence[str], *, task_order: Sequence[str] = (),
                  edit_order: Sequence[str] = ()) -> pl.DataFrame:
        """The judge's mean VGR-Score per group of ``joined`` (``judge_join``): ``*by, n, judge_errors, vgr,
        coverage, vgr_floor`` (``judge.vgr.vgr_table``)."""
        ...

    def failure_modes(self, judgments: pl.DataFrame) -> pl.DataFrame:
        """Per model over the incorrect responses of ``judgments``: ``n_incorrect`` and each failure mode's
        share in % (``<mode>_pct``)."""
        ...

    def judge_cards(self) -> pl.DataFrame | None:
        """Per run (``run``) the grade line of its judge's card (``grade``), None when no run has one."""
        ...

    def judge_files(self) -> dict[str, pl.DataFrame]:
        """The judge's agreement tables the runs hold (name -> frame with a ``run`` column)."""
        ...

    def configured_models(self) -> dict[str, bool]:
        """Every model the runs' configs name, with its ``text_only`` flag."""
        ...

    def instance_data(self) -> dict[tuple[str, str], Mapping[str, Any]]:
        """(version, instance_id) -> the instance's data, for this benchmark's datasets of the runs still on
        disk."""
        ...


# ------------------------------------------------------------------------ helpers for section computations
Frame = pl.DataFrame | pl.LazyFrame


def as_frame(src: Frame, benchmark: str) -> pl.DataFrame:
    """``src`` collected, with the columns a table reads that a hand-made frame may lack: ``run`` (from
    ``run_id``, else empty), ``benchmark`` (``benchmark`` for every row) and ``version`` (empty)."""
    df = src.collect() if isinstance(src, pl.LazyFrame) else src
    if "run" not in df.columns:
        df = df.with_columns(run=pl.col("run_id") if "run_id" in df.columns else pl.lit(""))
    if "benchmark" not in df.columns:
        df = df.with_columns(benchmark=pl.lit(benchmark))
    if "version" not in df.columns:
        df = df.with_columns(version=pl.lit(""))
    return df


def per_version(df: pl.DataFrame, fn) -> pl.DataFrame | None:
    """Apply ``fn(part) -> DataFrame`` to each dataset version's rows (instance ids repeat across versions);
    concat with ``version`` first; None when there are no rows."""
    outs = []
    for v in sorted(str(v) for v in df["version"].unique().to_list() if v is not None):
        out = fn(df.filter(pl.col("version") == v))
        outs.append(out.with_columns(version=pl.lit(v)).select("version", *out.columns))
    if not outs:
        return None
    return pl.concat(outs, how="diagonal_relaxed")


def drop_single_version(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` without its ``version`` column when it holds one version (or none)."""
    if "version" in df.columns and df["version"].n_unique() <= 1:
        return df.drop("version")
    return df


def empty_table(columns: Sequence[str], strings: Sequence[str] = ("version", "model", "prompt_mode", "task",
                                                             "complexity", "kind")) -> pl.DataFrame:
    """A table without rows: ``strings`` columns are text, the others numbers."""
    return pl.DataFrame(schema={c: (pl.String if c in strings else pl.Float64) for c in columns})


def text_only_models(df: pl.DataFrame, benchmark: str, configured: Mapping[str, bool] | None = None,
                     text_mode: str = "full_text_only") -> set[str]:
    """Models run as text-only LLMs: ``configured`` maps the runs' configured models to their ``text_only``
    flag; a model not configured there is text-only when its rows of ``benchmark`` in ``df`` are all
    ``text_mode`` (no picture sent, no recognition probe)."""
    configured = configured or {}
    flagged = {m for m, flag in configured.items() if flag}
    rows = df.filter(pl.col("benchmark") == benchmark) if "benchmark" in df.columns else df
    if rows.is_empty():
        return flagged
    modes = rows.group_by("model").agg(pl.col("prompt_mode").unique().alias("modes"))
    for row in modes.iter_rows(named=True):
        if row["model"] not in configured and set(row["modes"]) == {text_mode}:
            flagged.add(row["model"])
    return flagged
