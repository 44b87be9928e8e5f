"""`parser: paper` decides model outputs written from scratch as the original NPHardEval4V code decides them.

`bench/paper_parser_fresh.py` builds some 29,000 outputs for the nine tasks over the papers' own instances, from
exact solutions (right answers, near misses, wrong ones) in many spellings and envelopes, without any published
output; the ORIGINAL parsers and checkers decided each of them once (`--write-golden`, kept in
tests/snapshots/paper_decisions_fresh.json, since the original code is not part of this project). Here the texts
are built again (their sha256 pins the generator) and every parse and correct decision of `score_answer_paper`
must equal the original's.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from conftest import PROJECT, shared_or_skip

from nphe4v.scoring import score_answer_paper

GOLDEN = Path(__file__).parent / "snapshots" / "paper_decisions_fresh.json"


def test_outputs_built_from_scratch_are_decided_as_the_original_decides() -> None:
    data_dir = shared_or_skip("peers", "nphardeval4v", "Data")
    sys.path.insert(0, str(PROJECT / "bench"))
    from paper_parser_fresh import PER_INSTANCE, fresh_outputs, texts_digest
    from paper_parser_variants import bits_hex

    golden = json.loads(GOLDEN.read_text())
    assert golden["per_instance"] == PER_INSTANCE, "the generator's sizes changed: rewrite the snapshot"
    ours: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {"parsed": [], "correct": []})
    labels: dict[str, list[tuple[int, str]]] = defaultdict(list)
    texts = []
    for task, index, inst, label, text in fresh_outputs(data_dir, golden["seed"]):
        verdict, _ = score_answer_paper(inst, text)
        ours[task]["parsed"].append(verdict != "parse_error")
        ours[task]["correct"].append(verdict == "correct")
        labels[task].append((index, label))
        texts.append(text)
    assert texts_digest(texts) == golden["texts_sha256"], "the generator changed: rewrite the snapshot"
    differ = []
    for task, want in golden["cells"].items():
        assert len(ours[task]["parsed"]) == want["n"], task
        for what in ("parsed", "correct"):
            if bits_hex(ours[task][what]) != want[what]:
                theirs = bin(int(want[what] or "0", 16))[2:].zfill(want["n"])
                differ += [(task, what, *labels[task][k]) for k, (a, b) in enumerate(zip(ours[task][what], theirs, strict=True))
                           if a != (b == "1")]
    assert not differ, f"{len(differ)} decisions differ from the original code's, e.g. {differ[:5]}"
    # right answers are a large share: the checkers' accepting branches are exercised, not only their rejections
    assert sum(bin(int(c["correct"] or "0", 16)).count("1") for c in golden["cells"].values()) > 5000
