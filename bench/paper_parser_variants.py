"""`parser: paper` against the original code on outputs nobody published: variants of the published ones.

`paper_parser_published.py` shows that `parser: paper` takes the original NPHardEval4V code's parse and correct
decision on each of the 4,500 published outputs. Those outputs come from five weak models: few are well formed
and fewer are right, so most of the original's branches (a right answer, a near miss, a tag spelled otherwise, a
second answer block, a literal the original reads but JSON does not) are never taken. Here every published output
is rewritten by operators no test of the published outputs exercises, and the ORIGINAL parsers and checkers
(executed as in `paper_parser_published.py`) and ours decide each variant:

* the answer block: another instance's or another model's block of the same task moved in (a well-formed answer
  where the model gave none), a second block appended, the closing tag dropped, the tags in other cases or with
  spaces, the reasoning tags dropped or added, the block fenced as ```json;
* the literal: every number in the block swept over nearby and boundary values (this is what makes right answers:
  BSP's position over the whole array, EDP's count, KSP's value, SPP's distance, a decision's flip), YES/NO and
  their spellings swapped, quotes changed, JSON's true/false/null, full-width digits, a float for an int;
* the text: cut at random points, control characters and zero-width spaces added.

Usage: PYTHONPATH=$PWD python bench/paper_parser_variants.py --upstream PATH [--per-output 12] [--seed 0]
Prints the decisions by task (variants, parsed and correct counts under the original and ours) and every
disagreement (at most --show per task). Exit 1 when any variant is decided differently. `--write-golden FILE`
keeps the original's decisions (tests/snapshots/paper_decisions_variants.json, made with --per-output 4), which
tests/test_paper_published.py checks `parser: paper` against without the original code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paper_parser_published import (  # noqa: E402
    TASKS,
    _ours,
    load_original_checkers,
    original_decision,
    original_instances,
    our_instances,
)

from nphe4v.peer.generations import MODELS, read_generations  # noqa: E402

OPEN, CLOSE = "<final_answer>", "</final_answer>"
BLOCK = re.compile(r"<final_answer>(.*?)</final_answer>", re.S)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _block(text: str) -> str | None:
    m = BLOCK.search(text)
    return m.group(1) if m else None


def _with_block(text: str, body: str) -> str:
    """`text` with its first answer block's body replaced, or with the block appended when it has none."""
    m = BLOCK.search(text)
    if m is None:
        return f"{text}\n{OPEN}{body}{CLOSE}"
    return text[:m.start(1)] + body + text[m.end(1):]


def _sweep(body: str, rng: random.Random) -> list[str]:
    """The block with one of its numbers replaced by values around it and at the edges (0, -1, a float)."""
    nums = list(NUMBER.finditer(body))
    if not nums:
        return []
    out = []
    for m in rng.sample(nums, min(2, len(nums))):
        v = float(m.group())
        values = [0, 1, -1, int(v) + 1, int(v) - 1, int(v) + rng.randint(2, 40), f"{int(v)}.0", f'"{int(v)}"']
        for w in dict.fromkeys(values):  # in order: a set of str and int iterates by the process's hash seed
            out.append(body[:m.start()] + str(w) + body[m.end():])
    return out


def _sweep_range(body: str, top: int) -> list[str]:
    """The block's first number swept over 0..top (the answer space of BSP's position and EDP's count)."""
    m = NUMBER.search(body)
    if m is None:
        return []
    return [body[:m.start()] + str(w) + body[m.end():] for w in range(-1, top + 1)]


YES_NO = (("YES", "NO"), ("NO", "YES"), ("Yes", "No"), ("yes", "no"), ("True", "False"), ("1", "0"))


