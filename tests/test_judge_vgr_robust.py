"""VGR-Score cannot be padded: the rule-based judge and an LLM judge (litellm over real HTTP to a scriptable
judge server) on wrong answers padded with true but irrelevant claims, a dump of the whole edge list, and
repeated copies of one correct claim; F is the exact verifier's verdict whatever the judge says; a
hand-written set where reasoning and answer disagree ranks differently under VGR-S and Acc."""

from __future__ import annotations

import functools
import html
import json
import re

import polars as pl
import pytest
from test_judge_helpers import SNAP, JudgeFake, load_instances, write_dataset_folder, write_run, wrong_answer

from cluster.config import JudgeConfig
from cluster.judge_stage import run_judge_stage
from gie.evidence import build_evidence
from judge.rule_scorer import demo_response
from judge.rule_scorer import score_response as _score_response
from judge.schema import CREDIT_CAP, JudgeStep, ground, vgr_of
from judge.vgr import read_judgments
from nphe4v.scoring import score_answer

INSTANCES = load_instances()
BY_ID = {i.instance_id: i for i in INSTANCES}

# These tests pin VGR v2 (kept selectable for old runs); v3's battery is tests/test_judge_vgr3.py.
score_response = functools.partial(_score_response, vgr_version="v2")


def verified(inst, text) -> bool:
    """F: the benchmark verifier's verdict on the response, as the run records it (the judge is given it)."""
    return score_answer(inst, text)[0].verdict == "correct"


def _edge_dump(ev) -> str:
    """Every edge of every graph the instance draws and asks on, with colours and weights."""
    lines = []
    for g in ev.facts.graphs:
        for graph in (g.graph, g.asked):
            for u, v, d in sorted(graph.edges(data=True)):
                w = d.get("weight")
                lines.append(f"{u}({g.drawn_color.get(u, 'sky')})--{v}({g.drawn_color.get(v, 'sky')})"
                             + (f", weight {w}" if w is not None and ev.facts.weighted else ""))
    return "\n".join(lines)


def _arith(n: int = 200) -> str:
    return "\n".join(f"{i} + {i} = {2 * i}" for i in range(1, n + 1))


def _pad(text: str, padding: str, where: str) -> str:
    """Insert padding at the start or the end of the reasoning (before the final answer)."""
    head, sep, tail = text.partition("<final_answer>")
    if where == "end":
        return head.replace("</reasoning>", "\n" + padding + "\n</reasoning>") + sep + tail
    return head.replace("<reasoning>", "<reasoning>" + padding + "\n", 1) + sep + tail


def _bases(inst) -> dict[str, str]:
    """Wrong answers: with the demo reasoning and misreadings, with only a correct edge claim, bare."""
    ev = build_evidence(inst.task, inst.data)
    wrong = wrong_answer(inst)
    envelope = "<root><reasoning>{}</reasoning><final_answer>{}</final_answer></root>"
    u, v = sorted(ev.facts.graphs[0].asked.edges())[0] if ev.facts.graphs[0].asked.number_of_edges() else ("X", "Y")
    return {
        "reasoned": demo_response(ev, wrong, mistakes=2, seed=3),
        "one-edge": envelope.format(f"{u}--{v}", json.dumps(wrong)),
        "bare": envelope.format("", json.dumps(wrong)),
    }


def _paddings(inst, base: str) -> dict[str, str]:
    ev = build_evidence(inst.task, inst.data)
    # one correct claim of the base, repeated: its first line (an edge, a path, a set ...)
    reasoning = base.split("<reasoning>")[1].split("</reasoning>")[0]
    first = next((ln for ln in reasoning.splitlines() if ln.strip()), "")
    out = {"arith": _arith(), "edges": _edge_dump(ev)}
    if first:
        out["repeat"] = "\n".join([first] * 200)
    # the gold answer's own path/set stated as a claim, 200 times, after it was stated once
    gold_claim = demo_response(ev, inst.gold.answer).split("<reasoning>")[1].split("</reasoning>")[0].splitlines()[-1]
    out["gold-claim-repeat"] = "\n".join([gold_claim] * 200)
    return out


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda i: f"{i.task}-{i.meta['edit']}")
def test_rule_judge_padding_never_raises_a_wrong_answer(inst):
    ev = build_evidence(inst.task, inst.data)

    def vgr(text):
        v = score_response(ev, text, final_match=verified(inst, text))
        assert not v.final_answer_match
        return v.vgr

    for name, base in _bases(inst).items():
        before = vgr(base)
        for pname, padding in _paddings(inst, base).items():
            if pname == "gold-claim-repeat":
                base_with = _pad(base, padding.splitlines()[0], "end")  # stated once ...
                once = vgr(base_with)
                for where in ("start", "end"):  # ... then 200 times more: no higher
                    assert vgr(_pad(base_with, padding, where)) <= once, (name, pname, where)
                continue
            for where in ("start", "end"):
                after = vgr(_pad(base, padding, where))
                assert after <= before, (inst.instance_id, name, pname, where, before, after)


