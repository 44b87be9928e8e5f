"""Reading a GraphVerse final answer: node names, name lists, mappings, colourings and numbers as a model
may write them, coerced to the canonical answer shape. Every task's `parse` is built from these.

Node names are kept as written (stripped strings): whether they exist is the verifier's business, so
duplicates and unknown names survive parsing and are rejected with a reason that names them.
Lenient spellings, accepted wherever the meaning is unambiguous (docs/graphverse-design.md, "Reading
answers"): lists may be JSON lists or strings "A, B, C" / "A->B->C" / "A B C" / "A, B and C" / GraphArena's
"[A, B, C]" (unquoted names); numbers may carry the task's unit ("7518 km", "5 hops"); "no path"/"no tour"
may be null, -1 or words like "none" / "infinity". A final answer that is not a mapping (a bare number,
list or text inside the tags) or that wraps the answer in an `answer` key is read by `read_answer`
through the task's `Bare` rule; anything else is a classified `ParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalcore.coerce import as_int, as_number, as_yes_no, colour_label, get_key
from evalcore.schema import ParseError

MAX_ITEMS = 10_000
MAX_NAME_CHARS = 64

PATH_KEYS = ("Path", "ShortestPath")
MAPPING_KEYS = ("Mapping", "NodeMapping", "Map", "Correspondence")

# Said instead of a list or a number when there is nothing to give.
EMPTY_WORDS = {"", "none", "empty", "null", "nil", "n/a", "∅", "[]", "{}"}
NONE_WORDS = EMPTY_WORDS | {"inf", "infinity", "∞", "-1", "no path", "no tour", "unreachable", "impossible",
                            "no", "not reachable", "no hamiltonian cycle"}
DELETED_WORDS = EMPTY_WORDS | {"-", "deleted", "delete", "deletion", "removed", "ε", "eps", "epsilon"}
# Explicit separators: when any is present, whitespace inside a name is kept.
_SEPARATORS = re.compile(r"\s*(?:->|=>|-->|→|⟶|↔|,|;|\|)\s*|\s+[-–—]\s+")
# "A, B and C", "A, B, and C", "A and B", "A & B": display codes never hold spaces, so a lower-case "and"
# between spaces can only be a separator.
_AND = re.compile(r"\s*,?\s+(?:and|&)\s+")


def node_name(v: Any) -> str | None:
    """A node name as written, stripped; ints are accepted (a label may be numeric). None if not a name."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        i = as_int(v)
        return None if i is None else str(i)
    if isinstance(v, str):
        s = v.strip().strip("'\"`").strip()
        if not s or len(s) > MAX_NAME_CHARS:
            return None
        return s
    return None


def is_word(v: Any, words: set[str]) -> bool:
    return v is None or (isinstance(v, str) and len(v) < 64 and v.strip().strip("'\".").strip().lower() in words)


def node_names(v: Any, what: str) -> list[str] | ParseError:
    """A list of names from a list, tuple or "A, B" / "A->B" / "A B" / "A-B" string. Order and repeats kept."""
    if is_word(v, EMPTY_WORDS):
        return []
    items: list[Any]
    if isinstance(v, str):
        if len(v) > 20 * MAX_ITEMS:
            return ParseError(kind="too_large", detail=f"{what}: {len(v)} characters")
        s = v.strip().strip("[](){}").strip()
        if not s:
            return []
        s = _AND.sub(", ", s)
        if _SEPARATORS.search(s):
            # Empty pieces ("A, B,") are separator noise, not names.
            items = [p for p in _SEPARATORS.split(s) if p]
        elif re.search(r"\s", s):
            items = s.split()
        elif "-" in s and all(s.split("-")):
            items = s.split("-")  # "AAA-BBB-CCC"; names with hyphens must use another separator
        else:
            items = [s]
    elif isinstance(v, list | tuple):
        items = list(v)
    elif node_name(v) is not None:
        items = [v]
    else:
        return ParseError(kind="bad_value", detail=f"{what} is not a list of node names: {v!r:.60}")
    if len(items) > MAX_ITEMS:
        return ParseError(kind="too_large", detail=f"{what}: {len(items)} items")
    out: list[str] = []
    for item in items:
        name = node_name(item)
        if name is None:
            return ParseError(kind="bad_value", detail=f"{what} holds {item!r:.40}, not a node name")
        out.append(name)
    return out


