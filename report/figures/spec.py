"""Figures from a benchmark's figure specs (`evalcore.report_section.Figure`): the report draws each kind the
same way for every benchmark, so a benchmark gives data and axes, never drawing code."""

from __future__ import annotations

from collections.abc import Sequence

from evalcore.report_section import FIGURE_KINDS, Figure
from report.figures.bars import BarRow, _bars_canvas, ablation_bars, failure_mode_bars, lvlm_llm_bars
from report.figures.canvas import PALETTE, Canvas, empty_figure, series_label
from report.figures.heatmap import heatmap
from report.figures.radar import radar


def draw(fig: Figure, groups: Sequence[tuple[str, Sequence[str]]] | None = None) -> Canvas:
    """The canvas of ``fig``; a kind the report cannot draw is a ValueError naming the figure. ``groups``: a
    radar's panels as the caller picks them (series labels), over the figure's own ``groups`` param."""
    title = {"title": fig.title} if fig.title else {}
    empty = {"empty": fig.params["empty"]} if "empty" in fig.params else {}  # the text of a figure without rows
    if fig.kind == "bars":
        return _bars(fig)
    if fig.kind == "radar":
        return radar(fig.data, groups=groups or _series_groups(fig), **title, **empty)
    if fig.kind == "heatmap":
        p = fig.params
        return heatmap(fig.data, p.get("value", "wa"), lo=p.get("lo"), hi=p.get("hi"), count=p.get("count", "n"),
                       task_order=p.get("task_order", ()), task_class=p.get("task_class"), **title, **empty)
    if fig.kind == "mode_bars":
        return ablation_bars(fig.data, **title, **empty)
    if fig.kind == "class_bars":
        return lvlm_llm_bars(fig.data, **title, **empty)
    if fig.kind == "mode_shares":
        return failure_mode_bars(fig.data, **title, **empty)
    raise ValueError(f"figure {fig.name!r}: kind {fig.kind!r} is not one of {', '.join(FIGURE_KINDS)}")


def _series_groups(fig: Figure) -> list[tuple[str, list[str]]] | None:
    # the spec's panels name models: a series is a model, or "model · version" with several versions
    groups = fig.params.get("groups")
    if not groups or fig.data.is_empty():
        return None
    versions = sorted(fig.data["version"].unique().to_list())
    return [(g, [series_label(m, v, len(versions)) for m in models for v in versions]) for g, models in groups]


def _bars(fig: Figure) -> Canvas:
    # columns label, series, value and optionally lo / hi: per label one row of bars, one bar per series
    df = fig.data
    if df.is_empty():
        return empty_figure(fig.title, "No data.")
    missing = [c for c in ("label", "series", "value") if c not in df.columns]
    if missing:
        raise ValueError(f"figure {fig.name!r}: bars data lacks the column(s) {', '.join(missing)}")
    series = list(dict.fromkeys(df["series"].to_list()))
    colors = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(series)}
    rows: dict[str, dict] = {}
    for r in df.iter_rows(named=True):
        rows.setdefault(str(r["label"]), {})[r["series"]] = (r["value"], r.get("lo"), r.get("hi"))
    panel = str(fig.params.get("panel_title", ""))
    return _bars_canvas(fig.title, [(panel, [BarRow(k, v) for k, v in rows.items()])], series, colors,
                        [(s, colors[s]) for s in series], x_max=float(fig.params.get("x_max", 1.0)),
                        panel_w=float(fig.params.get("panel_width", 620)))
