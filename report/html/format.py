"""Cells, tables and figures as HTML or Markdown text; every value HTML-escaped."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from report import figures


def esc(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def is_ra_column(col: str) -> bool:
    """RA and its companions (RA_mean, RA_var, RA_corrected): null means no recognition was measured there (a
    text-only mode, or no recognition experiment ran), shown "n/a" rather than as a missing number."""
    return col == "RA" or col.startswith("RA_")


def fmt_cell(col: str, v: Any, digits: int = 3) -> str:
    """`fmt`, with "n/a" for an RA column that has no value."""
    return "n/a" if v is None and is_ra_column(col) else fmt(v, digits)


def fmt_ci(v: Any, lo: Any, hi: Any) -> str:
    if v is None:
        return "—"
    if lo is None or hi is None:
        return fmt(v)
    return f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]"


def json_for_script(obj: Any) -> str:
    """JSON safe inside <script type="application/json">: no "<", ">" or "&" survives literally."""
    s = json.dumps(obj, ensure_ascii=False, sort_keys=True)
    return s.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def md_table(df: pl.DataFrame, ci: Sequence[str] = (), hide: Sequence[str] = ()) -> str:
    if df.is_empty():
        return "_No rows._\n"
    bound = {f"{c}_{s}" for c in ci for s in ("lo", "hi")}
    cols = [c for c in df.columns if c not in bound and c not in hide]

    def cell(row: dict, c: str) -> str:
        v = row[c]
        s = fmt_cell(c, v) if v is None else fmt_ci(v, row.get(f"{c}_lo"), row.get(f"{c}_hi")) if c in ci else fmt(v)
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(c + (" [95% CI]" if c in ci else "") for c in cols) + " |",
             "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.iter_rows(named=True):
        lines.append("| " + " | ".join(cell(row, c) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def drop_single_version(df: pl.DataFrame) -> pl.DataFrame:
    if "version" in df.columns and df["version"].n_unique() <= 1:
        return df.drop("version")
    return df


def inline_svg(canvas: figures.Canvas) -> str:
    # inline SVG in HTML needs no namespace declaration; dropping it keeps the page free of URLs
    return canvas.svg().replace(' xmlns="http://www.w3.org/2000/svg"', "", 1)