def answer_number(v: Any, units: Sequence[str] = ()) -> int | float | None:
    """A number, also written as a string, with an optional unit word from `units` ("7518 km", "5 hops")."""
    f = as_number(v)
    if f is None and units and isinstance(v, str) and len(v) < 64:
        m = _WITH_UNIT.fullmatch(v.strip().rstrip("."))
        if m and m.group(2).lower() in units:
            f = as_number(m.group(1))
    if f is None:
        return None
    return int(f) if f == int(f) and abs(f) <= 2**53 else f


_WITH_UNIT = re.compile(r"([+-]?[\d,]*\.?\d+)\s*([A-Za-z]+)")

# The unit words a stated value may carry, per kind of value. Only the unit the question uses: "7518 mi"
# is not 7518 km, so other words stay a bad_value.
KM = ("km", "kms", "kilometre", "kilometres", "kilometer", "kilometers")
HOPS = ("hop", "hops", "edge", "edges", "step", "steps")
NODES = ("node", "nodes", "vertex", "vertices", "atom", "atoms", "airport", "airports", "people", "person",
         "persons", "entities", "entity", "members", "member")
COLOURS = ("colour", "colours", "color", "colors")
EDITS = ("edit", "edits", "operation", "operations", "step", "steps")

# Keys a model may wrap its whole answer in ({"answer": [...]}).
ANSWER_KEYS = ("answer", "final_answer", "finalanswer")
# A "Label:" before a bare value or list ("Common neighbours: A, B", "Distance: 5 km").
_LABEL = re.compile(r"[A-Za-z][A-Za-z ()_-]{0,40}:\s*")
_BRACKETED = re.compile(r"\[([^\[\]]*)\]")


@dataclass(frozen=True)
class Bare:
    """How a task reads a final answer that is not a mapping: `names` is the key a bare list or list text
    fills (a set, tour or cycle), `number` the key a bare number fills, `word` the key a bare YES/NO fills.
    A kind of bare answer the task has no key for is a classified `ParseError`."""

    names: str | None = None
    number: str | None = None
    word: str | None = None
    units: tuple[str, ...] = ()


def _unlabelled(s: str) -> str:
    """A bare answer text without a leading "Label:" ("Distance: 5 km" -> "5 km")."""
    s = s.strip()
    label = _LABEL.match(s)
    return s[label.end():] if label and ":" not in s[label.end():] else s


def _bare_names(raw: str, key: str) -> dict[str, Any] | ParseError:
    """A list written as text: GraphArena's last `[...]` when there is one, else a list with explicit
    separators ("A, B and C", "A -> B -> C") or a single name. Words separated by spaces alone outside
    brackets may be a sentence ("the answer is JFK"): which of them are names would be a guess."""
    found = _BRACKETED.findall(raw)
    text = found[-1] if found else _unlabelled(raw)
    names = node_names(text, key)
    if isinstance(names, ParseError):
        return names
    spaced = not found and len(names) > 1 and not _SEPARATORS.search(_AND.sub(", ", text))
    if spaced or any(re.search(r"\s", n) for n in names):
        return ParseError(kind="bad_value", detail=f"final answer is prose, not a list of names: {raw!r:.60}")
    return {key: names}


