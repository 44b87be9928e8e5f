"""The grounded LLM judge (template vgr_judge_v3, judge.grounding) against a hostile judge: it invents claims
the response does not make, floods copies and paraphrases of one fact, calls every fact correct (false
ones too) and every fact a step toward the answer, and always says the final answer matches. Properties,
on every fixture instance (one per task x edit) directly and on a stratified subset over real HTTP (a
fake litellm endpoint, the judge stage as a run drives it):

* the hostile judge scores exactly what an honest judge scores: code decides every structured fact,
  invented claims are dropped, copies count once;
* adding true facts that no solution needs (drawn colours, degrees) never raises a score;
* a fact stated in eight notations counts as stated once;
* every false structured fact the judge calls correct counts as an error, and lowers the score;
* the final-answer part is the exact verifier's verdict, whatever the judge says.
"""

from __future__ import annotations

import html
import json
import re

import polars as pl
import pytest
from grounded_responses import build, fact, facts_of, judge_steps
from test_judge_helpers import (
    JudgeFake,
    evidence_of,
    load_instances,
    write_dataset_folder,
    write_run,
    wrong_answer,
)

from cluster.config import JudgeConfig
from cluster.judge_stage import run_judge_stage
from gie.evidence import build_evidence
from judge.grounding import fact_in_quote, ground_verdict, grounded_fields, normalise
from judge.llm_judge import load_template, prompt_version_of
from judge.schema import Fact, JudgeStep, JudgeVerdict
from judge.vgr import read_judgments
from nphe4v.scoring import score_answer

INSTANCES = load_instances()
_UNJUDGED = ("degree", "color")
VARIANTS: dict[str, tuple[str, dict]] = {
    "bare": ("wrong", {}),
    "crit": ("wrong", {"critical": 0}),
    "crit+extra": ("wrong", {"critical": 0, "extra": [0, 1, 2]}),
    "para": ("wrong", {"critical": list(range(8))}),
    "crit+false": ("wrong", {"critical": 0, "false": 0}),
    "right-bare": ("right", {}),
    "right-crit": ("right", {"critical": 0}),
}


def _texts(inst):
    out = {}
    wrong = wrong_answer(inst)
    for name, (which, parts) in VARIANTS.items():
        answer = inst.gold.answer if which == "right" else wrong
        out[name] = build(inst, answer, parts)
    return out


def _first_line(text: str) -> str:
    return text.split("<reasoning>")[1].split("</reasoning>")[0].split("\n")[0].rstrip(".")


def _match(inst, text) -> bool:
    return score_answer(inst, text)[0].verdict == "correct"


