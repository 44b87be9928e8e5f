"""The generated reference pages (docs/config-reference.md, docs/sample-record.md) say what the code says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_reference_pages_are_current() -> None:
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "reference_docs.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr


def test_every_config_field_and_record_column_is_listed() -> None:
    from cluster.config import RunConfig
    from evalcore.schema import SampleRecord

    config = (ROOT / "docs" / "config-reference.md").read_text()
    record = (ROOT / "docs" / "sample-record.md").read_text()
    assert all(f"| `{name}` |" in config for name in RunConfig.model_fields)
    assert all(f"| `{name}` |" in record for name in SampleRecord.model_fields)
