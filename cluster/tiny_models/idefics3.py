"""Idefics3 (SmolVLM): the original tiny build of cluster/tiny_vlm.py, copied into the family's folder."""

from __future__ import annotations

import shutil
from pathlib import Path


def build_idefics3(out: Path, seed: int) -> dict:
    from cluster.tiny_vlm import build_tiny_idefics3

    src = build_tiny_idefics3(out.parent / f".idefics3-src-{seed}", seed=seed)
    for f in src.iterdir():
        shutil.copy2(f, out / f.name)
    shutil.rmtree(src, ignore_errors=True)
    return {}
