"""Judging a parsed GraphVerse answer: the verdict constructors, name resolution against the asked graph,
the feasibility checks several tasks share, and the guards that keep `parse`/`verify` from ever raising.

Verdict conventions: the verify functions check feasibility of the witness the answer gives (path, set,
tour, cycle, colouring, mapping) on the graph(s) the question is finally asked on, recompute its value, then
compare with the optimum `gold.value` (any optimal answer is correct). As in GraphArena, the witness decides:
a value the answer also states (a tour's Length, NumColors, a set's Size) that disagrees with the witness
does not change the verdict; it sets `Verdict.value_consistent` False (True when it agrees, None when no
value is stated). Names match graph labels exactly, else case-insensitively.

Value-scored tasks (`gie.catalogue.VALUE_SCORED`: SD, DIAM, GED, MCS) are judged on the stated value alone,
as the paper scores them; a path or mapping given with the value is checked apart: `witness_valid` is its
feasibility and `value_consistent` whether the stated value is the witness's own value. For the other
tasks `witness_valid` is the feasibility of the stated solution.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from evalcore.schema import Gold, ParseError, Verdict
from gie.tasks.answer_parsing import Bare, read_answer

# Stated and recomputed numbers agree within this (weights are ints; floats only come from models).
TOL = 1e-6

Parser = Callable[[dict[str, Any]], dict[str, Any] | ParseError]
Verifier = Callable[[Sequence[nx.Graph], dict[str, Any], Gold, dict[str, Any]], Verdict]


def quoted(names: Sequence[Any], limit: int = 5) -> str:
    shown = ", ".join(repr(str(x)) for x in list(names)[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


def num_str(x: float | None) -> str:
    if x is None:
        return "none"
    return str(int(x)) if float(x) == int(x) else f"{x:g}"


def close(a: float, b: float) -> bool:
    return abs(a - b) <= TOL * max(1.0, abs(b))


class Resolver:
    """Graph labels for answer names: exact match first, else a unique case-insensitive match."""

    def __init__(self, G: nx.Graph) -> None:
        self.exact = {str(v): v for v in G.nodes}
        folded: dict[str, list[Hashable]] = {}
        for v in G.nodes:
            folded.setdefault(str(v).casefold(), []).append(v)
        self.folded = folded

    def get(self, name: str) -> Hashable | None:
        if name in self.exact:
            return self.exact[name]
        hits = self.folded.get(name.casefold(), [])
        return hits[0] if len(hits) == 1 else None

    def resolve(self, names: Sequence[str], what: str, graph: str = "") -> tuple[list[Hashable], str | None]:
        """(labels, None) or ([], reason naming unknown or repeated names)."""
        where = f" in the {graph} graph" if graph else ""
        unknown = [n for n in names if self.get(n) is None]
        if unknown:
            return [], f"{what} names unknown node(s){where}: {quoted(unknown)}"
        labels = [self.get(n) for n in names]
        counts = Counter(labels)
        repeated = [n for n, lab in zip(names, labels, strict=True) if counts[lab] > 1]
        if repeated:
            return [], f"{what} repeats node(s): {quoted(list(dict.fromkeys(repeated)))}"
        return labels, None  # type: ignore[return-value]


def wrong(reason: str, witness: bool | None = None) -> Verdict:
    return Verdict(verdict="wrong", reason=reason, witness_valid=witness)


def correct(reason: str = "", witness: bool | None = None) -> Verdict:
    return Verdict(verdict="correct", reason=reason, witness_valid=witness)


def infeasible(reason: str) -> Verdict:
    """The stated path / set / tour / mapping itself is not valid: wrong, and the witness is invalid."""
    return wrong(reason, witness=False)


def open_cycle(names: list[str], res: Resolver) -> list[str]:
    """A closed listing [a, ..., a] without its repeated end; an open one as is (return leg implied)."""
    if len(names) > 1 and res.get(names[0]) is not None and res.get(names[0]) == res.get(names[-1]):
        return names[:-1]
    return names


def sorted_edges(G: nx.Graph) -> list[tuple[Hashable, Hashable]]:
    """Edges as (smaller, larger) label pairs in sorted order, self-loops dropped: reasons name the first
    offending edge, which must not depend on insertion order."""
    pairs = [(u, v) if str(u) <= str(v) else (v, u) for u, v in G.edges if u != v]
    return sorted(pairs, key=lambda e: (str(e[0]), str(e[1])))


def missing_edge(G: nx.Graph, seq: Sequence[Hashable], closed: bool) -> str | None:
    pairs = list(zip(seq, seq[1:], strict=False))
    if closed and len(seq) > 1:
        pairs.append((seq[-1], seq[0]))
    for a, b in pairs:
        if not G.has_edge(a, b):
            return f"no edge between {str(a)!r} and {str(b)!r}"
    return None


def objective(value: float, gold: float | None, better: str, what: str, best_what: str) -> Verdict:
    """Compare a feasible witness's objective with the optimum; `better` is "min" or "max"."""
    if gold is None:
        return wrong(f"gold has no optimum, yet the answer is feasible with {what} {num_str(value)}", True)
    if close(value, gold):
        return correct(witness=True)
    worse = value > gold if better == "min" else value < gold
    if worse:
        return wrong(f"{what} is {num_str(value)}, but {best_what} is {num_str(gold)}", True)
    return wrong(f"{what} {num_str(value)} beats the gold optimum {num_str(gold)}: gold is wrong?", True)


