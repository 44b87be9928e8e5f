"""Legibility of a generated dataset's images, checked on the node positions the renderer itself used.

The audit re-derives each image's layout from the instance (the renderer is deterministic) and asks
`gie.legibility.legibility_problems` about it, so what is checked is exactly what was drawn. The test suite
runs it on a stratified sample of testmini; `bench/bench_legibility.py` runs it on every image of a split.
"""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from evalcore.schema import Instance
from gie.legibility import legibility_problems
from gie.tasks import get_config, get_task
from gie.tasks.drawing import image_positions


def instance_legibility_problems(inst: Instance, root: Path) -> list[str]:
    """Every legibility problem of every image of one instance, prefixed by the image path."""
    cfg = get_config(inst.task)
    data = get_task(inst.task).load(inst.data)
    graphs = data.image_graphs()
    # The renderer's positions (`image_positions` gives what it draws at, without drawing the pixels).
    positions = image_positions(cfg, data.edit, graphs, data.layout_seed)
    out = []
    for g, pos, ref in zip(graphs, positions, inst.images, strict=True):
        weighted = not cfg.complete and any("weight" in d for _, _, d in g.edges(data=True))
        with Image.open(io.BytesIO((root / ref.path).read_bytes())) as img:
            w, h = img.size
        out += [f"{ref.path}: {p}" for p in legibility_problems(g, pos, weighted=weighted, width=w, height=h)]
    return out
