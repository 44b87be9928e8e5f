"""NPHardEval4V's part of the report (`NPHardEval4V.report_sections`): the leaderboard, the complexity-class
profile (Figure 4), the heatmaps (Figures 7 and 9), the prompt-mode ablation (Figure 8), LVLMs vs text-only
LLMs (Figure 6), version consistency (Appendix B), the failure analysis (§5.3) and the per-task table, as
blocks the report renders (`evalcore.report_section`), with their CSVs. Tables from `nphe4v.report_tables`."""

from __future__ import annotations

import polars as pl

from evalcore.report_section import (
    ACCESS_ORDER,
    Details,
    Figure,
    ReportContext,
    Section,
    Table,
    Text,
    drop_single_version,
)
from evalcore.schema import PROMPT_MODES
from nphe4v import consistency, failure_analysis, metrics
from nphe4v import report_tables as nt
from nphe4v.metrics import POOLED
from nphe4v.tasks import TASK_CLASS, TASK_MODULES

NO_SAMPLES = "No NPHardEval4V samples."  # an empty figure's text (the report's figures name no benchmark)

MAX_DETAIL_ROWS = 1000
"""Rows of a secondary table (inside <details>) shown in the page; the CSV holds them all."""
BOARD_CI = ("ER", "RA", "RA_corrected", "AA_P", "AA_NPC", "AA_NPH", "AA_All")

LEADERBOARD_NOTE = (
    "All prompt modes pooled, as the papers' summary notebook pools them (the papers' Figure 6 shows "
    "figure+limited_text alone: see the per-mode table). RA: the paper's rule (YES in at least 3 of the 5 asks; an "
    "unparsable ask is not a YES); RA_var: the variance of the asks' outcomes, mean over instances; RA_corrected: "
    "RA minus the false-YES rate on mismatched controls (not in the paper). ER and RA: Wilson 95% intervals of the "
    "pooled counts; RA_corrected and AA: percentile bootstrap over instances (resampled within each task and "
    "level, fixed seed). n = answer questions (infra errors excluded), n_rec = instances with recognition data "
    "(RA = 1 without). ER_paper / AA_paper: ER and AA_All with the papers' parsing rule (first "
    "&lt;final_answer&gt; block read as a Python literal, the papers' keys spelt exactly; docs/metrics.md), to "
    "place a model among the papers' tables; empty for runs that predate it. ")
ANSWER_CHECKS_NOTE = (
    "The witness (path, tour, selection, colouring, schedule) decides the verdict; inconsistent = answers whose "
    "stated value (total, count) disagrees with their own witness (value_consistent false), of n_stated "
    "compared. parsable / parsable_paper: answers our parse and the papers' parse could read; verdict_differs: "
    "answers the two grade differently.")
FAILURES_NOTE = (
    "Every answer that is not correct (infra errors excluded), in the first category that applies: unparsable; "
    "perception error (names an item, node, city, vertex, meeting, slot or position the instance does not "
    "have); wrong decision (TSP-D, GCP-D); feasible but suboptimal; infeasible (any other wrong answer). Shares "
    "are of the failures.")


def board_view(board: pl.DataFrame, pooled: bool) -> pl.DataFrame:
    """The leaderboard as shown: the pooled rows (best AA_All first) or the per-mode rows, without the counts
    behind the rates."""
    b = board.filter((pl.col("prompt_mode") == POOLED) if pooled else (pl.col("prompt_mode") != POOLED))
    if pooled:
        b = b.sort("version", pl.col("AA_All").fill_null(-1.0), "model", descending=[False, True, False]).drop(
            "prompt_mode")
    return drop_single_version(b.drop("parsable", "correct", "recognised", "n_control", "false_yes"))


def ablation_wide(ablation: pl.DataFrame) -> pl.DataFrame:
    """AA_All per model (rows) and prompt mode (columns), with each model's best mode."""
    if ablation.is_empty():
        return ablation
    wide = ablation.select("version", "model", "prompt_mode", "AA_All").pivot(
        on="prompt_mode", index=["version", "model"], values="AA_All"
    )
    best = ablation.filter(pl.col("best")).select("version", "model", pl.col("prompt_mode").alias("best_mode"))
    modes = [m for m in PROMPT_MODES if m in wide.columns]
    return drop_single_version(wide.join(best, on=["version", "model"], how="left").select(
        "version", "model", *modes, "best_mode").sort("version", "model"))


