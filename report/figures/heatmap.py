"""Model x (task, level) cells of accuracy or recognition (e.g. Figures 7 and 9 of the NPHardEval4V paper); the
benchmark's figure spec gives the task order and each task's complexity class."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from report.figures.canvas import (
    CLASS_COLORS,
    CLASS_NAMES,
    MISSING,
    Canvas,
    blues,
    empty_figure,
    fmt_ci,
    series_label,
    text_width,
)


def heatmap(table: pl.DataFrame, value: str = "wa", title: str = "Reasoning (wa) per task and level",
            lo: str | None = None, hi: str | None = None, count: str = "n", *,
            task_order: Sequence[str] = (), task_class: Mapping[str, str] | None = None,
            empty: str = "No samples.") -> Canvas:
    """Model (rows) x task x level (columns) from a heatmap table (``nphe4v.report_tables.heatmap_table``);
    ``value`` in [0, 1] picks the colour (``wa``, ``accuracy`` or ``RA``); cells without data are grey; each
    cell's tooltip gives the value, its interval (``lo``/``hi`` columns) and count. Tasks in ``task_order``
    (others after it, sorted), a bar over the tasks of each complexity class (``task_class``: task -> P, NPC
    or NPH); ``empty``: the text of a figure without rows."""
    if table.is_empty():
        return empty_figure(title, empty)
    task_class = task_class or {}
    nv = table["version"].n_unique()
    tasks = [t for t in task_order if t in set(table["task"].to_list())]
    tasks += sorted(set(table["task"].to_list()) - set(tasks))
    levels = sorted(set(table["level"].to_list()))
    rows: list[str] = []
    cells: dict[tuple[str, str, int], dict] = {}
    for r in table.iter_rows(named=True):
        lab = series_label(r["model"], r["version"], nv)
        if lab not in rows:
            rows.append(lab)
        cells[(lab, r["task"], r["level"])] = r
    # cells at least 9 px wide, and a task block at least 72 px so its labels never collide
    cw, ch, gap = max(9, math.ceil(72 / max(1, len(levels)))), 18, 6
    left = 16 + max(text_width(x, 11) for x in rows) + 8
    top = 86
    grid_w = len(tasks) * (len(levels) * cw + gap)
    width = int(max(left + grid_w + 90, text_width(title, 15) + 40))
    height = int(top + len(rows) * ch + 46)
    c = Canvas(width, height, title)
    c.text(12, 18, title, 15, bold=True)
    x = left
    spans: dict[str, list[float]] = {}
    for t in tasks:
        w = len(levels) * cw
        cls = task_class.get(t, "")
        sp = spans.setdefault(cls, [x, x + w])
        sp[1] = x + w
        c.text(x + w / 2, top - 26, t, 10, anchor="middle")
        c.text(x, top - 10, str(levels[0]), 8, fill="#777777")
        c.text(x + w, top - 10, str(levels[-1]), 8, anchor="end", fill="#777777")
        for yi, lab in enumerate(rows):
            for li, lv in enumerate(levels):
                cell = cells.get((lab, t, lv))
                v = None if cell is None else cell.get(value)
                cx, cy = x + li * cw, top + yi * ch
                if v is None:
                    c.rect(cx, cy, cw - 1, ch - 1, MISSING, tip=f"{lab} · {t} L{lv}: no data")
                    continue
                tip = f"{lab} · {t} L{lv}: {value} {fmt_ci(v, cell.get(lo) if lo else None, cell.get(hi) if hi else None)}"
                if count and cell.get(count) is not None:
                    tip += f", n={cell[count]}"
                c.rect(cx, cy, cw - 1, ch - 1, blues(float(v)), tip=tip)
        x += w + gap
    for cls, (x0, x1) in spans.items():
        if not cls:
            continue
        c.line(x0, top - 42, x1 - 1, top - 42, CLASS_COLORS[cls], 3)
        c.text((x0 + x1) / 2, top - 52, CLASS_NAMES[cls], 11, anchor="middle", fill=CLASS_COLORS[cls])
    for yi, lab in enumerate(rows):
        c.text(left - 8, top + yi * ch + (ch - 1) / 2, lab, 11, anchor="end")
    c.text(left, top + len(rows) * ch + 14, f"columns: task, then level {levels[0]} to {levels[-1]} left to right", 9, fill="#777777")
    # colour bar
    bx, by, bh = left + grid_w + 24, top, max(60, min(160, len(rows) * ch))
    steps = 20
    for i in range(steps):
        v = 1 - i / steps
        c.rect(bx, by + i * bh / steps, 14, bh / steps + 0.5, blues(v - 0.5 / steps))
    c.text(bx + 18, by, "1", 9)
    c.text(bx + 18, by + bh / 2, "0.5", 9)
    c.text(bx + 18, by + bh, "0", 9)
    c.rect(bx, by + bh + 12, 14, 10, MISSING)
    c.text(bx + 18, by + bh + 17, "none", 9)
    return c
