"""KSP — 0/1 knapsack: choose items of maximum total value whose total weight fits the capacity.

Deviations from the peer benchmark (docs/deviations.md):
- generator: the capacity schedule is the peer's (15 + 5L = 5n for n = L + 3 items), but weights are drawn
  uniformly from 2..18 (mean 10, so the expected total weight is 2 x capacity) and the whole weight vector is
  redrawn until the total lies in [1.5, 2.5] x capacity; values are uniform in 1..2n. The peer draws weights
  and values in 1..n, so 56 % of its instances fit every item (the answer is "take everything");
- the picture prints each item's id, weight and value (the peer picture shows only ids and box widths,
  although its prompt says the weights are printed);
- the answer has no "Feasible" key (always YES in the peer checker); SelectedItemIds is required and a
  missing one is a parse error (the peer silently reads it as [] and marks the answer wrong);
- the selection decides the verdict; the stated TotalValue is reported apart as `value_consistent` (the peer
  checker also demands it equal the selection's value), and a missing or unreadable TotalValue does not make
  the answer unparsable.
"""

from __future__ import annotations

import math
import random
from typing import Any

from pydantic import BaseModel, Field, model_validator

from evalcore.coerce import as_int_list, as_number, get_key
from evalcore.draw import INK, WIDTH, centered_text, new_canvas, title, to_png
from evalcore.prompting import example_literal
from evalcore.schema import Gold, ParseError, Verdict
from evalcore.task import TaskSpec, TaskText

WEIGHT_RANGE = (2, 18)
TOTAL_WEIGHT_RATIO = (1.5, 2.5)
CARD_FILL = (255, 244, 214)


class KSPItem(BaseModel):
    id: int
    weight: int = Field(ge=0)
    value: int = Field(ge=0)


class KSPData(BaseModel):
    items: list[KSPItem] = Field(min_length=1)
    capacity: int = Field(ge=0)

    @model_validator(mode="after")
    def _unique_ids(self) -> KSPData:
        ids = [it.id for it in self.items]
        if len(set(ids)) != len(ids):
            raise ValueError("item ids must be distinct")
        return self


def params(level: int) -> dict[str, Any]:
    n = level + 3
    return {
        "num_items": n,
        "capacity": 15 + 5 * level,
        "weight_range": list(WEIGHT_RANGE),
        "value_range": [1, 2 * n],
        "total_weight_ratio": list(TOTAL_WEIGHT_RATIO),
    }


def generate(level: int, rng: random.Random) -> KSPData:
    p = params(level)
    n, cap = p["num_items"], p["capacity"]
    lo, hi = TOTAL_WEIGHT_RATIO
    while True:
        weights = [rng.randint(*WEIGHT_RANGE) for _ in range(n)]
        if lo * cap <= sum(weights) <= hi * cap:
            break
    values = [rng.randint(*p["value_range"]) for _ in range(n)]
    items = [KSPItem(id=i, weight=w, value=v) for i, (w, v) in enumerate(zip(weights, values, strict=True))]
    return KSPData(items=items, capacity=cap)


def knapsack(data: KSPData) -> tuple[int, list[int]]:
    """Exact DP over capacities: (best value, sorted ids of one optimal selection)."""
    items = data.items
    # capacity beyond the total weight changes nothing; the cap keeps imported odd capacities cheap
    cap = min(data.capacity, sum(it.weight for it in items))
    n = len(items)
    best = [[0] * (cap + 1) for _ in range(n + 1)]
    for k, it in enumerate(items, start=1):
        prev, row = best[k - 1], best[k]
        w, v = it.weight, it.value
        for c in range(cap + 1):
            row[c] = prev[c]
            if w <= c and prev[c - w] + v > row[c]:
                row[c] = prev[c - w] + v
    chosen = []
    c = cap
    for k in range(n, 0, -1):
        if best[k][c] != best[k - 1][c]:
            chosen.append(items[k - 1].id)
            c -= items[k - 1].weight
    return best[n][cap], sorted(chosen)


def solve(data: KSPData) -> Gold:
    value, ids = knapsack(data)
    return Gold(answer={"TotalValue": value, "SelectedItemIds": ids}, value=value)


def render(data: KSPData) -> list[bytes]:
    n = len(data.items)
    rows = math.ceil(n / 7)
    cols = math.ceil(n / rows)
    margin, gap, card_h, top = 40, 16, 150, 100
    card_w = min(200, (WIDTH - 2 * margin - (cols - 1) * gap) / cols)
    x_start = (WIDTH - cols * card_w - (cols - 1) * gap) / 2
    img, draw = new_canvas(WIDTH, top + rows * (card_h + gap) + margin)
    title(draw, f"Knapsack capacity: {data.capacity}", y=44, size=32)
    for k, it in enumerate(data.items):
        r, c = divmod(k, cols)
        x0 = x_start + c * (card_w + gap)
        y0 = top + r * (card_h + gap)
        draw.rectangle([x0, y0, x0 + card_w, y0 + card_h], fill=CARD_FILL, outline=INK, width=3)
        draw.line([x0, y0 + 48, x0 + card_w, y0 + 48], fill=INK, width=2)
        cx = x0 + card_w / 2
        centered_text(draw, (cx, y0 + 25), f"Item {it.id}", 26)
        centered_text(draw, (cx, y0 + 78), f"W: {it.weight}", 28)
        centered_text(draw, (cx, y0 + 118), f"V: {it.value}", 28)
    return [to_png(img)]


