"""GraphVerse's part of the report (`GraphVerse.report_sections`): accuracy per model and task, per image edit,
single vs paired images, Poly vs NP-hard, witnesses, the model families (Table 2) and, once the judge has run,
Acc beside VGR-S (Table 1), per edit, the failure modes (Figure 3) and the judge's agreement tables, as blocks
the report renders (`evalcore.report_section`), with their CSVs. Tables from `gie.report_tables`; the judge's
output comes through the report's context (GraphVerse does not import the judge)."""

from __future__ import annotations

import polars as pl

from evalcore.report_section import Details, Figure, ReportContext, Section, Table, Text
from gie import report_tables as gt
from gie.improvement_section import HOW, LONG, TITLES, categories_note
from gie.improvement_tables import for_report

WITNESS_NOTE = (
    "Per model and task, over parsed answers: <code>valid_pct</code> = % of answers giving a path / set / tour / "
    "cycle / colouring / mapping whose witness is feasible; <code>consistent_pct</code> = % of feasible witnesses "
    "whose stated value (Length, Size, NumColors, Distance, ...) agrees with the witness "
    "(<code>value_consistent</code>). The witness decides the verdict, except on SD, DIAM, GED and MCS, which the "
    "paper scores by the stated value; <code>correct_inconsistent_value</code> counts correct answers whose stated "
    "value disagrees with their witness.")
FAMILIES_NOTE = (
    "Per family (cluster/models.yaml <code>family</code>, else the leading letters of the title): the mean over its "
    "models of each model's mean Acc / VGR-S (%) on Poly and on NP-hard tasks; drop = (Poly − NPH) / Poly. VGR-S is "
    "blank until the judge has run.")
NO_JUDGE = ("The judge has not been run on these runs: no VGR-Score, no failure modes. Run the judge stage "
            "(cluster run with a judge) or <code>nphe4v judge RUN_DIR</code>.")
ACC_VGR_NOTE = (
    "Each cell: Acc / VGR-S (default judge, repeat 0), ↑ where VGR-S is above Acc, ↓ below, no arrow when equal at "
    "one decimal; n = samples behind Acc / samples the judge scored. All = every sample of the model.")
FAILURE_MODES_NOTE = (
    "Share of incorrect responses by the type of their first wrong step; unattributed = no wrong step labelled "
    "(e.g. no steps extracted). Shares sum to 1 per model.")
JUDGE_FILE_TITLES = (
    ("judge_deltas", "Judge robustness (Table 10: VGR of each setting − the default judge)",
     "nphe4v judge RUN_DIR --judge JUDGE [--repeat K]"),
    ("human_agreement", "Human agreement (Table 9: human − judge VGR)",
     "nphe4v judge RUN_DIR --human CSV"),
)


def _cards(cards: pl.DataFrame | None) -> list[Text]:
    """The grade line of each run's judge card (shown beside every VGR table); the run named with several."""
    if cards is None:
        return []
    many = cards.height > 1
    return [Text(f"{r['run']}: {r['grade']}" if many else str(r["grade"]), style="note judge-card", escape=True)
            for r in cards.iter_rows(named=True)]


def _card_md(cards: pl.DataFrame | None) -> str:
    if cards is None:
        return ""
    many = cards.height > 1
    return "".join(f"{r['run'] + ': ' if many else ''}{r['grade']}\n" for r in cards.iter_rows(named=True)) + "\n"


def _edit_bars(by_edit: pl.DataFrame) -> pl.DataFrame:
    # the generic bars spec: per model a row, per edit a bar (fractions, Wilson bounds)
    return by_edit.select(label=pl.col("model"), series=pl.col("variant"), value=pl.col("acc") / 100,
                          lo=pl.col("ci_low") / 100, hi=pl.col("ci_high") / 100)


