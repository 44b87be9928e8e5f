"""The four graph-centric image edits (GIE) of GraphVerse (the paper, section 4.3 and appendix C).

Every edit is a pure function: inputs (PNG bytes, graph, positions) in, edited output plus a JSON-able
metadata dict out, with all randomness drawn from the `rng` argument. The metadata records exactly what
was done, because the judge's evidence (appendix C.3) is verbalized from it and `render(data)` must be
able to re-create the edited PNG byte for byte (`apply_patch_edit`, `recolor_nodes_png`).

Pixel work goes through OpenCV on BGR arrays and is re-encoded with fixed PNG parameters, so the output
bytes depend only on the input bytes, the metadata and the pinned OpenCV version.

Edits never reach the solvers: callers solve on the graph the question is finally asked on (the focused
subgraph M, the composed graph, the recolouring constraint graph).

One module per edit (`patch`, `composition`, `focus`, `spatial_recolor`) and the shared parts (`base`:
types; `png`: pixels in and out). This package exposes the edits' public functions and types.
"""

from __future__ import annotations

from gie.edits.base import RGB, WHITE, Position, Rect
from gie.edits.composition import compose_split
from gie.edits.focus import attentional_focus
from gie.edits.patch import (
    FLIP_CODES,
    FlipAxis,
    PatchOp,
    apply_patch_edit,
    disc_hits_rect,
    entities_in_rect,
    patch_grid,
    patch_perturb,
    patch_rect,
    segment_hits_rect,
    visible_span,
)
from gie.edits.png import canonical_png, recolor_nodes_png
from gie.edits.spatial_recolor import (
    DIRECTIONS,
    SPATIAL_MARGIN,
    ConstraintMode,
    Direction,
    changes_answer,
    recolor_constraint_graph,
    spatial_candidates,
    spatial_recolor,
    spatial_recolor_changing,
)

__all__ = ['ConstraintMode', 'DIRECTIONS', 'Direction', 'FLIP_CODES', 'FlipAxis', 'PatchOp', 'Position', 'RGB', 'Rect', 'SPATIAL_MARGIN', 'WHITE', 'apply_patch_edit', 'attentional_focus', 'canonical_png', 'changes_answer', 'compose_split', 'disc_hits_rect', 'entities_in_rect', 'patch_grid', 'patch_perturb', 'patch_rect', 'recolor_constraint_graph', 'recolor_nodes_png', 'segment_hits_rect', 'spatial_candidates', 'spatial_recolor', 'spatial_recolor_changing', 'visible_span']
