"""A finished run where evaluation users already read results: a Hugging Face dataset folder, or inspect_ai
eval logs.

* ``hub``: a ``datasets.DatasetDict`` saved with ``save_to_disk`` — ``samples`` (every per-sample record, the
  ``SampleRecord`` columns, with ``vgr_score`` / ``judge_status`` of the run's default judge where GraphVerse
  samples were judged) and one split per summary table the run supports (``leaderboard`` for NPHardEval4V,
  ``graphverse_acc`` for GraphVerse). ``datasets.load_from_disk(OUT)`` reads it back and
  ``DatasetDict.push_to_hub`` publishes it; ``README.md`` is its dataset card.
* ``inspect``: one inspect_ai eval log (``.eval``) per model and benchmark, written with inspect_ai's own
  types and writer, so ``inspect view --log-dir OUT`` opens the run. Each sample's score is the exact
  verifier's verdict (``C`` correct / ``I`` anything else) with the classified reason as its explanation;
  the VGR-Score, where judged, is a second score.

The run folder is only read: a run folder has one writer, and an export is not it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from evalcore.records import KEY_COLUMNS
from report.runs import load_runs, read_run_samples

RUN_FORMATS = ("hub", "inspect")
CARD = "README.md"


class RunExportError(ValueError):
    """A run that cannot be exported; one line naming the path."""


def _samples(run_dir: Path) -> pl.DataFrame:
    """The run's samples with the default judge's ``vgr_score`` and ``judge_status`` (null where unjudged)."""
    try:
        df = read_run_samples(run_dir)
    except (OSError, pl.exceptions.PolarsError) as e:
        raise RunExportError(f"{run_dir}: cannot read the run's samples ({e.__class__.__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''})") from None
    if df.is_empty():
        raise RunExportError(f"{run_dir}: no samples (is it a run folder? `eval_all` or `grade` writes one)")
    from report.judgments import run_judgments

    js = run_judgments(run_dir)
    if js.is_empty():
        return df.with_columns(vgr_score=pl.lit(None, pl.Float64), judge_status=pl.lit(None, pl.String))
    keyed = js.select(*KEY_COLUMNS, pl.col("vgr_score").cast(pl.Float64),
                      pl.col("status").cast(pl.String).alias("judge_status")).unique(subset=list(KEY_COLUMNS))
    return df.join(keyed, on=list(KEY_COLUMNS), how="left")


def _tables(run_dir: Path, df: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The run's summary tables, computed in memory (nothing is written into the run folder): each benchmark's
    `Benchmark.summaries`, named as their CSVs are (`leaderboard`, `graphverse_acc`, ...)."""
    from evalcore import benchmarks
    from report.summaries import run_parser

    out: dict[str, pl.DataFrame] = {}
    present = set(df["benchmark"].unique().to_list())
    parser = run_parser(run_dir)
    for bench in benchmarks.registry().values():
        if bench.name in present:
            for x in bench.summaries(df.lazy().filter(pl.col("benchmark") == bench.name), parser):
                out[Path(x.filename).stem] = x.table
    return out


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RunExportError(f"--out {out}: exists and is not an empty folder")


def export_hub(run_dir: str | Path, out: str | Path) -> dict[str, int]:
    """Write the run as a ``datasets`` folder; {split: rows}."""
    import datasets

    run_dir, out = Path(run_dir), Path(out)
    _check_out(out)
    df = _samples(run_dir)
    splits = {"samples": df, **_tables(run_dir, df)}
    dd = datasets.DatasetDict({name: datasets.Dataset(frame.to_arrow()) for name, frame in splits.items()})
    dd.save_to_disk(str(out))
    runs = load_runs(run_dir)
    run_id = runs[0].label if runs else run_dir.name
    (out / CARD).write_text(_card(run_id, {k: v.height for k, v in splits.items()}), encoding="utf-8")
    return {k: v.height for k, v in splits.items()}


