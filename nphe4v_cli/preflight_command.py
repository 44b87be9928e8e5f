"""`nphe4v preflight CONFIG [--tiny] [--json FILE]`: start each model of a run config once and send it one
request of each shape the run will send (cluster/preflight.py). Exit 1 when any model fails, 2 on a bad
config. Registered in ``nphe4v_cli.app`` with ``app.command(name="preflight")(preflight_command.preflight)``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def preflight(
    config: Annotated[Path, typer.Argument(help="run config (YAML), e.g. configs/paper-graphverse.yaml")],
    tiny: Annotated[bool, typer.Option(
        "--tiny", help="start the tiny random-weight build of each vLLM model's architecture on this machine "
        "(CPU, offline) instead of the real weights on the cluster")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="also write the rows as a JSON list")] = None,
    models: Annotated[str | None, typer.Option(help="comma-separated subset of the config's models")] = None,
    tiny_root: Annotated[Path, typer.Option(help="where tiny builds are made (reused when complete)")] = Path(
        "data/models/tiny"),
    timeout: Annotated[float, typer.Option(help="seconds one replica may take to start and answer")] = 900.0,
) -> None:
    """Start every model of CONFIG once and check it answers the run's request shapes (text, 1 and 2
    images, the recognition pair) within its max_model_len; prints model | backend | architecture |
    images tested | status | reason."""
    import os

    # the engines' INFO/WARNING lines (vLLM logs to stdout) would bury the table; VLLM_LOGGING_LEVEL=INFO shows them
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    from cluster.config import ConfigError
    from cluster.config_file import load_config
    from cluster.preflight import preflight as run_preflight
    from cluster.preflight import rows_json, summary, table

    try:
        cfg = load_config(config)
    except ConfigError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if models:
        wanted = [m.strip() for m in models.split(",") if m.strip()]
        unknown = sorted(set(wanted) - {m.name for m in cfg.models})
        if unknown:
            typer.echo(f"error: --models: {', '.join(unknown)} not in {config}", err=True)
            raise typer.Exit(2)
        cfg = cfg.model_copy(update={"models": [m for m in cfg.models if m.name in wanted]})

    def progress(row) -> None:
        typer.echo(f"preflight: {row.model}: {row.status}{': ' + row.reason if row.reason else ''} "
                   f"({row.seconds:.0f} s)", err=True)

    rows = run_preflight(cfg, tiny=tiny, tiny_root=tiny_root, timeout_s=timeout, progress=progress)
    typer.echo(table(rows))
    typer.echo(summary(rows))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(rows_json(rows), indent=1) + "\n")
    if any(r.status == "fail" for r in rows):
        raise typer.Exit(1)
