"""Incremental Parquet shards, exactly once per key: the one writer of a run's row tables (samples, judgments).

    w = ShardWriter(run / "samples", SAMPLE_SCHEMA, KEY_COLUMNS, partition_by=["benchmark", "model"], what="sample")
    new = w.add(records)   # pydantic records; a key already written (now or by an earlier attempt) is dropped
    w.flush()              # root/<benchmark>/<model>/part-<ns>-<uuid>.parquet

* One writer (the driver) per table. A shard is written under a hidden temporary name, fsynced and renamed,
  so a crash leaves whole shards only.
* On start the writer reads the keys already on disk (`done`); callers plan around them and `add` drops
  them, so a rerun writes only what is missing, whatever the worker count.
* Rows are queued and written every `flush_rows` rows or `flush_seconds` seconds (checked on `add` and on
  `flush_if_due()`, which the run's event loop calls while it waits, so rows never sit unwritten through a
  quiet spell), and on `flush()`; text cells are redacted (`secrets.redact_frame`), key columns never.
* A shard that cannot be read stops the writer (and `read_shards`) with one line naming the file
  (`ShardError`): its rows are recomputed once it is moved away.
* An OS error writing a shard (disk full, quota, read-only) stops the writer with one line naming the path and
  the cause (`StorageError`), its temporary removed; a writer starting on a table removes the temporaries a
  killed or failed writer left (one writer per table: the run folder's lock).
* A key found in two shards (a shard copied by hand under another name) is read once: `read_shards` drops the
  later copies and says so (`duplicates`), and the writer counts each key once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel

from evalcore.parquet_file import write_parquet
from evalcore.secrets import redact_frame


class ShardError(ValueError):
    """A shard that cannot be read; one line naming the file."""


class StorageError(Exception):
    """An OS error writing (or reading) a run's files: one line naming the path and the cause."""


_CAUSES = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
           errno.EROFS: "read-only file system", errno.EACCES: "permission denied", errno.EPERM: "permission denied",
           errno.EFBIG: "file too large", errno.EIO: "I/O error", errno.ENOENT: "no such file or folder"}
_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def storage_error(e: BaseException, path: str | Path | None, doing: str = "writing") -> StorageError | None:
    """`e` as one line (`<cause> <doing> <path>`, e.g. "no space left on device writing runs/x/part-1.parquet")
    when it is an OS error, raised as such or wrapped by Polars ("... (os error 28)"); None otherwise."""
    if isinstance(e, StorageError):
        return e
    code: int | None = None
    if isinstance(e, OSError):
        code = e.errno
        path = path or e.filename
    if code is None:  # Polars raises OSError (errno unset) or ComputeError with the OS's message inside
        m = _OS_ERROR.search(str(e))
        if m is None:
            return None
        code = int(m.group(1))
    cause = _CAUSES.get(code) or os.strerror(code).lower()
    return StorageError(f"{cause} {doing} {path}" if path else f"{cause} ({doing})")


@contextlib.contextmanager
def writing(path: str | Path, doing: str = "writing") -> Iterator[None]:
    """Turn an OS error raised inside (disk full ...) into a `StorageError` naming `path`."""
    try:
        yield
    except Exception as e:
        err = storage_error(e, path, doing)
        if err is None:
            raise
        raise err from None


