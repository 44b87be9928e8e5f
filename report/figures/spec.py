"""Figures from a benchmark's figure specs (`evalcore.report_section.Figure`): the report draws each kind the
same way for every benchmark, so a benchmark gives data and axes, never drawing code."""

from __future__ import annotations

from evalcore.report_section import FIGURE_KINDS, Figure
from report.figures.bars import BarRow, _bars_canvas
from report.figures.canvas import PALETTE, Canvas, empty_figure


def draw(fig: Figure) -> Canvas:
    """The canvas of ``fig``; a kind the report cannot draw is a ValueError naming the figure."""
    if fig.kind == "bars":
        return _bars(fig)
    raise ValueError(f"figure {fig.name!r}: kind {fig.kind!r} is not one of {', '.join(FIGURE_KINDS)}")


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
    return _bars_canvas(fig.title, [("", [BarRow(k, v) for k, v in rows.items()])], series, colors,
                        [(s, colors[s]) for s in series], x_max=float(fig.params.get("x_max", 1.0)),
                        panel_w=float(fig.params.get("panel_width", 620)))
