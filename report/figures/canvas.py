"""The report's tiny drawing model (no plotting library): a ``Canvas`` of rectangles, lines, polygons,
circles and text that writes itself as SVG text and rasterises the same items to PNG with Pillow and its
bundled font (the one text metrics are measured with), so both outputs are deterministic: the same frame
gives the same bytes. Also the palette and the helpers every figure shares (legend, colour scale, labels)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import escape

from PIL import Image, ImageColor, ImageDraw, ImageFont

from evalcore.schema import PROMPT_MODES

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


def svg_num(v: float) -> str:
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
                st = f' stroke="{stroke}" stroke-width="{svg_num(sw)}"' if stroke else ""
                body = f"<title>{escape(tip)}</title>" if tip else ""
                out.append(f'<rect x="{svg_num(x)}" y="{svg_num(y)}" width="{svg_num(w)}" height="{svg_num(h)}" '
                           f'fill="{fill}"{st}>{body}</rect>' if body else
                           f'<rect x="{svg_num(x)}" y="{svg_num(y)}" width="{svg_num(w)}" height="{svg_num(h)}" fill="{fill}"{st}/>')
            elif kind == "line":
                _, x1, y1, x2, y2, stroke, sw, dash = it
                d = ' stroke-dasharray="4 3"' if dash else ""
                out.append(f'<line x1="{svg_num(x1)}" y1="{svg_num(y1)}" x2="{svg_num(x2)}" y2="{svg_num(y2)}" '
                           f'stroke="{stroke}" stroke-width="{svg_num(sw)}"{d}/>')
            elif kind == "polygon":
                _, pts, fill, stroke, sw, op = it
                p = " ".join(f"{svg_num(x)},{svg_num(y)}" for x, y in pts)
                f = f'fill="{fill}" fill-opacity="{svg_num(op)}"' if fill else 'fill="none"'
                st = f' stroke="{stroke}" stroke-width="{svg_num(sw)}"' if stroke else ""
                out.append(f'<polygon points="{p}" {f}{st}/>')
            elif kind == "circle":
                _, cx, cy, r, fill, stroke = it
                st = f' stroke="{stroke}"' if stroke else ""
                out.append(f'<circle cx="{svg_num(cx)}" cy="{svg_num(cy)}" r="{svg_num(r)}" fill="{fill}"{st}/>')
            elif kind == "text":
                _, x, y, s, size, anchor, fill, bold = it
                b = ' font-weight="bold"' if bold else ""
                out.append(f'<text x="{svg_num(x)}" y="{svg_num(y)}" font-size="{svg_num(size)}" text-anchor="{anchor}" '
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


def series_label(model: str, version: str, versions: int) -> str:
    """How a (model, version) series is named: the model alone when the report holds one version."""
    return model if versions <= 1 else f"{model} · {version}"


def draw_legend(c: Canvas, x: float, y: float, entries: Sequence[tuple[str, str]], size: float = 11,
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


def blues(v: float) -> str:
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


def fmt_ci(v: float | None, lo: float | None, hi: float | None) -> str:
    if v is None:
        return "—"
    if lo is None or hi is None:
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
