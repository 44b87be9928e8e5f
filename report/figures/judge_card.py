"""The judge card's figure: per family, the mean score (or change) as a bar and its max as a tick, green where
the family's property holds, red where it fails (`judge.card` rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from report.figures.canvas import INK, Canvas, text_width

PASS, FAIL = "#59a14f", "#e15759"


def card_figure(rows: Sequence[Any], title: str) -> Canvas:
    """`rows`: `judge.card.Row`s. Values are on the 0-100 VGR scale (changes and spreads too)."""
    label_w = max([text_width(r.family, 11) for r in rows] + [80]) + 16
    plot_w, bar_h = 420, 14
    c = Canvas(int(label_w + plot_w + 230), int(70 + bar_h * len(rows) + 40), title)
    c.text(12, 18, title, 15, bold=True)
    c.text(12, 40, "bar: mean · tick: max · green: property holds · red: it fails", 11, fill="#555555")
    x0, y = label_w, 58
    for t in (0, 25, 50, 75, 100):
        gx = x0 + plot_w * t / 100
        c.line(gx, y - 4, gx, y + bar_h * len(rows), "#dddddd", 1, dash=t not in (0, 100))
        c.text(gx, y + bar_h * len(rows) + 10, str(t), 9, anchor="middle", fill="#666666")
    for r in rows:
        color = PASS if r.passed else FAIL
        c.text(x0 - 6, y + bar_h / 2, r.family, 11, anchor="end")
        if r.mean is not None:
            c.rect(x0, y + 2, max(0.5, plot_w * min(max(r.mean, 0), 100) / 100), bar_h - 4, color,
                   tip=f"{r.family}: mean {r.mean:.1f}, max {r.max:.1f} ({r.property})")
        if r.max is not None:
            mx = x0 + plot_w * min(max(r.max, 0), 100) / 100
            c.line(mx, y + 1, mx, y + bar_h - 1, INK, 1.5)
        note = f"n={r.n}" + (f", null={r.null}" if r.null else "") + ("" if r.passed else f", FAILS ({r.fails})")
        c.text(x0 + plot_w + 8, y + bar_h / 2, note, 9, fill=INK if r.passed else FAIL)
        y += bar_h
    return c
