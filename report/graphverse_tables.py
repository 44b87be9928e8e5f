"""GraphVerse report tables: accuracy from ``gie.metrics``, and with the judge's output (when the judge has
run) VGR-Score, failure modes and the agreement CSVs; GraphVerse Table 2 per model family."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from evalcore.records import KEY_COLUMNS
from gie.catalogue import EDIT_KINDS, TASK_NAMES
from gie.metrics import mode_rows
from report.judge_cards import card_lines
from report.model_groups import ModelCatalogue, model_info
from report.runs import GV_BENCHMARK, Source, frame_of, load_runs, runs_of

JUDGE_DIR = "judgments"  # where cluster.judge_stage / jobs/judge_rerun.py write (judge.vgr)


def graphverse(src: Source) -> dict[str, pl.DataFrame]:
    """GraphVerse tables from ``gie.metrics`` (accuracy per model x task with Wilson interval in percent,
    the model x task ``acc_table``, ``by_edit``, ``single_vs_paired``, ``poly_vs_nph``, and ``witness``:
    per model x task how often the given witness is valid and the stated value agrees with it,
    ``witness_validity``); ``{}`` when the source has no GraphVerse rows."""
    df = mode_rows(frame_of(src).filter(pl.col("benchmark") == GV_BENCHMARK))
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


LEGACY_JUDGE_DIR = "judge"  # pre-judge-service layout: Parquet keyed like the samples, free-form columns
JUDGE_CSVS: tuple[tuple[str, str], ...] = (
    ("judge_deltas", "judge_deltas.csv"),  # Table 10 shape (jobs/judge_rerun.py)
    ("human_agreement", "human_agreement.csv"),  # Table 9 shape (jobs/judge_rerun.py --human)
    ("judge_agreement", "judge_agreement.csv"),
)
FAILURE_MODES: tuple[str, ...] = ("perception", "visual_reasoning", "text_reasoning", "unattributed")


def run_judgments(run_dir: str | Path) -> pl.DataFrame:
    """The run's judgments of its default judge (``judge.vgr.default_judge``), judge repeat 0, GraphVerse
    rows only (``judge.vgr.select``); empty when the judge has not run."""
    from judge import vgr

    js = vgr.read_judgments(Path(run_dir) / JUDGE_DIR)
    if js.is_empty():
        return js
    ident = vgr.default_judge(run_dir, js)
    judge, template = ident if ident is not None else (None, None)
    return vgr.select(js, judge, template, 0).filter(pl.col("benchmark") == GV_BENCHMARK)


def judgments(src: Source) -> pl.DataFrame | None:
    """The default judge's judgments of every run (``run_judgments``), None when no run has any."""
    frames = [j for j in (run_judgments(r.path) for r in runs_of(src)) if not j.is_empty()]
    return pl.concat(frames, how="vertical") if frames else None


def judge_table(run_dirs: Source) -> pl.DataFrame | None:
    """Per-sample judge output keyed like the samples, for the sample browser and ``missing_parts``: per run,
    the default judge's judgments (``run_judgments``) or, for runs judged before the judge service, Parquet
    files under ``RUN/judge/`` (or a ``judge`` column of a frame); None when neither exists."""
    if isinstance(run_dirs, pl.DataFrame | pl.LazyFrame):
        df = frame_of(run_dirs)
        return df.select(*KEY_COLUMNS, "judge") if "judge" in df.columns else None
    frames = []
    for r in load_runs(run_dirs):
        js = run_judgments(r.path)
        if not js.is_empty():
            frames.append(js)
            continue
        legacy = r.path / LEGACY_JUDGE_DIR
        files = sorted(legacy.glob("**/*.parquet")) if legacy.is_dir() else []
        if files:
            frames.append(pl.read_parquet(files))
    if not frames:
        return None
    return pl.concat(frames, how="diagonal_relaxed")


def _arrow(acc: float | None, vgr: float | None) -> str:
    """↑ where VGR-S > Acc, ↓ where lower, "" when equal at the shown precision (one decimal) or missing."""
    if acc is None or vgr is None:
        return ""
    a, v = round(acc, 1), round(vgr, 1)
    return "↑" if v > a else "↓" if v < a else ""


