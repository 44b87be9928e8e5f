"""`nphe4v report RUN_DIR [RUN_DIR ...] [--html OUT.html] [--md OUT.md] [--csv-dir DIR]`.

Registered in ``nphe4v_cli.app`` with ``app.command(name="report")(report_command.report)``. Without options it does
what `report` always did: print each run's leaderboard and write RUN_DIR/leaderboard.csv. With ``--html``
(and/or ``--md``) it also builds the full report with ``report.html_report.build_report``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# The defaults of report.html_report / report.analysis, repeated so that importing the CLI stays cheap
# (tests/test_report.py checks they agree).
DEFAULT_SAMPLES_PER_GROUP = 4
DEFAULT_MAX_IMAGES = 120
DEFAULT_THUMB_PX = 480
DEFAULT_BOOT = 500
DEFAULT_SEED = 0
DEFAULT_MAX_CHARS = 2000
GROUP_BY = ("none", "open_closed")


def _model_catalogue():
    """The registry's model entries by name, for the report's open / closed grouping and model families (the
    report sits below the registry's layer, so the entry point hands them in); None when the registry cannot
    be read: a broken registry costs only the grouping, never the report."""
    from cluster.registry import load_registry

    try:
        return load_registry().by_name
    except Exception:
        return None


def _comparisons(path: Path | None):
    """The ``--comparisons`` spec (``report.comparisons``), or None; a wrong file is one error line."""
    if path is None:
        return None
    from cluster.config import ConfigError, read_yaml_mapping
    from report.comparisons import ComparisonError, parse_comparisons

    try:
        return parse_comparisons(read_yaml_mapping(path, str(path), what="comparisons"), str(path))
    except (ConfigError, ComparisonError) as e:
        _fail(str(e))


MAX_BOOT = 100_000  # bootstrap replicates: far past what a stable interval needs (the default is 500)


def _improvement(run_dirs: list[Path], spec, path: Path | None, n_boot: int, seed: int):
    """GraphVerse Tables 3/8/11/13 of the runs; a spec naming a model or prompt mode the runs lack is one line."""
    from report.comparisons import ComparisonError
    from report.report_tables import improvement

    try:
        return improvement(run_dirs, None, spec, n_boot=n_boot, seed=seed, source=str(path or "comparisons"))
    except ComparisonError as e:
        _fail(str(e))


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="run folder(s); several for versions side by side")],
    html: Annotated[Path | None, typer.Option("--html", help="write the self-contained HTML report here")] = None,
    md: Annotated[Path | None, typer.Option("--md", help="write a Markdown summary here")] = None,
    csv_dir: Annotated[Path | None, typer.Option(
        "--csv-dir", help="folder for one CSV per table (default: <report stem>_tables beside the report)")] = None,
    samples_per_group: Annotated[int, typer.Option(
        help="sample browser: at most this many samples per model and task")] = DEFAULT_SAMPLES_PER_GROUP,
    max_images: Annotated[int, typer.Option(help="sample browser: at most this many distinct images")] =
    DEFAULT_MAX_IMAGES,
    thumb_px: Annotated[int, typer.Option(help="sample browser: thumbnail size in pixels")] = DEFAULT_THUMB_PX,
    n_boot: Annotated[int, typer.Option(help="bootstrap replicates for the AA intervals (0: none)")] =
    DEFAULT_BOOT,
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = DEFAULT_SEED,
    group_by: Annotated[str, typer.Option(
        "--group-by", help="none | open_closed: Figure 4's closed- vs open-model grouping (access from "
        "cluster/models.yaml), printed and, with --html/--md, in the report")] = "none",
    max_chars: Annotated[int, typer.Option(
        help="sample browser: cut each response, reason and trace to this many characters, shorter when many "
        "rows are shown (the full text stays in the run's Parquet)")] = DEFAULT_MAX_CHARS,
    comparisons: Annotated[Path | None, typer.Option(
        "--comparisons", help="YAML naming the baseline of each GraphVerse variant (PoT, fine-tuned, description "
        "-> LLM) for Tables 3/8/11/13 (docs/report.md); default: each model's PoT against its direct "
        "inference")] = None,
) -> None:
    """Print the leaderboard and write RUN_DIR/leaderboard.csv; with --html/--md/--csv-dir, also the full
    report (tables with confidence intervals, figures, what is missing, a sample browser)."""
    from evalcore.shards import ShardError, StorageError, writing
    from report.summaries import print_improvement, print_summaries

    if group_by not in GROUP_BY:
        _fail(f"--group-by: {group_by!r} is not one of {', '.join(GROUP_BY)}")
    if samples_per_group < 0 or max_chars < 1 or max_images < 0:
        _fail("--samples-per-group and --max-images must be >= 0 and --max-chars >= 1")
    # caps, named: a mistyped count must not make the report compute or draw for hours
    for flag, value, lo, hi in (("--n-boot", n_boot, 0, MAX_BOOT), ("--thumb-px", thumb_px, 8, 4096),
                                ("--samples-per-group", samples_per_group, 0, 100_000),
                                ("--max-images", max_images, 0, 100_000), ("--max-chars", max_chars, 1, 1_000_000)):
        if not lo <= value <= hi:
            _fail(f"{flag} {value}: must be {lo}..{hi}")
    for run_dir in run_dirs:
        try:
            found = (run_dir / "samples").is_dir()
        except OSError as e:  # a name too long for the file system, a loop of links
            _fail(f"{str(run_dir)[:200]}: {e.strerror or e}")
        if not found:
            _fail(f"{run_dir}/samples: not found (is {run_dir} a run folder?)")
    spec = _comparisons(comparisons)
    catalogue = _model_catalogue()
    try:
        improvement = _improvement(run_dirs, spec, comparisons, n_boot, seed)
        for run_dir in run_dirs:
            for path in print_summaries(run_dir, group_by=group_by, catalogue=catalogue):
                typer.echo(f"wrote {path}")
        print_improvement(improvement)
        if html is None and md is None and csv_dir is None:
            return
        from report.html_report import build_report

        # a full disk while writing the report's files: one line naming where it was writing
        with writing((html or md or csv_dir).parent if (html or md) else csv_dir):
            res = build_report(
                run_dirs, html, md, csv_dir, samples_per_group=samples_per_group, max_images=max_images,
                thumb_px=thumb_px, n_boot=n_boot, seed=seed, group_by=group_by, max_chars=max_chars,
                catalogue=catalogue, comparisons=spec,
            )
    except (StorageError, ShardError) as e:
        _fail(str(e))
    if res.html:
        typer.echo(f"html report: {res.html}")
    if res.markdown:
        typer.echo(f"markdown: {res.markdown}")
    if res.csvs:
        typer.echo(f"tables: {res.csvs[0].parent}/ ({len(res.csvs)} CSV)")
    if res.figures:
        typer.echo(f"figures: {res.figures[0].parent}/ ({len(res.figures)} files)")
    if res.missing is not None and not res.missing.is_empty():
        typer.echo(f"partial results: {res.missing.height} missing part(s):")
        for r in res.missing.iter_rows(named=True):
            typer.echo(f"  {r['run']}: {r['detail']}")