def open_closed(board: pl.DataFrame, info: pl.DataFrame) -> pl.DataFrame:
    """Figure 4's grouping: per version and model access (``info``: model -> access; closed, open, builtin,
    unregistered), over the pooled leaderboard rows of its models: ``n_models``, ``models`` and the plain means
    of AA_P, AA_NPC, AA_NPH, AA_All, ER and RA."""
    cols = ["version", "access", "n_models", "models", "AA_P", "AA_NPC", "AA_NPH", "AA_All", "ER", "RA"]
    pooled = board.filter(pl.col("prompt_mode") == POOLED)
    if pooled.is_empty():
        return nt.empty_table(cols, strings=("version", "access", "models")).with_columns(
            pl.col("n_models").cast(pl.Int64))
    order = {a: i for i, a in enumerate(ACCESS_ORDER)}
    return (
        pooled.join(info.select("model", "access"), on="model", how="left")
        .group_by(["version", "access"])
        .agg(
            n_models=pl.len().cast(pl.Int64),
            models=pl.col("model").sort().str.join(", "),
            **{c: pl.col(c).mean() for c in ("AA_P", "AA_NPC", "AA_NPH", "AA_All", "ER", "RA")},
        )
        .sort("version", pl.col("access").replace_strict(order, default=len(order), return_dtype=pl.Int64))
        .select(cols)
    )


def access_groups(board: pl.DataFrame, info: pl.DataFrame) -> list[tuple[str, list[str]]]:
    """Radar panels for Figure 4's grouping: (access, its models) in ACCESS_ORDER."""
    models = set(board.filter(pl.col("prompt_mode") == POOLED)["model"].to_list()) if not board.is_empty() else set()
    info = info.filter(pl.col("model").is_in(list(models)))
    return [(a, ms) for a in ACCESS_ORDER
            if (ms := sorted(info.filter(pl.col("access") == a)["model"].to_list()))]


def sections(ctx: ReportContext, title: str) -> list[Section]:
    """Every section, computed from ``ctx``'s samples; the first one carries the CSVs."""
    df = nt.frame_of(ctx.samples)
    n_boot, seed = ctx.n_boot, ctx.seed
    board = nt.leaderboard(df, n_boot=n_boot, seed=seed)
    tasks = nt.per_task(df, n_boot=n_boot, seed=seed)
    text_only = nt.text_only_models(df, ctx.configured_models())
    cons = consistency.version_consistency(df, board=board, tasks_table=tasks)
    profile = nt.class_profile(df, board=board)
    heat = nt.heatmap_table(df)
    ablation = nt.prompt_mode_ablation(df, board=board)
    llm = nt.lvlm_vs_llm(df, lvlm_mode=ctx.lvlm_mode, text_only=text_only, board=board)
    checks = nt.answer_checks(df)
    summary = consistency.consistency_summary(cons)
    failures = failure_analysis.failure_categories(df, ctx.instance_data())
    oc, groups = None, None
    if ctx.group_by == "open_closed":
        info = ctx.model_info(board["model"].unique().to_list())
        oc, groups = open_closed(board, info), access_groups(board, info)
    versions = board["version"].n_unique() if not board.is_empty() else 0
    csvs = {"leaderboard": board, "per_task": tasks, "class_profile": profile, "heatmap": heat,
            "prompt_mode_ablation": ablation, "lvlm_vs_llm": llm, "version_consistency": cons,
            "answer_checks": checks,
            **({"consistency_summary": summary} if summary is not None else {}),
            **({"open_closed": oc} if oc is not None else {}),
            **{f"failures_{k}": v for k, v in failures.items()}}
    first = _leaderboard(board, checks)
    return [
        Section(first.anchor, first.title, first.blocks, csvs, first.nav, first.md_title),
        _classes(profile, oc, groups),
        _heatmaps(heat),
        _ablation(ablation),
        _lvlm_llm(llm, text_only),
        _versions(cons, summary, versions, oc),
        _failures(failures, title),
        Section("per-task", "Per task", (Details("AA per model, task and prompt mode", (
            Table(drop_single_version(tasks), ci=("AA", "ER"), max_rows=MAX_DETAIL_ROWS, csv_name="per_task.csv",
                  id="per-task"),)),), nav="", md_title=""),
    ]


