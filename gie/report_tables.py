"""GraphVerse report tables: accuracy from ``gie.metrics``, and with the judge's output (when the judge has
run, read through the report's context: GraphVerse does not import the judge) VGR-Score and failure modes;
GraphVerse Table 2 per model family. Every table takes the samples as a frame (``report.analysis`` reads run
folders)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import polars as pl

from evalcore.report_section import Frame, ReportContext, as_frame
from gie.catalogue import EDIT_KINDS, TASK_NAMES
from gie.metrics import mode_rows


def frame_of(src: Frame) -> pl.DataFrame:
    return as_frame(src, NAME)

NAME = "graphverse"  # gie.benchmark.GraphVerse.name (not imported: it imports this package lazily)


def graphverse(src: Frame) -> dict[str, pl.DataFrame]:
    """GraphVerse tables from ``gie.metrics`` (accuracy per model x task with Wilson interval in percent,
    the model x task ``acc_table``, ``by_edit``, ``single_vs_paired``, ``poly_vs_nph``, and ``witness``:
    per model x task how often the given witness is valid and the stated value agrees with it,
    ``witness_validity``); ``{}`` when the source has no GraphVerse rows."""
    df = mode_rows(frame_of(src).filter(pl.col("benchmark") == NAME))
    if df.is_empty():
        return {}
    from gie import metrics as gm

    return {
        "accuracy": gm.accuracy(df, by=("model", "task")),
        "acc_table": gm.acc_table(df),
        "by_edit": gm.by_edit(df, by=("model",)),
        "single_vs_paired": gm.single_vs_paired(df, by=("model",)),
        "poly_vs_nph": gm.poly_vs_nph(df),
        "witness": gm.witness_validity(df, by=("model", "task")),
    }


FAILURE_MODES: tuple[str, ...] = ("perception", "visual_reasoning", "text_reasoning", "unattributed")


def _arrow(acc: float | None, vgr: float | None) -> str:
    """↑ where VGR-S > Acc, ↓ where lower, "" when equal at the shown precision (one decimal) or missing."""
    if acc is None or vgr is None:
        return ""
    a, v = round(acc, 1), round(vgr, 1)
    return "↑" if v > a else "↓" if v < a else ""


def _acc_vgr(df: pl.DataFrame, joined: pl.DataFrame, by: Sequence[str], ctx: ReportContext) -> pl.DataFrame:
    from gie import metrics as gm

    acc = gm.accuracy(df, by=tuple(by)).select(*by, pl.col("n").alias("n_acc"), "acc")
    v = ctx.vgr_table(joined, tuple(by), task_order=TASK_NAMES, edit_order=EDIT_KINDS).select(
        *by, pl.col("n").alias("n_vgr"), "judge_errors", "vgr", pl.col("coverage").alias("vgr_coverage"),
        "vgr_floor")
    out = acc.join(v, on=list(by), how="left") if by else pl.concat([acc, v], how="horizontal")
    return out.with_columns(
        arrow=pl.struct("acc", "vgr").map_elements(lambda r: _arrow(r["acc"], r["vgr"]), return_dtype=pl.String)
    )


def graphverse_judged(src: Frame, ctx: ReportContext) -> dict[str, pl.DataFrame]:
    """GraphVerse with the judge (seed Table 1, per edit, Figure 3); ``{}`` without GraphVerse samples or
    judgments. Acc comes from ``gie.metrics``, VGR-S from the judge (``ctx.vgr_table``) over the samples joined
    to the default judge's judgments (``ctx.judge_join``), failure modes from ``ctx.failure_modes``. Tables:

    * ``acc_vgr`` — per model and task, plus ``task = "All"`` (all of the model's samples): ``n_acc``, ``acc``,
      ``n_vgr`` (scored samples), ``judge_errors``, ``vgr`` and ``arrow`` (↑ VGR-S above Acc, ↓ below,
      empty when equal at one decimal);
    * ``acc_vgr_wide`` — the same as model x task cells ``"Acc / VGR-S ↑"``;
    * ``edit_vgr`` — per model and edit (``variant``): the same columns;
    * ``failure_modes`` — per model over incorrect responses: ``n_incorrect`` and the share (fraction) of
      each mode (perception, visual_reasoning, text_reasoning, unattributed; they sum to 1)."""
    df = mode_rows(frame_of(src).filter(pl.col("benchmark") == NAME))
    js = ctx.judgments()
    if df.is_empty() or js is None:
        return {}
    js = mode_rows(js)
    joined = ctx.judge_join(df, js)  # both with a PoT arm's model as "<model> (pot)"
    per_task = _acc_vgr(df, joined, ("model", "task"), ctx)
    pooled = _acc_vgr(df, joined, ("model",), ctx).with_columns(task=pl.lit("All")).select(per_task.columns)
    tasks = [t for t in TASK_NAMES if t in set(per_task["task"].to_list())]
    tasks += sorted(set(per_task["task"].to_list()) - set(tasks))
    order = {t: i for i, t in enumerate([*tasks, "All"])}
    acc_vgr = pl.concat([per_task, pooled]).sort(
        "model", pl.col("task").replace_strict(order, default=len(order), return_dtype=pl.Int64))

    def cell(r: dict) -> str:
        a = "—" if r["acc"] is None else f"{r['acc']:.1f}"
        v = "—" if r["vgr"] is None else f"{r['vgr']:.1f}"
        # VGR coverage: the share of judged responses the judge could read and score (VGR v4 scores nothing
        # it cannot read), shown beside VGR-S so a mean over few readable responses is visible as such; below
        # full coverage also the floor (unscored = 0), which unreadable responses cannot raise
        cov = "" if r["vgr_coverage"] is None else f", VGR cov {r['vgr_coverage']:.0%}"
        if r["vgr_coverage"] is not None and r["vgr_coverage"] < 1 and r["vgr_floor"] is not None:
            cov += f", floor {r['vgr_floor']:.1f}"
        return f"{a} / {v}{(' ' + r['arrow']) if r['arrow'] else ''} (n={r['n_acc']}/{r['n_vgr'] or 0}{cov})"

    wide = acc_vgr.with_columns(
        cell=pl.struct("acc", "vgr", "arrow", "n_acc", "n_vgr", "vgr_coverage", "vgr_floor").map_elements(
            cell, return_dtype=pl.String)
    ).pivot(on="task", index="model", values="cell").select("model", *tasks, "All").sort("model")
    edit_order = {e: i for i, e in enumerate(EDIT_KINDS)}
    edit = _acc_vgr(df, joined, ("model", "variant"), ctx).sort(
        "model", pl.col("variant").replace_strict(edit_order, default=len(edit_order), return_dtype=pl.Int64))
    fm = ctx.failure_modes(js.filter(pl.col("model").is_in(df["model"].unique().to_list())))
    if fm.is_empty() or "n_incorrect" not in fm.columns or fm.height == 0:
        fm = pl.DataFrame(schema={"model": pl.String, "n_incorrect": pl.Int64,
                                  **{m: pl.Float64 for m in FAILURE_MODES}})
    else:
        fm = fm.select("model", "n_incorrect", *[(pl.col(f"{m}_pct") / 100).alias(m) for m in FAILURE_MODES])
    return {"acc_vgr": acc_vgr, "acc_vgr_wide": wide, "edit_vgr": edit, "failure_modes": fm}


def graphverse_families(df: pl.DataFrame, judged: Mapping[str, pl.DataFrame] | None = None,
                        info: pl.DataFrame | None = None) -> pl.DataFrame:
    """GraphVerse Table 2: per model family (``model_info``), Acc on the P tasks (the paper's "Poly") and on the
    NP-hard tasks with the relative drop (``gie.metrics.poly_vs_nph``) and, when the judge has run, VGR-S the
    same way (per model the mean of its per-task VGR-S over the group's tasks, per family the mean over its
    models). Columns ``Acc_P``, ``Acc_NPH``, ``Acc_drop``, ``VGR_P``, ``VGR_NPH``, ``VGR_drop``; percent,
    drops as fractions. ``table2_labels`` gives the paper's column names for display."""
    from gie import metrics as gm
    from gie.catalogue import POLY_TASKS

    gv = df.filter(pl.col("benchmark") == NAME)
    cols = {"family": pl.String, "models": pl.Int64, "Acc_P": pl.Float64, "Acc_NPH": pl.Float64,
            "Acc_drop": pl.Float64, "VGR_P": pl.Float64, "VGR_NPH": pl.Float64, "VGR_drop": pl.Float64}
    if gv.is_empty():
        return pl.DataFrame(schema=cols)
    # a model's family: ``info``'s (ReportContext.model_info), else the leading letters of its name
    known = dict(zip(info["model"].to_list(), info["family"].to_list(), strict=True)) if info is not None else {}
    fam = {m: known.get(m) or _derived_family(m) for m in gv["model"].unique().to_list()}
    # a PoT row `<model> (pot)` belongs to its own family, `<family> (pot)`: never pooled with direct inference
    labelled = mode_rows(gv)
    for (model, label), _ in labelled.with_columns(base=gv["model"]).group_by(["base", "model"]):
        if label != model:
            fam[label] = f"{fam[model]}{label[len(model):]}"
    gv = labelled
    acc = gm.poly_vs_nph(gv, fam).rename({"Poly": "Acc_P", "NPH": "Acc_NPH", "rel_drop": "Acc_drop"})
    av = (judged or {}).get("acc_vgr")
    if av is None or av.is_empty():
        out = acc.with_columns(VGR_P=pl.lit(None, pl.Float64), VGR_NPH=pl.lit(None, pl.Float64),
                               VGR_drop=pl.lit(None, pl.Float64))
    else:
        per_model = (
            av.filter(pl.col("task") != "All")
            .with_columns(_p=pl.col("task").is_in(list(POLY_TASKS)))
            .group_by("model")
            .agg(VGR_P=pl.col("vgr").filter(pl.col("_p")).mean(),
                 VGR_NPH=pl.col("vgr").filter(~pl.col("_p")).mean())
            .with_columns(family=pl.col("model").replace_strict(fam, default=pl.col("model"), return_dtype=pl.String))
        )
        vgr = per_model.group_by("family").agg(pl.col("VGR_P").mean(), pl.col("VGR_NPH").mean())
        p = pl.col("VGR_P")
        vgr = vgr.with_columns(
            VGR_drop=pl.when(p.is_not_null() & (p != 0)).then((p - pl.col("VGR_NPH")) / p).otherwise(None)
        )
        out = acc.join(vgr, on="family", how="left")
    return out.select(list(cols)).sort("family")


def _derived_family(name: str) -> str:
    m = re.match(r"[A-Za-z]+", name)
    return m.group(0) if m else name


TABLE2_LABELS: dict[str, str] = {"Acc_P": "Acc_Poly", "VGR_P": "VGR_Poly"}
"""GraphVerse Table 2 prints the P group as "Poly": the report's HTML, Markdown and CSV show that label."""


def table2_labels(families: pl.DataFrame) -> pl.DataFrame:
    """``graphverse_families`` with the paper's column names, for display."""
    return families.rename({k: v for k, v in TABLE2_LABELS.items() if k in families.columns})
