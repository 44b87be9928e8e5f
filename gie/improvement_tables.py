"""GraphVerse's improvement tables (seed §5.3 and Appendix E): Tables 3 / 8 (Acc / VGR-S by task category, ↑ the
absolute improvement over direct inference of the same base model), 11 (one GIE type at a time against training
without GIE) and 13 (the visual model against the MLLM description -> LLM baseline).

Pure functions over a per-sample frame (``SampleRecord`` columns; with ``vgr_score`` and ``judge_status`` from
``judge.vgr.join`` when the judge has run, else VGR-S is null) and a ``gie.comparisons.Comparisons`` spec that
says which arm (model, prompt mode) is the baseline of which.

Conventions (those of ``gie.metrics`` for Acc and ``judge.vgr`` for VGR-S, so the numbers agree with Table 1):

* only GraphVerse rows; ``infra_error`` samples are dropped; a sample is correct iff status ok and verdict
  correct; Acc is a percentage of samples; VGR-S is the mean score (0..100) of the samples the judge scored
  (``judge_status == "ok"``), ``n_vgr`` of them;
* a category pools the samples of its tasks (``CATEGORIES``: the paper's Poly / NP-hard split of Table 2 and its
  single / paired-image split of Figure 2; ``All`` = every task);
* intervals are 95 %: Acc has the Wilson interval of its counts (``evalcore.stats``); VGR-S and every
  improvement Δ = arm − baseline have the percentile bootstrap over instances (``evalcore.bootstrap``: instances
  resampled with replacement inside each (task, level) stratum, an instance being (version, instance id), the
  same draws for every arm, so a Δ is a paired difference); ``n_boot = 0`` leaves them null;
* ``rel_*`` = 100 · Δ / baseline (Table 11's relative gain), null when the baseline is 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from evalcore.bootstrap import instance_draws, percentile_bounds
from evalcore.report_section import ReportContext
from evalcore.stats import wilson_interval
from gie.catalogue import EDIT_KINDS, PAIRED_TASKS, POLY_TASKS, SINGLE_TASKS, TASK_NAMES
from gie.comparisons import DIRECT_MODE, Arm, ComparisonError, Comparisons, auto_comparisons, missing_arms
from gie.report_tables import NAME

Frame = pl.DataFrame | pl.LazyFrame
Key = tuple[str, str]  # (model, prompt_mode)

BENCHMARK = NAME
ALL = "All"
CATEGORIES: dict[str, tuple[str, ...]] = {
    "Poly": tuple(t for t in TASK_NAMES if t in POLY_TASKS),
    "NPH": tuple(t for t in TASK_NAMES if t not in POLY_TASKS),
    "Single": SINGLE_TASKS,
    "Paired": PAIRED_TASKS,
}
"""The four task categories of Tables 3 / 8 (our reading: the paper does not list them, docs/deviations.md)."""
METRICS: tuple[str, ...] = ("acc", "vgr")
_METRIC_COLUMNS: dict[str, pl.DataType] = {
    c: (pl.Int64 if c.startswith("n_") else pl.Float64)
    for m in METRICS
    for c in (f"n_{m}", m, f"{m}_lo", f"{m}_hi", f"d_{m}", f"d_{m}_lo", f"d_{m}_hi", f"rel_{m}")
}
_ARM_COLUMNS: dict[str, pl.DataType] = {"model": pl.String, "prompt_mode": pl.String, "base_model": pl.String,
                                        "base_prompt_mode": pl.String}


# ------------------------------------------------------------------------------------------------ scoring


def _units(samples: Frame, keys: set[Key]) -> pl.DataFrame:
    """Per (arm, instance): n samples, c correct, m judge-scored, s sum of their VGR scores."""
    lf = samples.lazy() if isinstance(samples, pl.DataFrame) else samples
    names = lf.collect_schema().names()
    judged = "vgr_score" in names and "judge_status" in names
    scored = (pl.col("judge_status") == "ok").fill_null(False) if judged else pl.lit(False)
    score = pl.when(scored).then(pl.col("vgr_score").cast(pl.Float64)).otherwise(0.0) if judged else pl.lit(0.0)
    version = pl.col("version").cast(pl.String).fill_null("") if "version" in names else pl.lit("")
    arms = pl.DataFrame({"model": [k[0] for k in keys], "prompt_mode": [k[1] for k in keys]},
                        schema={"model": pl.String, "prompt_mode": pl.String})
    return (
        lf.filter((pl.col("benchmark") == BENCHMARK) & (pl.col("status") != "infra_error"))
        .join(arms.lazy(), on=["model", "prompt_mode"], how="semi")
        .with_columns(
            _c=((pl.col("status") == "ok") & (pl.col("verdict").cast(pl.String) == "correct")).fill_null(False),
            _m=scored, _s=score, _v=version,
        )
        .group_by("model", "prompt_mode", "_v", "task", "level", "instance_id")
        .agg(n=pl.len().cast(pl.Float64), c=pl.col("_c").sum().cast(pl.Float64),
             m=pl.col("_m").sum().cast(pl.Float64), s=pl.col("_s").sum())
        .collect()
    )


@dataclass
class _Scores:
    """Point values and bootstrap replicates of every arm in every category."""

    arms: dict[Key, int]
    counts: dict[str, np.ndarray]  # category -> (4, J): n, c, m, s summed over the category's instances
    reps: dict[str, dict[str, np.ndarray]]  # category -> metric -> (B, J) replicate values (NaN: no data)
    n_boot: int


def _score(samples: Frame, keys: Sequence[Key], categories: Mapping[str, Sequence[str]], n_boot: int,
           seed: int) -> _Scores:
    arms = {k: j for j, k in enumerate(dict.fromkeys(keys))}
    units = _units(samples, set(arms))
    inst = (units.select("_v", "task", "level", "instance_id").unique()
            .sort("task", "level", "_v", "instance_id")
            .with_columns(uid=pl.col("_v") + "\x1f" + pl.col("instance_id")))
    col = {u: i for i, u in enumerate(inst["uid"].to_list())}
    n_inst, n_arms = inst.height, len(arms)
    stats = np.zeros((4, n_inst, n_arms))  # n, c, m, s per instance and arm
    if n_inst:
        ii = np.array([col[f"{v}\x1f{i}"] for v, i in zip(units["_v"], units["instance_id"], strict=True)])
        jj = np.array([arms[(m, p)] for m, p in zip(units["model"], units["prompt_mode"], strict=True)])
        for k, name in enumerate(("n", "c", "m", "s")):
            stats[k, ii, jj] = units[name].to_numpy()
    weights = np.zeros((max(n_boot, 0), n_inst))  # draw counts: replicate x instance
    if n_boot > 0 and n_inst:
        draws = instance_draws(inst.select("task", "level", pl.col("uid").alias("instance_id")), n_boot, seed)
        np.add.at(weights, (draws["b"].to_numpy(), np.array([col[u] for u in draws["instance_id"].to_list()])), 1.0)
    tasks = inst["task"].to_list()
    counts: dict[str, np.ndarray] = {}
    reps: dict[str, dict[str, np.ndarray]] = {}
    for name, members in [*categories.items(), (ALL, None)]:
        mask = np.array([members is None or t in members for t in tasks], dtype=bool)
        sub = stats[:, mask, :]
        counts[name] = sub.sum(axis=1)
        w = weights[:, mask]
        with np.errstate(invalid="ignore", divide="ignore"):
            n, c, m, s = (w @ sub[k] for k in range(4))
            reps[name] = {"acc": np.where(n > 0, 100 * c / np.where(n > 0, n, 1), np.nan),
                          "vgr": np.where(m > 0, s / np.where(m > 0, m, 1), np.nan)}
    return _Scores(arms, counts, reps, n_boot)


def _values(sc: _Scores, category: str, arm: Key, base: Key | None) -> dict[str, Any]:
    """The metric columns of one arm (against ``base``) in one category."""
    j = sc.arms[arm]
    n, c, m, s = (float(x) for x in sc.counts[category][:, j])
    point = {"acc": 100 * c / n if n else None, "vgr": s / m if m else None}
    out: dict[str, Any] = {"n_acc": int(n), "n_vgr": int(m), "acc": point["acc"], "vgr": point["vgr"]}
    ci = wilson_interval(c, n)
    out["acc_lo"], out["acc_hi"] = (100 * ci[0], 100 * ci[1]) if ci else (None, None)
    out["vgr_lo"] = out["vgr_hi"] = None
    if sc.n_boot > 0 and point["vgr"] is not None:
        (lo,), (hi,) = percentile_bounds(sc.reps[category]["vgr"][:, j][None, :])
        out["vgr_lo"], out["vgr_hi"] = lo, hi
    for metric in METRICS:
        out[f"d_{metric}"] = out[f"d_{metric}_lo"] = out[f"d_{metric}_hi"] = out[f"rel_{metric}"] = None
        if base is None:
            continue
        b = sc.arms[base]
        bn, bc, bm, bs = (float(x) for x in sc.counts[category][:, b])
        bpoint = {"acc": 100 * bc / bn if bn else None, "vgr": bs / bm if bm else None}[metric]
        if point[metric] is None or bpoint is None:
            continue
        out[f"d_{metric}"] = point[metric] - bpoint
        out[f"rel_{metric}"] = 100 * (point[metric] - bpoint) / bpoint if bpoint else None
        if sc.n_boot > 0:
            r = sc.reps[category][metric]
            (lo,), (hi,) = percentile_bounds((r[:, j] - r[:, b])[None, :])
            out[f"d_{metric}_lo"], out[f"d_{metric}_hi"] = lo, hi
    return out


def _arm_cols(arm: Arm, base: Arm | None) -> dict[str, Any]:
    return {"model": arm.model, "prompt_mode": arm.prompt_mode,
            "base_model": base.model if base else None, "base_prompt_mode": base.prompt_mode if base else None}


def _frame(rows: list[dict[str, Any]], lead: Mapping[str, pl.DataType]) -> pl.DataFrame:
    schema = {**lead, **_ARM_COLUMNS, **_METRIC_COLUMNS}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def arms_present(samples: Frame) -> list[Key]:
    """The (model, prompt mode) pairs with GraphVerse samples (infra errors aside), sorted."""
    lf = samples.lazy() if isinstance(samples, pl.DataFrame) else samples
    got = (lf.filter((pl.col("benchmark") == BENCHMARK) & (pl.col("status") != "infra_error"))
           .select("model", "prompt_mode").unique().collect())
    return sorted((str(m), str(p)) for m, p in got.iter_rows())


# ------------------------------------------------------------------------------------------------ tables


def improvement_table(samples: Frame, spec: Comparisons, *, categories: Mapping[str, Sequence[str]] = CATEGORIES,
                      n_boot: int = 500, seed: int = 0) -> pl.DataFrame:
    """Tables 3 (Acc) and 8 (VGR-S), long: per ``spec.improvements`` entry (``group`` = its base's label) a
    ``direct`` row for the base and a ``variant`` row per variant, each in every category (and ``All``):
    ``n_acc, acc, acc_lo, acc_hi`` (Wilson), ``n_vgr, vgr, vgr_lo, vgr_hi`` (bootstrap) and, on variant rows,
    ``d_acc`` / ``d_vgr`` = variant − base with bootstrap bounds and ``rel_*``."""
    keys = [a.key for imp in spec.improvements for a in (imp.base, *imp.variants)]
    if not keys:
        return _frame([], _IMPROVEMENT_LEAD)
    sc = _score(samples, keys, categories, n_boot, seed)
    rows = []
    for imp in spec.improvements:
        for role, arm, base in [("direct", imp.base, None), *[("variant", v, imp.base) for v in imp.variants]]:
            for cat in [*categories, ALL]:
                rows.append({"group": imp.base.shown, "row": arm.shown if base else "Direct", "role": role,
                             "category": cat, **_arm_cols(arm, base),
                             **_values(sc, cat, arm.key, base.key if base else None)})
    return _frame(rows, _IMPROVEMENT_LEAD)


_IMPROVEMENT_LEAD = {"group": pl.String, "row": pl.String, "role": pl.String, "category": pl.String}


def gie_ablation_table(samples: Frame, spec: Comparisons, *, n_boot: int = 500, seed: int = 0) -> pl.DataFrame:
    """Table 11, long: per ``spec.gie_ablation`` entry a ``w/o GIE`` row (edit ``none``) and one row per edit type
    trained alone (in the catalogue's edit order), over all tasks: the metric columns, with Δ and ``rel_*``
    (the paper's relative gain, %) against the row without GIE."""
    keys = [a.key for ab in spec.gie_ablation for a in (ab.without, *ab.with_.values())]
    if not keys:
        return _frame([], _ABLATION_LEAD)
    sc = _score(samples, keys, {}, n_boot, seed)
    rows = []
    for ab in spec.gie_ablation:
        group = ab.label or ab.without.shown
        rows.append({"group": group, "edit": "none", "row": "w/o GIE", **_arm_cols(ab.without, None),
                     **_values(sc, ALL, ab.without.key, None)})
        for edit in EDIT_KINDS:
            if edit in ab.with_:
                arm = ab.with_[edit]  # type: ignore[index]
                rows.append({"group": group, "edit": edit, "row": f"w/ {edit} only", **_arm_cols(arm, ab.without),
                             **_values(sc, ALL, arm.key, ab.without.key)})
    return _frame(rows, _ABLATION_LEAD)


_ABLATION_LEAD = {"group": pl.String, "edit": pl.String, "row": pl.String}


def description_table(samples: Frame, spec: Comparisons, *, n_boot: int = 500, seed: int = 0) -> pl.DataFrame:
    """Table 13, long: per ``spec.description`` pair a ``description`` row (MLLM description -> LLM) and a
    ``visual`` row with Δ = visual − description (the paper's values in parentheses), over all tasks."""
    keys = [a.key for d in spec.description for a in (d.description, d.visual)]
    if not keys:
        return _frame([], _DESCRIPTION_LEAD)
    sc = _score(samples, keys, {}, n_boot, seed)
    rows = []
    for d in spec.description:
        rows.append({"group": d.shown, "setting": "description", **_arm_cols(d.description, None),
                     **_values(sc, ALL, d.description.key, None)})
        rows.append({"group": d.shown, "setting": "visual", **_arm_cols(d.visual, d.description),
                     **_values(sc, ALL, d.visual.key, d.description.key)})
    return _frame(rows, _DESCRIPTION_LEAD)


_DESCRIPTION_LEAD = {"group": pl.String, "setting": pl.String}


# ------------------------------------------------------------------------------------------------ display


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f}"


def _ci(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f" [{lo:.1f}, {hi:.1f}]"


def _delta(d: float | None, lo: float | None, hi: float | None, style: str) -> str:
    """``↑2.8 [0.9, 4.6]`` (arrow: Tables 3 / 8 / 11) or ``(+2.8 [0.9, 4.6])`` (parentheses: Table 13)."""
    if d is None:
        return ""
    r = round(d, 1)
    if style == "paren":
        return f" ({r:+.1f}{_ci(lo, hi)})"
    arrow = "↑" if r > 0 else "↓" if r < 0 else "±"
    return f" {arrow}{abs(r):.1f}{_ci(lo, hi)}"


def cell(row: Mapping[str, Any], metric: str, style: str = "arrow", rel: bool = False) -> str:
    """One displayed cell: value [95% CI] and, against a baseline, the improvement with its interval."""
    if row[metric] is None:
        return "—"
    text = _num(row[metric]) + _ci(row[f"{metric}_lo"], row[f"{metric}_hi"])
    text += _delta(row[f"d_{metric}"], row[f"d_{metric}_lo"], row[f"d_{metric}_hi"], style)
    if rel and row[f"rel_{metric}"] is not None:
        text += f" ({row[f'rel_{metric}']:+.1f}%)"
    return text


def improvement_wide(long: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Table 3 (``metric="acc"``) or 8 (``"vgr"``) as shown: one row per (group, row), one column per category
    (``value [CI] ↑Δ [CI]``), in the long table's order."""
    cats = list(dict.fromkeys(long["category"].to_list())) if long.height else []
    out: dict[tuple[str, str], dict[str, str]] = {}
    for r in long.iter_rows(named=True):
        out.setdefault((r["group"], r["row"]), {})[r["category"]] = cell(r, metric)
    return pl.DataFrame([{"group": g, "method": m, **{c: cells.get(c, "—") for c in cats}}
                         for (g, m), cells in out.items()],
                        schema={"group": pl.String, "method": pl.String, **{c: pl.String for c in cats}})


def gie_ablation_wide(long: pl.DataFrame) -> pl.DataFrame:
    """Table 11 as shown: one row per (group, row) with Acc and VGR-S cells (``value [CI] ↑Δ [CI] (+rel%)``)."""
    return pl.DataFrame([{"group": r["group"], "training": r["row"], "Acc": cell(r, "acc", rel=True),
                          "VGR-S": cell(r, "vgr", rel=True)} for r in long.iter_rows(named=True)],
                        schema={"group": pl.String, "training": pl.String, "Acc": pl.String, "VGR-S": pl.String})


def description_wide(long: pl.DataFrame) -> pl.DataFrame:
    """Table 13 as shown: one row per pair; Acc and VGR-S of the description baseline and of the visual model,
    the latter with its improvement in parentheses."""
    rows: dict[str, dict[str, str]] = {}
    for r in long.iter_rows(named=True):
        d = rows.setdefault(r["group"], {"model": r["group"]})
        if r["setting"] == "description":
            d["description"] = r["model"] if r["prompt_mode"] == DIRECT_MODE else f"{r['model']} ({r['prompt_mode']})"
            d["Description Acc"], d["Description VGR-S"] = cell(r, "acc"), cell(r, "vgr")
        else:
            d["Visual Acc"], d["Visual VGR-S"] = cell(r, "acc", "paren"), cell(r, "vgr", "paren")
    cols = ("model", "description", "Description Acc", "Description VGR-S", "Visual Acc", "Visual VGR-S")
    return pl.DataFrame([{c: d.get(c, "—") for c in cols} for d in rows.values()],
                        schema={c: pl.String for c in cols})


def improvement_tables(samples: Frame, spec: Comparisons, *, n_boot: int = 500, seed: int = 0
                       ) -> dict[str, pl.DataFrame]:
    """Every improvement table the spec asks for, long (``improvement``, ``gie_ablation``, ``description``: the
    CSVs) and as shown (``table3``, ``table8``, ``table11``, ``table13``); a name is absent when the spec has
    no entry for it."""
    out: dict[str, pl.DataFrame] = {}
    if spec.improvements:
        long = improvement_table(samples, spec, n_boot=n_boot, seed=seed)
        out |= {"improvement": long, "table3": improvement_wide(long, "acc"), "table8": improvement_wide(long, "vgr")}
    if spec.gie_ablation:
        long = gie_ablation_table(samples, spec, n_boot=n_boot, seed=seed)
        out |= {"gie_ablation": long, "table11": gie_ablation_wide(long)}
    if spec.description:
        long = description_table(samples, spec, n_boot=n_boot, seed=seed)
        out |= {"description": long, "table13": description_wide(long)}
    return out


def for_report(df: Frame, ctx: ReportContext, source: str = "comparisons") -> dict[str, pl.DataFrame]:
    """The tables ``improvement_tables`` makes of the report's samples ``df`` as ``ctx.comparisons`` asks; without
    a spec, each model's other prompt modes (PoT) against its direct inference (``auto_comparisons``). An arm the
    runs do not hold raises ``ComparisonError``, one line naming ``source`` and the field. ``df`` lazy (the
    command line's): which arms exist is read from four columns before anything else."""
    present = arms_present(df)
    spec = ctx.comparisons if ctx.comparisons is not None else auto_comparisons(present)
    errors = missing_arms(spec, present, source)
    if errors:
        raise ComparisonError(errors[0])
    if spec.empty:  # most reports: no judgments read twice for nothing
        return {}
    rows = df.filter(pl.col("benchmark") == BENCHMARK)
    if isinstance(rows, pl.LazyFrame):
        rows = rows.collect()
    js = ctx.judgments()
    if rows.is_empty() or js is None:
        rows = rows.with_columns(vgr_score=pl.lit(None, pl.Float64), judge_status=pl.lit(None, pl.String))
    else:
        rows = ctx.judge_join(rows, js)
    return improvement_tables(rows, spec, n_boot=ctx.n_boot, seed=ctx.seed)