def test_rule_judge_padding_keeps_the_mistakes_counted():
    """Padding placed before the reasoning cannot push its mistakes out of the step budget."""
    inst = BY_ID["sd-L01-002"]
    ev = build_evidence(inst.task, inst.data)
    base = _bases(inst)["reasoned"]
    v0 = score_response(ev, base, final_match=verified(inst, base))
    padded = _pad(base, _arith(400) + "\n" + _edge_dump(ev), "start")
    v1 = score_response(ev, padded, final_match=verified(inst, padded))
    errors = lambda v: sorted(s.claim for s in v.steps if not s.correct)  # noqa: E731
    assert errors(v0) and errors(v1) == errors(v0)
    assert v1.vgr == v0.vgr


def test_credit_is_capped_and_repeats_count_once():
    right = [JudgeStep(claim=f"path {i}", correct=True, kind="inference", relevant=True) for i in range(50)]
    assert vgr_of(right, False) == pytest.approx(100 * CREDIT_CAP / (CREDIT_CAP + 1))
    same = [JudgeStep(claim="A -> B, total 3", correct=True, kind="inference", relevant=True)] * 200
    assert vgr_of(same, False) == vgr_of(same[:1], False) == 50.0
    # case, spacing and a closing full stop do not make a claim new; symbols do (an edge is no mapping)
    variants = [JudgeStep(claim=c, correct=True, kind="inference", relevant=True)
                for c in ("A -> B, total 3", "a->b, total 3", "A  ->  B, TOTAL 3.")]
    assert vgr_of(variants, False) == 50.0
    assert vgr_of([*variants, JudgeStep(claim="A--B", correct=True, relevant=True)], False) == pytest.approx(200 / 3)
    readings = [JudgeStep(claim=f"E{i}--F{i}", correct=True, kind="reading", relevant=True) for i in range(99)]
    irrelevant = [JudgeStep(claim=f"{i} + {i} = {2 * i}", correct=True, relevant=False) for i in range(99)]
    assert vgr_of(readings + irrelevant, False) == 0.0 and vgr_of(readings + irrelevant, True) == 100.0
    wrong = JudgeStep(claim="E1--G1", correct=False, kind="reading", relevant=False, error_type="perception")
    assert vgr_of([*readings, wrong], True) == 50.0  # a wrong reading costs, relevant or not


def test_llm_credit_needs_a_node_of_the_asked_graph():
    steps = [JudgeStep(claim=c, correct=True, kind="inference", relevant=True)
             for c in ("2 + 2 = 4", "the answer is optimal", "path sfb -> day, total 1267", "M99 is in the set")]
    grounded = ground(steps, ["SFB", "DAY", "PIE"])
    assert [s.relevant for s in grounded] == [False, False, True, False]
    assert vgr_of(grounded, False) == 50.0
    wrong = JudgeStep(claim="2 + 2 = 5", correct=False, relevant=True)
    assert ground([wrong], ["SFB"])[0] == wrong  # errors are never excused


# ----------------------------------------------------------------------------------- hand-written set


def _disagreement():
    data = json.loads((SNAP / "disagreement.json").read_text())
    return data["pairs"]


@pytest.mark.parametrize("pair", _disagreement(), ids=lambda p: p["instance_id"])
def test_vgr_and_acc_rank_the_hand_written_pairs_differently(pair):
    inst = BY_ID[pair["instance_id"]]
    ev = build_evidence(inst.task, inst.data)
    acc, vgr = {}, {}
    for kind in ("right_answer_wrong_steps", "wrong_answer_right_steps"):
        verdict, _ = score_answer(inst, pair[kind])
        acc[kind] = verdict.verdict == "correct"
        v = score_response(ev, pair[kind], final_match=acc[kind])
        vgr[kind] = v.vgr
        steps = [(s.claim, s.correct) for s in v.steps]
        if kind == "right_answer_wrong_steps":
            assert sum(not s.correct for s in v.steps) >= 2, steps
        else:
            assert sum(s.correct for s in v.steps) > 2 * sum(not s.correct for s in v.steps), steps
    assert acc == {"right_answer_wrong_steps": True, "wrong_answer_right_steps": False}
    assert vgr["wrong_answer_right_steps"] > vgr["right_answer_wrong_steps"] + 20, vgr


# ----------------------------------------------------------------------------------- an LLM judge


_BLOCK = re.compile(r'<model_response id="([0-9a-f]+)">\n(.*)\n</model_response id="\1">', re.S)
_READING = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:\([a-z]+\))?\s*-{1,2}\s*[A-Za-z][A-Za-z0-9]*")
_SUM = re.compile(r"^\d+(?:\s*\+\s*\d+)+\s*=\s*\d+$")


