"""`python jobs/judge_rerun.py ARGS` is `nphe4v judge ARGS`: one command line (the typer app), two spellings.

``script(argv)`` returns the exit status instead of exiting, for tests and for scripts; every refusal is one line
prefixed ``judge_rerun: error:`` (as the script always printed)."""

from __future__ import annotations

import sys

import typer

from nphe4v_cli.judge_command import error_line

PROG = "judge_rerun.py"
SCRIPT_PREFIX = "judge_rerun: "


def script(argv: list[str] | None = None) -> int:
    """`python jobs/judge_rerun.py ARGS` is `nphe4v judge ARGS`; returns the exit status."""
    from nphe4v_cli.app import app

    args = ["judge", *(sys.argv[1:] if argv is None else argv)]
    try:
        rv = app(args=args, prog_name=PROG, standalone_mode=False, obj={"prefix": SCRIPT_PREFIX})
    except typer.Abort:
        print(f"{SCRIPT_PREFIX}interrupted", file=sys.stderr)
        return 130
    except typer.TyperException as e:  # a bad flag or value (typer's usage errors): one line, as every refusal
        msg = e.format_message() if hasattr(e, "format_message") else str(e)
        error_line(SCRIPT_PREFIX, f"{msg} (see {PROG} --help)")
        return 2
    return rv if isinstance(rv, int) else 0
