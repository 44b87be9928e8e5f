"""Writing rows as a Hugging Face `datasets` folder, the same bytes every time: one place for both exports
(`nphe4v export --format hf`, and the training sets of `gie.training.export`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save_rows(rows: list[dict[str, Any]], out: Path, features: dict[str, Any], fingerprint: str) -> None:
    """`rows` (dicts with every key of `features`, a `datasets` feature dict) saved to `out` for
    `datasets.load_from_disk`. Through an explicit Arrow schema (`from_dict` infers int64 first and overflows
    on 64-bit seeds), with a fingerprint from the content, never a random one (the same rows export to the same
    bytes), and without `datasets`' progress bars (the commands print their own one-line summary)."""
    import datasets  # heavy: only an export pays for it
    import pyarrow as pa

    feats = datasets.Features(features)
    encoded = feats.encode_batch({k: [r[k] for r in rows] for k in features})
    table = pa.Table.from_pydict(encoded, schema=feats.arrow_schema)
    hf = datasets.Dataset(datasets.table.InMemoryTable(table), info=datasets.DatasetInfo(features=feats),
                          fingerprint=fingerprint)
    quiet = not datasets.are_progress_bars_disabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        hf.save_to_disk(str(out))
    finally:
        if quiet:
            datasets.enable_progress_bars()