def variants(task: str, text: str, donors: list[str], rng: random.Random, per_output: int,
             top: int) -> list[tuple[str, str]]:
    """(operator, text) pairs for one published output; `donors`: answer blocks of the same task."""
    out: list[tuple[str, str]] = []
    body = _block(text)
    bodies = [body] if body is not None else []
    if donors:
        donor = rng.choice(donors)
        out.append(("donor block", _with_block(text, donor)))
        bodies.append(donor)
        out.append(("donor block, reasoning tags", f"<reasoning>{text[:200]}</reasoning>\n{OPEN}{donor}{CLOSE}"))
    for b in bodies:
        base = _with_block(text, b)
        if task in ("BSP", "EDP"):
            out += [("swept over the answer space", _with_block(base, s)) for s in _sweep_range(b, top)]
        out += [("number swept", _with_block(base, s)) for s in _sweep(b, rng)]
        for old, new in YES_NO:
            if old in b:
                out.append((f"{old}->{new}", _with_block(base, b.replace(old, new))))
        out.append(("single quotes", _with_block(base, b.replace('"', "'"))))
        out.append(("JSON literals", _with_block(base, b.replace("True", "true").replace("None", "null"))))
        out.append(("full-width digits", _with_block(base, b.translate(str.maketrans("0123456789",
                                                                                     "０１２３４５６７８９")))))
        out.append(("fenced json", _with_block(base, f"\n```json\n{b.strip()}\n```\n")))
        out.append(("second block", f"{base}\n{OPEN}{rng.choice(donors) if donors else b}{CLOSE}"))
        out.append(("closing tag dropped", base.replace(CLOSE, "", 1)))
        out.append(("tags upper case", base.replace(OPEN, OPEN.upper()).replace(CLOSE, CLOSE.upper())))
        out.append(("space in tag", base.replace(OPEN, "<final_answer >", 1)))
        out.append(("reasoning tags dropped", base.replace("<reasoning>", "").replace("</reasoning>", "")))
        out.append(("reasoning tags added", f"<reasoning>\n{base}\n</reasoning>" if "<reasoning>" not in base
                    else base.replace("<reasoning>", "<reasoning>\u200b")))
        out.append(("zero-width space in block", _with_block(base, "\u200b" + b)))
        out.append(("block first, text after", f"{OPEN}{b}{CLOSE}\n{text}"))
    if text:
        cut = rng.randrange(len(text) + 1)
        out.append(("cut", text[:cut]))
        out.append(("control characters", text.replace("\n", "\r\n", 3) + "\x00\x1b[0m"))
    # every answer-space sweep is kept (it is where right answers come from); the others are sampled
    swept = [v for v in out if v[0] == "swept over the answer space"]
    rest = [v for v in out if v[0] != "swept over the answer space"]
    return swept + rng.sample(rest, min(per_output, len(rest)))


def all_variants(shared: Path, seed: int, per_output: int):
    """Every (task, model, index, operator, text) in a fixed order: the order the golden file's bits follow."""
    root = shared / "peers" / "nphardeval4v"
    ours_q = our_instances(root / "Data")
    for task in TASKS:
        texts = {m: read_generations(root / "Open" / "ablation", task, m) for m in MODELS}
        donors = [b for m in MODELS for x in texts[m] if (b := _block(x)) is not None]
        for model in MODELS:
            for i, text in enumerate(texts[model]):
                rng = random.Random(f"{seed}/{task}/{model}/{i}")
                inst = ours_q[task][i]
                top = len(inst.data.get("array", [])) if task == "BSP" else 2 + max(
                    (len(str(v)) for v in inst.data.values() if isinstance(v, str)), default=10)
                for op, var in variants(task, text, donors, rng, per_output, top):
                    yield task, model, i, inst, op, var


