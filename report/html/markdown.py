"""The report's Markdown summary (report/templates/report.md.j2): the main tables, without figures or samples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalcore.report_section import Section
from report import analysis
from report.html.page import runs_table
from report.html.section_view import section_markdown
from report.html.templating import report_environment
from report.report_tables import ReportResult, Tables


def render_markdown(title: str, runs: Sequence[analysis.Run], t: Tables, result: ReportResult,
                    html_path: Path | None) -> str:
    """The summary from report/templates/report.md.j2 (Markdown: not HTML-escaped; md_table escapes "|")."""
    files = ([f"- HTML report: `{html_path.name}`"] if html_path is not None else []) \
        + [f"- table: `{p.parent.name}/{p.name}`" for p in result.csvs] \
        + [f"- figure: `{p.parent.name}/{p.name}`" for p in result.figures]
    return report_environment().get_template("report.md.j2").render(
        title=title, runs=runs_table(runs).drop("folder"), missing=[(r["run"], r["detail"])
                                                                  for r in t.missing.iter_rows(named=True)],
        sections=_shown(t.sections), files=files)


def _shown(sections: Sequence[Section]) -> list[dict]:
    """The sections with something to say in the summary (a heading or a block)."""
    return [m for m in map(section_markdown, sections) if m["title"] or m["items"]]
