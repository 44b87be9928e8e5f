"""Pixels in and out: PNG decoding and the fixed re-encoding every edit uses (identical pixels give
identical bytes), and recolouring node discs in a drawn PNG (focus and spatial recolouring render with it)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import cv2
import numpy as np

from gie.edits.base import RGB, Position

# Fixed so identical pixels always give identical PNG bytes.
_PNG_PARAMS = [cv2.IMWRITE_PNG_COMPRESSION, 6]


def decode(png: bytes) -> np.ndarray:
    img = cv2.imdecode(np.frombuffer(png, dtype=np.uint8), cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError("not a decodable image")
    return img


def encode(img: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", img, _PNG_PARAMS)
    if not ok:
        raise ValueError("PNG encoding failed")
    return buf.tobytes()


def canonical_png(png: bytes) -> bytes:
    """The input re-encoded the way every edit encodes, so unedited and edited images compare by bytes."""
    return encode(decode(png))


def bgr(rgb: Sequence[int]) -> np.ndarray:
    r, g, b = (int(c) for c in rgb)
    return np.array([b, g, r], dtype=np.uint8)


def _recolor_disc(
    img: np.ndarray, centre: Position, radius: float, new: np.ndarray, keep_alpha: float
) -> None:
    height, width = img.shape[:2]
    x, y = centre
    x0, x1 = max(math.floor(x - radius) - 2, 0), min(math.ceil(x + radius) + 3, width)
    y0, y1 = max(math.floor(y - radius) - 2, 0), min(math.ceil(y + radius) + 3, height)
    if x0 >= x1 or y0 >= y1:
        return
    roi = img[y0:y1, x0:x1]
    hh, ww = roi.shape[:2]
    yy, xx = np.mgrid[y0:y1, x0:x1]
    # Inside the outline ring; the mask also stops a fill leaking through any gap in the outline.
    inside = (xx - x) ** 2 + (yy - y) ** 2 <= (radius - 0.5) ** 2
    if not inside.any():
        return
    # The disc's fill: its most common colour (ties: the lowest (b, g, r)). Each pixel is packed into one
    # integer whose order is the rows' lexicographic order, so this is what np.unique(..., axis=0) on
    # the rows picks, ~40x faster (row-wise unique sorts structured records).
    px = roi[inside].astype(np.int64)
    keys, counts = np.unique((px[:, 0] << 16) | (px[:, 1] << 8) | px[:, 2], return_counts=True)
    fill = int(keys[int(np.argmax(counts))])
    old = np.array([fill >> 16, (fill >> 8) & 255, fill & 255], dtype=np.int64)
    work = np.ascontiguousarray(roi)
    mask = np.ones((hh + 2, ww + 2), dtype=np.uint8)
    mask[1:-1, 1:-1][inside] = 0
    # Accept the fill and the antialiased fringe down to keep_alpha of the way from ink (black) to the
    # fill; darker label pixels fall outside the range and stay untouched.
    lo_diff = tuple(float(c) * (1.0 - keep_alpha) for c in old) + (0.0,)
    up_diff = (8.0, 8.0, 8.0, 0.0)
    flags = 4 | cv2.FLOODFILL_MASK_ONLY | cv2.FLOODFILL_FIXED_RANGE | (2 << 8)
    is_old = np.all(work == old.astype(np.uint8), axis=-1)
    # First seed: 0.6 radius above the centre, clear of the label; then any fill pixel still unreached
    # (the halves a wide label cuts the disc into, and glyph counters such as the inside of "A").
    seeds = [(round(x - x0), round(y - 0.6 * radius - y0))]
    while True:
        for sx, sy in seeds:
            if 0 <= sx < ww and 0 <= sy < hh and is_old[sy, sx] and mask[sy + 1, sx + 1] == 0:
                cv2.floodFill(work, mask, (sx, sy), 0, lo_diff, up_diff, flags)
        free = np.flatnonzero(inside & is_old & (mask[1:-1, 1:-1] == 0))
        if free.size == 0:
            break
        sy, sx = divmod(int(free[0]), ww)
        seeds = [(sx, sy)]
    region = mask[1:-1, 1:-1] == 2
    px = work[region].astype(np.int64)
    # Re-tint as a blend between ink and fill: alpha = <px, old> / <old, old>, then alpha * new.
    # Integer arithmetic keeps the bytes identical on every platform.
    den = int(old @ old)
    num = np.clip(px @ old, 0, den)
    tinted = (2 * num[:, None] * new.astype(np.int64)[None, :] + den) // (2 * den)
    roi[region] = tinted.astype(np.uint8)


def recolor_nodes_png(
    png: bytes,
    positions: Mapping[str, Position],
    node_radius: float,
    colors: Mapping[str, RGB],
    *,
    keep_alpha: float = 0.25,
) -> bytes:
    """Recolour node discs by flood fill from inside each disc, keeping outline and label ink.

    The fill's antialiased fringe around label glyphs is re-tinted proportionally, so letters keep
    their smooth edges; pixels outside the listed nodes' discs are untouched.
    """
    img = decode(png)
    for node in sorted(colors):
        _recolor_disc(img, positions[node], node_radius, bgr(colors[node]), keep_alpha)
    return encode(img)
