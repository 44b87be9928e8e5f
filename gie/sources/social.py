"""Friendship networks: networkx's classic social graphs, and the network file loaders (SNAP edge list,
node-link JSON) for the paper's social and collaboration networks."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import networkx as nx

from gie.sources.base import Scenario, Source, SourceFileError, adjacency_from_edges, read_text, user_licence

SOCIAL: dict[str, tuple[str, str]] = {
    # name -> (citation, licence)
    "karate": ("Zachary (1977), karate club friendships", "BSD-3-Clause (networkx); published data"),
    "davis": ("Davis, Gardner & Gardner (1941), Southern women and the events they attended",
              "BSD-3-Clause (networkx); published data"),
    "florentine": ("Padgett & Ansell (1993), Florentine families' marriage ties",
                   "BSD-3-Clause (networkx); published data"),
    "les-miserables": ("Knuth (1993), Stanford GraphBase: co-appearing characters of Les Miserables",
                       "BSD-3-Clause (networkx); Stanford GraphBase data, free use"),
}


def load_snap_edgelist(path: str | Path, *, scenario: Scenario = "friendships", licence: str = "") -> Source:
    """SNAP edge list: one `u v` pair per line (whitespace separated, an optional third weight column
    ignored), comments starting with '#' or '%'."""
    edges = []
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        s = line.strip()
        if not s or s[0] in "#%":
            continue
        parts = s.split()
        if len(parts) not in (2, 3):
            raise SourceFileError(f"{path}:{lineno}: expected 'u v' (two node ids), found {len(parts)} fields")
        edges.append((parts[0], parts[1]))
    if not edges:
        raise SourceFileError(f"{path}:1: no edges")
    adj = adjacency_from_edges([], edges)
    return Source(
        name=f"snap:{Path(path).name}",
        scenario=scenario,
        licence=licence or user_licence(path),
        description="a network from a SNAP edge list",
        adjacency=adj,
        names={n: n for n in adj},
    )


@lru_cache(maxsize=4)
def social(name: str) -> Source:
    if name not in SOCIAL:
        raise KeyError(f"unknown social graph {name!r}; known: {', '.join(SOCIAL)}")
    citation, licence = SOCIAL[name]
    codes: dict[str, str] = {}
    if name == "karate":
        g = nx.relabel_nodes(nx.karate_club_graph(), {i: f"member {i + 1}" for i in range(34)})
        codes = {f"member {i + 1}": f"M{i + 1:02d}" for i in range(34)}
        desc = "members of a karate club; lines join members who were friends outside the club"
    elif name == "davis":
        g = nx.davis_southern_women_graph()
        codes = {n: f"E{int(n[1:]):02d}" for n in g if re.fullmatch(r"E\d+", n)}
        desc = "women and the social events they attended; a line joins a woman to each event she went to"
    elif name == "florentine":
        g = nx.florentine_families_graph()
        desc = "Renaissance Florentine families; lines are marriage ties"
    else:
        g = nx.les_miserables_graph()
        desc = "characters of Les Miserables; lines join characters who appear in the same chapter"
    adj = adjacency_from_edges([str(n) for n in g], ((str(u), str(v)) for u, v in g.edges()))
    return Source(
        name=name,
        scenario="friendships",
        licence=f"{licence}; {citation}",
        description=desc,
        adjacency=adj,
        names={n: n for n in adj},
        codes=codes,
    )


def load_node_link(path: str | Path, *, scenario: Scenario = "friendships", licence: str = "") -> Source:
    """networkx node-link JSON: {"nodes": [{"id": ..., "name"?: ...}], "links" or "edges": [{"source",
    "target"}]}. A syntax error names its line; a bad entry names its list index."""
    import json

    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceFileError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise SourceFileError(f"{path}:1: node-link JSON needs an object with a 'nodes' list")
    key = "links" if "links" in data else "edges"
    links = data.get(key)
    if not isinstance(links, list):
        raise SourceFileError(f"{path}:1: node-link JSON needs a 'links' (or 'edges') list")
    names: dict[str, str] = {}
    for i, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or "id" not in node or isinstance(node["id"], dict | list):
            raise SourceFileError(f"{path}:{_json_line(text, 'nodes', i)}: nodes[{i}] has no scalar 'id'")
        names[str(node["id"])] = str(node.get("name", node["id"]))
    edges = []
    for i, link in enumerate(links):
        if not isinstance(link, dict) or "source" not in link or "target" not in link:
            raise SourceFileError(f"{path}:{_json_line(text, key, i)}: {key}[{i}] needs 'source' and 'target'")
        u, v = str(link["source"]), str(link["target"])
        for end in (u, v):
            if end not in names:
                raise SourceFileError(f"{path}:{_json_line(text, key, i)}: {key}[{i}] names unknown node {end!r}")
        if u != v:
            edges.append((u, v))
    if not edges:
        raise SourceFileError(f"{path}:1: no edges")
    adj = adjacency_from_edges([], edges)
    return Source(
        name=f"node-link:{Path(path).name}", scenario=scenario, licence=licence or user_licence(path),
        description="a network from node-link JSON", adjacency=adj, names={n: names[n] for n in adj},
    )


def _json_line(text: str, key: str, index: int) -> int:
    """Best-effort line of the index-th entry of list `key` (entries one per line in usual dumps)."""
    start = text.find(f'"{key}"')
    if start < 0:
        return 1
    pos, depth, seen = text.find("[", start) + 1, 0, -1
    while 0 < pos < len(text):
        ch = text[pos]
        if ch in "{[":
            if depth == 0:
                seen += 1
                if seen == index:
                    return text.count("\n", 0, pos) + 1
            depth += 1
        elif ch in "}]":
            if depth == 0:
                break
            depth -= 1
        pos += 1
    return text.count("\n", 0, start) + 1
