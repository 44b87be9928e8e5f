"""`python jobs/eval_all.py ARGS` is `nphe4v run ARGS`: one command line (the typer app), two spellings.

``main(argv)`` returns the exit status instead of exiting, for tests and for scripts that run a config."""

from __future__ import annotations

import sys

PROG = "eval_all.py"


def main(argv: list[str] | None = None) -> int:
    import typer

    from nphe4v_cli.app import app

    args = ["run", *(sys.argv[1:] if argv is None else argv)]
    try:
        rv = app(args=args, prog_name=PROG, standalone_mode=False)
    except typer.Abort:
        return 130
    except typer.TyperException as e:  # a bad flag (typer's click usage errors): one line, as every refusal
        msg = e.format_message() if hasattr(e, "format_message") else str(e)
        print(f"error: {msg} (see {PROG} --help)", file=sys.stderr)
        return 2
    return rv if isinstance(rv, int) else 0