def _score(inst, text, steps, vgr_version="v4", match=None):
    """`match`: the exact verifier's verdict on `text` when the caller has it (a hostile and an honest judge of
    one response share it)."""
    ev = evidence_of(inst)
    verdict = JudgeVerdict.model_validate({"steps": steps, "final_answer_match": True})
    g = ground_verdict(ev, text, verdict.steps, verdict.final_answer_match)
    match = _match(inst, text) if match is None else match
    return grounded_fields(g, ev, inst.gold.answer, inst.gold.value, match, vgr_version), g


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda i: f"{i.task}-{i.meta['edit']}")
def test_hostile_judge_scores_what_code_says(inst):
    texts = _texts(inst)
    scores, graphs = {}, {}
    for name, (text, entries) in texts.items():
        match = _match(inst, text)
        host, g = _score(inst, text, judge_steps(entries, True, _first_line(text)), match=match)
        honest, _ = _score(inst, text, judge_steps(entries, False), match=match)
        cols = ("vgr_score", "n_credited", "n_errors", "n_steps")
        assert {c: host[c] for c in cols} == {c: honest[c] for c in cols}, (name, host, honest)
        assert host["judge_final_match"] and host["final_answer_match"] == (name.startswith("right"))
        # invented claims are dropped (quote not in the response, fact not in its quote, no quote)
        if entries:
            assert host["n_dropped"] >= 2, (name, g.dropped)
        # code's verdict on every structured fact is the generator's truth (the judge said "correct")
        truth = {json.dumps(f, sort_keys=True): t for _, f, t, _ in entries}
        for s in g.steps:
            if s.fact is not None and s.truth != "unknown":
                want = truth.get(json.dumps(s.fact.model_dump(), sort_keys=True))
                assert want is None or s.correct == want, (name, s.quote, s.fact, s.error_type)
        scores[name], graphs[name] = host, g
    vgr = {k: v["vgr_score"] for k, v in scores.items()}
    assert vgr["crit+extra"] <= vgr["crit"], vgr  # true facts that solve nothing never raise a score
    assert vgr["para"] == vgr["crit"] and scores["para"]["n_credited"] == scores["crit"]["n_credited"]
    # VGR v4 judges no degree or drawn colour (perception the claim reader does not read, as for the rule judge)
    n_false = len({json.dumps(f, sort_keys=True) for f in facts_of(inst)["false"] if f["type"] not in _UNJUDGED})
    # every false fact code finds false is one error, whatever the judge said; on GED/MCS a false fact that does
    # not name its molecule and holds in the other one is ambiguous by design (neither earns nor costs)
    found_false = len({s.key for s in graphs["crit+false"].steps if s.truth == "false"}
                      - {s.key for s in graphs["crit"].steps if s.truth == "false"})
    assert found_false == n_false or (inst.task in ("GED", "MCS") and found_false <= n_false), (n_false, found_false)
    # VGR v3 counts a mistake once: two false facts resting on one false atom (a false edge, and a path through
    # it) are one error; so at least one error more when code found any false fact, never more than it found
    added = scores["crit+false"]["n_errors"] - scores["crit"]["n_errors"]
    assert min(1, found_false) <= added <= found_false, (added, found_false)
    assert vgr["crit+false"] <= vgr["crit"] and (vgr["crit+false"] < vgr["crit"] or vgr["crit"] == 0 or not n_false)
    assert max(vgr[k] for k in VARIANTS if not k.startswith("right")) < 100
    assert vgr["right-bare"] <= vgr["right-crit"]


def test_the_battery_is_not_vacuous():
    """Critical facts do earn on most instances (the properties above compare real scores)."""
    earned = [_score(i, t, judge_steps(e, False))[0]["n_credited"] > 0
              for i in INSTANCES for t, e in [_texts(i)["crit"]]]
    assert sum(earned) >= 0.8 * len(INSTANCES), sum(earned)


# ----------------------------------------------------------------------------------- the pieces


def test_quote_check_normalises_spacing_case_and_entities_only():
    assert normalise("A  ->\nB,  Total 3") == normalise("a -> b, total 3") == "a->b,total3"
    assert normalise("A &lt;-&gt; B") == normalise("A <-> B")
    f = Fact(type="path", nodes=["SFB", "DAY", "PIE"], value=2608)
    assert fact_in_quote(f, "SFB -> DAY -> PIE, total 2,608")
    assert fact_in_quote(f, "PIE to DAY to SFB = 2608")  # undirected: either way round
    assert not fact_in_quote(f, "SFB -> PIE -> DAY, total 2608")  # another path
    assert not fact_in_quote(f, "SFB -> DAY -> PIE, total 2609")  # another total
    names = frozenset({"SFB", "DAY", "PIE", "ATL"})
    assert fact_in_quote(f, "SFB (0) -> DAY (1267 km) -> PIE (2608 km)", names)
    assert not fact_in_quote(f, "SFB -> DAY -> ATL -> PIE, total 2608", names)  # a node skipped
    tour = Fact(type="path", nodes=["SFB", "DAY", "PIE", "SFB"])
    assert fact_in_quote(tour, "PIE, DAY, SFB and back", names)  # a cycle, reversed, closing node implicit
    assert not fact_in_quote(Fact(type="edge", nodes=["C1", "O1"]), "C11 -- O1")  # names are whole words
    assert fact_in_quote(Fact(type="assign", nodes=["C1"], value=2), "C1: colour 2")
    assert not fact_in_quote(Fact(type="assign", nodes=["C1"], value=2), "C12: colour 1")
    assert fact_in_quote(Fact(type="color", nodes=["JAV"], value="light pink"), "JAV is drawn light  pink")


