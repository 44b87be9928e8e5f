"""The judge card: each family's property, the table of a judge's scores over the generated cases, the grade.

A judge is any scorer of (case -> VGR or None); `judge.card_families` generates the cases and the caller
(`cluster.judge_card`) scores them with the rule-based judge or an LLM judge over HTTP. Here the scores
are checked against the properties the issue asks of a VGR judge (docs/judge.md, "Judge card"):

* a wrong answer with transcriptions, pooled small sets, all-pairs mappings, other-question solutions or a
  transcription-only program: <= 10 on average per task, <= 20 at most;
* adding true non-derived facts, true negatives or rejected candidates changes a score by <= 1;
* a complete correct derivation with the right answer: >= 90 in every structured notation; in another
  language >= 90 or null (`unreadable`), never a number below; the same claims in any notation +-5;
* a bare right answer 50, a transcription-only program with the right answer the same; invented steps cost;
  a right path with every leg misread scores no more than a bare right answer.

Null scores are counted (`null`) and never averaged in; a property that asks for a number fails on a null.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.card_families import Case
from judge.card_heldout import HELDOUT
from judge.card_notation import LANGUAGES, STRUCTURED, UNSEEN

CARD_VERSION = "judge-card-v1"
CARD_FILE = "judge_card.json"  # in the card's --out folder, and under a run's judge_cards/<judge>/


@dataclass(frozen=True)
class Property:
    kind: str  # min | min_or_null | wrong | eq | delta | cost | at_most | spread
    text: str
    limit: float = 0.0
    limit2: float = 0.0
    members: tuple[str, ...] = ()  # spread: the families whose scores are compared per instance


WRONG = Property("wrong", "wrong answer: mean per task <= 10, max <= 20", 10, 20)
DELTA = Property("delta", "abs(score - base) <= 1 (the additions change nothing)", 1)


def _families() -> dict[str, Property]:
    f: dict[str, Property] = {}
    for n in STRUCTURED:
        f[f"derivation:{n}"] = Property("min", "complete derivation + right answer >= 90", 90)
    for lang in LANGUAGES:
        f[f"language:{lang}"] = Property("min_or_null", "derivation in this language + right answer: >= 90 or null", 90)
    for n in UNSEEN:
        f[f"unseen:{n}"] = Property("min_or_null", "derivation in a notation the issue never names: >= 90 or null",
                                    90)
    f["notation_spread"] = Property("spread", "same claims, any notation or language: spread <= 5", 5,
                                    members=tuple(f"derivation:{n}" for n in STRUCTURED)
                                    + tuple(f"language:{x}" for x in LANGUAGES) + tuple(f"unseen:{n}" for n in UNSEEN))
    for n in HELDOUT:
        f[f"heldout:{n}"] = Property("min_or_null", "held-out notation or language + right answer: >= 90 or null", 90)
    # held out of the issue and of the families above: the arrows notation's score, or null, never another number
    f["heldout_spread"] = Property("spread", "held-out notations: the arrows score (+-5) or null", 5,
                                   members=("derivation:arrows", *(f"heldout:{n}" for n in HELDOUT)))
    f["heldout_spread_wrong"] = Property("spread", "held-out notations + wrong answer: the arrows score (+-5) or null",
                                         5, members=("derivation_wrong:arrows", *(f"heldout_wrong:{n}" for n in HELDOUT)))
    f["notation_spread_wrong"] = Property("spread", "same claims + wrong answer, any notation: spread <= 5", 5,
                                      members=tuple(f"derivation_wrong:{n}" for n in STRUCTURED))
    f["bare_right"] = Property("eq", "bare right answer = 50 (+-1)", 50, 1)
    f["bare_wrong"] = WRONG
    for name in ("wrong_transcription", "wrong_pooled", "wrong_all_pairs", "wrong_other_question", "wrong_mix",
                 "wrong_transcription_heldout", "pot_wrong"):
        f[name] = WRONG
    f["pot_right"] = Property("eq", "transcription-only program + right answer = bare right answer 50 (+-1)", 50, 1)
    for pad in ("facts", "negatives", "rejected"):
        f[f"pad_{pad}"] = DELTA
        f[f"pad_{pad}_wrong"] = DELTA
    f["invented_steps"] = Property("cost", "invented steps cost: score < the same derivation without them")
    f["misread_legs"] = Property("at_most", "every leg misread + right answer <= bare right answer (50)", 51)
    return f


FAMILIES: dict[str, Property] = _families()
MEMBER_ONLY = {m for p in FAMILIES.values() for m in p.members if m not in FAMILIES}


@dataclass(frozen=True)
class Row:
    family: str
    n: int  # cases (spread families: instances compared)
    null: int  # cases scored null (unreadable / judge error)
    fails: int  # cases (spread: instances) that break the property
    mean: float | None
    max: float | None
    worst: float | None
    property: str
    passed: bool

    def as_dict(self) -> dict[str, Any]:
        return {"family": self.family, "n": self.n, "null": self.null, "fails": self.fails, "mean": _r(self.mean),
                "max": _r(self.max), "worst": _r(self.worst), "property": self.property, "pass": self.passed}


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 2)


def _row(name: str, p: Property, n: int, nulls: int, fails: int, vals: Sequence[float], worst: float | None,
         extra_ok: bool = True) -> Row:
    return Row(name, n, nulls, fails, statistics.fmean(vals) if vals else None, max(vals) if vals else None, worst,
               p.text, bool(fails == 0 and extra_ok and n > 0))


def _spread(name: str, p: Property, by_family: Mapping[str, list[Case]],
            scores: Mapping[str, float | None]) -> Row | None:
    groups: dict[str, list[float]] = defaultdict(list)
    nulls = 0
    for m in p.members:
        for c in by_family.get(m, []):
            s = scores.get(c.case_id)
            if s is None:
                nulls += 1
            else:
                groups[c.instance_id].append(s)
    spreads = [max(v) - min(v) for v in groups.values() if len(v) > 1]  # one notation alone compares nothing
    if not spreads and not nulls:
        return None
    return _row(name, p, len(spreads), nulls, sum(s > p.limit for s in spreads), spreads, max(spreads, default=None))


def _family(name: str, p: Property, fam: list[Case], scores: Mapping[str, float | None]) -> Row:
    vals = [scores.get(c.case_id) for c in fam]
    num = [v for v in vals if v is not None]
    nulls = len(vals) - len(num)
    n = len(fam)
    if p.kind == "min":  # a null is a failure: the notation must be read
        return _row(name, p, n, nulls, nulls + sum(v < p.limit for v in num), num, min(num, default=None))
    if p.kind == "min_or_null":
        return _row(name, p, n, nulls, sum(v < p.limit for v in num), num, min(num, default=None))
    if p.kind == "eq":
        dev = [abs(v - p.limit) for v in num]
        return _row(name, p, n, nulls, nulls + sum(d > p.limit2 for d in dev), num, max(dev, default=None))
    if p.kind == "at_most":
        return _row(name, p, n, nulls, sum(v > p.limit for v in num), num, max(num, default=None))
    if p.kind == "wrong":
        per_task: dict[str, list[float]] = defaultdict(list)
        for c, v in zip(fam, vals, strict=True):
            if v is not None:
                per_task[c.task].append(v)
        means = [statistics.fmean(v) for v in per_task.values()]
        return _row(name, p, n, nulls, sum(v > p.limit2 for v in num), num, max(means, default=None),
                    all(m <= p.limit for m in means))
    # delta / cost: against the base response; a null on one side only is a change (a number appeared or
    # went), a null on both is none; a cost needs two numbers
    measures, fails = [], 0
    for c, s in zip(fam, vals, strict=True):
        b = scores.get(c.base or "")
        if s is None or b is None:
            fails += not (p.kind == "delta" and s is None and b is None)
            continue
        m = abs(s - b) if p.kind == "delta" else b - s
        measures.append(m)
        fails += m > p.limit if p.kind == "delta" else m <= 0
    worst = max(measures, default=None) if p.kind == "delta" else min(measures, default=None)
    return _row(name, p, n, nulls, fails, measures, worst)


def evaluate(cases: Sequence[Case], scores: Mapping[str, float | None]) -> list[Row]:
    """One row per family with cases (`scores`: case_id -> VGR or None)."""
    by_family: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by_family[c.family].append(c)
    rows = []
    for name, p in FAMILIES.items():
        if p.kind == "spread":
            if (row := _spread(name, p, by_family, scores)) is not None:
                rows.append(row)
        elif by_family.get(name):
            rows.append(_family(name, p, by_family[name], scores))
    return rows


def grade_line(judge: str, rows: Sequence[Row]) -> str:
    return f"judge card: {judge} — {sum(r.passed for r in rows)}/{len(rows)} families pass"


COLUMNS = ("family", "n", "null", "fails", "mean", "max", "worst", "property", "pass")


def markdown(rows: Sequence[Row]) -> str:
    def cell(v: Any) -> str:
        return "—" if v is None else ("yes" if v is True else "NO" if v is False else str(v))

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r.as_dict()[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def csv_text(rows: Sequence[Row]) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r.as_dict())
    return buf.getvalue()


def write_card(out: Path, judge: str, rows: Sequence[Row], meta: Mapping[str, Any]) -> dict[str, Any]:
    """card.csv, card.md and judge_card.json (grade line, judge, rows, `meta`) in `out`; returns the JSON."""
    out.mkdir(parents=True, exist_ok=True)
    grade = grade_line(judge, rows)
    (out / "card.csv").write_text(csv_text(rows))
    (out / "card.md").write_text(f"{grade}\n\n{markdown(rows)}\n")
    doc = {"version": CARD_VERSION, "grade": grade, "judge": judge, "passed": sum(r.passed for r in rows),
           "families": len(rows), "rows": [r.as_dict() for r in rows], **dict(meta)}
    (out / CARD_FILE).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return doc


def read_card(path: Path) -> dict[str, Any] | None:
    """A card's JSON, or None when there is none or it is not a card (never raises)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("grade"), str) else None
