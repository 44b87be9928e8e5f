"""The sandbox's vocabulary: isolation modes, limits, the result of a run and the error reasons."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Isolation = Literal["strict", "rlimits-only"]

POT_ERRORS = ("timeout", "memory", "output_limit", "forbidden_import", "filesystem", "network",
              "process_limit", "signal", "syntax_error", "runtime_error", "killed")

WEAKER_NOTE = ("rlimits-only: no namespaces, so the program can read the user's files and may reach the "
               "network; only rlimits, a cleared environment, the audit hook and, where available, the seccomp "
               "filter and a cgroup apply")


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

    # The time limit is CPU time, so a verdict depends on what the program computes, not on how busy the
    # machine is: a wall clock of the same length turned correct programs into `timeout` whenever other
    # work loaded the cores (a full test run at a load of ~10: a program needing ~0.3 s of CPU took over
    # 5 s of wall clock).
    timeout_s: float = Field(10.0, gt=0)  # CPU s of each process (RLIMIT_CPU, rounded up to whole seconds)
    # The backstop for a program that waits instead of computing (sleep, a blocked read), setup included;
    # None: 3 x timeout_s + 10 s (`wall_limit_s`).
    wall_timeout_s: float | None = Field(None, gt=0)
    memory_mb: int = Field(512, ge=64)  # RLIMIT_AS of each process
    max_output_bytes: int = Field(1_000_000, gt=0)  # stdout; the run is stopped past it
    max_processes: int = Field(16, ge=1)  # RLIMIT_NPROC (the program counts as one)
    max_file_mb: int = Field(16, ge=1)  # RLIMIT_FSIZE: largest file the program may write
    disk_mb: int = Field(64, ge=1)  # size of the sandbox's /tmp (strict mode)
    max_open_files: int = Field(64, ge=16)  # RLIMIT_NOFILE

    @property
    def cpu_limit_s(self) -> int:
        """RLIMIT_CPU's soft limit (SIGXCPU); the hard limit, one second later, is SIGKILL for a program
        that ignores SIGXCPU."""
        return max(1, math.ceil(self.timeout_s))

    @property
    def wall_limit_s(self) -> float:
        return self.wall_timeout_s if self.wall_timeout_s is not None else 3 * self.timeout_s + 10


class SandboxResult(BaseModel):
    ok: bool  # True iff the program exited 0 within limits
    stdout: str  # truncated to max_output_bytes (decoded utf-8, errors="replace")
    error: str | None  # classified pot_error reason, one of POT_ERRORS, None when ok
    detail: str  # short human-readable explanation (one line, no secrets, no host paths)
    returncode: int | None
    wall_s: float
    isolation: Isolation = "strict"
    note: str = ""  # WEAKER_NOTE when the run was not isolated by namespaces
    # What the kernel counted for all the program's processes together (the run's cgroup; None without one)
    cpu_s: float | None = None
    memory_peak_mb: float | None = None


DEFAULT_LIMITS = SandboxLimits()
