"""The report's Markdown summary: the main tables, without figures or samples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from nphe4v import metrics
from report import analysis
from report.graphverse_tables import table2_labels
from report.html.format import drop_single_version, md_table
from report.html.improvement_section import improvement_markdown
from report.html.page import BOARD_CI, JUDGE_CSV_TITLES, NO_JUDGE, ablation_wide, board_view, runs_table
from report.report_tables import ReportResult, Tables


def render_markdown(title: str, runs: Sequence[analysis.Run], t: Tables, result: ReportResult,
              html_path: Path | None) -> str:
    out = [f"# {title}", ""]
    out += ["## Runs", "", md_table(runs_table(runs).drop("folder")), ""]
    out += ["## Missing parts", ""]
    if t.missing.is_empty():
        out += ["Nothing missing.", ""]
    else:
        out += [f"- **{r['run']}**: {r['detail']}" for r in t.missing.iter_rows(named=True)] + [""]
    out += ["## Leaderboard (prompt modes pooled)", ""]
    if t.board.is_empty():
        out += ["No NPHardEval4V samples in these runs.", ""]
    else:
        view = board_view(t.board, True).drop("n_instances")
        out += ["ER, RA: Wilson 95% intervals; RA_corrected, AA: instance bootstrap. n = answer questions, "
                "n_rec = instances with recognition data.", "", md_table(view, ci=BOARD_CI), "",
                "ER_paper / AA_paper: ER and AA_All with the papers' parsing rule (first final_answer block, "
                "Python literal, the papers' keys).", "", f"Note: {metrics.RA_NOTE}", ""]
        if t.answer_checks is not None:
            out += ["## Stated values and the papers' parse", "",
                    "inconsistent: stated value disagrees with the answer's own witness (which decides); "
                    "verdict_differs: the papers' parse grades differently.", "",
                    md_table(drop_single_version(t.answer_checks)), ""]
        out += ["## Prompt-mode ablation (AA_All)", "", md_table(ablation_wide(t.ablation)), ""]
        llm = t.llm.filter(pl.col("model") == "mean") if not t.llm.is_empty() else t.llm
        out += ["## LVLMs vs text-only LLMs (means per kind)", ""]
        if not t.text_only:
            out += ["No text-only LLM in these runs.", ""]
        out += [md_table(drop_single_version(llm).drop("AA_lo", "AA_hi", "ER_lo", "ER_hi")), ""]
        out += ["## Version consistency (AA_All)", ""]
        vc = t.consistency.filter(pl.col("task") == "All").drop("complexity")
        out += [md_table(vc), ""]
        if t.consistency_summary is not None:
            out += ["### Appendix B summary (variance of AA across versions)", "", md_table(t.consistency_summary),
                    ""]
        if t.open_closed is not None:
            out += ["## Closed vs open models (Figure 4)", "", md_table(drop_single_version(t.open_closed)), ""]
        if t.failures:
            out += ["## Failure analysis (§5.3)", "", md_table(t.failures["by_model"]), ""]
    out += ["## GraphVerse", ""]
    if t.graphverse:
        out += [md_table(t.graphverse["acc_table"]), "", md_table(t.graphverse["poly_vs_nph"]), ""]
        if t.gv_families is not None and t.gv_families.height:
            out += ["### Model families (Table 2)", "", md_table(table2_labels(t.gv_families)), ""]
        if t.judged:
            cards = t.judge_csvs.get("judge_card")
            card = [] if cards is None else [f"{r['run']}: {r['grade']}" if cards.height > 1 else r["grade"]
                                             for r in cards.iter_rows(named=True)] + [""]
            out += ["### Acc / VGR-S per model and task (%)", "", *card,
                    "↑ VGR-S above Acc, ↓ below; n = samples behind Acc / samples scored by the judge.", "",
                    md_table(t.judged["acc_vgr_wide"]), "",
                    "### Acc and VGR-S per edit (%)", "", *card, md_table(t.judged["edit_vgr"]), "",
                    "### Failure modes of incorrect responses (shares)", "", md_table(t.judged["failure_modes"]), ""]
            for name, ttl, how in JUDGE_CSV_TITLES:
                out += [f"### {ttl}", ""]
                out += [md_table(t.judge_csvs[name]), ""] if name in t.judge_csvs else \
                    [f"Not run yet (`{name}.csv` absent): `{how}`.", ""]
        else:
            out += [NO_JUDGE.replace("<code>", "`").replace("</code>", "`"), ""]
        out += improvement_markdown(t.improvement)
        cards = t.judge_csvs.get("judge_card")
        if cards is not None and t.improvement:  # the grade of the judge behind Tables 8 / 11's VGR-S
            out += [f"{r['run']}: {r['grade']}" for r in cards.iter_rows(named=True)] + [""]
    else:
        out += ["No GraphVerse samples in these runs.", ""]
    out += ["## Files", ""]
    if html_path is not None:
        out.append(f"- HTML report: `{html_path.name}`")
    out += [f"- table: `{p.parent.name}/{p.name}`" for p in result.csvs]
    out += [f"- figure: `{p.parent.name}/{p.name}`" for p in result.figures]
    return "\n".join(out) + "\n"
