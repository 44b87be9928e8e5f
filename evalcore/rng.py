"""Seed derivation: every random choice flows from one root seed through named, hashed sub-seeds.

`random.Random` is used (not numpy) because CPython guarantees its integer-seeded stream for
`random()`, `randrange`, `shuffle` and `sample` across platforms.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(root: int, *parts: object) -> int:
    h = hashlib.sha256(repr((int(root), *map(str, parts))).encode()).digest()
    return int.from_bytes(h[:8], "big")


def rng_for(root: int, *parts: object) -> random.Random:
    return random.Random(derive_seed(root, *parts))
