"""Rendering an instance from its data: captions, colour legends, and the patch and recolour edits
re-applied to the PNG from their metadata, so `render_data(cfg, data)` re-creates every image byte for byte."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import networkx as nx

from gie import edits
from gie.graphs import DEFAULT_COLOR, PALETTE
from gie.layout import image_seed, layout_pixels
from gie.render import render_graph
from gie.tasks.config import TaskConfig
from gie.tasks.instance import GVData


def _captions(cfg: TaskConfig, images: list[list[Any]]) -> list[str | None]:
    if len(images) == 1:
        return [None]
    out: list[str | None] = []
    for logical, part in images:
        parts = "" if part is None else ("Part A" if part == 0 else "Part B")
        if cfg.paired:
            out.append(f"Graph {logical + 1}" + (f", {parts.replace('Part', 'part')}" if parts else ""))
        else:
            out.append(parts)
    return out


def _legends(edit: dict[str, Any], graphs: list[nx.Graph]) -> list[tuple[str, ...]]:
    """Colour legend per image: only on images whose question names a colour."""
    out: list[tuple[str, ...]] = []
    for i, (logical, _) in enumerate(edit["images"]):
        if logical not in edit["targets"] or edit["kind"] not in ("focus", "recolor"):
            out.append(())
            continue
        meta = edit["details"][edit["targets"].index(logical)]
        # Recolouring: the colours the edited picture shows. The first render, made before the recoloured
        # set is chosen, lists every original colour; node positions do not depend on the legend's entries.
        gone = set(meta.get("recoloured", ())) if edit["kind"] == "recolor" else set()
        colours = {graphs[i].nodes[n].get("color", DEFAULT_COLOR) for n in graphs[i] if n not in gone}
        if edit["kind"] == "recolor":
            colours.add(meta["new_color"])
        out.append(tuple(c for c in PALETTE if c in colours))
    return out


def render_data(cfg: TaskConfig, data: GVData) -> list[bytes]:
    return [png for png, _, _ in render_images(cfg, data.edit, data.image_graphs(), data.layout_seed, final=True)]


def render_images(
    cfg: TaskConfig, edit: dict[str, Any], graphs: list[nx.Graph], layout_seed: int, *, final: bool
) -> list[tuple[bytes, dict[str, tuple[float, float]], float]]:
    captions = _captions(cfg, edit["images"])
    legends = _legends(edit, graphs)
    out = []
    for i, g in enumerate(graphs):
        png, pos, radius = render_graph(g, image_seed(layout_seed, i), caption=captions[i], legend=legends[i],
                                        distance_table=cfg.complete)
        logical = edit["images"][i][0]
        if final and logical in edit["targets"]:
            meta = edit["details"][edit["targets"].index(logical)]
            if edit["kind"] == "patch":
                png = _PATCHED.pop(_patch_key(png, meta), None) or edits.apply_patch_edit(png, meta)
            elif edit["kind"] == "recolor":
                new = PALETTE[meta["new_color"]]
                png = edits.recolor_nodes_png(png, pos, radius, {n: new for n in meta["recoloured"]})
        out.append((png, pos, radius))
    return out


def image_positions(cfg: TaskConfig, edit: dict[str, Any], graphs: list[nx.Graph], layout_seed: int
                    ) -> list[dict[str, tuple[float, float]]]:
    """The node centres `render_images(..., final=False)` returns, without drawing: the renderer draws at
    `layout_pixels`' positions (sorted by node, as `render_graph` returns them) and nothing else moves them."""
    captions = _captions(cfg, edit["images"])
    out = []
    for i, g in enumerate(graphs):
        pos, _ = layout_pixels(g, image_seed(layout_seed, i), caption=captions[i] is not None,
                               distance_table=cfg.complete)
        out.append(dict(sorted(pos.items())))
    return out


# patch_perturb already returns the edited PNG, byte-identical to apply_patch_edit(base, meta) (both
# encode _apply_patch(decode(base), meta)); keeping it for the final render saves one PNG encode.
_PATCHED: dict[str, bytes] = {}


def _patch_key(png: bytes, meta: dict[str, Any]) -> str:
    return hashlib.sha256(png).hexdigest() + json.dumps(meta, sort_keys=True)


def remember_patch(png: bytes, meta: dict[str, Any], edited: bytes) -> None:
    if len(_PATCHED) > 16:
        _PATCHED.clear()
    _PATCHED[_patch_key(png, meta)] = edited
