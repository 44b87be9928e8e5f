"""One writer per run folder: an OS file lock held for the whole run, with its holder written beside it.

The lock is `filelock`'s OS lock (fcntl on Unix): the kernel releases it when the holding process dies,
however it dies (SIGKILL included), so a lock left by a killed run is simply taken by the next one. The
holder file is only information for the refusal message; it is never what decides who holds the lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from evalcore.shards import storage_error, writing

LOCK_FILE = ".nphe4v.lock"
HOLDER_FILE = ".nphe4v.lock.holder.json"
# files of the lock itself: a folder holding only these is still an empty folder
LOCK_FILES = frozenset({LOCK_FILE, HOLDER_FILE, f".{HOLDER_FILE}.tmp"})


def foreign_files(folder: Path, *, locked: bool) -> bool:
    """Whether `folder` holds anything but a run: files other than the lock's, checked before the lock
    (`locked=False`) only when no lock file is there, since a run in progress has written files but not
    yet its manifest; the lock itself then names the holder, and the check under the lock is exact."""
    if not folder.exists() or (not locked and (folder / LOCK_FILE).exists()):
        return False
    return any(p.name not in LOCK_FILES for p in folder.iterdir())


class RunLockError(RuntimeError):
    """Another process writes into this run folder; one line naming the holder."""


def printable(text: str) -> str:
    """Control characters shown escaped: a terminal never receives them raw from a message of ours."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def holder_info(command: str) -> dict[str, object]:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "command": command}


def describe_holder(folder: Path) -> str:
    try:
        h = json.loads((folder / HOLDER_FILE).read_text())
        return printable(f"pid {h['pid']} on host {h['host']} since {h['started_at']} ({h.get('command', '?')})")
    except (OSError, ValueError, KeyError, TypeError):
        # the holder is between taking the lock and writing its details
        return "another process (holder details not written yet)"


@contextmanager
def run_lock(folder: Path, command: str | None = None) -> Iterator[None]:
    """Hold the run folder's lock for the block; refuse at once (no waiting) when another process holds it."""
    folder = Path(folder)
    # a read-only or full file system stops here, before any run file: one line naming the path (StorageError)
    with writing(folder, "creating"):
        folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(folder / LOCK_FILE, timeout=0)
    try:
        with writing(folder / LOCK_FILE, "locking"):
            lock.acquire()
    except Timeout:
        raise RunLockError(f"{folder}: run folder is in use by {describe_holder(folder)}; "
                           "wait for it to finish or choose another --out") from None
    try:
        tmp = folder / f".{HOLDER_FILE}.tmp"
        try:
            tmp.write_text(json.dumps(holder_info(printable(command or " ".join(sys.argv))[:300])) + "\n")
            os.replace(tmp, folder / HOLDER_FILE)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise (storage_error(e, folder / HOLDER_FILE) or e) from None
        yield
    finally:
        with contextlib.suppress(OSError):  # read-only since: the OS still drops the lock itself
            (folder / HOLDER_FILE).unlink(missing_ok=True)
        lock.release()