# --- value-scored tasks: the verdict compares the stated value; a given witness is checked apart ---------


def value_verdict(stated: float, gold: float | None, key: str, best_what: str) -> Verdict:
    if gold is None:
        return wrong(f"states {key} {num_str(stated)}, but there is none")
    if close(stated, gold):
        return correct()
    return wrong(f"states {key} {num_str(stated)}, but {best_what} is {num_str(gold)}")


def _joined(*reasons: str) -> str:
    return "; ".join(r for r in reasons if r)


@dataclass(frozen=True)
class Witness:
    """A value-scored answer's witness checked apart: `fault` says why it is not feasible (None: it is),
    `consistent` whether the stated value is the witness's own value, `note` what disagrees."""

    fault: str | None = None
    consistent: bool | None = None
    note: str = ""


def with_witness(v: Verdict, given: Any, check: Callable[[], Witness]) -> Verdict:
    """Attach the witness columns: `witness_valid` (None when no witness was given) and, for a feasible
    witness, `value_consistent`. The verdict itself never changes: the paper scores the value."""
    if given is None:
        return v
    w = check()
    if w.fault is not None:
        return Verdict(verdict=v.verdict, reason=_joined(v.reason, f"witness: {w.fault}"), witness_valid=False)
    return Verdict(verdict=v.verdict, reason=_joined(v.reason, w.note), witness_valid=True,
                   value_consistent=w.consistent)


def stated_value(v: Verdict, stated: float | None, actual: float, key: str, what: str) -> Verdict:
    """A witness-graded verdict with `value_consistent` for the value the answer states beside its witness
    (None when it states none). Only a feasible witness has a value to agree with."""
    if stated is None or v.witness_valid is not True:
        return v
    if close(stated, actual):
        return v.model_copy(update={"value_consistent": True})
    note = f"states {key} {num_str(stated)} but {what} is {num_str(actual)}"
    return v.model_copy(update={"value_consistent": False, "reason": _joined(v.reason, note)})


# --- mappings between the two graphs of a paired task -------------------------------------------------


def resolve_mapping(G1: nx.Graph, G2: nx.Graph, mapping: dict[str, str | None]
                     ) -> tuple[dict[Hashable, Hashable | None], str | None]:
    r1, r2 = Resolver(G1), Resolver(G2)
    keys, why = r1.resolve(list(mapping), "Mapping", "first")
    if why:
        return {}, why
    targets = [v for v in mapping.values() if v is not None]
    unknown = [v for v in targets if r2.get(v) is None]
    if unknown:
        return {}, f"Mapping names unknown node(s) in the second graph: {quoted(unknown)}"
    images = {k: (None if v is None else r2.get(v)) for k, v in zip(keys, mapping.values(), strict=True)}
    by_image: dict[Hashable, list[Hashable]] = {}
    for k, v in images.items():
        if v is not None:
            by_image.setdefault(v, []).append(k)
    for v, ks in by_image.items():
        if len(ks) > 1:
            return {}, f"not injective: {quoted(ks)} all map to {str(v)!r}"
    return images, None


def induced_mismatch(G1: nx.Graph, G2: nx.Graph, pairs: dict[Hashable, Hashable]) -> str | None:
    keys = sorted(pairs, key=str)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            e1, e2 = G1.has_edge(a, b), G2.has_edge(pairs[a], pairs[b])
            if e1 != e2:
                pa, pb = str(pairs[a]), str(pairs[b])
                if e1:
                    return f"{str(a)!r}-{str(b)!r} is an edge of the first graph but {pa!r}-{pb!r} is not"
                return f"{pa!r}-{pb!r} is an edge of the second graph but {str(a)!r}-{str(b)!r} is not"
    return None


# --- guards -------------------------------------------------------------------------------------------


def guarded_parse(parser: Parser, obj: Any, bare: Bare | None = None) -> dict[str, Any] | ParseError:
    """Canonical answer from an extracted final answer (a mapping; with `bare`, also a bare number, list or
    text, `gie.tasks.answer_parsing.read_answer`), or why it is not one. Never raises."""
    if bare is None and not isinstance(obj, dict):
        return ParseError(kind="not_a_mapping", detail=type(obj).__name__)
    try:
        return read_answer(parser, obj, bare)
    except Exception as exc:  # a hostile mapping (odd keys, huge ints) must not crash the run
        return ParseError(kind="bad_value", detail=f"unreadable answer: {type(exc).__name__}")


def guarded_verify(parser: Parser, verifier: Verifier, graphs: Sequence[nx.Graph], query: dict[str, Any],
                   gold: Gold, canonical: Any) -> Verdict:
    """correct / wrong (with a reason) for a canonical answer on the graph(s) asked on, plus
    `witness_valid` (is the given path / set / tour / mapping valid; None when none was given).
    Never raises."""
    try:
        ans = guarded_parse(parser, canonical)  # idempotent on canonical answers; guards hand-made ones
        if isinstance(ans, ParseError):
            return wrong(f"malformed answer: {ans.kind} {ans.detail}")
        return verifier(graphs, query, gold, ans)
    except Exception as exc:  # a verifier bug must cost a sample, not the run
        return wrong(f"verifier error: {type(exc).__name__}: {exc}"[:300])