def _id_phrase(data: KSPData) -> str:
    ids = [it.id for it in data.items]
    if ids == list(range(len(ids))):
        return f"numbered 0 to {len(ids) - 1}"
    return "with ids " + ", ".join(map(str, ids))


def text(data: KSPData) -> TaskText:
    n = len(data.items)
    return TaskText(
        intro=(
            "0/1 knapsack problem: given items that each have a weight and a value, and a knapsack with a "
            "weight capacity, pack a set of items whose total weight does not exceed the capacity and whose "
            "total value is as large as possible; each item is either packed once or not at all."
        ),
        question=(
            f"There are {n} items, {_id_phrase(data)}, and the knapsack capacity is {data.capacity}. "
            "Which items should be packed to get the largest total value?"
        ),
        output=(
            "Give the largest total value and the list of ids of the items you pack. "
            "Keep your reasoning brief."
        ),
        example=example_literal({"TotalValue": "<TOTAL_VALUE>", "SelectedItemIds": ["<ITEM_ID>", "..."]}),
        data_lines=tuple(f"Item {it.id}: weight {it.weight}, value {it.value}" for it in data.items),
    )


def parse(obj: dict[str, Any]) -> dict[str, Any] | ParseError:
    if not isinstance(obj, dict):
        return ParseError(kind="bad_value", detail=f"not a mapping: {type(obj).__name__}")
    _, raw_value = get_key(obj, "TotalValue", "Value", "MaxValue")
    has_ids, raw_ids = get_key(obj, "SelectedItemIds", "SelectedItems", "SelectedIds", "ItemIds")
    if not has_ids:
        # The papers' own answer format ({'Feasible', 'TotalValue'}: the original open-model prompt asks for no
        # ids) is a readable answer, so it is parsable; without a selection nothing can be checked, so `verify`
        # grades it wrong (as the papers' checker does: its missing ids default to an empty selection).
        total = as_number(raw_value)
        if total is None:
            return ParseError(kind="missing_key", detail="SelectedItemIds")
        return {"TotalValue": int(total) if total == int(total) else total, "SelectedItemIds": None}
    ids = as_int_list(raw_ids)
    if ids is None:
        return ParseError(kind="bad_value", detail=f"SelectedItemIds={raw_ids!r:.60}")
    # The selection is the answer; the stated total (None when missing or not a number) is only compared with
    # it, and a fractional one is kept as stated (then inconsistent) rather than rounded.
    total = as_number(raw_value)
    return {"TotalValue": int(total) if total is not None and total == int(total) else total,
            "SelectedItemIds": ids}


def verify(data: KSPData, gold: Gold, answer: dict[str, Any]) -> Verdict:
    """The selection decides (its value against the optimum); the stated TotalValue only sets
    `value_consistent`."""
    ids, stated = answer.get("SelectedItemIds"), answer.get("TotalValue")
    if ids is None:
        return Verdict(verdict="wrong", reason="no SelectedItemIds: a stated TotalValue without the selection "
                       "cannot be checked")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        return Verdict(verdict="wrong", reason="SelectedItemIds is not a list of item ids")
    if isinstance(stated, bool) or not isinstance(stated, int | float):
        stated = None  # not stated: nothing to compare
    by_id = {it.id: it for it in data.items}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        return Verdict(verdict="wrong", reason=f"unknown item id {unknown[0]}")
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        return Verdict(verdict="wrong", reason=f"item {dup} selected more than once")
    weight = sum(by_id[i].weight for i in ids)
    if weight > data.capacity:
        return Verdict(verdict="wrong", reason=f"total weight {weight} exceeds the capacity {data.capacity}")
    value = sum(by_id[i].value for i in ids)
    consistent = None if stated is None else stated == value
    note = "" if consistent is not False else f"stated TotalValue {stated:g} but the selected items are worth {value}"
    opt = gold.value if gold.value is not None else knapsack(data)[0]
    why = ""
    if value < opt:
        why = f"total value {value} is below the optimum {opt:g}"
    elif value > opt:  # cannot happen with a correct gold; reported rather than raised
        why = f"total value {value} above the recorded optimum {opt:g}"
    return Verdict(verdict="wrong" if why else "correct", value_consistent=consistent,
                   reason="; ".join(x for x in (why, note) if x))


def heuristic(data: KSPData) -> dict[str, Any]:
    # Value-density greedy: best value per unit weight first (ties: lower id), take whatever still fits.
    order = sorted(
        data.items, key=lambda it: (-(it.value / it.weight) if it.weight else -math.inf, it.id)
    )
    room, chosen = data.capacity, []
    for it in order:
        if it.weight <= room:
            chosen.append(it)
            room -= it.weight
    return {"TotalValue": sum(it.value for it in chosen), "SelectedItemIds": sorted(it.id for it in chosen)}


def random_answer(data: KSPData, rng: random.Random) -> dict[str, Any]:
    # A random packing that respects the capacity: items in random order, each taken if it still fits.
    order = list(data.items)
    rng.shuffle(order)
    room, chosen = data.capacity, []
    for it in order:
        if it.weight <= room:
            chosen.append(it)
            room -= it.weight
    return {"TotalValue": sum(it.value for it in chosen), "SelectedItemIds": sorted(it.id for it in chosen)}


TASK = TaskSpec(
    name="KSP",
    benchmark="nphardeval4v",
    complexity="NPC",
    data_model=KSPData,
    params=params,
    generate=generate,
    solve=solve,
    render=render,
    text=text,
    parse=parse,
    verify=verify,
    heuristic=heuristic,
    random_answer=random_answer,
)