def test_paired_facts_name_their_graph_or_count_as_unknown():
    def only_in_1(inst):
        g1, g2 = (g.graph for g in build_evidence(inst.task, inst.data).facts.graphs)
        return next((tuple(sorted(e)) for e in g1.edges() if not g2.has_edge(*e) and all(n in g2 for n in e)), None)

    inst = next(i for i in INSTANCES if i.task in ("GED", "MCS") and only_in_1(i))
    ev = build_evidence(inst.task, inst.data)
    u, v = only_in_1(inst)
    text = f"<root><reasoning>{u}--{v}</reasoning><final_answer>{{}}</final_answer></root>"

    def one(graph):
        st = JudgeStep(quote=f"{u}--{v}", fact=Fact(type="edge", nodes=[u, v], graph=graph), correct=True,
                       leads_to_answer=True)
        return ground_verdict(ev, text, [st]).steps[0]

    assert one(1).truth == "true" and one(2).truth == "false" and one(2).error_type == "perception"
    unknown = one(None)  # true in one molecule only: neither earns nor costs, never true by luck
    assert unknown.truth == "unknown" and unknown.correct and not unknown.relevant


def test_unstructured_steps_never_count_under_v4_and_only_cost_under_v3():
    """VGR v4 judges claims, checked by code: a step the judge could not structure is recorded with the judge's
    label, but neither earns nor costs (the rule judge would not see it either). Under v3 a judge's "wrong"
    on it cost one error."""
    inst = INSTANCES[0]
    text, entries = build(inst, wrong_answer(inst), {"critical": 0})
    quote = entries[0][0]
    praise = [{"quote": quote, "fact": fact("none", []), "kind": "inference", "leads_to_answer": True,
               "correct": True, "error_type": "none"}]
    blame = [{**praise[0], "correct": False, "error_type": "text_reasoning"}]
    for version, cost in (("v4", 0), ("v3", 1)):
        p, _ = _score(inst, text, praise, version)
        b, _ = _score(inst, text, blame, version)
        assert (p["n_credited"], p["n_errors"]) == (0, 0) and (b["n_credited"], b["n_errors"]) == (0, cost)
    steps = json.loads(_score(inst, text, blame)[0]["steps"])
    assert [(s["checked"], s["judge_correct"], s["truth"]) for s in steps] == [("judge", False, "unknown")]


def test_prompt_v3_is_the_default_and_is_versioned():
    t = load_template()
    assert t.prompt_version == 3 and t.grounded and prompt_version_of(t.version) == 3
    assert t.version.startswith("vgr-judge-v3#")
    item = t.schema["properties"]["steps"]["items"]
    assert {"quote", "fact", "leads_to_answer"} <= set(item["required"])
    assert "leads to" in t.user or "leads_to_answer" in t.user
    v2 = load_template("vgr_judge_v2")  # old runs: still selectable, another cache key
    assert v2.prompt_version == 2 and not v2.grounded and "quote" not in v2.schema["properties"]["steps"]["items"]


# ----------------------------------------------------------------------------------- over HTTP

_BLOCK = re.compile(r'<model_response id="([0-9a-f]+)">\n(.*)\n</model_response id="\1">', re.S)


class HostileJudge(JudgeFake):
    """A judge that reads each response's facts perfectly (the generator's entries) and labels them as the
    module docstring says; it answers in the grounded schema."""

    hostile = True
    entries: dict[str, list] = {}

    def _completion(self, body, prompt, text=None, finish="stop"):
        if text is None:
            m = _BLOCK.search(prompt)
            response = html.unescape(m.group(2)) if m else ""
            entries = self.entries.get(response, [])
            steps = judge_steps(entries, self.hostile, _first_line(response) if entries else "")
            max_items = body["response_format"]["json_schema"]["schema"]["properties"]["steps"]["maxItems"]
            if self.hostile:  # invented claims first, so the step budget never cuts them
                n = len(entries) * 3
                steps = steps[n:] + steps[:n:3] + [s for i, s in enumerate(steps[:n]) if i % 3]
            text = json.dumps({"steps": steps[:max_items], "final_answer_match": True})
        return super()._completion(body, prompt, text=text, finish=finish)


def _judge(run, fake, out):
    cfg = JudgeConfig(model="hosted_vllm/hostile-judge", executor="local", progress=False,
                      options={"api_base": fake.base_url, "max_concurrency": 4, "timeout_s": 30, "max_steps": 256})
    stats = run_judge_stage(run, None, cfg, out_dir=out)
    js = read_judgments(out)
    assert stats.judge_errors == 0 and (js["status"] == "ok").all()
    return js


