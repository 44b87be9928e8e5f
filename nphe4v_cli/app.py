"""`nphe4v` command line: generate, import-peer, run, grade, show, export, report, view, judge, judge-card."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, pretty_exceptions_enable=False)

# the one-line refusals every command shares (their own module: the command modules use them too)
from nphe4v_cli.cli_common import fail  # noqa: E402
from nphe4v_cli.cli_common import key_values as _key_values  # noqa: E402
from nphe4v_cli.cli_common import os_fail as _os_fail  # noqa: E402
from nphe4v_cli.cli_common import out_folder as _out_folder  # noqa: E402

# `generate` lives in its own module: a benchmark's settings come from its plug-in's model
from nphe4v_cli.generate_command import generate as _generate_cmd  # noqa: E402

app.command(name="generate")(_generate_cmd)


@app.command("import-peer")
def import_peer(
    kind: Annotated[str, typer.Argument(help="the published data's file format: nphardeval | nphardeval4v (a "
                                        "benchmark plug-in's peer_formats)")],
    peer_data_dir: Annotated[Path, typer.Argument(help="the peer's Data/ or Data_V* folder")],
    out: Annotated[Path, typer.Option(help="dataset folder to create")],
) -> None:
    """Import the published NPHardEval / NPHardEval4V instances as a dataset, gold from our exact solvers."""
    from evalcore import benchmarks
    from evalcore.dataset import DatasetError

    # which plug-in reads the format: KIND names a file format (the authors' data files), not a benchmark
    readers = {fmt: b for b in benchmarks.registry().values() for fmt in b.peer_formats}
    if kind not in readers:
        fail(f"KIND {kind!r}: expected {' or '.join(readers)}")
    _out_folder(out)
    try:
        m, warnings = readers[kind].import_peer(kind, peer_data_dir, out)
    except (DatasetError, ValueError) as e:
        fail(str(e))
    except OSError as e:
        _os_fail(e, out)
    for w in warnings:
        typer.echo(f"warning: {w}", err=True)
    typer.echo(f"imported {sum(t.count for t in m.tasks.values())} instances to {out}")


@app.command()
def run(
    config: Annotated[Path, typer.Option(help="run config YAML")] = Path("configs/demo.yaml"),
    dataset: Annotated[Path | None, typer.Option(help="existing dataset folder (overrides the config's datasets)")
                       ] = None,
    models: Annotated[str | None, typer.Option(help="comma-separated subset of the config's models")] = None,
    out: Annotated[Path | None, typer.Option(help="run folder (overrides the config's `out`)")] = None,
    data_root: Annotated[Path, typer.Option(help="where generated datasets are cached")] = Path("data"),
    no_html: Annotated[bool, typer.Option("--no-html", help="skip the HTML/Markdown report (tables still written)")
                       ] = False,
    plan: Annotated[bool, typer.Option("--plan", help="print the resolved plan as JSON and exit: nothing runs, "
                                                      "nothing is generated or written")] = False,
) -> None:
    """Evaluate every configured model on every configured benchmark on Ray (`python jobs/eval_all.py` is this
    command), then print the leaderboard and write the report."""
    from cluster.main import RunArgs
    from cluster.main import main as run_main

    raise typer.Exit(run_main(RunArgs(
        config=str(config), dataset=None if dataset is None else str(dataset), models=models,
        out=None if out is None else str(out), data_root=str(data_root), no_html=no_html, plan=plan)))


@app.command()
def grade(
    dataset: Annotated[Path, typer.Option(help="dataset folder the responses answer")],
    responses: Annotated[Path, typer.Option(help="JSON lines: model, instance_id, prompt_mode, response")],
    out: Annotated[Path, typer.Option(help="run folder to write")],
    pot_isolation: Annotated[str, typer.Option(
        help="sandbox of `pot` lines' programs: strict, or rlimits-only (weaker, opted into by name)")
    ] = "strict",
    pot_workers: Annotated[int, typer.Option(min=1, max=64, help="PoT programs run at once")] = 2,
    pot_timeout_s: Annotated[float, typer.Option(
        min=0.1, max=600, help="CPU-time limit of one PoT program, s (each process; a wall clock of 3x + 10 s backs it)")
    ] = 10.0,
    prompt_assets: Annotated[str | None, typer.Option(
        help="lines answering the papers' prompts (their template_version): a local checkout of the original "
             "repository at the pinned commit")] = None,
) -> None:
    """Score responses produced elsewhere exactly as a live run would."""
    from cluster.grading import GradeError, grade_file
    from cluster.pot_stage import PotSettings
    from cluster.runlock import RunLockError
    from evalcore.dataset import DatasetError
    from evalcore.shards import ShardError, StorageError

    _out_folder(out)
    if pot_isolation not in ("strict", "rlimits-only"):
        fail(f"--pot-isolation {pot_isolation}: expected strict or rlimits-only")
    try:
        n, new = grade_file(dataset, responses, out, PotSettings(isolation=pot_isolation, workers=pot_workers,
                                                            timeout_s=pot_timeout_s), prompt_assets)
    except (DatasetError, GradeError, RunLockError, ShardError, StorageError) as e:
        fail(str(e))
    except OSError as e:
        _os_fail(e, out)
    typer.echo(f"graded {n} responses ({new} new) into {out}")
    _report(out)


@app.command()
def show(
    dataset_dir: Annotated[Path, typer.Argument(help="dataset folder")],
    instance_id: Annotated[str, typer.Argument(help="e.g. bsp-L10-000")],
    mode: Annotated[str | None, typer.Option(help="prompt mode (default: the benchmark's first, e.g. figure+limited_text)")] = None,
    prompts: Annotated[str | None, typer.Option(help="NPHardEval4V prompt set: paper (the authors' text, as runs "
                                                "send by default) | rewritten (ours)")] = None,
    model_kind: Annotated[str, typer.Option(help="paper prompts: open (Open/prompts.py, open-weights models) | "
                                            "api (Prompts/prompts.py, API models)")] = "open",
    prompt_assets: Annotated[str | None, typer.Option(help="paper prompts: a local checkout of the original "
                                                      "repository at the pinned commit")] = None,
) -> None:
    """Print exactly the prompt text a model receives for one instance in one mode, and its image paths."""
    from evalcore.dataset import DatasetError, load_dataset
    from evalcore.instance_prompt import ShowError, show_instance

    try:
        typer.echo(show_instance(load_dataset(dataset_dir, check_images=False), instance_id, mode, prompts,
                                 model_kind, prompt_assets))  # type: ignore[arg-type]
    except (DatasetError, ShowError) as e:
        fail(str(e))


@app.command()
def export(
    dataset: Annotated[Path, typer.Argument(help="dataset folder to export")],
    out: Annotated[Path, typer.Option(help="folder to create (must not exist or be empty)")],
    fmt: Annotated[str, typer.Option("--format", help="hf (Hugging Face datasets folder) | jsonl (requests) | "
                                     "sft | trl | verl (a benchmark's training sets, docs/training.md); for a RUN "
                                     "folder: hub (datasets folder of results) | inspect (inspect_ai logs)")] = "hf",
    model: Annotated[str, typer.Option(help="jsonl: the `model` field of every request")] = "external",
    repeats: Annotated[int, typer.Option(help="jsonl: repeats per prompt, as a run's `repeats`")] = 1,
    asks: Annotated[int, typer.Option(help="jsonl: asks per recognition pair, as a run's `recognition.asks`")] = 5,
    recognition: Annotated[bool, typer.Option(help="jsonl: include the recognition requests (NPHardEval4V)")] = True,
    absolute_paths: Annotated[bool, typer.Option(help="jsonl: absolute image paths (default: relative to DATASET)")
                              ] = False,
    seed: Annotated[int, typer.Option(help="the run's sampling seed (it picks the recognition controls)")] = 0,
    edits: Annotated[str, typer.Option(help="sft/trl/verl: all | gie (edited rows) | none (no-GIE, matched to the "
                                            "GIE rows' task mix) | patch | composition | focus | recolor")] = "all",
    limit: Annotated[int | None, typer.Option(help="sft/trl/verl: keep N rows with the selection's task mix")] = None,
    allow_test_split: Annotated[bool, typer.Option(help="sft/trl/verl: export a test split for training anyway")
                                ] = False,
    model_option: Annotated[list[str] | None, typer.Option(
        "--model-option", metavar="KEY=VALUE", help="jsonl: a benchmark's option of the model, as a config's model "
        "entry writes it (VALUE is YAML, a list as [a, b]; the options are listed in docs/config-reference.md); "
        "repeatable")] = None,
    prompts: Annotated[str | None, typer.Option(help="hf/jsonl: NPHardEval4V prompt set, paper | rewritten "
                                                "(default: a run's default, paper)")] = None,
    prompt_assets: Annotated[str | None, typer.Option(help="hf/jsonl, paper prompts: a local checkout of the "
                                                      "original repository at the pinned commit")] = None,
) -> None:
    """Write a dataset for other tools: a `datasets.load_from_disk` folder, JSON-lines requests for `grade`, or
    a benchmark's training sets (SFT, TRL GRPO, verl; docs/training.md)."""
    from cluster.export import (
        FORMATS,
        REQUESTS,
        ExportError,
        check_out,
        export_hf,
        export_jsonl,
        export_training,
        training_formats,
    )
    from evalcore.dataset import DatasetError, load_dataset
    from report.run_export import RUN_FORMATS

    training = training_formats()  # the registered benchmarks' training-set formats
    if fmt in RUN_FORMATS:
        _export_run(dataset, out, fmt)
        return
    if fmt not in (*FORMATS, *training):
        fail(f"--format {fmt}: expected {' or '.join((*FORMATS, *training, *RUN_FORMATS))}")
    if fmt not in training and (edits != "all" or limit is not None or allow_test_split):
        fail(f"--edits, --limit and --allow-test-split apply to --format {'|'.join(training)}, not {fmt}")
    for name, value in (("--repeats", repeats), ("--asks", asks)):
        if value < 1:
            fail(f"{name} {value}: must be at least 1")
    try:
        check_out(out)  # before loading: a wrong --out should not cost a full hash check of the dataset
        ds = load_dataset(dataset)
        if fmt in training:
            n, notes = export_training(ds, out, fmt, edits=edits, limit=limit, allow_test_split=allow_test_split,
                                       seed=seed)
            for note in notes:
                typer.echo(f"note: {note}", err=True)
            typer.echo(f"wrote {n} {fmt} rows to {out} (card {out / 'README.md'})")
        elif fmt == "hf":
            n = export_hf(ds, out, seed=seed, prompts=prompts, prompt_assets=prompt_assets)
            typer.echo(f"wrote {n} instances to {out} (datasets.load_from_disk; card {out / 'README.md'})")
        else:
            n = export_jsonl(ds, out, absolute_paths=absolute_paths, model=model, repeats=repeats, asks=asks,
                             recognition=recognition, seed=seed, prompts=prompts, prompt_assets=prompt_assets,
                             model_options=_key_values("--model-option", model_option or []))
            typer.echo(f"wrote {n} requests to {out / REQUESTS}")
    except (DatasetError, ExportError) as e:
        fail(str(e))
    except OSError as e:
        _os_fail(e, out)


