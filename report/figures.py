"""Report figures as SVG and PNG from one tiny drawing model, no plotting library.

Each figure is a ``Canvas`` (rectangles, lines, polygons, circles, text) built from an ``report.analysis``
frame; ``Canvas.svg()`` writes it as SVG text and ``Canvas.png()`` rasterises the same items with Pillow and
its bundled font (the one text metrics are measured with), so both outputs are deterministic: the same frame
gives the same bytes. Figures follow the paper's shapes:

* ``radar`` — Figure 4: RA, ER and AA per complexity class, one radar per model group;
* ``heatmap`` — Figures 7 and 9: model x (task, level) cells of accuracy or recognition;
* ``ablation_bars`` — Figure 8: AA per prompt mode per model, with interval whiskers;
* ``lvlm_llm_bars`` — Figure 6: AA and ER per class, LVLMs on figure+limited_text vs text-only LLMs;
* ``edit_bars`` — GraphVerse accuracy per image edit and model;
* ``failure_mode_bars`` — Figure 3: shares of failure modes among incorrect GraphVerse responses, stacked.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import escape

import polars as pl
from PIL import Image, ImageColor, ImageDraw, ImageFont

from nphe4v.core.schema import PROMPT_MODES
from nphe4v.tasks import TASK_CLASS, TASK_MODULES

PALETTE: tuple[str, ...] = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)
INK = "#222222"
GRID = "#cccccc"
MISSING = "#e6e6e6"
CLASS_NAMES = {"P": "P", "NPC": "NP-complete", "NPH": "NP-hard"}
CLASS_COLORS = {"P": "#59a14f", "NPC": "#f28e2b", "NPH": "#e15759"}
MODE_COLORS = dict(zip(PROMPT_MODES, ("#4e79a7", "#76b7b2", "#b07aa1"), strict=True))
FONT_FAMILY = "Aileron, Helvetica, Arial, sans-serif"


@lru_cache(maxsize=64)
def _font(size: float) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)  # type: ignore[return-value]


def text_width(text: str, size: float = 12) -> float:
    return float(_font(size).getlength(text))


def _num(v: float) -> str:
    s = f"{v:.2f}"
    return s.rstrip("0").rstrip(".") if "." in s else s


@dataclass
class Canvas:
    """A figure: ``items`` in drawing order; coordinates in CSS pixels, origin top left."""

    width: int
    height: int
    title: str = ""
    items: list[tuple] = field(default_factory=list)

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str | None = None,
             sw: float = 1, tip: str | None = None) -> None:
        self.items.append(("rect", x, y, w, h, fill, stroke, sw, tip))

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = INK, sw: float = 1,
             dash: bool = False) -> None:
        self.items.append(("line", x1, y1, x2, y2, stroke, sw, dash))

    def polygon(self, points: Sequence[tuple[float, float]], fill: str | None, stroke: str | None = None,
                sw: float = 1, opacity: float = 1.0) -> None:
        self.items.append(("polygon", tuple(points), fill, stroke, sw, opacity))

    def circle(self, cx: float, cy: float, r: float, fill: str, stroke: str | None = None) -> None:
        self.items.append(("circle", cx, cy, r, fill, stroke))

    def text(self, x: float, y: float, s: str, size: float = 12, anchor: str = "start", fill: str = INK,
             bold: bool = False) -> None:
        """``anchor``: start | middle | end; ``y`` is the text's vertical middle."""
        self.items.append(("text", x, y, str(s), size, anchor, fill, bold))

    # ---------------------------------------------------------------------------------------------- SVG
    def svg(self) -> str:
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" font-family="{FONT_FAMILY}" role="img" '
            f'aria-label="{escape(self.title, {chr(34): "&quot;"})}">',
            f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#ffffff"/>',
        ]
        for it in self.items:
            kind = it[0]
            if kind == "rect":
                _, x, y, w, h, fill, stroke, sw, tip = it
                st = f' stroke="{stroke}" stroke-width="{_num(sw)}"' if stroke else ""
                body = f"<title>{escape(tip)}</title>" if tip else ""
                out.append(f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" '
                           f'fill="{fill}"{st}>{body}</rect>' if body else
                           f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" fill="{fill}"{st}/>')
            elif kind == "line":
                _, x1, y1, x2, y2, stroke, sw, dash = it
                d = ' stroke-dasharray="4 3"' if dash else ""
                out.append(f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
                           f'stroke="{stroke}" stroke-width="{_num(sw)}"{d}/>')
            elif kind == "polygon":
                _, pts, fill, stroke, sw, op = it
                p = " ".join(f"{_num(x)},{_num(y)}" for x, y in pts)
                f = f'fill="{fill}" fill-opacity="{_num(op)}"' if fill else 'fill="none"'
                st = f' stroke="{stroke}" stroke-width="{_num(sw)}"' if stroke else ""
                out.append(f'<polygon points="{p}" {f}{st}/>')
            elif kind == "circle":
                _, cx, cy, r, fill, stroke = it
                st = f' stroke="{stroke}"' if stroke else ""
                out.append(f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="{_num(r)}" fill="{fill}"{st}/>')
            elif kind == "text":
                _, x, y, s, size, anchor, fill, bold = it
                b = ' font-weight="bold"' if bold else ""
                out.append(f'<text x="{_num(x)}" y="{_num(y)}" font-size="{_num(size)}" text-anchor="{anchor}" '
                           f'dominant-baseline="central" fill="{fill}"{b}>{escape(s)}</text>')
        out.append("</svg>")
        return "\n".join(out) + "\n"

    # ---------------------------------------------------------------------------------------------- PNG
    def png(self, scale: float = 2.0) -> bytes:
        w, h = round(self.width * scale), round(self.height * scale)
        img = Image.new("RGBA", (w, h), (255, 255, 255, 255))
        draw = ImageDraw.Draw(img)

        def rgb(c: str) -> tuple[int, int, int]:
            return ImageColor.getrgb(c)[:3]

        def s(v: float) -> float:
            return v * scale

        for it in self.items:
            kind = it[0]
            if kind == "rect":
                _, x, y, rw, rh, fill, stroke, sw, _tip = it
                box = [s(x), s(y), s(x + rw) - 1, s(y + rh) - 1]
                if box[2] < box[0] or box[3] < box[1]:
                    continue
                draw.rectangle(box, fill=rgb(fill), outline=rgb(stroke) if stroke else None,
                               width=max(1, round(s(sw))) if stroke else 0)
            elif kind == "line":
                _, x1, y1, x2, y2, stroke, sw, dash = it
                width = max(1, round(s(sw)))
                if not dash:
                    draw.line([s(x1), s(y1), s(x2), s(y2)], fill=rgb(stroke), width=width)
                    continue
                length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5 or 1.0
                t = 0.0
                while t < length:
                    t2 = min(length, t + 4)
                    a, b = t / length, t2 / length
                    draw.line([s(x1 + (x2 - x1) * a), s(y1 + (y2 - y1) * a),
                               s(x1 + (x2 - x1) * b), s(y1 + (y2 - y1) * b)], fill=rgb(stroke), width=width)
                    t += 7
            elif kind == "polygon":
                _, pts, fill, stroke, sw, op = it
                sp = [(s(x), s(y)) for x, y in pts]
                if fill:
                    if op >= 1:
                        draw.polygon(sp, fill=rgb(fill))
                    else:
                        # a layer the size of the polygon's box, not of the image: a report with many
                        # models draws hundreds of translucent polygons
                        x0 = max(0, int(min(x for x, _ in sp)))
                        y0 = max(0, int(min(y for _, y in sp)))
                        x1 = min(w, int(max(x for x, _ in sp)) + 2)
                        y1 = min(h, int(max(y for _, y in sp)) + 2)
                        if x1 > x0 and y1 > y0:
                            layer = Image.new("RGBA", (x1 - x0, y1 - y0), (0, 0, 0, 0))
                            ImageDraw.Draw(layer).polygon([(x - x0, y - y0) for x, y in sp],
                                                          fill=(*rgb(fill), round(255 * op)))
                            img.alpha_composite(layer, dest=(x0, y0))
                            draw = ImageDraw.Draw(img)
                if stroke:
                    draw.line([*sp, sp[0]], fill=rgb(stroke), width=max(1, round(s(sw))), joint="curve")
            elif kind == "circle":
                _, cx, cy, r, fill, stroke = it
                draw.ellipse([s(cx - r), s(cy - r), s(cx + r), s(cy + r)], fill=rgb(fill),
                             outline=rgb(stroke) if stroke else None)
            elif kind == "text":
                _, x, y, txt, size, anchor, fill, _bold = it
                a = {"start": "lm", "middle": "mm", "end": "rm"}[anchor]
                draw.text((s(x), s(y)), txt, font=_font(size * scale), fill=rgb(fill), anchor=a)
        buf = io.BytesIO()
        # fast compression: the PNGs are files beside the report (the page embeds SVG); a many-model heatmap
        # is tens of megapixels
        img.convert("RGB").save(buf, format="PNG", compress_level=1)
        return buf.getvalue()

    def save(self, stem: Path) -> tuple[Path, Path]:
        """Write ``stem.svg`` and ``stem.png``; returns both paths."""
        stem.parent.mkdir(parents=True, exist_ok=True)
        svg, png = stem.with_suffix(".svg"), stem.with_suffix(".png")
        svg.write_text(self.svg())
        png.write_bytes(self.png())
        return svg, png


def empty_figure(title: str, message: str, width: int = 560, height: int = 90) -> Canvas:
    c = Canvas(width, height, title)
    c.text(14, 22, title, 15, bold=True)
    c.text(14, 56, message, 12, fill="#666666")
    return c


# --------------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------------


def series_label(model: str, version: str, versions: int) -> str:
    """How a (model, version) series is named: the model alone when the report holds one version."""
    return model if versions <= 1 else f"{model} · {version}"


def _legend(c: Canvas, x: float, y: float, entries: Sequence[tuple[str, str]], size: float = 11,
            max_width: float | None = None) -> float:
    """Colour swatches with labels, wrapped at ``max_width``; returns the y below the legend."""
    max_width = max_width or c.width - x
    cx, cy = x, y
    for label, color in entries:
        w = 14 + text_width(label, size) + 16
        if cx > x and cx + w > x + max_width:
            cx, cy = x, cy + size + 8
        c.rect(cx, cy - 5, 10, 10, color)
        c.text(cx + 14, cy, label, size)
        cx += w
    return cy + size + 6


def _blues(v: float) -> str:
    """Sequential white -> dark blue scale for v in [0, 1]."""
    v = min(1.0, max(0.0, v))
    stops = [(0.0, (247, 251, 255)), (0.25, (198, 219, 239)), (0.5, (107, 174, 214)), (0.75, (33, 113, 181)),
             (1.0, (8, 48, 107))]
    for (a, ca), (b, cb) in zip(stops, stops[1:], strict=False):
        if v <= b:
            t = (v - a) / (b - a)
            r, g, bl = (round(ca[i] + (cb[i] - ca[i]) * t) for i in range(3))
            return f"#{r:02x}{g:02x}{bl:02x}"
    return "#08306b"


def _fmt_ci(v: float | None, lo: float | None, hi: float | None) -> str:
    if v is None:
        return "—"
    if lo is None or hi is None:
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


# --------------------------------------------------------------------------------------------------------
# Figure 4: radar
# --------------------------------------------------------------------------------------------------------

RADAR_AXES: tuple[tuple[str, str], ...] = tuple((m, c) for m in ("AA", "ER", "RA") for c in ("P", "NPC", "NPH"))


def default_groups(labels: Sequence[str], size: int = 4) -> list[tuple[str, list[str]]]:
    """Models in order, ``size`` per radar: groups "a", "b", ..."""
    out = []
    for i in range(0, len(labels), size):
        out.append((chr(ord("a") + len(out)) if len(out) < 26 else str(len(out)), list(labels[i:i + size])))
    return out


def radar(profile: pl.DataFrame, groups: Sequence[tuple[str, Sequence[str]]] | None = None,
          title: str = "RA, ER and AA by complexity class") -> Canvas:
    """Figure 4 from ``analysis.class_profile``: one radar per group of series (model, or model · version
    with several versions); nine axes: AA, ER and RA on P, NP-complete and NP-hard; scale 0..1."""
    if profile.is_empty():
        return empty_figure(title, "No NPHardEval4V samples.")
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
    height = 40 + panel_h + 18 * legend_rows + 10
    c = Canvas(max(panel * len(groups), int(text_width(title, 15)) + 40), height, title)
    c.text(12, 18, title, 15, bold=True)
    n = len(RADAR_AXES)
    for gi, (gname, models) in enumerate(groups):
        ox, oy = gi * panel + panel / 2, 40 + panel_h / 2 + 8

        def pt(k: int, v: float, ox: float = ox, oy: float = oy) -> tuple[float, float]:
            ang = -math.pi / 2 + 2 * math.pi * k / n
            return ox + radius * v * math.cos(ang), oy + radius * v * math.sin(ang)

        c.text(gi * panel + 12, 44, f"({gname})", 13, bold=True)
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
        ly = 40 + panel_h + 4
        for lab in models:
            c.rect(gi * panel + 16, ly - 5, 10, 10, colors[lab])
            c.text(gi * panel + 32, ly, lab, 11)
            ly += 18
    return c


# --------------------------------------------------------------------------------------------------------
# Figures 7 and 9: heatmaps
# --------------------------------------------------------------------------------------------------------


def heatmap(table: pl.DataFrame, value: str = "wa", title: str = "Reasoning (wa) per task and level",
            lo: str | None = None, hi: str | None = None, count: str = "n") -> Canvas:
    """Model (rows) x task x level (columns) from ``analysis.heatmap_table``; ``value`` in [0, 1] picks the
    colour (``wa``, ``accuracy`` or ``RA``); cells without data are grey; each cell's tooltip gives the value,
    its interval (``lo``/``hi`` columns) and count."""
    if table.is_empty():
        return empty_figure(title, "No NPHardEval4V samples.")
    nv = table["version"].n_unique()
    tasks = [t for t in TASK_MODULES if t in set(table["task"].to_list())]
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
        cls = TASK_CLASS.get(t, "")
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
                tip = f"{lab} · {t} L{lv}: {value} {_fmt_ci(v, cell.get(lo) if lo else None, cell.get(hi) if hi else None)}"
                if count and cell.get(count) is not None:
                    tip += f", n={cell[count]}"
                c.rect(cx, cy, cw - 1, ch - 1, _blues(float(v)), tip=tip)
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
        c.rect(bx, by + i * bh / steps, 14, bh / steps + 0.5, _blues(v - 0.5 / steps))
    c.text(bx + 18, by, "1", 9)
    c.text(bx + 18, by + bh / 2, "0.5", 9)
    c.text(bx + 18, by + bh, "0", 9)
    c.rect(bx, by + bh + 12, 14, 10, MISSING)
    c.text(bx + 18, by + bh + 17, "none", 9)
    return c


# --------------------------------------------------------------------------------------------------------
# Bars: Figure 8 (prompt modes), Figure 6 (LVLM vs LLM), GraphVerse edits
# --------------------------------------------------------------------------------------------------------


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
            c.rect(plot_x, by, max(w, 0.5), bar_h - 1, colors[s], tip=f"{r.label} · {s}: {_fmt_ci(v, lo, hi)}")
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
        c.text(gx, y + 8, _num(t * x_max), 9, anchor="middle", fill="#666666")
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
    y = _legend(c, 14, 42, legend, max_width=panel_w * len(panels) - 28)
    for i, (ptitle, rows) in enumerate(panels):
        hbars(c, 12 + i * panel_w, y + 6, panel_w - 12, rows, series, colors, label_w, ptitle, x_max)
    return c


def ablation_bars(ablation: pl.DataFrame, title: str = "AA_All per prompt mode") -> Canvas:
    """Figure 8 from ``analysis.prompt_mode_ablation``: per model, one bar per prompt mode (AA_All with its
    bootstrap interval)."""
    if ablation.is_empty():
        return empty_figure(title, "No NPHardEval4V samples.")
    nv = ablation["version"].n_unique()
    modes = [m for m in PROMPT_MODES if m in set(ablation["prompt_mode"].to_list())]
    rows: dict[str, dict] = {}
    for r in ablation.iter_rows(named=True):
        lab = series_label(r["model"], r["version"], nv)
        rows.setdefault(lab, {})[r["prompt_mode"]] = (r["AA_All"], r["AA_All_lo"], r["AA_All_hi"])
    bars = [BarRow(lab, vals) for lab, vals in rows.items()]
    return _bars_canvas(title, [("", bars)], modes, MODE_COLORS, [(m, MODE_COLORS[m]) for m in modes],
                        panel_w=620)


def lvlm_llm_bars(table: pl.DataFrame, title: str = "LVLMs vs text-only LLMs by complexity class") -> Canvas:
    """Figure 6 from ``analysis.lvlm_vs_llm``: two panels (AA, ER), rows = models grouped by kind (with the
    kind's mean), one bar per complexity class."""
    if table.is_empty():
        return empty_figure(title, "No NPHardEval4V samples.")
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


def edit_bars(by_edit: pl.DataFrame, title: str = "GraphVerse accuracy per image edit") -> Canvas:
    """GraphVerse: per model, one bar per edit kind (``gie.metrics.by_edit``: acc in percent, Wilson bounds)."""
    if by_edit.is_empty():
        return empty_figure(title, "No GraphVerse samples.")
    edits = []
    for e in by_edit["variant"].to_list():
        if e not in edits:
            edits.append(e)
    colors = {e: PALETTE[i % len(PALETTE)] for i, e in enumerate(edits)}
    rows: dict[str, dict] = {}
    for r in by_edit.iter_rows(named=True):
        rows.setdefault(r["model"], {})[r["variant"]] = (
            r["acc"] / 100, r["ci_low"] / 100 if r["ci_low"] is not None else None,
            r["ci_high"] / 100 if r["ci_high"] is not None else None,
        )
    bars = [BarRow(m, v) for m, v in rows.items()]
    return _bars_canvas(title, [("accuracy (fraction)", bars)], edits, colors, [(e, colors[e]) for e in edits],
                        panel_w=620)


FAILURE_MODE_COLORS: dict[str, str] = {
    "perception": "#e15759", "visual_reasoning": "#f28e2b", "text_reasoning": "#4e79a7", "unattributed": "#bab0ac",
}


def failure_mode_bars(table: pl.DataFrame, title: str = "Failure modes of incorrect responses") -> Canvas:
    """Figure 3 from ``analysis.graphverse_judged()["failure_modes"]``: per model, one horizontal bar stacked
    by the share (fraction) of incorrect responses whose first wrong step is of each mode."""
    if table.is_empty():
        return empty_figure(title, "No incorrect judged GraphVerse responses.")
    modes = [m for m in FAILURE_MODE_COLORS if m in table.columns]
    labels = [f"{r['model']} (n={r['n_incorrect']})" for r in table.iter_rows(named=True)]
    label_w = min(240, max(text_width(x, 11) for x in labels) + 14)
    plot_w, bar_h, gap = 420.0, 16.0, 8.0
    width = int(max(label_w + plot_w + 40, text_width(title, 15) + 40))
    c = Canvas(width, 0, title)
    c.text(12, 18, title, 15, bold=True)
    y = _legend(c, 14, 42, [(m.replace("_", " "), FAILURE_MODE_COLORS[m]) for m in modes],
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
        c.text(gx, y + 8, _num(t), 9, anchor="middle", fill="#666666")
    c.height = int(y + 26)
    return c
