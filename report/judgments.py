"""The judge's output as the report reads it from run folders: each run's default judge's judgments (repeat 0),
the legacy per-sample judge files, the agreement CSVs `nphe4v judge` writes and the judge cards' grade lines.
Only the benchmarks whose plug-in says `judged` have judgments."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evalcore import benchmarks
from evalcore.records import KEY_COLUMNS
from report.judge_cards import card_lines
from report.runs import Source, frame_of, load_runs, runs_of

JUDGE_DIR = "judgments"  # where cluster.judge_stage / jobs/judge_rerun.py write (judge.vgr)
LEGACY_JUDGE_DIR = "judge"  # pre-judge-service layout: Parquet keyed like the samples, free-form columns
JUDGE_CSVS: tuple[tuple[str, str], ...] = (
    ("judge_deltas", "judge_deltas.csv"),  # Table 10 shape (jobs/judge_rerun.py)
    ("human_agreement", "human_agreement.csv"),  # Table 9 shape (jobs/judge_rerun.py --human)
    ("judge_agreement", "judge_agreement.csv"),
)


def judged_benchmarks() -> list[str]:
    return [b.name for b in benchmarks.registry().values() if b.judged]


def run_judgments(run_dir: str | Path, benchmark: str | None = None) -> pl.DataFrame:
    """The run's judgments of its default judge (``judge.vgr.default_judge``), judge repeat 0, of ``benchmark``
    (default: every judged benchmark) only (``judge.vgr.select``); empty when the judge has not run."""
    from judge import vgr

    js = vgr.read_judgments(Path(run_dir) / JUDGE_DIR)
    if js.is_empty():
        return js
    ident = vgr.default_judge(run_dir, js)
    judge, template = ident if ident is not None else (None, None)
    names = [benchmark] if benchmark is not None else judged_benchmarks()
    return vgr.select(js, judge, template, 0).filter(pl.col("benchmark").is_in(names))


def judgments(src: Source, benchmark: str | None = None) -> pl.DataFrame | None:
    """The default judge's judgments of every run (``run_judgments``), None when no run has any."""
    frames = [j for j in (run_judgments(r.path, benchmark) for r in runs_of(src)) if not j.is_empty()]
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


def judged_samples(src: Source, benchmark: str, df: pl.DataFrame | None = None) -> pl.DataFrame:
    """The runs' samples of ``benchmark`` with ``vgr_score`` and ``judge_status`` of the default judge (repeat
    0), null where the judge has not scored a sample (no judgments at all: every sample), keyed by model and
    prompt mode as stored (the improvement tables read it). ``df``: the runs' samples when already loaded."""
    from judge import vgr

    df = (frame_of(src) if df is None else df).filter(pl.col("benchmark") == benchmark)
    js = judgments(src, benchmark) if runs_of(src) else None
    if df.is_empty() or js is None:
        return df.with_columns(vgr_score=pl.lit(None, pl.Float64), judge_status=pl.lit(None, pl.String))
    # per run: sample keys repeat across runs
    return pl.concat([vgr.join(part, js.filter(pl.col("run_id") == rid))
                      for (rid,), part in df.group_by(["run_id"], maintain_order=True)], how="vertical")
