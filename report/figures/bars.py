"""Bar figures of the figure kinds (`evalcore.report_section.Figure`): per prompt mode (``mode_bars``, e.g.
NPHardEval4V's Figure 8), per kind of model and complexity class (``class_bars``, its Figure 6), failure-mode
shares stacked (``mode_shares``, GraphVerse's Figure 3) and the generic ``bars``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from evalcore.schema import PROMPT_MODES
from report.figures.canvas import (
    CLASS_COLORS,
    CLASS_NAMES,
    INK,
    MODE_COLORS,
    Canvas,
    draw_legend,
    empty_figure,
    fmt_ci,
    series_label,
    svg_num,
    text_width,
)


@dataclass(frozen=True)
class BarRow:
    label: str
    values: dict[str, tuple[float | None, float | None, float | None]]  # series -> (value, lo, hi)
    header: str | None = None  # a section title drawn above this row


def hbars(c: Canvas, x0: float, y0: float, width: float, rows: Sequence[BarRow], series: Sequence[str],
          colors: dict[str, str], label_w: float, panel_title: str = "", x_max: float = 1.0,
          bar_h: float = 9) -> float:
    """Grouped horizontal bars with interval whiskers and value labels; returns the y below the panel."""
    y = y0
    if panel_title:
        c.text(x0, y, panel_title, 12, bold=True)
        y += 16
    plot_x = x0 + label_w
    plot_w = width - label_w - 40
    top = y
    for r in rows:
        if r.header:
            y += 4
            c.text(x0, y + 6, r.header, 11, bold=True, fill="#555555")
            y += 16
        gh = bar_h * len(series) + 8
        c.text(plot_x - 6, y + gh / 2 - 2, r.label, 11, anchor="end")
        for si, s in enumerate(series):
            v, lo, hi = r.values.get(s, (None, None, None))
            by = y + si * bar_h
            if v is None:
                c.text(plot_x + 2, by + bar_h / 2, "n/a", 8, fill="#999999")
                continue
            w = plot_w * max(0.0, min(v, x_max)) / x_max
            c.rect(plot_x, by, max(w, 0.5), bar_h - 1, colors[s], tip=f"{r.label} · {s}: {fmt_ci(v, lo, hi)}")
            if lo is not None and hi is not None:
                xl, xh = plot_x + plot_w * lo / x_max, plot_x + plot_w * min(hi, x_max) / x_max
                my = by + (bar_h - 1) / 2
                c.line(xl, my, xh, my, INK, 1)
                c.line(xl, my - 2.5, xl, my + 2.5, INK, 1)
                c.line(xh, my - 2.5, xh, my + 2.5, INK, 1)
            c.text(plot_x + max(w, plot_w * (hi or 0) / x_max) + 4, by + bar_h / 2, f"{v:.2f}", 8, fill="#444444")
        y += gh
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        gx = plot_x + plot_w * t
        c.line(gx, top - 2, gx, y, "#dddddd", 1, dash=t not in (0, 1.0))
        c.text(gx, y + 8, svg_num(t * x_max), 9, anchor="middle", fill="#666666")
    return y + 18


def _bars_canvas(title: str, panels: Sequence[tuple[str, Sequence[BarRow]]], series: Sequence[str],
                 colors: dict[str, str], legend: Sequence[tuple[str, str]], x_max: float = 1.0,
                 panel_w: float = 440) -> Canvas:
    labels = [r.label for _, rows in panels for r in rows] or [""]
    label_w = min(220, max(text_width(x, 11) for x in labels) + 14)
    n_rows = max(len(rows) for _, rows in panels)
    n_headers = max(sum(1 for r in rows if r.header) for _, rows in panels)
    gh = 9 * len(series) + 8
    height = 40 + 22 + 24 + n_rows * gh + n_headers * 20 + 40
    c = Canvas(int(max(panel_w * len(panels), text_width(title, 15) + 40)), int(height), title)
    c.text(12, 18, title, 15, bold=True)
    y = draw_legend(c, 14, 42, legend, max_width=panel_w * len(panels) - 28)
    for i, (ptitle, rows) in enumerate(panels):
        hbars(c, 12 + i * panel_w, y + 6, panel_w - 12, rows, series, colors, label_w, ptitle, x_max)
    return c


def ablation_bars(ablation: pl.DataFrame, title: str = "AA_All per prompt mode", empty: str = "No samples.") -> Canvas:
    """Figure 8 from ``nphe4v.report_tables.prompt_mode_ablation`` (a ``mode_bars`` spec): per model, one bar per prompt mode (AA_All with its
    bootstrap interval)."""
    if ablation.is_empty():
        return empty_figure(title, empty)
    nv = ablation["version"].n_unique()
    modes = [m for m in PROMPT_MODES if m in set(ablation["prompt_mode"].to_list())]
    rows: dict[str, dict] = {}
    for r in ablation.iter_rows(named=True):
        lab = series_label(r["model"], r["version"], nv)
        rows.setdefault(lab, {})[r["prompt_mode"]] = (r["AA_All"], r["AA_All_lo"], r["AA_All_hi"])
    bars = [BarRow(lab, vals) for lab, vals in rows.items()]
    return _bars_canvas(title, [("", bars)], modes, MODE_COLORS, [(m, MODE_COLORS[m]) for m in modes],
                        panel_w=620)


def lvlm_llm_bars(table: pl.DataFrame, title: str = "LVLMs vs text-only LLMs by complexity class",
                  empty: str = "No samples.") -> Canvas:
    """Figure 6 from ``nphe4v.report_tables.lvlm_vs_llm`` (a ``class_bars`` spec): two panels (AA, ER), rows = models grouped by kind (with the
    kind's mean), one bar per complexity class."""
    if table.is_empty():
        return empty_figure(title, empty)
    nv = table["version"].n_unique()
    classes = ["P", "NPC", "NPH"]
    panels = []
    for metric in ("AA", "ER"):
        rows: list[BarRow] = []
        seen_kind: set[str] = set()
        grouped: dict[tuple[str, str], dict] = {}
        order: list[tuple[str, str, str]] = []
        for r in table.iter_rows(named=True):
            lab = series_label(r["model"], r["version"], nv)
            key = (r["kind"], lab)
            if key not in grouped:
                grouped[key] = {}
                order.append((r["kind"], lab, r["prompt_mode"]))
            grouped[key][r["complexity"]] = (r[metric], r[f"{metric}_lo"], r[f"{metric}_hi"])
        for kind, lab, mode in order:
            header = None
            if kind not in seen_kind:
                seen_kind.add(kind)
                header = f"{kind} ({mode})"
            rows.append(BarRow(lab, grouped[(kind, lab)], header))
        panels.append((f"{metric}", rows))
    legend = [(CLASS_NAMES[k], CLASS_COLORS[k]) for k in classes]
    return _bars_canvas(title, panels, classes, CLASS_COLORS, legend)


FAILURE_MODE_COLORS: dict[str, str] = {
    "perception": "#e15759", "visual_reasoning": "#f28e2b", "text_reasoning": "#4e79a7", "unattributed": "#bab0ac",
}


def failure_mode_bars(table: pl.DataFrame, title: str = "Failure modes of incorrect responses",
                      empty: str = "No incorrect judged responses.") -> Canvas:
    """Figure 3 (GraphVerse's ``graphverse_judged()["failure_modes"]``): per model, one horizontal bar stacked
    by the share (fraction) of incorrect responses whose first wrong step is of each mode."""
    if table.is_empty():
        return empty_figure(title, empty)
    modes = [m for m in FAILURE_MODE_COLORS if m in table.columns]
    labels = [f"{r['model']} (n={r['n_incorrect']})" for r in table.iter_rows(named=True)]
    label_w = min(240, max(text_width(x, 11) for x in labels) + 14)
    plot_w, bar_h, gap = 420.0, 16.0, 8.0
    width = int(max(label_w + plot_w + 40, text_width(title, 15) + 40))
    c = Canvas(width, 0, title)
    c.text(12, 18, title, 15, bold=True)
    y = draw_legend(c, 14, 42, [(m.replace("_", " "), FAILURE_MODE_COLORS[m]) for m in modes],
                max_width=width - 28) + 6
    x0 = 12 + label_w
    top = y
    for lab, r in zip(labels, table.iter_rows(named=True), strict=True):
        c.text(x0 - 6, y + bar_h / 2, lab, 11, anchor="end")
        x = x0
        for m in modes:
            v = r[m] or 0.0
            if v > 0:
                w = plot_w * min(1.0, v)
                c.rect(x, y, w, bar_h, FAILURE_MODE_COLORS[m], tip=f"{r['model']} · {m}: {v:.3f}")
                if w > 28:
                    c.text(x + w / 2, y + bar_h / 2, f"{v:.2f}", 9, anchor="middle", fill="#ffffff")
                x += w
        y += bar_h + gap
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        gx = x0 + plot_w * t
        c.line(gx, top - 2, gx, y, "#dddddd", 1, dash=t not in (0, 1.0))
        c.text(gx, y + 8, svg_num(t), 9, anchor="middle", fill="#666666")
    c.height = int(y + 26)
    return c
