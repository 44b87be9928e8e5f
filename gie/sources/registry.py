"""The source behind a name (a user copy when one is installed, else the built-in) and a summary of the
built-ins."""

from __future__ import annotations

import io

from gie.sources.base import Source
from gie.sources.builtin import MOLECULE_SOURCES, WALK_SOURCES
from gie.sources.molecules import MoleculeSource
from gie.sources.user_copies import user_replacement


def get_source(name: str) -> Source | MoleculeSource:
    """The source behind a built-in name: the user's copy when `use_user_sources` replaced it."""
    user = user_replacement(name)
    if user is not None:
        return user
    if name in WALK_SOURCES:
        return WALK_SOURCES[name]()
    if name in MOLECULE_SOURCES:
        return MOLECULE_SOURCES[name]()
    raise KeyError(f"unknown graph source {name!r}; known: {', '.join([*WALK_SOURCES, *MOLECULE_SOURCES])}")


def summary() -> str:
    """One line per built-in source: nodes, edges, licence (used by docs and `stats`)."""
    out = io.StringIO()
    for name in [*WALK_SOURCES, *MOLECULE_SOURCES]:
        src = get_source(name)
        if isinstance(src, MoleculeSource):
            out.write(f"{name}: {len(src.molecules)} molecules, {src.number_of_nodes()} atoms; {src.licence}\n")
        else:
            out.write(f"{name}: {src.number_of_nodes()} nodes, {src.number_of_edges()} edges; {src.licence}\n")
    return out.getvalue()
