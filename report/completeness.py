"""What a partial run lacks, so that a report of a partial run says so: ``missing_parts``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from pydantic import ValidationError

from evalcore import benchmarks
from evalcore.benchmark import Benchmark
from evalcore.schema import PROMPT_MODES, RECOGNITION_MODE
from report.judgments import judge_table
from report.runs import (
    LIGHT_COLUMNS,
    Source,
    default_benchmark,
    frame_of,
    read_run_samples,
    run_datasets,
    runs_of,
    text_only_models,
)

_PAIRED: dict[str, dict[str, str]] = {}


def _paired(ds) -> dict[str, str]:
    """The planner's recognition-control partners of a dataset (which instances have one does not depend on
    the seed), computed once per dataset folder."""
    key = str(ds.root)
    if key not in _PAIRED:
        _PAIRED[key] = _plugin(ds.manifest.benchmark).recognition_partners(ds, 0)
    return _PAIRED[key]


def _plugin(name: str) -> Benchmark:
    """The registered benchmark, or the base class's defaults for a run of one not installed here."""
    try:
        return benchmarks.get(name)
    except benchmarks.BenchmarkError:
        return Benchmark()


def _modes(cfg: Mapping[str, Any], model: Mapping[str, Any], bench: str) -> list[str]:
    """The prompt modes the planner asks the model in on the benchmark (the plug-in's `prompt_modes`, with the
    modes the model's entry asks through the plug-in's `model_options`)."""
    plugin = _plugin(bench)
    options = None
    if plugin.model_options is not None:
        try:  # the manifest's config was validated when the run started; an older one may lack a field
            options = plugin.model_options.model_validate(
                {k: model[k] for k in plugin.model_options.model_fields if k in model})
        except ValidationError:
            options = None
    return plugin.prompt_modes(list(cfg.get("prompt_modes") or PROMPT_MODES), plugin.model_modes(options),
                               bool(model.get("text_only")))


def _expected(cfg: Mapping[str, Any], model: Mapping[str, Any], ds) -> dict[str, int]:
    """Samples the planner issues for one model on one dataset, by prompt mode (mirrors cluster.plan)."""
    n = len(ds.instances)
    repeats = int(cfg.get("repeats") or 1)
    bench = ds.manifest.benchmark
    exp = {m: n * repeats for m in _modes(cfg, model, bench)}
    rec = cfg.get("recognition") or {}
    if _plugin(bench).recognition and not model.get("text_only") and rec.get("enabled", True):
        asks = int(rec.get("asks") or 5)
        paired = _paired(ds) if bool(rec.get("controls", True)) else {}
        exp[RECOGNITION_MODE] = sum(asks * (1 + (i.instance_id in paired)) for i in ds.instances)
    return exp


