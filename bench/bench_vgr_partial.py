"""VGR v4's partial-reading properties (tests/test_judge_partial_reading.py) over every instance of a GraphVerse
split: each complete derivation, with the right and a wrong answer, in the notations of
tests/vgr_partial_notations.py, and each walk narrated hop by hop in each of its HOP_PHRASES, scores what it
scores in arrows (+-5) or null; narrative remarks around a partial derivation change nothing; and each SD
instance's Dijkstra trace in each style of tests/test_judge_relaxations.py keeps that module's properties; and on
every single-graph instance a true statement of tests/test_judge_true_facts.py never lowers the score, a false
one never raises it; and the walks and TOML tables of tests/test_judge_object_notations.py score what the same
objects score in arrows, or null (and JSON keyed by node). Prints, per notation and per task, how many were read (numeric) and how
many broke a property, with the first few; exit status 1 when any did.

    PYTHONPATH=. .venv/bin/python bench/bench_vgr_partial.py [--split testmini] [--seed 2026] [--data DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import vgr4_responses as R  # noqa: E402
import vgr_partial_notations as P  # noqa: E402
from split_source import add_split_args, split_folder  # noqa: E402
from test_judge_helpers import evidence_of, wrong_answer  # noqa: E402
from test_judge_object_notations import notation_failures  # noqa: E402
from test_judge_relaxations import STYLES, relaxation_failures, sd_case  # noqa: E402
from test_judge_true_facts import fact_failures  # noqa: E402

from evalcore.dataset import load_dataset  # noqa: E402
from judge.rule_scorer import score_response  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_args(ap)
    args = ap.parse_args()
    read, seen, failures = Counter(), Counter(), []
    t0 = time.process_time()
    with split_folder(args) as root:
        instances = load_dataset(root, check_images=False).instances
        for k, inst in enumerate(instances):
            ev = evidence_of(inst)
            der = R.derivation(inst, ev)
            if not der:
                continue

            def score(lines, ans, f, inst=inst, ev=ev):
                return score_response(ev, R.envelope(lines, ans), final_match=f, gold=inst.gold.answer,
                                      gold_value=inst.gold.value).vgr

            if der[0][0] in ("walk", "closed"):  # the walk narrated hop by hop, in each of HOP_PHRASES
                nodes = der[0][1]
                runs = R._runs(ev.facts.graphs[0].asked, nodes, ev.facts.weighted)
                for ans, f in ((dict(inst.gold.answer), True), (wrong_answer(inst), False)):
                    base = score(R.render_objs(der, "arrow"), ans, f)
                    for phrase in P.HOP_PHRASES:
                        lines = P.hop_lines(nodes, runs, phrase)
                        if der[0][0] == "closed":
                            lines.append(f"Back at {nodes[0]}, the tour's total is {R._n(runs[-1])}.")
                        v = score(lines, ans, f)
                        seen["hops:" + phrase] += 1
                        read["hops:" + phrase] += v is not None
                        if v is not None and abs(v - base) > 5:
                            failures.append(f"{inst.instance_id} hops {phrase} ({'right' if f else 'wrong'}): "
                                            f"{v} vs arrows {base}")
            if sd_case(inst) is not None:  # the shortest path searched for as a Dijkstra trace, in each style
                for style in STYLES:
                    broken, charged = relaxation_failures(inst, style)
                    seen["dijkstra:" + style] += 1
                    read["dijkstra:" + style] += charged > 0  # its false steps were read and charged
                    failures += broken
            broken, scored = notation_failures(inst)  # step lines, facts, markup, length first, TOML, JSON by node
            seen["walks, TOML, JSON"] += 1
            read["walks, TOML, JSON"] += sum(scored.values()) > 0
            failures += [f"{inst.instance_id} {b[0]} ({'right' if b[1] else 'wrong'}): {b[2]} vs arrows {b[3]}"
                         for b in broken]
            broken, scored = fact_failures(inst)  # one true / false statement before the derivation
            seen["true/false facts"] += 1
            read["true/false facts"] += scored > 0
            failures += [f"{b[0]} {b[2]} {b[1]} ({'right' if b[3] else 'wrong'}): {b[4]!r} {b[5]} vs {b[6]}"
                         for b in broken]
            notes = P.remarks(ev, random.Random(k))
            partial = R.render_objs(P.without_totals(der), "arrow")
            for ans, f in ((dict(inst.gold.answer), True), (wrong_answer(inst), False)):
                base = score(R.render_objs(der, "arrow"), ans, f)
                for n in P.NOTATIONS:
                    v = score(P.render(der, n), ans, f)
                    for key in (n, inst.task):
                        seen[key] += 1
                        read[key] += v is not None
                    if v is not None and abs(v - base) > 5:
                        failures.append(f"{inst.instance_id} {n} ({'right' if f else 'wrong'}): {v} vs arrows {base}")
                plain, mixed = score(partial, ans, f), score([*notes[:4], "", *partial, "", *notes[4:]], ans, f)
                seen["remarks"] += 1
                read["remarks"] += mixed is not None
                if plain is None or mixed is None or abs(mixed - plain) > 1:
                    failures.append(f"{inst.instance_id} remarks ({'right' if f else 'wrong'}): {mixed} vs {plain}")
    print(f"{len(instances)} instances, {sum(seen[n] for n in P.NOTATIONS)} derivations in unseen notations, "
          f"{seen['remarks']} partial derivations with remarks; {time.process_time() - t0:.1f} CPU s")
    print("| notation or task | responses | read (numeric) | share |")
    print("|---|---|---|---|")
    hops = [k for k in seen if k.startswith(("hops:", "dijkstra:", "true/false", "walks,"))]
    rest = sorted(k for k in seen if k not in P.NOTATIONS and k != "remarks" and k not in hops)
    # (a dijkstra row's "read" counts the instances where a false step was read and charged, not made null)
    for key in (*P.NOTATIONS, *hops, "remarks", *rest):
        print(f"| {key} | {seen[key]} | {read[key]} | {read[key] / seen[key]:.2f} |")
    print(f"failures: {len(failures)}")
    for line in failures[:10]:
        print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