def test_hostile_judge_over_http(tmp_path):
    insts = list({i.task: i for i in reversed(INSTANCES)}.values())  # one instance per task
    texts = {i.instance_id: _texts(i) for i in insts}
    names = ("crit", "crit+extra", "para", "crit+false", "right-crit")
    HostileJudge.entries = {t: e for v in texts.values() for t, e in v.values()}
    ds = write_dataset_folder(tmp_path / "ds", insts)
    run = write_run(tmp_path / "run", ds, insts, models=names, text_of=lambda i, m: texts[i.instance_id][m][0])
    with HostileJudge() as fake:
        host = _judge(run, fake, tmp_path / "hostile")
        assert fake.count == len(insts) * len(names)
    assert host["judge_template"].unique().to_list() == [load_template(max_steps=256).version]
    # what an honest judge's verdict scores (the same facts, labelled by their truth), computed in process
    by_id = {i.instance_id: i for i in insts}
    for r in host.iter_rows(named=True):
        text, entries = texts[r["instance_id"]][r["model"]]
        honest, _ = _score(by_id[r["instance_id"]], text, judge_steps(entries, False))
        assert [r[c] for c in ("vgr_score", "n_credited", "n_errors", "final_answer_match")] == \
            [honest[c] for c in ("vgr_score", "n_credited", "n_errors", "final_answer_match")], r["model"]
    assert host["judge_final_match"].all() and (host["n_dropped"] >= 1).all()
    wide = host.pivot(on="model", index="instance_id", values="vgr_score")
    assert wide.filter(pl.col("crit+extra") > pl.col("crit")).is_empty()
    assert wide.filter(pl.col("para") != pl.col("crit")).is_empty()
    assert wide.filter(pl.col("crit+false") > pl.col("crit")).is_empty()
    assert (wide["crit"] > 0).sum() >= len(insts) // 2  # not vacuous
    wrong = host.filter(pl.col("model") != "right-crit")
    assert not wrong["final_answer_match"].any() and (wrong["vgr_score"] < 100).all()
    # every structured step records code's verdict beside the judge's inflated label
    steps = [s for r in host.filter(pl.col("model") == "crit+false")["steps"] for s in json.loads(r)]
    overridden = [s for s in steps if s["checked"] == "code" and s["judge_correct"] and not s["correct"]]
    assert len(overridden) >= len(insts)


def test_judgments_written_before_n_dropped_still_read(tmp_path):
    from judge.schema import JUDGMENT_SCHEMA

    old = {k: v for k, v in JUDGMENT_SCHEMA.items() if k != "n_dropped"}
    row = {k: ("x" if v == pl.String else None) for k, v in old.items()}
    (tmp_path / "judgments" / "j").mkdir(parents=True)
    pl.DataFrame([row], schema=old).write_parquet(tmp_path / "judgments" / "j" / "part-0.parquet")
    pl.DataFrame([{**row, "model": "y", "n_dropped": 2}], schema=JUDGMENT_SCHEMA).write_parquet(
        tmp_path / "judgments" / "j" / "part-1.parquet")
    js = read_judgments(tmp_path)
    assert sorted(js["n_dropped"].to_list(), key=str) == [2, None]


def test_a_colouring_clash_is_one_error_whatever_the_judge_says():
    inst = next(i for i in INSTANCES if i.task == "COL")
    ev = build_evidence(inst.task, inst.data)
    a, b = sorted(next(iter(ev.facts.graphs[0].asked.edges())))
    lines = [f"{a}: colour 1", f"{b} gets colour 1", f"colour({a}) = 1"]
    text = "<root><reasoning>" + "\n".join(lines) + "</reasoning><final_answer>{}</final_answer></root>"
    steps = [{"quote": q, "fact": fact("assign", [n], "1"), "kind": "inference", "leads_to_answer": True,
              "correct": True, "error_type": "none"} for q, n in zip(lines, (a, b, a), strict=True)]
    fields, g = _score(inst, text, steps)
    assert [s.key for s in g.steps if not s.correct] == [("clash", a, b)] and fields["n_errors"] == 1


def test_v3_schema_is_strict():
    def walk(node):
        if node.get("type") == "object":
            assert node["additionalProperties"] is False and set(node["required"]) == set(node["properties"])
            for child in node["properties"].values():
                walk(child)
        if node.get("type") == "array":
            walk(node["items"])

    walk(load_template().schema)
