"""A run's manifest file: written beside and renamed, its top-level status padded so that it can still be
overwritten in place when the disk cannot take a new copy (a run stopped by a full disk never says `running`)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from evalcore.shards import storage_error

RUN_MANIFEST = "manifest.json"

# The top-level status is written padded to this width (JSON allows the blanks), so that a manifest that
# cannot be rewritten (a full disk) can still have its status overwritten in place, in the bytes it already
# holds: a run stopped by the disk never leaves `running` behind.
_STATUS_ROOM = len('"interrupted"') + 2
_STATUS_AT = '\n  "status": '


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    tmp = out / f".{RUN_MANIFEST}.tmp"
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n"
    status = json.dumps(manifest.get("status"))
    text = text.replace(f"{_STATUS_AT}{status}", f"{_STATUS_AT}{status.ljust(_STATUS_ROOM)}", 1)
    try:
        tmp.write_text(text)
        os.replace(tmp, out / RUN_MANIFEST)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if manifest.get("status") != "running":
            _overwrite_status(out / RUN_MANIFEST, "failed" if manifest["status"] == "complete" else
                              str(manifest["status"]))
        raise (storage_error(e, out / RUN_MANIFEST) or e) from None


def _overwrite_status(path: Path, status: str) -> None:
    """Overwrite the top-level status of the manifest on disk in place (no new block needed); a manifest
    that could not be rewritten as `complete` says `failed` (its samples are on disk; a rerun completes it)."""
    with contextlib.suppress(OSError, ValueError):
        data = path.read_bytes()
        at = data.find(_STATUS_AT.encode())
        if at < 0:
            return
        start = at + len(_STATUS_AT)
        end = data.find(b"\n", start)
        room = data[start:end].rstrip(b",")
        new = json.dumps(status).encode()
        if len(new) > len(room):
            return
        with open(path, "r+b") as f:
            f.seek(start)
            f.write(new.ljust(len(room)))
            f.flush()
            os.fsync(f.fileno())
