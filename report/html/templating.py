"""One Jinja2 environment for the HTML report, its Markdown summary and the explorer: the shared templates
(``report/templates``: the page layout pieces and ``tables.j2``'s table macros) plus a caller's own folder.

Autoescape is on for every template but the Markdown ones (``*.md.j2``): model names, responses and judge
claims are untrusted, and every value reaches HTML escaped unless a caller wraps it in ``Markup`` itself (our
own SVG figures and the sample browser, whose text is escaped where it is built)."""

from __future__ import annotations

import functools
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from report.html.format import esc, fmt, fmt_cell, md_table

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
SORT_JS = TEMPLATES / "sort.js"
"""The sortable tables' script: inlined in the report, served as a file by the explorer (its CSP allows no
inline script)."""


def _autoescape(name: str | None) -> bool:
    return not (name or "").endswith(".md.j2")


def environment(*folders: str | Path) -> Environment:
    """A new environment over ``folders`` (searched first) and the shared templates."""
    env = Environment(loader=FileSystemLoader([*(str(f) for f in folders), str(TEMPLATES)]),
                      autoescape=_autoescape, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True)
    env.filters["fmt"] = fmt
    env.filters["fmt_cell"] = fmt_cell
    env.filters["esc"] = esc
    env.filters["md_table"] = md_table
    return env


@functools.cache
def report_environment() -> Environment:
    """The report's environment (shared templates only), built once per process."""
    return environment()


@functools.cache
def sort_js() -> str:
    return SORT_JS.read_text()
