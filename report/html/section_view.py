"""A benchmark's report section (`evalcore.report_section.Section`) as report/templates/sections.j2 renders it
in the page, the explorer and the Markdown summary: tables as table views, figures as inline SVG."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count
from typing import Any

from markupsafe import Markup

from evalcore.report_section import Block, Details, Figure, Section, Table, Text
from report.figures.canvas import Canvas
from report.figures.spec import draw
from report.html.format import inline_svg
from report.html.tables import table_view


def section_figures(sections: list[Section], groups: Sequence[tuple[str, Sequence[str]]] | None = None
                    ) -> dict[str, Canvas]:
    """Every figure of the sections, drawn, by name; ``groups``: the panels of every radar (the caller's)."""
    return {f.name: draw(f, groups) for s in sections for f in s.figures()}


def section_view(s: Section, figs: dict[str, Canvas] | None = None, id_prefix: str | None = None) -> dict[str, Any]:
    """The section for the `section` macro: each block a dict with its ``kind``; a table without an id gets
    ``<id_prefix>-<n>`` (its place among the section's tables; the prefix defaults to the section's anchor)."""
    prefix = s.anchor if id_prefix is None else id_prefix
    n = count(1)
    figs = figs if figs is not None else section_figures([s])

    def view(b: Block) -> dict[str, Any]:
        if isinstance(b, Table):
            if not b.in_page:
                return {"kind": "none"}
            return {"kind": "table", "caption": b.caption, "id": b.id or f"{prefix}-{next(n)}",
                    "view": table_view(b.frame, ci=b.ci, hide=b.hide, digits=b.digits, max_rows=b.max_rows,
                                       csv_name=b.csv_name)}
        if isinstance(b, Figure):
            # our own SVG: the canvas escapes every text it draws
            return {"kind": "figure", "name": b.name, "caption": b.caption, "svg": Markup(inline_svg(figs[b.name]))}
        if isinstance(b, Text):
            if b.html is None:
                return {"kind": "none"}
            # the benchmark's own markup (evalcore.report_section.Text: no untrusted value in it)
            return {"kind": "text", "heading": b.heading, "style": b.style,
                    "html": b.html if b.escape else Markup(b.html)}
        if isinstance(b, Details):
            return {"kind": "details", "summary": b.summary, "blocks": [view(x) for x in b.blocks]}
        raise TypeError(f"section {s.anchor!r}: {type(b).__name__} is not a report block")

    return {"anchor": s.anchor, "title": s.title, "blocks": [view(b) for b in s.blocks]}


def section_markdown(s: Section) -> dict[str, Any]:
    """The section for the Markdown summary: its top-level tables (a table's ``markdown`` frame when set) and
    texts with a Markdown form; collapsed groups are the page's only."""
    items: list[dict[str, Any]] = []
    for b in s.blocks:
        if isinstance(b, Table) and b.in_markdown:
            frame = b.markdown if b.markdown is not None else b.frame
            # an interval only where the summary's frame still has its bounds
            items.append({"kind": "table", "caption": b.caption, "frame": frame,
                          "ci": [c for c in b.ci if isinstance(c, str) and f"{c}_lo" in frame.columns]})
        elif isinstance(b, Text) and b.markdown is not None:
            items.append({"kind": "text", "heading": "", "text": b.markdown})  # it holds its own headings
    return {"title": s.title if s.md_title is None else s.md_title, "items": items}
