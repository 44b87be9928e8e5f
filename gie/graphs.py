"""Graph conventions shared by every GraphVerse module (docs/graphverse-design.md).

A graph is an undirected `networkx.Graph` whose node keys are the display labels. Node attribute
`color` is a palette name; `element` marks atoms; edge attribute `weight` (positive int) exists only for
weighted tasks. The stored form is node-link JSON with sorted nodes and edges, so the bytes of a
dataset row never depend on insertion order.
"""

from __future__ import annotations

import itertools
import re
import string
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import networkx as nx

# Light, mutually distinct fills: black 20 px labels stay readable on every one of them, and no two are
# neighbours on the hue wheel with similar lightness (checked by eye on rendered samples).
PALETTE: dict[str, tuple[int, int, int]] = {
    "sky": (135, 200, 245),
    "rose": (245, 150, 180),
    "mint": (150, 225, 170),
    "amber": (250, 190, 60),
    "lilac": (195, 165, 235),
    "lemon": (250, 240, 120),
    "teal": (90, 195, 185),
    "coral": (250, 140, 110),
    "grey": (190, 190, 190),
    "lime": (190, 230, 90),
}
DEFAULT_COLOR = "sky"
COLOR_NAMES: tuple[str, ...] = tuple(PALETTE)


def color_rgb(name: str) -> tuple[int, int, int]:
    try:
        return PALETTE[name]
    except KeyError:
        raise KeyError(f"unknown palette colour {name!r}; known: {', '.join(PALETTE)}") from None


# --- node-link (de)serialisation ---------------------------------------------------------------


def edge_key(u: str, v: str) -> tuple[str, str]:
    return (u, v) if u <= v else (v, u)


def sorted_edges(g: nx.Graph) -> list[tuple[str, str]]:
    return sorted(edge_key(u, v) for u, v in g.edges())


def to_node_link(g: nx.Graph) -> dict[str, Any]:
    """networkx node-link form (`edges="edges"`), nodes and edges sorted, attributes key-sorted."""
    nodes = [{"id": n, **{k: g.nodes[n][k] for k in sorted(g.nodes[n])}} for n in sorted(g.nodes)]
    edges = []
    for u, v in sorted_edges(g):
        attrs = g.edges[u, v]
        edges.append({"source": u, "target": v, **{k: attrs[k] for k in sorted(attrs)}})
    return {"directed": False, "multigraph": False, "graph": {}, "nodes": nodes, "edges": edges}


def from_node_link(data: Mapping[str, Any]) -> nx.Graph:
    g = nx.Graph()
    for node in data["nodes"]:
        attrs = {k: v for k, v in node.items() if k != "id"}
        g.add_node(node["id"], **attrs)
    for edge in data["edges"]:
        attrs = {k: v for k, v in edge.items() if k not in ("source", "target")}
        g.add_edge(edge["source"], edge["target"], **attrs)
    return g


def canonical_graph(g: nx.Graph) -> nx.Graph:
    """A copy whose node and edge insertion order is sorted: iteration order then matches the stored form."""
    return from_node_link(to_node_link(g))


def relabel(g: nx.Graph, mapping: Mapping[Any, str]) -> nx.Graph:
    return canonical_graph(nx.relabel_nodes(g, dict(mapping), copy=True))


def node_colors(g: nx.Graph) -> dict[str, str]:
    return {n: g.nodes[n].get("color", DEFAULT_COLOR) for n in g.nodes}


def with_colors(g: nx.Graph, colors: Mapping[str, str]) -> nx.Graph:
    h = g.copy()
    for n, c in colors.items():
        color_rgb(c)
        h.nodes[n]["color"] = c
    return canonical_graph(h)


def strip_weights(g: nx.Graph) -> nx.Graph:
    h = g.copy()
    for _, _, attrs in h.edges(data=True):
        attrs.pop("weight", None)
    return h


# --- labels ------------------------------------------------------------------------------------

_ALNUM = set(string.ascii_uppercase + string.digits)


def _fold(name: str) -> str:
    # Accents dropped ("Chloë" -> "CHLOE"): codes must be plain ASCII so every font draws them.
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return ascii_name.upper()


def _words(name: str) -> list[str]:
    # CamelCase is split ("MlleBaptistine" -> MLLE, BAPTISTINE) so initials stay meaningful.
    folded = _fold(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name))
    out, cur = [], []
    for ch in folded:
        if ch in _ALNUM:
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def code_candidates(name: str) -> Iterator[str]:
    """3-character codes for a name, most mnemonic first: initials, first letter + surname start, the
    name's start, then ordered letter triples; never exhausts (falls back to every AAA..999 code)."""
    words = _words(name)
    letters = "".join(words)
    if len(words) >= 3:
        yield words[0][0] + words[1][0] + words[-1][0]
    if len(words) >= 2 and len(words[-1]) >= 2:
        yield words[0][0] + words[-1][:2]
    if len(letters) >= 3:
        yield letters[:3]
    if len(words) >= 2 and len(words[0]) >= 2:
        yield words[0][:2] + words[-1][0]
    for i, j in itertools.combinations(range(1, len(letters)), 2):
        yield letters[0] + letters[i] + letters[j]
    head = letters[:1] or "X"
    alphabet = string.ascii_uppercase + string.digits
    for a in alphabet:
        for b in alphabet:
            yield head + a + b
    for code in itertools.product(alphabet, repeat=3):
        yield "".join(code)


def make_labels(
    names: Mapping[str, str],
    preferred: Mapping[str, str] | None = None,
    reserved: Iterable[str] = (),
) -> dict[str, str]:
    """Original id -> unique display code. Ids are processed in sorted order so the result is a pure
    function of the inputs; a preferred code (an IATA code, "E03") is used when still free."""
    used = set(reserved)
    out: dict[str, str] = {}
    for oid in sorted(names):
        pref = (preferred or {}).get(oid)
        if pref and pref not in used:
            code = pref
        else:
            code = next(c for c in code_candidates(names[oid]) if c not in used)
        used.add(code)
        out[oid] = code
    return out


def molecule_labels(elements: Mapping[str, str]) -> dict[str, str]:
    """Atom id -> element symbol plus a per-element running number ("C1", "C2", "O1"): the label shows
    the element, which GED's substitution cost depends on. Ids are numbered in their sorted order."""
    counts: dict[str, int] = {}
    out = {}
    for oid in sorted(elements, key=_natural_key):
        el = elements[oid]
        counts[el] = counts.get(el, 0) + 1
        out[oid] = f"{el}{counts[el]}"
    return out


def _natural_key(s: str) -> tuple[Any, ...]:
    # "m:10" after "m:9": atom ids carry their index as a trailing number.
    parts: list[Any] = []
    for is_digit, grp in itertools.groupby(s, str.isdigit):
        chunk = "".join(grp)
        parts.append((1, int(chunk)) if is_digit else (0, chunk))
    return tuple(parts)


# --- small graph facts used across modules -----------------------------------------------------


def is_connected(g: nx.Graph) -> bool:
    return g.number_of_nodes() > 0 and nx.is_connected(g)


def graph_signature(g: nx.Graph) -> str:
    """A short stable text of a graph's labelled structure (for de-duplication and tests)."""
    nodes = ",".join(f"{n}:{g.nodes[n].get('color', '')}:{g.nodes[n].get('element', '')}" for n in sorted(g))
    edges = ",".join(f"{u}-{v}:{g.edges[u, v].get('weight', '')}" for u, v in sorted_edges(g))
    return nodes + "|" + edges