def _leaderboard(board: pl.DataFrame, checks: pl.DataFrame) -> Section:
    return Section("leaderboard", "Leaderboard", (
        Text(LEADERBOARD_NOTE + metrics.RA_NOTE,
             markdown="ER, RA: Wilson 95% intervals; RA_corrected, AA: instance bootstrap. n = answer questions, "
                      "n_rec = instances with recognition data."),
        Table(board_view(board, True), ci=BOARD_CI, id="leaderboard", markdown=board_view(board, True).drop(
            "n_instances")),
        Text(None, markdown="ER_paper / AA_paper: ER and AA_All with the papers' parsing rule (first final_answer "
                            f"block, Python literal, the papers' keys).\n\nNote: {metrics.RA_NOTE}"),
        Details("Per prompt mode", (Table(board_view(board, False), ci=BOARD_CI, id="leaderboard-modes"),)),
        Details("Stated values and the papers' parse, per task", (
            Text(ANSWER_CHECKS_NOTE),
            Table(drop_single_version(checks), id="answer-checks"),
        )),
        Text(None, markdown="## Stated values and the papers' parse\n\ninconsistent: stated value disagrees with "
                            "the answer's own witness (which decides); verdict_differs: the papers' parse grades "
                            "differently."),
        Table(drop_single_version(checks), in_page=False),
    ), nav="leaderboard", md_title="Leaderboard (prompt modes pooled)")


def _classes(profile: pl.DataFrame, oc: pl.DataFrame | None, groups: list[tuple[str, list[str]]] | None) -> Section:
    caption = "RA, ER and AA on P, NP-complete and NP-hard tasks, prompt modes pooled." + (
        " One panel per model access (closed, open, builtin)." if oc is not None else "")
    blocks: list = [Figure("radar", "radar", profile, caption=caption,
                           params={"empty": NO_SAMPLES, **({"groups": groups} if groups else {})})]
    if oc is not None:
        blocks += [Text("Plain means over each group's models (pooled prompt modes); access from cluster/models.yaml, "
                        "<i>unregistered</i> for models it does not list.", heading="Closed vs open models"),
                   Table(drop_single_version(oc), id="open-closed", in_markdown=False)]
    else:
        blocks.append(Text("Closed vs open models: <code>nphe4v report --group-by open_closed</code> (model access "
                           "from cluster/models.yaml)."))
    blocks.append(Table(drop_single_version(profile), ci=("AA", "ER", "RA"), id="class-profile", in_markdown=False))
    return Section("classes", "By complexity class (Figure 4)", tuple(blocks), nav="classes", md_title="")


def _heatmaps(heat: pl.DataFrame) -> Section:
    # what the drawer needs of the benchmark: the task order of the columns and each task's complexity class
    axes = {"task_order": list(TASK_MODULES), "task_class": dict(TASK_CLASS), "empty": NO_SAMPLES}
    return Section("heatmaps", "Per task and level (Figures 7 and 9)", (
        Figure("heatmap_reasoning", "heatmap", heat, "Reasoning per task and level (wa = A'·RA·ER, prompt modes "
               "pooled)", "Hover a cell for its value, interval and count.", {"value": "wa", **axes}),
        Figure("heatmap_recognition", "heatmap", heat, "Recognition accuracy per task and level",
               "Grey: no recognition data (RA counts as 1 in the metrics).",
               {"value": "RA", "lo": "RA_lo", "hi": "RA_hi", "count": "n_rec", **axes}),
        Details("Raw accuracy heatmap and the full table", (
            Figure("heatmap_accuracy", "heatmap", heat, "Raw accuracy per task and level (correct / n, prompt modes "
                   "pooled)", "correct / n per level; Wilson interval in the tooltip.",
                   {"value": "accuracy", "lo": "acc_lo", "hi": "acc_hi", **axes}),
            Table(drop_single_version(heat), ci=("accuracy", "RA"), hide=("acc_lo", "acc_hi"),
                  max_rows=MAX_DETAIL_ROWS, csv_name="heatmap.csv", id="heatmap-table"),
        )),
    ), nav="heatmaps", md_title="")