def slug(name: str) -> str:
    """A value as one safe folder name (a partition folder of a shard table)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def key_of(row: dict[str, Any], key_columns: Sequence[str]) -> str:
    """The key string of a row: its key columns joined with '|' (what `done` holds)."""
    return "|".join(str(row[c]) for c in key_columns)


def shard_files(root: str | Path) -> list[Path]:
    # temporaries are hidden `.part-*.parquet.tmp`: never matched, so a crash mid-write is invisible
    return sorted(Path(root).glob("**/*.parquet"))


def temporaries(root: str | Path) -> list[Path]:
    """Temporaries a writer left (killed mid-write, or stopped by a full disk)."""
    return sorted(Path(root).glob("**/.part-*.parquet.tmp"))


_said: set[str] = set()


def read_shards(root: str | Path, schema: dict[str, pl.DataType], key_columns: Sequence[str], *, what: str,
                columns: Sequence[str] | None = None, duplicates: list[str] | None = None) -> pl.DataFrame:
    """Every row under `root` (only `columns` when given), each key once, or ShardError naming the damaged shard.

    A key in several shards (a shard copied by hand under another name) is kept from the first shard in name
    order (shards are named by their write time) and dropped from the others: one line per shard holding
    dropped rows goes to `duplicates` when given, else to stderr."""
    files = shard_files(root)
    if not files:
        frame = pl.DataFrame(schema=schema)
        return frame.select(columns) if columns is not None else frame
    try:
        # shards written before a column was appended read back with that column null
        lf = pl.scan_parquet(files, schema=schema, hive_partitioning=False, missing_columns="insert",
                             include_file_paths="__shard")
        cols = list(columns) if columns is not None else list(schema)
        frame = lf.select(*dict.fromkeys([*cols, *key_columns]), "__shard").collect()
    except Exception as e:  # polars raises several unrelated types for a damaged file
        raise _corrupt_shard(Path(root), files, key_columns, what, e) from None
    dup = frame.select(key_columns).is_duplicated()
    if dup.any():
        first = frame.with_row_index("__row").filter(dup).unique(subset=list(key_columns), keep="first")
        dropped = frame.with_row_index("__row").filter(dup & ~pl.col("__row").is_in(first["__row"].implode()))
        lines = [f"{shard}: {n} {what}(s) already in another shard, counted once (dropped here)"
                 for shard, n in dropped.group_by("__shard", maintain_order=True).len().iter_rows()]
        if duplicates is not None:
            duplicates.extend(lines)
        else:
            for line in lines:
                if line not in _said:  # once per process: a run and its report read the table several times
                    _said.add(line)
                    print(f"warning: {line}", file=sys.stderr)
        frame = frame.unique(subset=list(key_columns), keep="first", maintain_order=True)
    return frame.select(cols)


def _corrupt_shard(root: Path, files: list[Path], key_columns: Sequence[str], what: str,
                   err: Exception) -> ShardError:
    """Name the damaged shard (the combined scan's error does not say which file)."""
    for f in files:
        try:
            pl.read_parquet(f, columns=list(key_columns))
        except Exception as e:
            err, bad = e, f
            break
    else:
        bad = root
    first = (str(err).strip().splitlines() or [""])[0][:200]
    return ShardError(f"{bad}: unreadable {what} shard ({type(err).__name__}: {first}); move it out of "
                      f"{root.name}/ and rerun: its {what}s are recomputed")


class ShardWriter:
    """Queued rows of one table under `root`, written as atomic shards, each key at most once across reruns."""

    def __init__(self, root: str | Path, schema: dict[str, pl.DataType], key_columns: Sequence[str], *,
                 partition_by: Sequence[str], what: str, flush_rows: int, flush_seconds: float | None = None) -> None:
        self.root = Path(root)
        self.schema, self.key_columns, self.partition_by = schema, list(key_columns), list(partition_by)
        self.flush_rows, self.flush_seconds = flush_rows, flush_seconds
        # read before the folder is touched: a damaged shard stops the writer before any change
        existing = read_shards(self.root, schema, self.key_columns, what=what, columns=self.key_columns)
        for tmp in temporaries(self.root):  # left by a writer that was killed or met a full disk
            tmp.unlink(missing_ok=True)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise (storage_error(e, self.root, "creating") or e) from None
        self.done: set[str] = {"|".join(str(v) for v in row) for row in existing.iter_rows()}
        self.resumed = len(self.done)
        self.written = 0
        self._pending: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()

    def add(self, records: Iterable[BaseModel]) -> list[BaseModel]:
        """Queue the records whose key is not written yet; returns those queued (never a key twice)."""
        added = []
        for rec in records:
            row = rec.model_dump()
            k = key_of(row, self.key_columns)
            if k in self.done:
                continue
            self.done.add(k)
            self._pending.append(row)
            added.append(rec)
        if len(self._pending) >= self.flush_rows or (
                self.flush_seconds is not None and time.monotonic() - self._last_flush >= self.flush_seconds):
            self.flush()
        return added

    def flush_if_due(self) -> None:
        """Write the queued rows once `flush_seconds` have passed since the last write, even with no new row:
        what a run finished stays on disk (for a reader, and against a crash) however quiet the run is now."""
        if self._pending and self.flush_seconds is not None and \
                time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        frame = redact_frame(pl.DataFrame(self._pending, schema=self.schema), keep=self.key_columns)
        self._pending = []
        for values, part in frame.group_by(self.partition_by, maintain_order=True):
            folder = self.root.joinpath(*(slug(str(v)) for v in values))
            name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
            tmp = folder / f".{name}.tmp"
            try:
                folder.mkdir(parents=True, exist_ok=True)
                write_parquet(part, tmp, fsync=True, compression="zstd")  # a full disk: OSError(ENOSPC)
                os.replace(tmp, folder / name)
            except Exception as e:
                err = storage_error(e, folder / name)
                if err is None:
                    raise
                tmp.unlink(missing_ok=True)  # a partial shard is never left behind (and frees what it held)
                raise err from None
            self.written += part.height
