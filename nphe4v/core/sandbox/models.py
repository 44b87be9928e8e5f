"""The sandbox's vocabulary: isolation modes, limits, the result of a run and the error reasons."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Isolation = Literal["strict", "rlimits-only"]

POT_ERRORS = ("timeout", "memory", "output_limit", "forbidden_import", "filesystem", "network",
              "process_limit", "signal", "syntax_error", "runtime_error", "killed")

WEAKER_NOTE = ("rlimits-only: no namespaces, so the program can read the user's files and reach the "
               "network; only rlimits, a cleared environment and the audit hook apply")


class SandboxUnavailable(Exception):
    """The isolation asked for is missing on this machine; str() is one line naming it and the opt-in.
    `reason` is what is missing, `hint` how to opt into the weaker mode in this API's words (a config or a
    command line names the opt-in in its own words, so it shows `reason` with its own hint)."""

    def __init__(self, reason: str, hint: str = "") -> None:
        self.reason = " ".join(reason.split())
        self.hint = hint
        super().__init__(f"{self.reason}; {hint}" if hint else self.reason)


class SandboxLimits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(10.0, gt=0)  # wall clock, setup included; RLIMIT_CPU backs it
    memory_mb: int = Field(512, ge=64)  # RLIMIT_AS of each process
    max_output_bytes: int = Field(1_000_000, gt=0)  # stdout; the run is stopped past it
    max_processes: int = Field(16, ge=1)  # RLIMIT_NPROC (the program counts as one)
    max_file_mb: int = Field(16, ge=1)  # RLIMIT_FSIZE: largest file the program may write
    disk_mb: int = Field(64, ge=1)  # size of the sandbox's /tmp (strict mode)
    max_open_files: int = Field(64, ge=16)  # RLIMIT_NOFILE


class SandboxResult(BaseModel):
    ok: bool  # True iff the program exited 0 within limits
    stdout: str  # truncated to max_output_bytes (decoded utf-8, errors="replace")
    error: str | None  # classified pot_error reason, one of POT_ERRORS, None when ok
    detail: str  # short human-readable explanation (one line, no secrets, no host paths)
    returncode: int | None
    wall_s: float
    isolation: Isolation = "strict"
    note: str = ""  # WEAKER_NOTE when the run was not isolated by namespaces


DEFAULT_LIMITS = SandboxLimits()
