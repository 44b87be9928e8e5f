"""`nphe4v judge RUN [options]`: rescore a finished run with another judge or a judge repeat (cluster.judge_rerun).

Registered in ``nphe4v_cli.app`` as ``judge``. ``python jobs/judge_rerun.py --run RUN ...`` (the `ray job submit`
recipe) is this command under its old name (``nphe4v_cli.judge_rerun``), every refusal one line prefixed
``judge_rerun: error:`` there (the app passes the prefix in ``ctx.obj``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def judge(
    ctx: typer.Context,
    run_dir: Annotated[Path | None, typer.Argument(
        metavar="RUN", help="finished run folder (holds manifest.json and samples/)", show_default=False)] = None,
    run: Annotated[str | None, typer.Option(
        "--run", help="the run folder as an option (the `python jobs/judge_rerun.py --run RUN` spelling)")] = None,
    judge: Annotated[str | None, typer.Option(
        help="rule-based, a registry name (cluster/models.yaml; a vllm entry is served by a model replica of "
             "this cluster) or a litellm model string (default: the run's default judge)")] = None,
    repeat: Annotated[int, typer.Option(help="judge repeat index (0 = first run of the judge)")] = 0,
    out: Annotated[str | None, typer.Option(help="output folder (default: RUN)")] = None,
    options: Annotated[str, typer.Option(help="JudgeSpec fields as JSON, e.g. '{\"max_concurrency\": 4}'")] = "{}",
    api_base: Annotated[str | None, typer.Option(
        help="endpoint of an OpenAI-compatible judge server (applies bounded local defaults)")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="judge output budget per call")] = None,
    baseline: Annotated[str | None, typer.Option(
        help="baseline JUDGE[@REPEAT] of the agreement tables (default: the run's default judge)")] = None,
    human: Annotated[str | None, typer.Option(
        help="CSV of human VGR scores (model, instance_id, human_vgr), or a run folder whose annotations/ "
             "`nphe4v view --annotate` wrote")] = None,
    local: Annotated[bool, typer.Option("--local", help="judge in this process instead of on Ray replicas")] = False,
    actors: Annotated[int, typer.Option(help="judge replicas")] = 2,
    cache: Annotated[str | None, typer.Option(help="judgment cache folder (default RUN/judge_cache)")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="no progress lines on stderr")] = False,
    card: Annotated[bool, typer.Option("--card", help="also run the judge card (nphe4v judge-card) with this "
                                       "judge over the run's GraphVerse instances; recorded under OUT/judge_cards/")
                    ] = False,
    card_limit: Annotated[int | None, typer.Option(help="the card over the first N instances only")] = None,
) -> None:
    """Rescore a finished run with another judge and/or a judge repeat; write Table 10 (judge_deltas.csv), the
    agreement tables, the failure modes and, with --human, Table 9 (docs/judge.md)."""
    from cluster.judge_rerun import RerunArgs, UsageError

    prefix = ctx.obj.get("prefix", "") if isinstance(ctx.obj, dict) else ""
    try:
        if run_dir is not None and run is not None and Path(run) != run_dir:
            raise UsageError(f"RUN {run_dir} and --run {run} name two folders; give one")
        folder = str(run_dir) if run_dir is not None else run
        if folder is None:
            raise UsageError("the run folder is required: nphe4v judge RUN (or --run RUN)")
        args = RerunArgs(run=folder, judge=judge, repeat=repeat, out=out, options=options, api_base=api_base,
                         max_tokens=max_tokens, baseline=baseline, human=human, local=local, actors=actors,
                         cache=cache, no_progress=no_progress, card=card, card_limit=card_limit)
    except UsageError as e:
        error_line(prefix, str(e))
        raise typer.Exit(2) from None
    raise typer.Exit(_run(args, prefix))


def error_line(prefix: str, msg: str) -> None:
    from cluster.runlock import printable

    print(f"{prefix}error: {printable(' '.join(msg.split()))}", file=sys.stderr)


def _run(args, prefix: str) -> int:
    """cluster.judge_rerun.main with every expected failure as one line on stderr (no traceback)."""
    import polars as pl

    from cluster.judge_rerun import UsageError, main
    from evalcore.shards import StorageError

    try:
        return main(args)
    except (UsageError, StorageError) as e:  # StorageError: a full or read-only disk, one line naming the file
        error_line(prefix, str(e))
        return 2
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        error_line(prefix, str(e)[:500])
        return 1
    except KeyboardInterrupt:
        print(f"{prefix}interrupted; judgments written so far are kept; rerun to continue", file=sys.stderr)
        return 130
