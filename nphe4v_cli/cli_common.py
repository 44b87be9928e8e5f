"""What every `nphe4v` command shares: a refusal as one line on stderr (exit status 2), the checks of an --out
folder, and KEY=VALUE options. Its own module, so the command modules beside `nphe4v_cli.app` use it too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def fail(msg: str) -> None:
    from cluster.runlock import printable

    typer.echo(f"error: {printable(msg)}", err=True)
    raise typer.Exit(2)


def out_folder(out: Path, flag: str = "--out") -> None:
    """Refuse, in one line, a folder path that cannot be a folder (a file on the way)."""
    from cluster.run import check_folder_path
    from evalcore.dataset import DatasetError

    try:
        check_folder_path(out, flag)
    except DatasetError as e:
        fail(str(e))


def os_fail(e: OSError, out: Path) -> None:
    """An OS error (a folder that cannot be created, no permission, no space) as one line naming the path."""
    where = f"{e.filename}: " if e.filename else ""
    fail(f"{where}{e.strerror or e} (writing --out {out})")


def key_values(flag: str, items: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` options (VALUE read as YAML, as a config would spell it) as a mapping; one line on a bad one."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"{flag} {item!r}: expected KEY=VALUE")
        if key.strip() in out:
            fail(f"{flag} {key.strip()} given twice")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            fail(f"{flag} {item!r}: VALUE is not YAML")
    return out