class LineJudge(JudgeFake):
    """A hostile but schema-valid judge over real HTTP: one step per line of the response's reasoning, each
    said to be correct, readings and sums told apart as a careful judge would, every listed claim copied as
    often as the response repeats it (up to maxItems), and `final_answer_match: true` always. With
    `everything_counts`, every step is called a relevant inference as well."""

    everything_counts = False

    def _completion(self, body, prompt, text=None, finish="stop"):
        if text is None:
            m = _BLOCK.search(prompt)
            response = html.unescape(m.group(2)) if m else ""
            reasoning = response.split("<final_answer>")[0]
            max_items = body["response_format"]["json_schema"]["schema"]["properties"]["steps"]["maxItems"]
            steps = []
            for line in re.split(r"[\n.]", reasoning.replace("<root>", "").replace("<reasoning>", "")):
                line = line.strip().removesuffix("</reasoning>").strip()
                if not line:
                    continue
                reading = bool(_READING.match(line)) and "->" not in line
                irrelevant = bool(_SUM.match(line))
                steps.append({"claim": line[:200], "kind": "reading" if reading and not self.everything_counts
                              else "inference", "relevant": self.everything_counts or not irrelevant,
                              "correct": True, "error_type": "none"})
            text = json.dumps({"steps": steps[:max_items], "final_answer_match": True})
        return super()._completion(body, prompt, text=text, finish=finish)


class EverythingJudge(LineJudge):
    everything_counts = True


def _padded_run(tmp_path, insts):
    variants = {}
    for inst in insts:
        base = _bases(inst)["reasoned"]
        pads = _paddings(inst, base)
        variants[inst.instance_id] = {
            "base": base,
            "arith": _pad(base, pads["arith"], "end"),
            "edges": _pad(base, pads["edges"], "start"),
            "repeat": _pad(base, pads["repeat"], "end"),
            "good": demo_response(build_evidence(inst.task, inst.data), inst.gold.answer),
        }
    ds = write_dataset_folder(tmp_path / "ds", insts)
    return write_run(tmp_path / "run", ds, insts, models=("base", "arith", "edges", "repeat", "good"),
                     text_of=lambda inst, model: variants[inst.instance_id][model])


def _llm_scores(run, fake, out):
    # the v2 prompt (still selectable for old runs): its ungrounded steps are what these judges answer; the
    # grounded v3 judge has its own hostile-judge battery (tests/test_judge_grounded.py)
    cfg = JudgeConfig(model="hosted_vllm/line-judge", executor="local", progress=False,
                      options={"api_base": fake.base_url, "max_concurrency": 4, "timeout_s": 30,
                               "template": "vgr_judge_v2"})
    stats = run_judge_stage(run, None, cfg, out_dir=out)
    js = read_judgments(out)
    assert stats.judge_errors == 0 and js.height == stats.written and (js["status"] == "ok").all()
    return js


def test_llm_judge_padding_and_hostile_final_flag(tmp_path):
    insts = INSTANCES[::3]  # 17 instances, every task
    run = _padded_run(tmp_path, insts)
    with LineJudge() as fake:
        js = _llm_scores(run, fake, tmp_path / "line")
    wide = js.pivot(on="model", index="instance_id", values="vgr_score")
    steps = js.pivot(on="model", index="instance_id", values="n_steps")
    # not vacuous: the base reasoning earns, and the judge did list the padding
    assert (wide["base"] > 0).sum() >= len(insts) // 2
    assert (steps["arith"] > steps["base"]).all()
    assert (steps["edges"] != steps["base"]).any()  # (at the start, the dump pushes claims past maxItems)
    for name in ("arith", "edges", "repeat"):
        worse = wide.filter(pl.col(name) > pl.col("base"))
        assert worse.is_empty(), (name, worse.to_dicts())
    # the judge said "final answer matches" every time; F is the verifier's verdict
    assert js["judge_final_match"].all()
    wrong = js.filter(pl.col("model") != "good")
    assert not wrong["final_answer_match"].any() and (wrong["vgr_score"] < 100).all()
    good = js.filter(pl.col("model") == "good")
    assert good["final_answer_match"].all() and (good["vgr_score"] == 100).all()
    # a judge calling every claim a relevant inference: claims naming no node of the asked graph
    # (`i + i = 2i`) still earn nothing, copies count once, and the cap bounds any wrong answer
    with EverythingJudge() as fake:
        js2 = _llm_scores(run, fake, tmp_path / "everything")
    wrong2 = js2.filter(pl.col("model") != "good")
    assert wrong2["vgr_score"].max() <= 100 * CREDIT_CAP / (CREDIT_CAP + 1) + 1e-9
    assert (wrong2["n_credited"] <= CREDIT_CAP).all()
    w2 = js2.pivot(on="model", index="instance_id", values="vgr_score")
    assert (w2["repeat"] <= w2["base"]).all() and (w2["arith"] <= w2["base"]).all()
    assert all(not s["relevant"] for r in js2.filter(pl.col("model") == "arith")["steps"]
               for s in json.loads(r) if re.fullmatch(r"\d+ \+ \d+ = \d+", s["claim"]))