def _export_run(run_dir: Path, out: Path, fmt: str) -> None:
    """`export RUN --format hub|inspect`: a finished run's results for other tools (report.run_export)."""
    from report.run_export import RunExportError, export_hub, export_inspect

    if not (run_dir / "samples").is_dir():
        fail(f"{run_dir}: not a run folder (no samples/); --format {fmt} exports a run's results")
    try:
        if fmt == "hub":
            import datasets

            datasets.disable_progress_bars()
            sizes = export_hub(run_dir, out)
            parts = ", ".join(f"{k} {v}" for k, v in sizes.items())
            typer.echo(f"wrote {parts} rows to {out} (datasets.load_from_disk; card {out / 'README.md'})")
        else:
            paths = export_inspect(run_dir, out)
            typer.echo(f"wrote {len(paths)} inspect_ai logs to {out} (open with `inspect view --log-dir {out}`)")
    except RunExportError as e:
        fail(str(e))
    except OSError as e:
        _os_fail(e, out)


@app.command()
def view(
    run_dirs: Annotated[list[Path], typer.Argument(help="run folders to explore")],
    host: Annotated[str, typer.Option(help="address to bind (default: this machine only)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8787,
    annotate: Annotated[bool, typer.Option(help="add the page where people score GraphVerse steps (writes "
                                                "RUN_DIR/annotations/)")] = False,
    n_boot: Annotated[int, typer.Option(help="bootstrap draws of the leaderboard intervals, as the report")] = 500,
) -> None:
    """A local web explorer over run folders: leaderboards, drill-down, samples, two-model comparison."""
    import ipaddress

    from report.explorer.store import StoreError

    if not 0 < port < 65536:
        fail(f"--port {port}: expected 1..65535")
    from nphe4v_cli.report_command import MAX_BOOT

    if not 0 <= n_boot <= MAX_BOOT:
        fail(f"--n-boot {n_boot}: must be 0..{MAX_BOOT}")
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        typer.echo(f"warning: --host {host} exposes the runs' responses to the network", err=True)
    try:
        import uvicorn

        from report.explorer.app import create_app

        typer.echo("reading the runs and computing the leaderboards…", err=True)
        hosts = ["*"] if host in ("0.0.0.0", "::") else [host, "127.0.0.1", "localhost", "[::1]"]
        web = create_app(list(run_dirs), annotate=annotate, n_boot=n_boot, warm=True, allowed_hosts=hosts)
    except StoreError as e:
        fail(str(e))
    typer.echo(f"explorer on http://{host}:{port}/ ({'annotation on' if annotate else 'read-only'}); Ctrl-C stops it")
    uvicorn.run(web, host=host, port=port, log_level="warning")


# `report` lives in its own module so that importing the CLI stays cheap
from nphe4v_cli.report_command import report as _report_cmd  # noqa: E402

app.command(name="report")(_report_cmd)

from nphe4v_cli.judge_card_command import judge_card as _judge_card_cmd  # noqa: E402
from nphe4v_cli.judge_command import judge as _judge_cmd  # noqa: E402

app.command(name="judge")(_judge_cmd)

app.command(name="judge-card")(_judge_card_cmd)

from nphe4v_cli.preflight_command import preflight as _preflight_cmd  # noqa: E402

app.command(name="preflight")(_preflight_cmd)


def _report(run_dir: Path) -> None:
    from report.summaries import print_summaries

    for path in print_summaries(run_dir):
        typer.echo(f"wrote {path}")


def main() -> None:  # pragma: no cover
    app(sys.argv[1:])


if __name__ == "__main__":  # pragma: no cover
    main()