def bare_mapping(raw: Any, bare: Bare) -> dict[str, Any] | ParseError:
    """The mapping a bare final answer (number, list, YES/NO or text) stands for under `bare`."""
    if isinstance(raw, list | tuple):
        if bare.names is None:
            return ParseError(kind="not_a_mapping", detail="a bare list does not state this task's answer")
        return {bare.names: list(raw)}
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return ParseError(kind="not_a_mapping", detail=f"final answer is a {type(raw).__name__}")
    if isinstance(raw, str) and len(raw) > 20 * MAX_ITEMS:
        return ParseError(kind="too_large", detail=f"final answer: {len(raw)} characters")
    text = _unlabelled(raw) if isinstance(raw, str) else raw
    if bare.word is not None and isinstance(text, str) and as_yes_no(text) is not None:
        return {bare.word: text}
    number = answer_number(text, bare.units)
    if number is not None:
        if bare.number is None:
            return ParseError(kind="not_a_mapping",
                              detail=f"a bare number ({raw!r:.30}) does not state this task's answer")
        return {bare.number: number}
    if bare.names is not None and isinstance(raw, str):
        return _bare_names(raw, bare.names)
    return ParseError(kind="not_a_mapping", detail=f"final answer {raw!r:.40} is not this task's answer")


def read_answer(parser: Callable[[dict[str, Any]], dict[str, Any] | ParseError], obj: Any, bare: Bare | None
                ) -> dict[str, Any] | ParseError:
    """Run the task's parser on a final answer: a mapping as given, else `{"answer": x}` read as x when the
    mapping has none of the task's keys, and a bare value through `bare` (None: mappings only)."""
    for _ in range(3):  # {"answer": {"answer": ...}} at most this deep
        if isinstance(obj, dict):
            got = parser(obj)
            if not (isinstance(got, ParseError) and got.kind == "missing_key"):
                return got
            found, inner = get_key(obj, *ANSWER_KEYS)
            if not found:
                return got
            obj = inner
            continue
        if bare is None:
            return ParseError(kind="not_a_mapping", detail=type(obj).__name__)
        mapped = bare_mapping(obj, bare)
        return mapped if isinstance(mapped, ParseError) else parser(mapped)
    return ParseError(kind="not_a_mapping", detail="answer nested too deep")


def name_pairs(raw: Any, what: str) -> list[tuple[Any, Any]] | ParseError:
    """{k: v} or [[k, v], ...] or ["k->v", ...] as (k, v) pairs, in order."""
    if isinstance(raw, dict):
        if len(raw) > MAX_ITEMS:
            return ParseError(kind="too_large", detail=f"{what}: {len(raw)} entries")
        return list(raw.items())
    if isinstance(raw, list | tuple):
        if len(raw) > MAX_ITEMS:
            return ParseError(kind="too_large", detail=f"{what}: {len(raw)} entries")
        out: list[tuple[Any, Any]] = []
        for item in raw:
            if isinstance(item, list | tuple) and len(item) == 2:
                out.append((item[0], item[1]))
            elif isinstance(item, str) and len(item) <= 2 * MAX_NAME_CHARS + 8 and re.search(r"->|→|:", item):
                a, b = re.split(r"\s*(?:->|→|:)\s*", item.strip(), maxsplit=1)
                out.append((a, b))
            else:
                return ParseError(kind="bad_value", detail=f"{what} entry {item!r:.40} is not a pair")
        return out
    return ParseError(kind="bad_value", detail=f"{what} is not a mapping: {raw!r:.60}")


def name_mapping(raw: Any, what: str) -> dict[str, str | None] | ParseError:
    """Name -> name or None (deleted / unmapped). A name given twice (after stripping) is ambiguous."""
    pairs = name_pairs(raw, what)
    if isinstance(pairs, ParseError):
        return pairs
    out: dict[str, str | None] = {}
    for k, v in pairs:
        key = node_name(k)
        if key is None:
            return ParseError(kind="bad_value", detail=f"{what} key {k!r:.40} is not a node name")
        if is_word(v, DELETED_WORDS):
            val = None
        else:
            val = node_name(v)
            if val is None:
                return ParseError(kind="bad_value", detail=f"{what}[{key!r}] = {v!r:.40} is not a node name")
        if key in out:
            return ParseError(kind="bad_value", detail=f"{what}: node {key!r} is given more than once")
        out[key] = val
    return out


