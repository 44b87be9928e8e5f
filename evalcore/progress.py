"""Progress display: a live bar on a terminal, periodic one-line logs elsewhere (ray job logs, CI)."""

from __future__ import annotations

import sys
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class Bar:
    def __init__(self, description: str, total: int, *, log_every: float = 5.0) -> None:
        self.description = description
        self.total = total
        self.done = 0
        self.log_every = log_every
        self._tty = sys.stderr.isatty()
        self._progress: Progress | None = None
        self._last = 0.0
        self._t0 = time.monotonic()

    def __enter__(self) -> Bar:
        if self._tty:
            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True), transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done, total=self.total)
        elif time.monotonic() - self._last >= self.log_every or self.done >= self.total:
            self._last = time.monotonic()
            rate = self.done / max(time.monotonic() - self._t0, 1e-9)
            print(f"[{self.description}] {self.done}/{self.total} ({rate:.0f}/s)", file=sys.stderr, flush=True)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