def _ablation(ablation: pl.DataFrame) -> Section:
    return Section("ablation", "Prompt-mode ablation (Figure 8)", (
        Figure("prompt_mode_ablation", "mode_bars", ablation, caption="AA_All per prompt mode with bootstrap "
               "intervals.", params={"empty": NO_SAMPLES}),
        Table(ablation_wide(ablation), caption="AA_All by prompt mode", id="ablation-wide"),
        Details("Details", (Table(drop_single_version(ablation), ci=("AA_All", "ER"), id="ablation"),)),
    ), nav="prompt modes", md_title="Prompt-mode ablation (AA_All)")


def _lvlm_llm(llm: pl.DataFrame, text_only: set[str]) -> Section:
    note = (Text("No text-only LLM in these runs (set <code>text_only: true</code> on a model to run it on "
                 "full_text_only); only LVLMs are shown.", markdown="No text-only LLM in these runs.")
            if not text_only else Text(f"Text-only LLMs: {', '.join(sorted(text_only))}.", escape=True))
    mean = llm.filter(pl.col("model") == "mean") if not llm.is_empty() else llm
    return Section("lvlm-llm", "LVLMs vs text-only LLMs (Figure 6)", (
        note,
        Figure("lvlm_vs_llm", "class_bars", llm, caption="AA and ER per complexity class; 'mean' rows average the "
               "kind's models.", params={"empty": NO_SAMPLES}),
        Table(drop_single_version(llm), ci=("AA", "ER"), id="lvlm-llm",
              markdown=drop_single_version(mean).drop("AA_lo", "AA_hi", "ER_lo", "ER_hi")),
    ), nav="LVLM vs LLM", md_title="LVLMs vs text-only LLMs (means per kind)")


def _versions(cons: pl.DataFrame, summary: pl.DataFrame | None, versions: int, oc: pl.DataFrame | None) -> Section:
    one = versions <= 1
    blocks: list = [
        Text("These runs hold one dataset version: min = mean = max and no variance. Report several runs of the "
             "same models on different versions to measure consistency." if one else
             f"{versions} versions. AA per model and task (prompt modes pooled); variance with ddof = 1.",
             markdown=None),
        Table(cons.filter(pl.col("task") == "All").drop("complexity"), in_page=False),
    ]
    if summary is not None:
        blocks += [Text("Variance of AA across versions per (model, task), then its minimum, mean and maximum over "
                        "all points (the paper: 135 points, min 0.0, mean 0.01167, max 0.11029); near zero = below "
                        f"{consistency.NEAR_ZERO_VARIANCE:g}.", heading="Appendix B summary"),
                   Text(None, markdown="### Appendix B summary (variance of AA across versions)"),
                   Table(summary, digits=5, id="consistency-summary")]
    full = Table(cons, id="version-consistency", in_markdown=False)
    blocks.append(Details("Per model and task", (full,)) if one else full)
    if oc is not None:
        blocks += [Text(None, markdown="## Closed vs open models (Figure 4)"),
                   Table(drop_single_version(oc), in_page=False)]
    return Section("versions", "Version consistency", tuple(blocks), nav="versions",
                   md_title="Version consistency (AA_All)")


def _failures(failures: dict[str, pl.DataFrame], title: str) -> Section:
    if not failures:
        return Section("failures", "Failure analysis (§5.3)", (
            Text(f"No {title} answer samples.", style="empty", markdown=None),), nav="failures", md_title="")
    return Section("failures", "Failure analysis (§5.3)", (
        Text(FAILURES_NOTE, markdown=None),
        Table(failures["by_model"], id="failures"),
        Details("Per model and task", (Table(failures["by_model_task"], max_rows=MAX_DETAIL_ROWS,
                                             csv_name="failures_by_model_task.csv", id="failures-task"),)),
    ), nav="failures")
