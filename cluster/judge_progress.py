"""Progress of the judge calls on stderr (the judge can be hours of API calls: it is never silent)."""

from __future__ import annotations

import sys
import time
from typing import Any


class JudgeProgress:
    """Progress of the judge calls on stderr: a rich bar on a terminal, else one line every 5 % or 30 s
    (logs and CI), so a slow judge is never silent."""

    def __init__(self, total: int, label: str, *, enabled: bool = True) -> None:
        self.total, self.label, self.enabled = total, label, enabled
        self.done = self.errors = 0
        self._bar: Any = None
        self._last = time.monotonic()
        self._step = max(1, total // 20)

    def __enter__(self) -> JudgeProgress:
        if self.enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("judge {task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("errors {task.fields[errors]}"), TimeRemainingColumn(),
                                 console=Console(stderr=True))
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total, errors=0)
        elif self.enabled and self.total:
            print(f"judge {self.label}: {self.total} judgments to request", file=sys.stderr, flush=True)
        return self

    def advance(self, error: bool) -> None:
        self.done += 1
        self.errors += int(error)
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=1, errors=self.errors, total=self.total)
            return
        now = time.monotonic()
        # the total grows while samples stream in: the 5 % step follows it
        self._step = max(self._step, self.total // 20)
        if self.done == self.total or self.done % self._step == 0 or now - self._last >= 30:
            self._last = now
            print(f"judge {self.label}: {self.done}/{self.total} judged, {self.errors} errors", file=sys.stderr,
                  flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

