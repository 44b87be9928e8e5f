"""`parser: paper` against the original code, on the papers' own published outputs.

Grades the raw generations NPHardEval4V published for its five open models (`Open/ablation/`, figure+full_text,
100 per task) three ways and prints, per model and per task, parsed and correct counts:

* **original**: the ORIGINAL parsers and checkers (`Open/check/*.py` of lizhouf/NPHardEval4V), executed here as
  the open-model runners call them (`Open/run/*.py`: P and NP-complete tasks store the parsed final answer and
  check it; TSP, GCP and MSP store the raw output, so any output counts as parsed, and check the raw text).
  The code is read from a checkout or a bare git mirror of that repository given with --upstream (it is never
  part of the product); it runs in this process on the published, fixed outputs.
* **ours (paper)**: the project's `parser: paper` (`nphe4v.scoring.score_answer_paper`), on instances read with
  `nphe4v.peer.read`;
* **ours (tolerant)**: the default parser (`nphe4v.scoring.score_answer`), for the disagreement table of
  docs/metrics.md.

Then ER and AA per model the way the papers' notebook computes them (ER = parsed share over task x level rows,
AA = level-weighted accuracy, RA = 1: no recognition results were published), and the samples whose parse or
correct decision differs between the original and ours (paper). Where the original code itself crashes on an
output (an exception its runner does not catch) the sample counts as unparsable (in the parse step) or wrong (in
the check), and the crashes are counted. TSP's checker compares with a nearest-neighbour tour from a random start
(`np.random.choice`, unseeded); it is seeded here per instance for a reproducible printout, and the column
`tsp_start_dependent` counts the samples whose verdict depends on that start. Usage:

    PYTHONPATH=$PWD python bench/paper_parser_published.py --upstream PATH [--shared ../shared] [--show 5]

PATH: a checkout of github.com/lizhouf/NPHardEval4V or its bare git directory (commit 61e8020 by default).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from evalcore.dataset import instance_id
from evalcore.schema import Gold, Instance, ParseError
from nphe4v.paper_check import TAGGED_RULES, tsp_start
from nphe4v.paper_parse import parse_tagged
from nphe4v.peer.formats import TASK_FOLDERS
from nphe4v.peer.generations import MODEL_NAMES, MODELS, read_generations
from nphe4v.peer.read import read_peer
from nphe4v.scoring import score_answer, score_answer_paper

UPSTREAM_COMMIT = "61e8020ac4c1351e487005055c8c960bfb6f71b6"
CHECK_FILES = {
    "BSP": "check_p_BSP.py", "EDP": "check_p_EDP.py", "SPP": "check_p_SPP.py", "KSP": "check_cmp_KSP.py",
    "TSP-D": "check_cmp_TSP_D.py", "GCP-D": "check_cmp_GCP_D.py", "TSP": "check_hard_TSP.py",
    "GCP": "check_hard_GCP.py", "MSP": "check_hard_MSP.py",
}
TASKS = tuple(CHECK_FILES)
HARD = ("TSP", "GCP", "MSP")


# ------------------------------------------------------------------------------------------------ the original

def _upstream_source(upstream: Path, rel: str, commit: str) -> str:
    if (upstream / rel).is_file():
        return (upstream / rel).read_text(encoding="utf-8")
    return subprocess.run(["git", "--git-dir", str(upstream), "show", f"{commit}:{rel}"], check=True,
                          capture_output=True, text=True).stdout


def load_original_checkers(upstream: Path, commit: str = UPSTREAM_COMMIT) -> dict[str, ModuleType]:
    """The original `Open/check` modules, imported from a temporary folder."""
    tmp = Path(tempfile.mkdtemp(prefix="nphe4v-upstream-check-"))
    mods = {}
    for task, name in CHECK_FILES.items():
        path = tmp / name
        path.write_text(_upstream_source(upstream, f"Open/check/{name}", commit), encoding="utf-8")
        spec = importlib.util.spec_from_file_location(f"upstream_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods[task] = mod
    return mods


def original_instances(data_dir: Path) -> dict[str, list[Any]]:
    """The instances in the form the original runners hand to the checkers (`Open/run/*.py` load_data)."""
    import pandas as pd

    out: dict[str, list[Any]] = {}
    for task, fname in (("BSP", "bsp_instances.json"), ("EDP", "edp_instances.json"),
                        ("SPP", "spp_instances.json"), ("KSP", "ksp_instances.json"), ("MSP", "msp_instances.json")):
        out[task] = json.loads((data_dir / TASK_FOLDERS[task] / fname).read_text())
    for task, stem in (("GCP", "synthesized_data_GCP_{}.txt"), ("GCP-D", "decision_data_GCP_{}.txt")):
        out[task] = [block for k in range(10)
                     for block in (data_dir / TASK_FOLDERS[task] / stem.format(k)).read_text().split("\n\n")[:-1]]
    for task, stem in (("TSP", "synthesized_data_TSP_level_{}_instance_{}.csv"),
                       ("TSP-D", "decision_data_TSP_level_{}_instance_{}.csv")):
        out[task] = [pd.read_csv(data_dir / TASK_FOLDERS[task] / stem.format(k, j + 1), header=None, index_col=False)
                     for k in range(10) for j in range(10)]
    return out


def _verdict(result: Any) -> bool:
    """The original checkers return a bool or a (bool, message) pair."""
    return bool(result[0] if isinstance(result, tuple) else result)


def original_decision(mods: dict[str, ModuleType], task: str, q: Any, text: str, iid: str,
                      crashes: Counter[str]) -> tuple[bool, bool, bool]:
    """(parsed, correct, start_dependent) as the original runner + checker decide for one output."""
    mod = mods[task]
    with contextlib.redirect_stdout(io.StringIO()):  # the checkers print as they go
        if task in HARD:
            parsed = text != ""  # the runner stores the raw output: anything said is "parsable"
            if task == "TSP":
                return parsed, *_original_tsp(mod, q, text, iid, crashes)
            try:
                ok = _verdict(mod.gcpCheck(q, text) if task == "GCP" else mod.mspCheck(q, text))
            except Exception as e:  # the runner does not catch it: the run would stop
                crashes[f"{task} check: {type(e).__name__}"] += 1
                ok = False
            return parsed, ok, False
        try:
            out, _reasoning = mod.parse_xml_to_dict(text)
        except Exception as e:  # SPP's parser catches only ValueError / AssertionError
            crashes[f"{task} parse: {type(e).__name__}"] += 1
            out = ""
        parsed = not (isinstance(out, str) and out == "")
        try:
            if task == "BSP":
                ok = _verdict(mod.bsp_check(q, out))
            elif task == "EDP":
                ok = _verdict(mod.edp_check(q, out))
            elif task == "SPP":
                ok = _verdict(mod.spp_check_single(q, out))
            elif task == "KSP":
                ok = _verdict(mod.ksp_check_single(q, out))
            elif task == "TSP-D":
                ok = _verdict(mod.tsp_decision_check(q.iloc[:-1].values, q.iloc[-1, 0], out))
            else:
                k = int(q.split("\n")[0].split()[-2])
                ok = _verdict(mod.gcp_decision_check(q, out, k))
        except Exception as e:
            crashes[f"{task} check: {type(e).__name__}"] += 1
            ok = False
        return parsed, ok, False


def _original_tsp(mod: ModuleType, q: Any, text: str, iid: str, crashes: Counter[str]) -> tuple[bool, bool]:
    outcomes = []
    n = q.shape[0]
    for start in range(n):  # every start the unseeded draw could pick
        mod.np.random.seed(0)
        real_choice = mod.np.random.choice
        mod.np.random.choice = lambda _cities, s=start: s
        try:
            outcomes.append(_verdict(mod.tspCheck(q, text)))
        except Exception as e:
            if start == 0:
                crashes[f"TSP check: {type(e).__name__}"] += 1
            outcomes.append(False)
        finally:
            mod.np.random.choice = real_choice
    # the unseeded draw, replaced by the product's documented draw so that samples compare one to one
    return outcomes[tsp_start(iid, n)], len(set(outcomes)) > 1


# ------------------------------------------------------------------------------------------------------ ours

def our_instances(data_dir: Path) -> dict[str, list[Instance]]:
    out: dict[str, list[Instance]] = defaultdict(list)
    for rec in read_peer("nphardeval4v", data_dir):
        index = len(out[rec.task])
        out[rec.task].append(Instance(
            instance_id=instance_id(rec.task, rec.level, index % 10), benchmark="nphardeval4v", task=rec.task,
            level=rec.level, index=index % 10, data=rec.data, gold=Gold(answer={}, value=None), images=(),
            peer_index=rec.peer_index, meta=rec.meta))
    return out


def _ours(inst: Instance, text: str) -> tuple[bool, bool, bool, bool, str]:
    """(paper parsed, paper correct, tolerant parsed, tolerant correct, why the two parses differ or "")."""
    paper, _ = score_answer_paper(inst, text)
    tol, _ = score_answer(inst, text)
    pp, tp = paper != "parse_error", tol.verdict != "parse_error"
    why = ""
    if pp and not tp:
        why = ("papers: any output of a hard task is parsable" if inst.task in HARD else
               f"ours: {tol.reason.split(':')[0]}" + (" (a placeholder / non-number value)"
                                                     if tol.reason.startswith("bad_value") else ""))
    elif tp and not pp:
        err = parse_tagged(text, **TAGGED_RULES[inst.task])
        why = f"papers: {err.detail if isinstance(err, ParseError) else 'parsed'}"
    return pp, paper == "correct", tp, tol.verdict == "correct", why


# ------------------------------------------------------------------------------------------------------ tables

def er_aa(parsed: dict[str, list[bool]], correct: dict[str, list[bool]]) -> tuple[float, float]:
    """ER and AA (RA = 1) over the tasks given: ER = mean over task x level of parsed/10; AA = mean over tasks
    of sum_l l * correct_l/10 / 55 (the papers' notebook, one prompt type)."""
    er = float(np.mean([sum(parsed[t][10 * (lv - 1):10 * lv]) / 10 for t in parsed for lv in range(1, 11)]))
    aa = float(np.mean([sum(lv * sum(correct[t][10 * (lv - 1):10 * lv]) / 10 for lv in range(1, 11)) / 55
                        for t in correct]))
    return er, aa


def _bits(flags: list[bool]) -> str:
    return "".join("1" if f else "0" for f in flags)


def write_golden(path: Path, rows: list[dict[str, Any]], commit: str) -> None:
    """Per (model, task): the original code's 100 parse and correct decisions as 0/1 strings, instance order."""
    cells: dict[str, dict[str, str]] = {}
    for model in MODELS:
        for task in TASKS:
            part = [r for r in rows if r["model"] == model and r["task"] == task]
            cells[f"{model}/{task}"] = {"parsed": _bits([r["op"] for r in part]),
                                        "correct": _bits([r["oc"] for r in part])}
    doc = {"source": f"lizhouf/NPHardEval4V@{commit} Open/check/*.py, called as Open/run/*.py call them",
           "generated_by": "bench/paper_parser_published.py --write-golden",
           "outputs": "shared/peers/nphardeval4v/Open/ablation (figure+full_text), nphe4v.peer.generations",
           "tsp_start": "nphe4v.paper_check.tsp_start (the original draws it unseeded)",
           "cells": cells}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, required=True, help="checkout or bare git dir of NPHardEval4V")
    ap.add_argument("--commit", default=UPSTREAM_COMMIT)
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    ap.add_argument("--show", type=int, default=3, help="examples per disagreeing (model, task)")
    ap.add_argument("--write-golden", type=Path, default=None,
                    help="write the original code's per-sample decisions here (tests/snapshots/paper_decisions_original.json)")
    args = ap.parse_args()
    root = args.shared / "peers" / "nphardeval4v"
    mods = load_original_checkers(args.upstream, args.commit)
    orig_q = original_instances(root / "Data")
    ours_q = our_instances(root / "Data")
    crashes: Counter[str] = Counter()
    rows = []
    for model in MODELS:
        for task in TASKS:
            for i, text in enumerate(read_generations(root / "Open" / "ablation", task, model)):
                inst = ours_q[task][i]
                op, oc, dep = original_decision(mods, task, orig_q[task][i], text, inst.instance_id, crashes)
                pp, pc, tp, tc, why = _ours(inst, text)
                rows.append(dict(model=model, task=task, i=i, text=text, op=op, oc=oc, dep=dep, pp=pp, pc=pc,
                                 tp=tp, tc=tc, why=why))
    print(f"{len(rows)} published answers graded; original code crashed on: {dict(crashes) or 'none'}")
    print("\nPer model (figure+full_text, RA = 1):")
    print(f"{'model':10} {'ER orig':>8} {'ER_paper':>9} {'AA orig':>8} {'AA_paper':>9} {'ER tol':>7} {'AA tol':>7} "
          f"{'parse differs':>13} {'correct differs':>15}")
    for model in MODELS:
        part = [r for r in rows if r["model"] == model]
        col = {k: {t: [r[k] for r in part if r["task"] == t] for t in TASKS} for k in ("op", "oc", "pp", "pc", "tp", "tc")}
        er_o, aa_o = er_aa(col["op"], col["oc"])
        er_p, aa_p = er_aa(col["pp"], col["pc"])
        er_t, aa_t = er_aa(col["tp"], col["tc"])
        dp = sum(r["op"] != r["pp"] for r in part)
        dc = sum(r["oc"] != r["pc"] for r in part)
        print(f"{MODEL_NAMES[model]:10} {er_o:8.3f} {er_p:9.3f} {aa_o:8.3f} {aa_p:9.3f} {er_t:7.3f} {aa_t:7.3f} "
              f"{dp:13d} {dc:15d}")
    print("\nPer model and task: parsed / correct out of 100 (original | ours paper | ours tolerant); "
          "tsp_start_dependent = TSP verdicts that depend on the random start")
    print(f"{'model':10} {'task':6} {'orig':>9} {'paper':>9} {'tolerant':>9} {'start_dep':>9}")
    for model in MODELS:
        for task in TASKS:
            part = [r for r in rows if r["model"] == model and r["task"] == task]

            def pc(kp: str, kc: str, part: list[dict[str, Any]] = part) -> str:
                return f"{sum(r[kp] for r in part)}/{sum(r[kc] for r in part)}"

            print(f"{MODEL_NAMES[model]:10} {task:6} {pc('op', 'oc'):>9} {pc('pp', 'pc'):>9} {pc('tp', 'tc'):>9} "
                  f"{sum(r['dep'] for r in part):9d}")
    print("\nOurs tolerant vs the papers' parse (ours paper), parsed counts where they differ:")
    for model in MODELS:
        for task in TASKS:
            part = [r for r in rows if r["model"] == model and r["task"] == task]
            only_t = sum(r["tp"] and not r["pp"] for r in part)
            only_p = sum(r["pp"] and not r["tp"] for r in part)
            ct = sum(r["tc"] and not r["pc"] for r in part)
            cp = sum(r["pc"] and not r["tc"] for r in part)
            if only_t or only_p or ct or cp:
                print(f"  {MODEL_NAMES[model]:10} {task:6} parsed only by tolerant {only_t:3d}, only by paper {only_p:3d};"
                      f" correct only by tolerant {ct:3d}, only by paper {cp:3d}")
    print("\nWhy the parses differ (count over all models and tasks):")
    for why, c in Counter(r["why"] for r in rows if r["why"]).most_common():
        print(f"  {c:4d}  {why}")
    if args.write_golden:
        write_golden(args.write_golden, rows, args.commit)
        print(f"\nwrote the original code's decisions to {args.write_golden}")
    bad = [r for r in rows if (r["op"], r["oc"]) != (r["pp"], r["pc"])]
    print(f"\nSamples where ours (paper) and the original disagree: {len(bad)}")
    shown: Counter[tuple[str, str]] = Counter()
    for r in bad:
        key = (r["model"], r["task"])
        shown[key] += 1
        if shown[key] <= args.show:
            print(f"-- {r['model']} {r['task']} #{r['i']}: original parsed={r['op']} correct={r['oc']}, "
                  f"ours parsed={r['pp']} correct={r['pc']}: {r['text'][:160]!r}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