def colouring_map(raw: Any) -> dict[str, str] | ParseError:
    """{name: colour} or the inverted {colour: [names]}; colours are compared as labels (1 == "1" == 1.0)."""
    if isinstance(raw, dict) and raw and all(isinstance(v, list | tuple) for v in raw.values()):
        if len(raw) > MAX_ITEMS or sum(len(v) for v in raw.values()) > MAX_ITEMS:
            return ParseError(kind="too_large", detail="Coloring")
        pairs: list[tuple[Any, Any]] = [(name, colour) for colour, names in raw.items() for name in names]
    else:
        got = name_pairs(raw, "Coloring")
        if isinstance(got, ParseError):
            return got
        pairs = got
    out: dict[str, str] = {}
    for k, c in pairs:
        key = node_name(k)
        if key is None:
            return ParseError(kind="bad_value", detail=f"Coloring key {k!r:.40} is not a node name")
        colour = colour_label(c)
        if colour is None:
            return ParseError(kind="bad_value", detail=f"colour of {key!r}: {c!r:.40}")
        if key in out:
            return ParseError(kind="bad_value", detail=f"Coloring: node {key!r} is given more than once")
        out[key] = colour
    return out


def missing_key(key: str) -> ParseError:
    return ParseError(kind="missing_key", detail=key)


def bad_value(key: str, v: Any) -> ParseError:
    return ParseError(kind="bad_value", detail=f"{key}={v!r:.60}")


def optional_names(obj: dict[str, Any], keys: Sequence[str], what: str) -> list[str] | None | ParseError:
    """A witness list that may be left out: None when absent, null or empty (nothing to check)."""
    found, raw = get_key(obj, *keys)
    if not found:
        return None
    got = node_names(raw, what)
    return None if got == [] else got


def optional_mapping(obj: dict[str, Any]) -> dict[str, str | None] | None | ParseError:
    found, raw = get_key(obj, *MAPPING_KEYS)
    if not found or is_word(raw, EMPTY_WORDS):
        return None
    got = name_mapping(raw, "Mapping")
    return None if got == {} else got


SIZE_KEYS = ("Size", "Count", "NumNodes", "NumberOfNodes", "Number")


def parse_node_set(obj: dict[str, Any], key: str, aliases: Sequence[str]) -> dict[str, Any] | ParseError:
    """{key: [names]} for the set tasks (CN, MCP, MVC, MIS): the set is the whole answer. A size stated
    beside it ("Size": 4) is kept as "Size" (only when given) for `value_consistent`."""
    found, raw = get_key(obj, *aliases)
    if not found:
        return missing_key(key)
    got = node_names(raw, key)
    if isinstance(got, ParseError):
        return got
    has_size, raw_size = get_key(obj, *SIZE_KEYS)
    if not has_size or raw_size is None:
        return {key: got}
    size = answer_number(raw_size, NODES)
    return bad_value("Size", raw_size) if size is None else {key: got, "Size": size}


def parse_value_with_mapping(obj: dict[str, Any], num_key: str, aliases: Sequence[str], units: Sequence[str] = ()
                             ) -> dict[str, Any] | ParseError:
    """{num_key: number, "Mapping": mapping or None} for the paired tasks (GED, MCS)."""
    # The paper scores the edit cost / the common subgraph's size; the mapping is a witness.
    has_n, raw_n = get_key(obj, *aliases)
    if not has_n:
        return missing_key(num_key)
    n = answer_number(raw_n, units)
    if n is None:
        return bad_value(num_key, raw_n)
    mapping = optional_mapping(obj)
    return mapping if isinstance(mapping, ParseError) else {num_key: n, "Mapping": mapping}