def sections(ctx: ReportContext, name: str, title: str) -> list[Section]:
    df = gt.frame_of(ctx.samples)
    gv = gt.graphverse(df)
    judged = gt.graphverse_judged(df, ctx)
    models = gt.mode_rows(df)["model"].unique().to_list()
    families = gt.table2_labels(gt.graphverse_families(df, judged, ctx.model_info(models)))
    cards = ctx.judge_cards()
    csvs = {**({"graphverse_families": families} if families.height else {}),
            **{f"graphverse_{k}": v for k, v in gv.items()},
            **{f"graphverse_{k}": v for k, v in judged.items()}}
    if not gv:
        empty = f"No {title} samples in these runs."
        return [Section(name, title, (Text(empty, markdown=empty, style="empty"),), csvs)]
    blocks: list = [
        Figure("graphverse_edits", "bars", _edit_bars(gv["by_edit"]), f"{title} accuracy per image edit",
               "Accuracy per image edit (Wilson intervals).", {"panel_title": "accuracy (fraction)"}),
        Table(gv["acc_table"], caption="Accuracy per model and task (%)", digits=1, id="gv-acc"),
        Table(gv["accuracy"], caption="With counts and Wilson intervals (%)", digits=1,
              ci=("acc",), hide=("ci_low", "ci_high"), id="gv-accuracy", in_markdown=False),
        Table(gv["by_edit"], caption="Per edit", digits=1, id="gv-edit", in_markdown=False),
        Table(gv["single_vs_paired"], caption="Single vs paired images", digits=1, id="gv-paired",
              in_markdown=False),
        Table(gv["poly_vs_nph"], caption="Poly vs NP-hard", digits=3, id="gv-poly"),
        Text(WITNESS_NOTE, heading="Witnesses and stated values"),
        *([Table(gv["witness"], digits=1, id="gv-witness", in_markdown=False)] if "witness" in gv else []),
        Text(FAMILIES_NOTE, heading="Model families (Table 2)"),
        *_cards(cards),
        Table(families, digits=3, id="gv-families", in_page=True, in_markdown=False),
    ]
    if families.height:
        blocks += [Text(None, markdown="### Model families (Table 2)"), Table(families, in_page=False)]
    if not judged:
        blocks += [Text(NO_JUDGE, heading="VGR-Score", style="empty",
                        markdown=NO_JUDGE.replace("<code>", "`").replace("</code>", "`"))]
        return [Section(name, title, tuple(blocks), csvs), _improvement(df, ctx, cards)]
    card_md = _card_md(cards)
    blocks += [
        Text(None, heading="", markdown="### Acc / VGR-S per model and task (%)\n\n" + card_md
             + "↑ VGR-S above Acc, ↓ below; n = samples behind Acc / samples scored by the judge."),
        Text("", heading="Acc and VGR-S per model and task (%, Table 1)"),
        *_cards(cards),
        Text(ACC_VGR_NOTE),
        Table(judged["acc_vgr_wide"], id="gv-acc-vgr"),
        Details("As a long table", (Table(judged["acc_vgr"], digits=1, id="gv-acc-vgr-long"),)),
        Text("", heading="Acc and VGR-S per edit (%)", markdown="### Acc and VGR-S per edit (%)\n\n" + card_md.rstrip()),
        *_cards(cards),
        Table(judged["edit_vgr"], digits=1, id="gv-edit-vgr"),
        Text(FAILURE_MODES_NOTE, heading="Failure modes of incorrect responses (Figure 3)",
             markdown="### Failure modes of incorrect responses (shares)"),
        Figure("graphverse_failure_modes", "mode_shares", judged["failure_modes"],
               caption="Failure-mode shares per model.", params={"empty": "No incorrect judged GraphVerse responses."}),
        Table(judged["failure_modes"], digits=3, id="gv-failure-modes"),
    ]
    files = ctx.judge_files()
    for key, heading, how in JUDGE_FILE_TITLES:
        frame = files.get(key)
        if frame is None:
            blocks.append(Text(f"Not run yet ({key}.csv absent): <code>{how}</code>.", heading=heading, style="empty",
                               markdown=f"### {heading}\n\nNot run yet (`{key}.csv` absent): `{how}`."))
        else:
            blocks += [Text("", heading=heading, markdown=f"### {heading}"),
                       Table(frame, digits=2, id="gv-" + key.replace("_", "-"))]
    return [Section(name, title, tuple(blocks), csvs), _improvement(df, ctx, cards)]


def _improvement(df: pl.DataFrame, ctx: ReportContext, cards: pl.DataFrame | None) -> Section:
    """Improving VGR (§5.3, Appendix E): Tables 3 / 8 / 11 / 13 as the report's comparisons spec asks."""
    tables = for_report(df, ctx)
    blocks: list = [*_cards(cards)]
    if not tables:
        blocks.append(Text(f"No comparison in these runs. {HOW}", style="empty"))
    else:
        blocks.append(Text(f"{HOW} {categories_note()}",
                           markdown=f"### Improvement tables (Tables 3 / 8 / 11 / 13)\n\n{categories_note()}"))
        for key, heading, note in TITLES:
            if key not in tables:
                continue
            blocks += [Text(note, heading=heading, markdown=f"#### {heading}\n\n{note}"),
                       Table(tables[key], id=f"gv-{key}"),
                       Details("As a long table (every bound)", (Table(tables[LONG[key]], digits=2,
                                                                        id=f"gv-{key}-long"),))]
        if cards is not None:
            blocks.append(Text(None, markdown="".join(f"{r['run']}: {r['grade']}\n"
                                                      for r in cards.iter_rows(named=True))))
    return Section("improvement", "Improving VGR (GraphVerse §5.3, Appendix E)", tuple(blocks),
                   {f"graphverse_{k}": v for k, v in tables.items()}, nav="improvement", md_title="")
