"""The report's Markdown summary (report/templates/report.md.j2): the main tables, without figures or samples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalcore.report_section import Section
from report import analysis
from report.graphverse_tables import table2_labels
from report.html.improvement_section import TITLES, categories_note
from report.html.page import JUDGE_CSV_TITLES, NO_JUDGE, runs_table
from report.html.section_view import section_markdown
from report.html.templating import report_environment
from report.report_tables import ReportResult, Tables


def render_markdown(title: str, runs: Sequence[analysis.Run], t: Tables, result: ReportResult,
                    html_path: Path | None) -> str:
    """The summary from report/templates/report.md.j2 (Markdown: not HTML-escaped; md_table escapes "|")."""
    cards = t.judge_csvs.get("judge_card")
    files = ([f"- HTML report: `{html_path.name}`"] if html_path is not None else []) \
        + [f"- table: `{p.parent.name}/{p.name}`" for p in result.csvs] \
        + [f"- figure: `{p.parent.name}/{p.name}`" for p in result.figures]
    return report_environment().get_template("report.md.j2").render(
        title=title, runs=runs_table(runs).drop("folder"), missing=[(r["run"], r["detail"])
                                                                  for r in t.missing.iter_rows(named=True)],
        gv=t.graphverse, judged=t.judged,
        families=table2_labels(t.gv_families) if t.gv_families is not None and t.gv_families.height else None,
        cards=[(r["run"] if cards.height > 1 else "", r["grade"]) for r in cards.iter_rows(named=True)]
        if cards is not None else [],
        judge_csvs=[(name, ttl, how, t.judge_csvs.get(name)) for name, ttl, how in JUDGE_CSV_TITLES],
        no_judge=NO_JUDGE.replace("<code>", "`").replace("</code>", "`"),
        improvement=[(ttl, note, t.improvement[name]) for name, ttl, note in TITLES if name in t.improvement],
        categories_note=categories_note(),
        improvement_cards=[(r["run"], r["grade"]) for r in cards.iter_rows(named=True)]
        if cards is not None and t.improvement else [],
        before=_shown(t.sections.before), after=_shown(t.sections.after), files=files)


def _shown(sections: Sequence[Section]) -> list[dict]:
    """The sections with something to say in the summary (a heading or a block)."""
    return [m for m in map(section_markdown, sections) if m["title"] or m["items"]]