class Decisions:
    """The original code's and ours decisions (parsed, correct) on each output, tallied as this bench and
    bench/paper_parser_fresh.py both print and snapshot them: counts per task (`count`: the name of the output
    count), the original's decisions as bits per task, and the outputs decided differently (`what` names one)."""

    def __init__(self, count: str) -> None:
        self.count = count
        self.stats: dict[str, Counter[str]] = {t: Counter() for t in TASKS}
        self.golden: dict[str, dict[str, list[bool]]] = {t: {"parsed": [], "correct": []} for t in TASKS}
        self.bad: list[tuple[str, Any, tuple[bool, bool], tuple[bool, bool], str]] = []

    def add(self, task: str, orig: tuple[bool, bool], ours: tuple[bool, bool], what: Any, text: str) -> None:
        self.golden[task]["parsed"].append(orig[0])
        self.golden[task]["correct"].append(orig[1])
        s = self.stats[task]
        s[self.count] += 1
        s["orig parsed"] += orig[0]
        s["orig correct"] += orig[1]
        s["ours parsed"] += ours[0]
        s["ours correct"] += ours[1]
        if orig != ours:
            s["differ"] += 1
            self.bad.append((task, what, orig, ours, text))

    def cells(self) -> dict[str, dict[str, Any]]:
        return {t: {"n": len(g["parsed"]), "parsed": bits_hex(g["parsed"]), "correct": bits_hex(g["correct"])}
                for t, g in self.golden.items()}

    def show(self, per_task: int, line: Callable[[str, Any, tuple[bool, bool], tuple[bool, bool], str], str]) -> None:
        """The first `per_task` outputs decided differently of each task, one `line` each."""
        shown: Counter[str] = Counter()
        for task, what, o, p, text in self.bad:
            shown[task] += 1
            if shown[task] <= per_task:
                print(line(task, what, o, p, text))


def bits_hex(flags: list[bool]) -> str:
    n = int("".join("1" if f else "0" for f in flags) or "0", 2)
    return f"{n:0{(len(flags) + 3) // 4}x}" if flags else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, required=True, help="checkout or bare git dir of NPHardEval4V")
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    ap.add_argument("--per-output", type=int, default=12, help="sampled variants per published output")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=4)
    ap.add_argument("--write-golden", type=Path, default=None, help="write the original's decisions here")
    args = ap.parse_args()
    root = args.shared / "peers" / "nphardeval4v"
    mods = load_original_checkers(args.upstream)
    orig_q = original_instances(root / "Data")
    crashes: Counter[str] = Counter()
    dec = Decisions("variants")
    digest = hashlib.sha256()
    for task, model, i, inst, op, var in all_variants(args.shared, args.seed, args.per_output):
        o_p, o_c, _dep = original_decision(mods, task, orig_q[task][i], var, inst.instance_id, crashes)
        p_p, p_c, _tp, _tc, _why = _ours(inst, var)
        dec.add(task, (o_p, o_c), (p_p, p_c), (model, op), var)
        digest.update(var.encode("utf-8", "surrogatepass") + b"\x00")
    if args.write_golden:
        doc = {"generated_by": f"bench/paper_parser_variants.py --per-output {args.per_output} --seed {args.seed}"
                               " --write-golden", "per_output": args.per_output, "seed": args.seed,
               "variants_sha256": digest.hexdigest(), "cells": dec.cells()}
        args.write_golden.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote the original code's decisions to {args.write_golden}")
    print(f"original code crashed on: {dict(crashes) or 'none'}")
    print(f"{'task':6} {'variants':>9} {'orig parsed':>12} {'ours parsed':>12} {'orig correct':>13} "
          f"{'ours correct':>13} {'differ':>7}")
    for task in TASKS:
        s = dec.stats[task]
        print(f"{task:6} {s['variants']:9d} {s['orig parsed']:12d} {s['ours parsed']:12d} {s['orig correct']:13d} "
              f"{s['ours correct']:13d} {s['differ']:7d}")
    print(f"\nvariants decided differently: {len(dec.bad)} of {sum(s['variants'] for s in dec.stats.values())}")
    by_op = Counter((t, op) for t, (_m, op), *_ in dec.bad)
    for (t, op), c in by_op.most_common():
        print(f"  {c:5d}  {t:6} {op}")
    dec.show(args.show, lambda task, what, o, p, var:
             f"-- {task} {what[0]} [{what[1]}] original parsed/correct={o}, ours={p}: {var[-300:]!r}")
    sys.exit(1 if dec.bad else 0)

if __name__ == "__main__":
    main()
