"""Writing a Parquet file so that a failing disk fails with the OS's own error.

Polars writing a file itself sometimes loses the OS error of a full disk: the write fails with "parquet: File
out of specification: Invalid thrift: transport error", which names neither the cause nor an errno, so a run
would end in a traceback instead of one line naming the file (`shards.storage_error`). Encoded in memory and
written by Python, the same failure is `OSError(ENOSPC)` from `write`. The files written here are a batch of
rows or a dataset's instance table: small next to the memory of the process writing them.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import polars as pl


def write_parquet(frame: pl.DataFrame, path: str | Path, *, fsync: bool = False, **options: Any) -> None:
    """`frame.write_parquet(path, **options)` with the OS's error on failure; `fsync`: on disk on return."""
    buf = io.BytesIO()
    frame.write_parquet(buf, **options)
    with open(path, "wb") as f:
        f.write(buf.getbuffer())
        if fsync:
            f.flush()
            os.fsync(f.fileno())
