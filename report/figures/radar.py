"""Figure 4 of the NPHardEval4V paper: RA, ER and AA per complexity class, one radar per model group."""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from report.figures.canvas import (
    CLASS_COLORS,
    CLASS_NAMES,
    GRID,
    PALETTE,
    Canvas,
    empty_figure,
    series_label,
    text_width,
)

PER_ROW = 4
RADAR_AXES: tuple[tuple[str, str], ...] = tuple((m, c) for m in ("AA", "ER", "RA") for c in ("P", "NPC", "NPH"))


def default_groups(labels: Sequence[str], size: int = 4) -> list[tuple[str, list[str]]]:
    """Models in order, ``size`` per radar: groups "a", "b", ..."""
    out = []
    for i in range(0, len(labels), size):
        out.append((chr(ord("a") + len(out)) if len(out) < 26 else str(len(out)), list(labels[i:i + size])))
    return out


def radar(profile: pl.DataFrame, groups: Sequence[tuple[str, Sequence[str]]] | None = None,
          title: str = "RA, ER and AA by complexity class", empty: str = "No samples.") -> Canvas:
    """Figure 4 from ``nphe4v.report_tables.class_profile`` (a ``radar`` spec): one radar per group of series (model, or model · version
    with several versions); nine axes: AA, ER and RA on P, NP-complete and NP-hard; scale 0..1."""
    if profile.is_empty():
        return empty_figure(title, empty)
    nv = profile["version"].n_unique()
    values: dict[str, dict[tuple[str, str], float]] = {}
    for r in profile.iter_rows(named=True):
        lab = series_label(r["model"], r["version"], nv)
        d = values.setdefault(lab, {})
        for m in ("AA", "ER", "RA"):
            if r[m] is not None:
                d[(m, r["complexity"])] = float(r[m])
    labels = list(values)
    groups = [(g, [m for m in ms if m in values]) for g, ms in (groups or default_groups(labels))]
    groups = [(g, ms) for g, ms in groups if ms] or default_groups(labels)
    colors = {lab: PALETTE[i % len(PALETTE)] for i, lab in enumerate(labels)}
    panel, radius = 440, 108
    panel_h = int(2 * radius * 1.3 + 40)
    legend_rows = max(len(ms) for _, ms in groups)
    # small multiples: at most PER_ROW radars side by side, further groups on further rows, so that a run of
    # many models gives a grid readable at page width rather than one strip thousands of pixels wide
    cols = min(PER_ROW, len(groups))
    row_h = panel_h + 18 * legend_rows + 10
    height = 40 + row_h * math.ceil(len(groups) / cols)
    c = Canvas(max(panel * cols, int(text_width(title, 15)) + 40), height, title)
    c.text(12, 18, title, 15, bold=True)
    n = len(RADAR_AXES)
    for i, (gname, models) in enumerate(groups):
        gi, top = i % cols, 40 + (i // cols) * row_h
        ox, oy = gi * panel + panel / 2, top + panel_h / 2 + 8

        def pt(k: int, v: float, ox: float = ox, oy: float = oy) -> tuple[float, float]:
            ang = -math.pi / 2 + 2 * math.pi * k / n
            return ox + radius * v * math.cos(ang), oy + radius * v * math.sin(ang)

        c.text(gi * panel + 12, top + 4, f"({gname})", 13, bold=True)
        for ring in (0.25, 0.5, 0.75, 1.0):
            c.polygon([pt(k, ring) for k in range(n)], None, GRID, 1)
        c.text(ox + 3, oy - radius * 0.5, "0.5", 9, fill="#888888")
        c.text(ox + 3, oy - radius, "1", 9, fill="#888888")
        for k, (metric, cls) in enumerate(RADAR_AXES):
            x, y = pt(k, 1.0)
            c.line(ox, oy, x, y, GRID, 1)
            lx, ly = pt(k, 1.16)
            anchor = "middle" if abs(lx - ox) < 8 else ("start" if lx > ox else "end")
            c.text(lx, ly, f"{metric} {CLASS_NAMES[cls]}", 10, anchor=anchor, fill=CLASS_COLORS[cls])
        for lab in models:
            pts = [pt(k, values[lab].get(ax, 0.0)) for k, ax in enumerate(RADAR_AXES)]
            c.polygon(pts, colors[lab], colors[lab], 2, opacity=0.12)
            for x, y in pts:
                c.circle(x, y, 2.5, colors[lab])
        ly = top + panel_h + 4
        for lab in models:
            c.rect(gi * panel + 16, ly - 5, 10, 10, colors[lab])
            c.text(gi * panel + 32, ly, lab, 11)
            ly += 18
    return c
