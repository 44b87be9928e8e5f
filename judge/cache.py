"""Judgments cached on disk, content-addressed (see `judge.llm_judge.cache_key`).

One small JSON file per key under `<root>/<key[:2]>/<key>.json`, written to a temporary name and renamed,
so concurrent judge actors (on a shared file system) and crashes never leave a partial entry, and two
writers of the same key write the same content. Only successful judgments are stored (and read back): a
failure is asked again on the next run. Entries hold the judge's verdict, its raw outputs and usage; they are redacted before writing, so no API key can reach the cache.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from evalcore import secrets

CACHE_VERSION = 2  # 2: successful judgments only, keys with endpoint and schema bounds


class JudgeCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.failed_writes = 0  # a full or read-only disk: entries not kept (the judgments are)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            raw = self.path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            self.misses += 1
            return None
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError:  # cannot happen with atomic writes; treat as absent
            self.misses += 1
            return None
        if (entry.get("cache_version") != CACHE_VERSION or entry.get("key") != key
                or (entry.get("value") or {}).get("status") != "ok"):
            self.misses += 1
            return None
        self.hits += 1
        return entry["value"]

    def put(self, key: str, value: dict[str, Any]) -> None:
        if value.get("status") != "ok":
            raise ValueError("only successful judgments are cached")
        p = self.path(key)
        text = json.dumps({"cache_version": CACHE_VERSION, "key": key, "value": value}, ensure_ascii=False,
                          sort_keys=True)
        text = secrets.redact(text) or text
        tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, p)
        except OSError:
            # a full or read-only disk: the cache only saves asking again, the judgment itself is written (or
            # refused in one line) by the run's writer; no partial entry is left behind
            tmp.unlink(missing_ok=True)
            self.failed_writes += 1
            return
        self.writes += 1

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.exists() else 0
