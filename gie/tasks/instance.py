"""The GraphVerse instance data model (`GVData`), shared by the 11 task specs.

Instance data (docs/graphverse-design.md, "Instance data"):

    {"scenario": ..., "source": {"name", "licence", "node_ids", "labels"},
     "graphs": [node-link per rendered image], "asked": [node-link per graph asked on],
     "query": {...}, "edit": {...}, "layout_seed": int}

`edit` always has
    kind     none | patch | composition | focus | recolor
    targets  the logical graphs edited (single-image tasks: [0]; paired: [0], [1] or [0, 1]; [] for none)
    images   one [logical graph, part] per rendered image; part is 0/1 for the two views of a composed
             graph, else null
    details  one metadata dict (from gie.edits) per target, in `targets` order
Rendered image i uses layout seed `gie.layout.image_seed(layout_seed, i)`; patch and recolour edits are
re-applied to the rendered PNG from their metadata, focus colours live in the stored graphs, and
composition is the split itself, so `render(data)` re-creates every PNG byte for byte.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from pydantic import BaseModel, ConfigDict, model_validator

from gie.catalogue import EDIT_KINDS
from gie.graphs import from_node_link
from gie.sources.base import Scenario


class SourceInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    licence: str
    # original ids of the sampled nodes, aligned with `labels` (the display labels given to them)
    node_ids: list[str]
    labels: list[str]


class GVData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: Scenario
    source: SourceInfo
    graphs: list[dict[str, Any]]
    asked: list[dict[str, Any]]
    query: dict[str, Any] = {}
    edit: dict[str, Any]
    layout_seed: int

    @model_validator(mode="after")
    def _consistent(self) -> GVData:
        kind = self.edit.get("kind")
        if kind not in EDIT_KINDS:
            raise ValueError(f"edit.kind {kind!r} is not one of {', '.join(EDIT_KINDS)}")
        for key in ("targets", "images", "details"):
            if key not in self.edit:
                raise ValueError(f"edit.{key} missing")
        if len(self.edit["images"]) != len(self.graphs):
            raise ValueError(f"edit.images lists {len(self.edit['images'])} images for {len(self.graphs)} graphs")
        if len(self.edit["details"]) != len(self.edit["targets"]):
            raise ValueError("edit.details must hold one entry per edit.targets entry")
        if not 1 <= len(self.asked) <= 2:
            raise ValueError(f"asked holds {len(self.asked)} graphs; expected 1 or 2")
        for what, items in (("graphs", self.graphs), ("asked", self.asked)):
            for i, nl in enumerate(items):
                try:
                    from_node_link(nl)
                except (KeyError, TypeError) as e:
                    raise ValueError(f"{what}[{i}] is not node-link data ({e})") from None
        if len(self.source.node_ids) != len(self.source.labels):
            raise ValueError("source.node_ids and source.labels differ in length")
        asked0 = {n["id"] for n in self.asked[0]["nodes"]}
        for key in ("source", "target"):
            if key in self.query and self.query[key] not in asked0:
                raise ValueError(f"query.{key} {self.query[key]!r} is not a node of asked[0]")
        return self

    def asked_graphs(self) -> list[nx.Graph]:
        return [from_node_link(a) for a in self.asked]

    def image_graphs(self) -> list[nx.Graph]:
        return [from_node_link(g) for g in self.graphs]
