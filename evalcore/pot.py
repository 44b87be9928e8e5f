"""Program-of-thought responses: the program a response holds, and what running it in the sandbox gave.

A PoT response (`evalcore.prompting.POT_MODE`) is graded on what its program prints, with the same
extractor and exact verifier as a direct answer (`evalcore.scoring.score_sample`). Getting from the response to
that output is here: `extract_program` (pure) and `run_response` (the sandbox, `evalcore.sandbox`). Every way
it can fail is one classified `pot_error`: `no_program` (the response holds no ```python block) or one of the
sandbox's `POT_ERRORS` (timeout, memory, forbidden_import, filesystem, network, ...).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

NO_PROGRAM = "no_program"
# What a sample record keeps of a program's output: an answer is one line; a program printing up to the
# sandbox's limit (1 MB) is graded on all of it, but the sample table keeps only this much.
MAX_STORED_STDOUT = 100_000

# A fenced block whose info string is python (or py, python3), up to the next fence on a line of its own.
# An unclosed last block runs to the end of the response (a model cut off by max_tokens after the program).
_FENCE = re.compile(r"^[ \t]*```[ \t]*(?:python3?|py)[ \t]*\r?\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)",
                    re.IGNORECASE | re.MULTILINE | re.DOTALL)


class PotOutcome(BaseModel):
    """What a PoT response's program did: its stdout (None when it never ran) and the classified reason it
    failed (`error`, None when it ran cleanly), with a one-line `detail`."""

    stdout: str | None = None
    error: str | None = None
    detail: str = ""


def extract_program(text: str | None) -> str | None:
    """The last ```python fenced block of the response (the model's final program), or None."""
    if not text:
        return None
    blocks = [m.group(1) for m in _FENCE.finditer(text)]
    blocks = [b for b in blocks if b.strip()]
    return blocks[-1] if blocks else None


def run_response(text: str | None, *, limits: object | None = None, isolation: str = "strict") -> PotOutcome:
    """Extract the response's program and run it in the sandbox. Never raises for anything the program does;
    a sandbox that cannot start at all is the caller's problem (checked at plan time with `check_isolation`)."""
    from evalcore.sandbox import SandboxLimits, run_program

    program = extract_program(text)
    if program is None:
        return PotOutcome(error=NO_PROGRAM, detail="the response holds no ```python fenced block")
    result = run_program(program, limits=limits if isinstance(limits, SandboxLimits) else SandboxLimits(),
                         isolation=isolation)  # type: ignore[arg-type]
    if result.ok:
        return PotOutcome(stdout=result.stdout)
    return PotOutcome(stdout=result.stdout or None, error=result.error or "runtime_error",
                      detail=" ".join(result.detail.split())[:300])