def missing_parts(src: Source) -> pl.DataFrame:
    """What the runs lack, one row each: ``run``, ``benchmark``, ``model``, ``part`` (run | model | samples |
    prompt_mode | recognition | infra_error | judge | dataset) and ``detail`` (a sentence for the report).
    Empty when nothing is missing. Checks: manifest present and status complete; every configured model has
    rows; sample counts against what the planner issues (dataset needed); every configured prompt mode and
    the recognition experiment present; infra errors; GraphVerse judge output present."""
    rows: list[dict[str, str]] = []

    def add(run: str, bench: str, model: str, part: str, detail: str) -> None:
        rows.append({"run": run, "benchmark": bench, "model": model, "part": part, "detail": detail})

    runs = runs_of(src)
    if not runs:
        df = frame_of(src)
        _missing_in_frame(df, "", add)
        return _missing_frame(rows)
    for run in runs:
        df = read_run_samples(run.path, LIGHT_COLUMNS)
        if run.manifest is None:
            add(run.label, "", "", "run", f"{run.path}: no manifest.json: models, modes and expected counts unknown")
            _missing_in_frame(df.with_columns(run=pl.lit(run.label)), run.label, add)
            continue
        if run.status != "complete":
            add(run.label, "", "", "run",
                f"run status is {run.status!r} (attempt {run.manifest.get('attempts', '?')}): results are partial")
        cfg = run.config
        models = cfg.get("models") or []
        for entry, ds in run_datasets(run):
            bench, version = str(entry.get("benchmark")), str(entry.get("version"))
            part = df.filter((pl.col("benchmark") == bench) & (pl.col("version") == version))
            if ds is None:
                add(run.label, bench, "", "dataset",
                    f"dataset {version!r} not found at {entry.get('path')}: expected counts, prompts and images "
                    "unavailable")
            for m in models:
                name = str(m.get("name"))
                mrows = part.filter(pl.col("model") == name)
                if mrows.is_empty():
                    add(run.label, bench, name, "model", f"{name}: no samples on {bench} {version!r}")
                    continue
                infra = mrows.filter(pl.col("status") == "infra_error").height
                if infra:
                    add(run.label, bench, name, "infra_error",
                        f"{name}: {infra} infra_error samples on {bench} {version!r} (excluded from metrics; "
                        "rerun into the same folder to retry them)")
                done = mrows.filter(pl.col("status") != "infra_error").group_by("prompt_mode").len()
                have = dict(zip(done["prompt_mode"].to_list(), done["len"].to_list(), strict=True))
                if ds is not None:
                    for mode, exp in _expected(cfg, m, ds).items():
                        got = int(have.get(mode, 0))
                        if got == 0:
                            part_name = "recognition" if mode == RECOGNITION_MODE else "prompt_mode"
                            extra = " (RA n/a; AA takes RA as 1)" if mode == RECOGNITION_MODE else ""
                            add(run.label, bench, name, part_name,
                                f"{name}: no {mode} samples on {bench} {version!r}{extra}")
                        elif got < exp:
                            add(run.label, bench, name, "samples",
                                f"{name}: {mode}: {got} of {exp} samples on {bench} {version!r}")
                else:
                    for mode in _modes(cfg, m, bench):
                        if mode not in have:
                            add(run.label, bench, name, "prompt_mode",
                                f"{name}: no {mode} samples on {bench} {version!r}")
        for b in benchmarks.registry().values():
            judged = df.filter(pl.col("benchmark") == b.name) if b.judged else df.clear()
            if judged.is_empty():
                continue
            judge = judge_table([run.path])
            has_judge = judge is not None and "model" in judge.columns and \
                not judge.filter(pl.col("model").is_in(judged["model"].unique().to_list())).is_empty()
            if not has_judge:
                add(run.label, b.name, "", "judge",
                    f"judge not yet run: {b.title} reasoning-step labels are absent (final-answer accuracy only)")
    return _missing_frame(rows)


def _missing_in_frame(df: pl.DataFrame, run: str, add) -> None:
    """Checks possible without a manifest: infra errors, and modes some models have but others lack."""
    if df.is_empty():
        add(run, "", "", "run", "no samples at all")
        return
    for (bench, model), part in df.group_by(["benchmark", "model"], maintain_order=True):
        infra = part.filter(pl.col("status") == "infra_error").height
        if infra:
            add(run, str(bench), str(model), "infra_error",
                f"{model}: {infra} infra_error samples on {bench} (excluded from metrics)")
    # the prompt modes and recognition probes the planner sends: the registry's default benchmark's rows
    bench = default_benchmark()
    nph = df.filter(pl.col("benchmark") == bench)
    if nph.is_empty():
        return
    llms = text_only_models(nph)
    all_modes = [m for m in PROMPT_MODES if m in set(nph["prompt_mode"].to_list())]
    has_rec = RECOGNITION_MODE in set(nph["prompt_mode"].to_list())
    for model in sorted(set(nph["model"].to_list())):
        if model in llms:
            continue
        modes = set(nph.filter(pl.col("model") == model)["prompt_mode"].to_list())
        for mode in all_modes:
            if mode not in modes:
                add(run, bench, model, "prompt_mode", f"{model}: no {mode} samples")
        if has_rec and RECOGNITION_MODE not in modes:
            add(run, bench, model, "recognition", f"{model}: no recognition samples (RA n/a; AA takes RA as 1)")


def _missing_frame(rows: list[dict[str, str]]) -> pl.DataFrame:
    schema = {"run": pl.String, "benchmark": pl.String, "model": pl.String, "part": pl.String, "detail": pl.String}
    return pl.DataFrame(rows, schema=schema)
