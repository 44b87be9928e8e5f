"""Types and helpers the four edits share: pixel and position types, the background colour, edge keys."""

from __future__ import annotations

RGB = tuple[int, int, int]
Position = tuple[float, float]
Rect = tuple[int, int, int, int]


WHITE: RGB = (255, 255, 255)


def edge_key(u: str, v: str) -> list[str]:
    return sorted((u, v))
