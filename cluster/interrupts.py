"""SIGINT and SIGTERM end a run the same way: a KeyboardInterrupt the run turns into a clean stop.

Ray's `ray.init` installs its own SIGTERM handler (`sys.exit`), which would skip the run's bookkeeping;
`install` is called again after Ray starts. During the final bookkeeping both signals are held back, so a
second Ctrl-C cannot cut the manifest write in half.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so one handler covers both."""


# The signal that ended the run: Ray's blocking calls may turn the handler's exception into a plain
# KeyboardInterrupt, so the exception's type alone cannot tell SIGTERM from SIGINT.
_received: list[int] = []


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise KeyboardInterrupt()


def install() -> None:
    """SIGTERM raises Terminated and SIGINT KeyboardInterrupt in the main thread (a no-op elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        signal.signal(signal.SIGINT, _on_sigint)


@contextmanager
def deferred() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM for the block (the last writes of an interrupted run)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def exit_code(e: BaseException) -> int:
    """The shell's convention: 128 + the signal number."""
    if _received:
        return 128 + _received[0]
    return 128 + (signal.SIGTERM if isinstance(e, Terminated) else signal.SIGINT)
