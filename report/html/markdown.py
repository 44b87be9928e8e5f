"""The report's Markdown summary (report/templates/report.md.j2): the main tables, without figures or samples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from nphe4v import metrics
from report import analysis
from report.graphverse_tables import table2_labels
from report.html.format import drop_single_version
from report.html.improvement_section import TITLES, categories_note
from report.html.page import BOARD_CI, JUDGE_CSV_TITLES, NO_JUDGE, ablation_wide, board_view, runs_table
from report.html.section_view import section_markdown
from report.html.templating import report_environment
from report.report_tables import ReportResult, Tables


def render_markdown(title: str, runs: Sequence[analysis.Run], t: Tables, result: ReportResult,
                    html_path: Path | None) -> str:
    """The summary from report/templates/report.md.j2 (Markdown: not HTML-escaped; md_table escapes "|")."""
    nph = not t.board.is_empty()
    ctx: dict[str, Any] = {"answer_checks": None, "consistency_summary": None, "open_closed": None, "failures": None}
    if nph:
        llm = t.llm.filter(pl.col("model") == "mean") if not t.llm.is_empty() else t.llm
        ctx.update(
            board=board_view(t.board, True).drop("n_instances"), board_ci=BOARD_CI, ra_note=metrics.RA_NOTE,
            ablation=ablation_wide(t.ablation), text_only=bool(t.text_only),
            llm=drop_single_version(llm).drop("AA_lo", "AA_hi", "ER_lo", "ER_hi"),
            consistency=t.consistency.filter(pl.col("task") == "All").drop("complexity"),
            consistency_summary=t.consistency_summary,
            open_closed=drop_single_version(t.open_closed) if t.open_closed is not None else None,
            failures=t.failures["by_model"] if t.failures else None,
        )
        if t.answer_checks is not None:
            ctx["answer_checks"] = drop_single_version(t.answer_checks)
    cards = t.judge_csvs.get("judge_card")
    files = ([f"- HTML report: `{html_path.name}`"] if html_path is not None else []) \
        + [f"- table: `{p.parent.name}/{p.name}`" for p in result.csvs] \
        + [f"- figure: `{p.parent.name}/{p.name}`" for p in result.figures]
    return report_environment().get_template("report.md.j2").render(
        title=title, runs=runs_table(runs).drop("folder"), missing=[(r["run"], r["detail"])
                                                                  for r in t.missing.iter_rows(named=True)],
        nph=nph, gv=t.graphverse, judged=t.judged,
        families=table2_labels(t.gv_families) if t.gv_families is not None and t.gv_families.height else None,
        cards=[(r["run"] if cards.height > 1 else "", r["grade"]) for r in cards.iter_rows(named=True)]
        if cards is not None else [],
        judge_csvs=[(name, ttl, how, t.judge_csvs.get(name)) for name, ttl, how in JUDGE_CSV_TITLES],
        no_judge=NO_JUDGE.replace("<code>", "`").replace("</code>", "`"),
        improvement=[(ttl, note, t.improvement[name]) for name, ttl, note in TITLES if name in t.improvement],
        categories_note=categories_note(),
        improvement_cards=[(r["run"], r["grade"]) for r in cards.iter_rows(named=True)]
        if cards is not None and t.improvement else [],
        plugins=[section_markdown(s) for s in t.plugins], files=files, **ctx)