def _acc_vgr(df: pl.DataFrame, joined: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    from gie import metrics as gm
    from judge import vgr

    acc = gm.accuracy(df, by=tuple(by)).select(*by, pl.col("n").alias("n_acc"), "acc")
    v = vgr.vgr_table(joined, tuple(by), task_order=TASK_NAMES, edit_order=EDIT_KINDS).select(
        *by, pl.col("n").alias("n_vgr"), "judge_errors", "vgr", pl.col("coverage").alias("vgr_coverage"))
    out = acc.join(v, on=list(by), how="left") if by else pl.concat([acc, v], how="horizontal")
    return out.with_columns(
        arrow=pl.struct("acc", "vgr").map_elements(lambda r: _arrow(r["acc"], r["vgr"]), return_dtype=pl.String)
    )


def vgr_samples(src: Source, df: pl.DataFrame | None = None) -> pl.DataFrame:
    """The runs' GraphVerse samples with ``vgr_score`` and ``judge_status`` of the default judge (repeat 0),
    null where the judge has not scored a sample (no judgments at all: every sample), keyed by model and prompt
    mode as stored; for the improvement tables (``report.improvement_tables``). ``df``: the runs' samples when
    already loaded."""
    from judge import vgr

    df = (frame_of(src) if df is None else df).filter(pl.col("benchmark") == GV_BENCHMARK)
    js = judgments(src) if runs_of(src) else None
    if df.is_empty() or js is None:
        return df.with_columns(vgr_score=pl.lit(None, pl.Float64), judge_status=pl.lit(None, pl.String))
    # per run, as graphverse_judged joins: sample keys repeat across runs
    return pl.concat([vgr.join(part, js.filter(pl.col("run_id") == rid))
                      for (rid,), part in df.group_by(["run_id"], maintain_order=True)], how="vertical")


def graphverse_judged(src: Source, df: pl.DataFrame | None = None) -> dict[str, pl.DataFrame]:
    """GraphVerse with the judge (seed Table 1, per edit, Figure 3); ``{}`` without GraphVerse samples or
    judgments. Acc comes from ``gie.metrics``, VGR-S from ``judge.vgr`` over the samples joined to the
    default judge's judgments, failure modes from ``judge.failure_modes.by_response``. Tables:

    * ``acc_vgr`` — per model and task, plus ``task = "All"`` (all of the model's samples): ``n_acc``, ``acc``,
      ``n_vgr`` (scored samples), ``judge_errors``, ``vgr`` and ``arrow`` (↑ VGR-S above Acc, ↓ below,
      empty when equal at one decimal);
    * ``acc_vgr_wide`` — the same as model x task cells ``"Acc / VGR-S ↑"``;
    * ``edit_vgr`` — per model and edit (``variant``): the same columns;
    * ``failure_modes`` — per model over incorrect responses: ``n_incorrect`` and the share (fraction) of
      each mode (perception, visual_reasoning, text_reasoning, unattributed; they sum to 1).

    ``df``: the runs' samples when already loaded (``samples(src)``)."""
    from judge import failure_modes, vgr

    df = mode_rows((frame_of(src) if df is None else df).filter(pl.col("benchmark") == GV_BENCHMARK))
    js = judgments(src) if runs_of(src) else None
    if df.is_empty() or js is None:
        return {}
    js = mode_rows(js)
    # per run: sample keys repeat across runs (the same models on several versions); vgr.join wants one
    # judgment per sample key
    joined = pl.concat([vgr.join(part, js.filter(pl.col("run_id") == rid))
                        for (rid,), part in df.group_by(["run_id"], maintain_order=True)], how="vertical")
    per_task = _acc_vgr(df, joined, ("model", "task"))
    pooled = _acc_vgr(df, joined, ("model",)).with_columns(task=pl.lit("All")).select(per_task.columns)
    tasks = [t for t in TASK_NAMES if t in set(per_task["task"].to_list())]
    tasks += sorted(set(per_task["task"].to_list()) - set(tasks))
    order = {t: i for i, t in enumerate([*tasks, "All"])}
    acc_vgr = pl.concat([per_task, pooled]).sort(
        "model", pl.col("task").replace_strict(order, default=len(order), return_dtype=pl.Int64))

    def cell(r: dict) -> str:
        a = "—" if r["acc"] is None else f"{r['acc']:.1f}"
        v = "—" if r["vgr"] is None else f"{r['vgr']:.1f}"
        # VGR coverage: the share of judged responses the judge could read and score (VGR v4 scores nothing
        # it cannot read), shown beside VGR-S so a mean over few readable responses is visible as such
        cov = "" if r["vgr_coverage"] is None else f", VGR cov {r['vgr_coverage']:.0%}"
        return f"{a} / {v}{(' ' + r['arrow']) if r['arrow'] else ''} (n={r['n_acc']}/{r['n_vgr'] or 0}{cov})"

    wide = acc_vgr.with_columns(
        cell=pl.struct("acc", "vgr", "arrow", "n_acc", "n_vgr", "vgr_coverage").map_elements(
            cell, return_dtype=pl.String)
    ).pivot(on="task", index="model", values="cell").select("model", *tasks, "All").sort("model")
    edit_order = {e: i for i, e in enumerate(EDIT_KINDS)}
    edit = _acc_vgr(df, joined, ("model", "variant")).sort(
        "model", pl.col("variant").replace_strict(edit_order, default=len(edit_order), return_dtype=pl.Int64))
    fm = failure_modes.by_response(js.filter(pl.col("model").is_in(df["model"].unique().to_list())))
    if fm.is_empty() or "n_incorrect" not in fm.columns or fm.height == 0:
        fm = pl.DataFrame(schema={"model": pl.String, "n_incorrect": pl.Int64,
                                  **{m: pl.Float64 for m in FAILURE_MODES}})
    else:
        fm = fm.select("model", "n_incorrect", *[(pl.col(f"{m}_pct") / 100).alias(m) for m in FAILURE_MODES])
    return {"acc_vgr": acc_vgr, "acc_vgr_wide": wide, "edit_vgr": edit, "failure_modes": fm}


def judge_csvs(src: Source) -> dict[str, pl.DataFrame]:
    """The agreement tables ``jobs/judge_rerun.py`` wrote into the run folders (``judge_deltas``: Table 10
    shape; ``human_agreement``: Table 9 shape; ``judge_agreement``), with a ``run`` column; a name is absent
    when no run holds its CSV (not run yet)."""
    out: dict[str, pl.DataFrame] = {}
    for name, fname in JUDGE_CSVS:
        frames = []
        for r in runs_of(src):
            p = r.path / fname
            if p.is_file():
                try:
                    t = pl.read_csv(p)
                except (pl.exceptions.PolarsError, OSError):
                    continue
                frames.append(t.with_columns(run=pl.lit(r.label)).select("run", *t.columns))
        if frames:
            out[name] = pl.concat(frames, how="diagonal_relaxed")
    runs = runs_of(src)
    cards = card_lines([r.path for r in runs], [r.label for r in runs])  # the grade shown beside VGR-S
    if cards is not None:
        out["judge_card"] = cards
    return out


def graphverse_families(df: pl.DataFrame, judged: Mapping[str, pl.DataFrame] | None = None,
                        catalogue: ModelCatalogue | None = None) -> pl.DataFrame:
    """GraphVerse Table 2: per model family (``model_info``), Acc on the P tasks (the paper's "Poly") and on the
    NP-hard tasks with the relative drop (``gie.metrics.poly_vs_nph``) and, when the judge has run, VGR-S the
    same way (per model the mean of its per-task VGR-S over the group's tasks, per family the mean over its
    models). Columns ``Acc_P``, ``Acc_NPH``, ``Acc_drop``, ``VGR_P``, ``VGR_NPH``, ``VGR_drop``; percent,
    drops as fractions. ``table2_labels`` gives the paper's column names for display."""
    from gie import metrics as gm
    from gie.catalogue import POLY_TASKS

    gv = df.filter(pl.col("benchmark") == GV_BENCHMARK)
    cols = {"family": pl.String, "models": pl.Int64, "Acc_P": pl.Float64, "Acc_NPH": pl.Float64,
            "Acc_drop": pl.Float64, "VGR_P": pl.Float64, "VGR_NPH": pl.Float64, "VGR_drop": pl.Float64}
    if gv.is_empty():
        return pl.DataFrame(schema=cols)
    info = model_info(gv["model"].unique().to_list(), catalogue)
    fam = dict(zip(info["model"].to_list(), info["family"].to_list(), strict=True))
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


TABLE2_LABELS: dict[str, str] = {"Acc_P": "Acc_Poly", "VGR_P": "VGR_Poly"}
"""GraphVerse Table 2 prints the P group as "Poly": the report's HTML, Markdown and CSV show that label."""


def table2_labels(families: pl.DataFrame) -> pl.DataFrame:
    """``graphverse_families`` with the paper's column names, for display."""
    return families.rename({k: v for k, v in TABLE2_LABELS.items() if k in families.columns})
