"""The leaderboard's bootstrap intervals kept next to the run, so that they are computed once per set of samples.

The instance bootstrap (``nphe4v.bootstrap``) is the one slow table of a run: seconds on the demo, a minute on a
million samples. ``IntervalCache`` stores its bound columns in ``<first run>/cache/`` under a name keyed by the
samples: every shard's path (relative to its run), size and modification time, plus the bootstrap's draws and
seed and this file format's version. New or rewritten shards give a new key, so stale bounds are never read.

A run folder has one writer (the sink). The cache is the only other file anything writes there: only into
finished runs (every manifest's status ``complete``: no writer is at work; a run still running keeps its
bounds in memory), and so that nobody can see a part of it: a temporary file in the same folder, then
``os.replace``. A read-only run folder (or any write error) keeps the bounds in memory only; reading a damaged
cache file recomputes.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalcore.parquet_file import write_parquet

CACHE_DIR = "cache"
PREFIX = "leaderboard-intervals-"
FORMAT = 1  # bump when the bound columns or their computation change


def samples_key(run_paths: Sequence[str | Path], n_boot: int, seed: int) -> str:
    """sha256 of what the bounds depend on, from file metadata only (no sample is read)."""
    h = hashlib.sha256(f"format={FORMAT};n_boot={n_boot};seed={seed}".encode())
    for i, run in enumerate(run_paths):
        root = Path(run)
        for f in sorted(root.glob("samples/*/*/*.parquet")):
            st = f.stat()
            h.update(f"\n{i}|{f.relative_to(root).as_posix()}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()


class IntervalCache:
    """Load and store one frame of bounds for ``run_paths`` (see the module docstring)."""

    def __init__(self, run_paths: Sequence[str | Path], n_boot: int, seed: int, *, write: bool = True) -> None:
        self.write = write
        self.key = samples_key(run_paths, n_boot, seed)
        self.dir = Path(run_paths[0]) / CACHE_DIR
        self.path = self.dir / f"{PREFIX}{self.key[:32]}.parquet"

    def load(self) -> pl.DataFrame | None:
        try:
            return pl.read_parquet(self.path) if self.path.is_file() else None
        except Exception:  # a damaged or foreign file: compute again (and overwrite it)
            return None

    def save(self, frame: pl.DataFrame) -> bool:
        """Write atomically; False (bounds kept by the caller in memory) when the folder is not writable or
        writing was not allowed (a run still running)."""
        if not self.write:
            return False
        tmp = None
        try:
            self.dir.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=self.dir)
            os.close(fd)
            write_parquet(frame, tmp)  # a full disk: OSError, caught below
            os.replace(tmp, self.path)
            tmp = None
            for old in self.dir.glob(f"{PREFIX}*.parquet"):  # bounds of samples that are gone
                if old != self.path:
                    old.unlink(missing_ok=True)
            return True
        except OSError:
            return False
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