def _card(run_id: str, sizes: dict[str, int]) -> str:
    configs = "\n".join(f"  - split: {name}\n    path: {name}/*.arrow" for name in sizes)
    rows = "\n".join(f"| `{name}` | {n} |" for name, n in sizes.items())
    return (f"---\nconfigs:\n- config_name: default\n  data_files:\n{configs}\n---\n\n"
            f"# Results of run `{run_id}` (nphe4v)\n\n"
            "Per-sample results (`samples`: one row per model × instance × prompt mode × repeat, the exact "
            "verifier's verdict and its classified reason; `vgr_score` where a judge scored GraphVerse "
            "samples) and the run's summary tables.\n\n| split | rows |\n|---|---|\n"
            f"{rows}\n\nLoad with `datasets.load_from_disk(PATH)`; publish with "
            "`DatasetDict.push_to_hub(REPO)`.\n")


def _sample_id(row: dict[str, Any]) -> str:
    parts = [row["instance_id"], row["prompt_mode"]]
    if row.get("variant"):
        parts.append(row["variant"])
    return "/".join(parts)


def _eval_log(run_id: str, model: str, benchmark: str, rows: Iterable[dict[str, Any]], created: str):
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
    from inspect_ai.scorer import Score

    samples = []
    correct = total = 0
    vgr_values = []
    for row in rows:
        ok = row["verdict"] == "correct"
        total += 1
        correct += ok
        scores = {"verifier": Score(value="C" if ok else "I", answer=row.get("parsed_answer"),
                                    explanation=row.get("reason") or "")}
        if row.get("vgr_score") is not None:
            scores["vgr"] = Score(value=float(row["vgr_score"]))
            vgr_values.append(float(row["vgr_score"]))
        output = row.get("raw_response") or ""
        meta = {k: row.get(k) for k in ("task", "level", "status", "verdict", "reason", "prompt_sha256",
                                        "image_sha256", "template_version", "version", "variant",
                                        "error", "pot_error", "judge_status")}
        samples.append(EvalSample(
            id=_sample_id(row), epoch=int(row["repeat"]) + 1,
            input=f"{benchmark} {row['instance_id']} ({row['prompt_mode']}); prompt sha256 {row['prompt_sha256']}",
            target="" if row.get("gold_value") is None else str(row["gold_value"]),
            messages=[ChatMessageUser(content=f"[prompt {row['prompt_sha256'][:12]}]"),
                      ChatMessageAssistant(content=output)],
            output=ModelOutput.from_content(model=model, content=output),
            scores=scores, metadata=meta,
        ))
    metrics = {"accuracy": EvalMetric(name="accuracy", value=correct / total if total else 0.0)}
    score_list = [EvalScore(name="verifier", scorer="verifier", metrics=metrics)]
    if vgr_values:
        score_list.append(EvalScore(name="vgr", scorer="vgr", metrics={
            "mean": EvalMetric(name="mean", value=sum(vgr_values) / len(vgr_values))}))
    return EvalLog(
        status="success",
        eval=EvalSpec(created=created, task=benchmark, dataset=EvalDataset(name=benchmark, samples=total),
                      model=model, config=EvalConfig(), run_id=run_id, task_id=f"{run_id}-{benchmark}",
                      metadata={"exported_by": "nphe4v export --format inspect"}),
        results=EvalResults(total_samples=total, completed_samples=total, scores=score_list),
        stats=EvalStats(started_at=created, completed_at=created),
        samples=samples,
    )


def export_inspect(run_dir: str | Path, out: str | Path) -> list[Path]:
    """Write one inspect_ai ``.eval`` log per model × benchmark into ``out``; the paths written."""
    try:
        from inspect_ai.log import write_eval_log
    except ImportError:
        raise RunExportError("--format inspect needs inspect_ai: pip install 'nphe4v[inspect]'") from None

    from evalcore.shards import slug

    run_dir, out = Path(run_dir), Path(out)
    _check_out(out)
    df = _samples(run_dir)
    runs = load_runs(run_dir)
    run_id = runs[0].label if runs else run_dir.name
    manifest = runs[0].manifest if runs else None
    created = str((manifest or {}).get("created_at") or datetime.now(UTC).isoformat())
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for (model, benchmark), part in df.sort([*KEY_COLUMNS]).group_by(["model", "benchmark"],
                                                                      maintain_order=True):
        log = _eval_log(run_id, str(model), str(benchmark), part.iter_rows(named=True), created)
        path = out / f"{slug(str(benchmark))}_{slug(str(model))}.eval"
        write_eval_log(log, str(path))
        paths.append(path)
    (out / "export.json").write_text(json.dumps({"run": run_id, "logs": [p.name for p in paths]}, indent=1))
    return paths
