"""VGR v4 reads a greedy or search trace for the set tasks (what models write before the set) without charging
its true steps: "Add A: it is adjacent to B, C" names some of A's neighbours (not all of them), "Pick A; remove
its neighbours B, C" names neighbours of a node the statement does not name (nothing to check), "Take A, which
covers 6 edges" counts the edges A touches (a vertex cover only when that is every edge). Properties, over every
MCP, MIS and MVC fixture row, in traces written here apart from the reader (four languages):

- a true trace before the final set changes nothing: the same score as the set alone (right and wrong answer),
  or null;
- a false step (a node that is not a neighbour, an edge count one too high) costs: lower, or null.

And for the paired tasks (GED, MCS), the edge correspondences written while building a mapping ("Edge A-B in
graph 1 matches edge X-Y in graph 2", "G1 has A-B, G2 has X-Y", in four notations): each edge is checked in the
graph named beside it, and the graph's number is not a weight or a number left over. True ones change nothing;
an edge graph 1 lacks costs. (French "correspond à" reads as a walk, neutral in a paired task: left out.)
"""

from __future__ import annotations

import itertools

import pytest
import vgr4_responses as R
from test_judge_helpers import evidence_of, load_instances, wrong_answer

# per task and language: one line per member of the optimum; {v} the member, {nb} nodes, {k} a count
STEPS = {
    "MCP": {"en": "Add {v}: it is adjacent to {nb}.", "de": "{v} ist benachbart zu {nb}.",
            "fr": "{v} est adjacent à {nb}.", "es": "{v} es adyacente a {nb}."},
    "MIS": {"en": "Pick {v}; remove its neighbours {nb}.", "de": "Wähle {v}; entferne seine Nachbarn {nb}.",
            "fr": "Choisir {v} ; retirer ses voisins {nb}.", "es": "Elegir {v}; quitar sus vecinos {nb}."},
    "MVC": {"en": "Take {v}, which covers {k} edges.", "de": "Nimm {v}: es deckt {k} Kanten ab.",
            "fr": "Prendre {v}, qui couvre {k} arêtes.", "es": "Tomar {v}, que cubre {k} aristas."},
}


def _trace(g, members: list[str], task: str, lang: str, skew: int = -1) -> list[str]:
    """The trace; `skew`: the index of the member whose step is made false (MCP: a node not adjacent to it
    listed; MIS: unchanged, nothing there is checkable; MVC: one edge too many)."""
    out = []
    for i, v in enumerate(members):
        if task == "MCP":
            nb = [u for u in members if u != v]
            if i == skew:
                nb.append(next(u for u in sorted(g) if u != v and not g.has_edge(u, v)))
        elif task == "MIS":
            nb = sorted(g[v])
        else:
            nb = []
        k = g.degree(v) + (1 if i == skew else 0)
        out.append(STEPS[task][lang].format(v=v, nb=", ".join(nb) or "-", k=k))
    return out


def _score(inst, ev, lines, answer, f):
    return R.judged(inst, ev, lines, answer, f).vgr


def _derived(task: str):
    """(instance, evidence, derivation) of every fixture row of `task` with a derivation."""
    for inst in load_instances():
        if inst.task == task and (der := R.derivation(inst, ev := evidence_of(inst))):
            yield inst, ev, der


@pytest.mark.parametrize("task", sorted(STEPS))
def test_a_true_search_trace_changes_nothing_and_a_false_step_costs(task):
    same = charged = 0
    for inst, ev, der in _derived(task):
        g, members = ev.facts.graphs[0].asked, der[0][2]
        final = R.render_objs(der, "arrow")
        right = dict(inst.gold.answer)
        for lang in STEPS[task]:
            for ans, f in ((right, True), (wrong_answer(inst), False)):
                base = _score(inst, ev, final, ans, f)
                v = _score(inst, ev, _trace(g, members, task, lang) + final, ans, f)
                assert v is None or v == base, (inst.instance_id, lang, f, v, base)
                same += v == base
            if task == "MIS":
                continue  # nothing checkable to falsify
            good = _score(inst, ev, final, right, True)
            # (MCP: only a member that has a non-neighbour can have one listed)
            for k in [i for i, v in enumerate(members) if task == "MVC" or g.degree(v) < len(g) - 1]:
                bad = _score(inst, ev, _trace(g, members, task, lang, skew=k) + final, right, True)
                assert bad is None or bad < good, (inst.instance_id, lang, k, bad, good)
                charged += bad is not None
    assert same, "no trace was read to a number"
    if task != "MIS":
        assert charged, "no false step was read and charged"


PAIRED = {"en": "Edge {a}-{b} in graph 1 matches edge {x}-{y} in graph 2.",
          "de": "Die Kante {a}-{b} in Graph 1 entspricht der Kante {x}-{y} in Graph 2.",
          "es": "La arista {a}-{b} del grafo 1 corresponde a la arista {x}-{y} del grafo 2.",
          "parens": "{a}-{b} (molecule 1) and {x}-{y} (molecule 2) are both bonds.",
          "before": "G1 has {a}-{b}, G2 has {x}-{y}."}


@pytest.mark.parametrize("task", ["GED", "MCS"])
def test_edge_correspondences_are_checked_in_the_graph_named_beside_each_edge(task):
    same = charged = 0
    for inst, ev, der in _derived(task):
        g1, g2 = ev.facts.graphs[0].asked, ev.facts.graphs[1].asked
        pairs, final, right = der[0][1], R.render_objs(der, "arrow"), dict(inst.gold.answer)
        kept = [((a, b), (x, y)) for (a, x), (b, y) in itertools.pairwise(pairs)
                if g1.has_edge(a, b) and g2.has_edge(x, y)]
        missing = next(((a, b) for a in sorted(g1) for b in sorted(g1) if a < b and not g1.has_edge(a, b)), None)
        for name, line in PAIRED.items():
            lines = [line.format(a=a, b=b, x=x, y=y) for (a, b), (x, y) in kept]
            for ans, f in ((right, True), (wrong_answer(inst), False)):
                base, v = _score(inst, ev, final, ans, f), _score(inst, ev, lines + final, ans, f)
                assert v is None or v == base, (inst.instance_id, name, f, v, base)
                same += v == base
            if kept and missing:
                (x, y) = kept[0][1]
                bad = _score(inst, ev, [line.format(a=missing[0], b=missing[1], x=x, y=y)] + final, right, True)
                good = _score(inst, ev, final, right, True)
                assert bad is None or bad < good, (inst.instance_id, name, bad, good)
                charged += bad is not None
    assert same and charged
