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


def html_table(df: pl.DataFrame, ci: Sequence[str] = (), hide: Sequence[str] = (), table_id: str = "",
               caption: str = "", digits: int = 3, max_rows: int | None = None, csv_name: str = "") -> str:
    """A sortable table; a column c in ``ci`` shows ``c [c_lo, c_hi]`` and the bound columns are not shown.
    ``max_rows``: show only the first rows, with a note pointing at the CSV that holds them all."""
    if df.is_empty():
        return '<p class="empty">No rows.</p>'
    more = ""
    if max_rows is not None and df.height > max_rows:
        more = (f'<p class="note">First {max_rows:,} of {df.height:,} rows shown; all of them are in '
                f"<code>{esc(csv_name or 'the CSV tables')}</code>.</p>")
        df = df.head(max_rows)
    bound = {f"{c}_{s}" for c in ci for s in ("lo", "hi")}
    cols = [c for c in df.columns if c not in bound and c not in hide]
    tid = f' id="{esc(table_id)}"' if table_id else ""
    out = [f'<table class="sortable"{tid}>']
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>" + "".join(
        f'<th title="click to sort">{esc(c)}{" <small>[95% CI]</small>" if c in ci else ""}</th>' for c in cols
    ) + "</tr></thead><tbody>")
    for row in df.iter_rows(named=True):
        cells = []
        for c in cols:
            v = row[c]
            sort = "" if v is None else (f"{v:.9g}" if isinstance(v, float) else str(v))
            num = isinstance(v, int | float) and not isinstance(v, bool)
            cls = ' class="num"' if num else ""
            if c in ci and v is not None:
                lo, hi = row.get(f"{c}_lo"), row.get(f"{c}_hi")
                text = esc(fmt(v, digits))
                if lo is not None and hi is not None:
                    text += f' <span class="ci">[{esc(fmt(lo, digits))}, {esc(fmt(hi, digits))}]</span>'
                cells.append(f'<td{cls} data-v="{esc(sort)}">{text}</td>')
            else:
                cells.append(f'<td{cls} data-v="{esc(sort)}">{esc(fmt_cell(c, v, digits))}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out) + more


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
