"""The E.4 reward and the strict verifier reward (gie.training.reward): the benchmark's verdict, both trainer
calling conventions, and the attacks the judge was put through (padding, format-only answers, repeated and
multiple answers, answers listing every node), over the 51 generated GraphVerse rows of the judge fixture
(testmini, seed 2026, one per task x edit)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_judge_helpers import load_instances, wrong_answer

from evalcore.prompting import format_response
from gie.tasks import get_config
from gie.training import reward as R
from gie.training.reference import reference_reasoning
from nphe4v.scoring import score_answer

INSTANCES = load_instances()
CFG = R.DEFAULT
FMT_PLUS_THINKING = CFG.format_reward + CFG.thinking_max
SET_KEYS = {"CN": "CommonNeighbors", "MCP": "Clique", "MIS": "IndependentSet", "MVC": "Cover"}


def gt(inst):
    return R.ground_truth_json(inst)


def answer(inst, ans, reasoning=""):
    return format_response(ans, reasoning)


def test_fixture_covers_every_task_and_edit():
    assert {i.task for i in INSTANCES} == set(R.CATALOGUE)
    assert len(INSTANCES) == 51


def test_the_verdict_is_the_benchmarks_own():
    """Whatever the completion, the reward's correct/incorrect is the score stage's verdict."""
    import random

    from gie import answers
    from gie.graphs import from_node_link

    for inst in INSTANCES:
        graphs = [from_node_link(a) for a in inst.data["asked"]]
        query = inst.data.get("query") or {}
        rng = random.Random(inst.instance_id)
        texts = [answer(inst, inst.gold.answer), answer(inst, wrong_answer(inst)),
                 answer(inst, answers.heuristic(inst.task, graphs, query)),
                 answer(inst, answers.random_answer(inst.task, graphs, query, rng)),
                 answer(inst, get_config(inst.task).answer_example), "no answer at all", ""]
        for text in texts:
            verdict, _ = score_answer(inst, text)
            g = R.grade(text, gt(inst))
            assert g.correct == (verdict.verdict == "correct"), (inst.instance_id, text[:200])
            assert (g.error is not None) == (verdict.verdict == "parse_error"), (inst.instance_id, text[:200])
            assert R.strict_reward(text, gt(inst)) == (1.0 if verdict.verdict == "correct" else 0.0)


def test_parts_and_ranges():
    inst = INSTANCES[0]
    full = R.reward(answer(inst, inst.gold.answer, reference_reasoning(inst)), gt(inst))
    assert (full.thinking, full.format, full.content, full.total) == (0.25, 0.2, 0.55, 1.0)
    bare = R.reward(answer(inst, inst.gold.answer), gt(inst))
    assert (bare.thinking, bare.total, bare.tier) == (0.0, 0.75, "exact")
    value_only = R.reward(answer(inst, {"Distance": inst.gold.answer["Distance"]}), gt(inst))
    assert (value_only.correct, value_only.tier, value_only.total) == (True, "value", 0.5)
    bad_path = R.reward(answer(inst, {**inst.gold.answer, "Path": ["SFB", "PIE"]}), gt(inst))
    assert (bad_path.correct, bad_path.tier) == (True, "value")  # SD is scored on the value; the path is no certificate
    unformatted = R.reward("<reasoning>" + reference_reasoning(inst) + "</reasoning> the answer is 2608", gt(inst))
    assert (unformatted.format, unformatted.content, unformatted.total) == (0.0, 0.0, 0.12)
    assert CFG.maximum == 1.0


def test_config_enforces_the_property():
    with pytest.raises(ValueError, match="content_value"):
        R.RewardConfig(content_value=0.25)
    with pytest.raises(ValueError, match="verbose_words"):
        R.RewardConfig(full_thinking_words=100, verbose_words=100)
    with pytest.raises(ValueError):
        R.RewardConfig(thinking_max=2)
    with pytest.raises(ValueError):
        R.RewardConfig(unknown=1)
    custom = R.RewardConfig(full_thinking_words=10)
    inst = INSTANCES[0]
    text = answer(inst, inst.gold.answer, "one two three four five six seven eight nine ten")
    assert R.reward(text, gt(inst), custom).total == 1.0
    assert R.make_trl_reward(custom)([text], ground_truth=[gt(inst)]) == [1.0]
    assert R.reward(text, gt(inst)).total == 0.8  # 10 of the default 50 words: 0.05 thinking


# ------------------------------------------------------------------------------------------------ conventions


def test_trl_signature_strings_and_conversations():
    rows = INSTANCES[:6]
    texts = [answer(i, i.gold.answer, reference_reasoning(i)) for i in rows]
    truths = [gt(i) for i in rows]
    wrong = [answer(i, wrong_answer(i)) for i in rows]
    # as GRPOTrainer calls it: prompts, completions, completion_ids and every other column as keywords
    extra = {"prompts": ["p"] * 6, "completion_ids": [[1]] * 6, "images": [[]] * 6, "trainer_state": None,
             "instance_id": [i.instance_id for i in rows], "log_extra": None, "log_metric": None}
    assert R.graphverse_reward(texts, ground_truth=truths, **extra) == [1.0] * 6
    assert R.graphverse_strict_reward(texts, ground_truth=truths, **extra) == [1.0] * 6
    assert R.graphverse_strict_reward(wrong, ground_truth=truths) == [0.0] * 6
    conv = [[{"role": "assistant", "content": t}] for t in texts]
    parts = [[{"role": "assistant", "content": [{"type": "text", "text": t}]}] for t in texts]
    assert R.graphverse_reward(conv, ground_truth=truths) == [1.0] * 6
    assert R.graphverse_reward(parts, ground_truth=truths) == [1.0] * 6
    expected = [R.reward(w, t).total for w, t in zip(wrong, truths, strict=True)]
    assert R.graphverse_reward(wrong, ground_truth=truths) == expected
    with pytest.raises(ValueError, match="ground_truth"):
        R.graphverse_reward(texts)
    with pytest.raises(ValueError, match="6 completions but 1"):
        R.graphverse_reward(texts, ground_truth=truths[:1])
    with pytest.raises(ValueError, match="not a GraphVerse ground truth"):
        R.graphverse_reward(["x"], ground_truth=['{"task": "SD"}'])


def test_verl_signature():
    inst = INSTANCES[3]
    text = answer(inst, inst.gold.answer, reference_reasoning(inst))
    out = R.compute_score(R.DATA_SOURCE, text, gt(inst), extra_info={"index": 0})
    assert out["score"] == 1.0 and out["correct"] == 1.0 and out["tier"] == "exact"
    assert set(out) >= {"score", "thinking", "format", "content"}
    # verl hands non-tensor columns over as numpy objects
    assert R.compute_score(R.DATA_SOURCE, text, np.str_(gt(inst)))["score"] == 1.0
    assert R.compute_score(R.DATA_SOURCE, text, np.array(gt(inst), dtype=object))["score"] == 1.0
    assert R.compute_score_strict(R.DATA_SOURCE, text, gt(inst).encode()) == 1.0
    assert R.compute_score_strict(R.DATA_SOURCE, answer(inst, wrong_answer(inst)), gt(inst)) == 0.0
    assert R.compute_score(R.DATA_SOURCE, text, json.loads(gt(inst)))["score"] == 1.0


VERL_LOADER = """
import importlib.util, json, os, sys
# verl's loader (verl/utils/import_utils.py load_module; main branch at b178a3c, 2026-01-29), as verl calls it for
# `custom_reward_function.path` (get_custom_reward_fn -> load_extern_object): a file path is executed
# under a generated name and NOT registered in sys.modules; `pkg://` imports the module by name
def load_module(module_path, module_name=None):
    if module_path.startswith("pkg://"):
        return importlib.import_module(module_path[len("pkg://"):].replace("/", "."))
    if module_path.startswith("file://"):
        module_path = module_path[len("file://"):]
    spec = importlib.util.spec_from_file_location(module_name or f"custom_module_{hash(os.path.abspath(module_path))}",
                                                  module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
rows = json.loads(sys.stdin.read())
out = {}
for path in sys.argv[1:]:
    fn = getattr(load_module(path), "compute_score")
    out[path] = [fn("graphverse", text, truth)["score"] for text, truth in rows]
out["heavy"] = sorted(m for m in ("cv2", "scipy", "torch", "ray", "polars", "PIL") if m in sys.modules)
print(json.dumps(out))
"""


def test_verl_loads_the_reward_from_the_documented_path_as_its_loader_does(tmp_path):
    """`custom_reward_function.path: gie/training/reward.py` (docs/training.md), loaded the way verl's current
    loader loads a file (not registered in sys.modules, which @dataclass with postponed annotations needs), and
    `pkg://gie.training.reward`: both give the package's own scores, in a fresh interpreter whose reward
    imports pulled in no image or array stack (cv2, scipy, torch ...) over every task."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    rows = []
    for inst in INSTANCES:
        rows += [(answer(inst, inst.gold.answer, reference_reasoning(inst)), gt(inst)),
                 (answer(inst, wrong_answer(inst), "I looked."), gt(inst))]
    want = [R.compute_score(R.DATA_SOURCE, t, g)["score"] for t, g in rows]
    doc = (root / "docs" / "training.md").read_text()
    assert "path: gie/training/reward.py" in doc  # the path the docs give, relative to the project folder
    p = subprocess.run([sys.executable, "-c", VERL_LOADER, "gie/training/reward.py", "pkg://gie.training.reward"],
                       input=json.dumps(rows), capture_output=True, text=True, cwd=root, timeout=300,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout)
    assert got["gie/training/reward.py"] == want and got["pkg://gie.training.reward"] == want
    assert max(want) == 1.0 and min(want) < 1.0
    assert got["heavy"] == [], f"the reward imported {got['heavy']}"


# ------------------------------------------------------------------------------------------------ attacks

PAD_REPEAT = "I carefully check every edge of the graph again. " * 2000
PAD_DISTINCT = " ".join(f"Step {k}: node {k} is considered." for k in range(3000))


@pytest.mark.parametrize("pad", [PAD_REPEAT, PAD_DISTINCT[:3000], PAD_DISTINCT], ids=["repeat", "distinct", "huge"])
def test_padding_raises_at_most_the_thinking_share(pad):
    for inst in INSTANCES:
        wrong = wrong_answer(inst)
        base = R.reward(answer(inst, wrong), gt(inst))
        padded = R.reward(answer(inst, wrong, pad), gt(inst))
        assert padded.total <= FMT_PLUS_THINKING + 1e-9
        assert padded.total - base.total <= CFG.thinking_max + 1e-9
        correct_bare = R.reward(answer(inst, inst.gold.answer), gt(inst))
        assert padded.total < correct_bare.total, inst.instance_id
        # repetition is no length
        if pad is PAD_REPEAT:
            assert padded.thinking <= CFG.thinking_max * 10 / CFG.full_thinking_words


def test_excessive_verbosity_costs_the_penalty():
    inst = INSTANCES[0]
    text = answer(inst, inst.gold.answer, reference_reasoning(inst) + " " + PAD_DISTINCT)
    r = R.reward(text, gt(inst))
    assert r.correct and r.total == round(CFG.maximum - CFG.verbose_penalty, 2)
    # padding after the answer is no reasoning, only verbosity
    r2 = R.reward(answer(inst, inst.gold.answer) + PAD_DISTINCT, gt(inst))
    assert r2.thinking == 0.0 and r2.total == round(CFG.format_reward + CFG.content_exact, 2)


def test_format_only_answers_earn_no_content():
    for inst in INSTANCES:
        example = get_config(inst.task).answer_example
        text = answer(inst, example, reference_reasoning(inst))
        r = R.reward(text, gt(inst))
        if r.correct:
            # a restated example whose number happens to be the value (DIAM 3): the benchmark grades the value
            # correct, but its placeholder names certify nothing, so it earns the value tier only
            assert score_answer(inst, text)[0].verdict == "correct" and inst.task in R.VALUE_SCORED
            assert r.tier == "value" and r.total < CFG.maximum, inst.instance_id
        else:
            assert r.content == 0.0 and r.total <= FMT_PLUS_THINKING, inst.instance_id
        envelope_only = R.reward("<root><reasoning>" + reference_reasoning(inst) + "</reasoning><final_answer>"
                                 "</final_answer></root>", gt(inst))
        assert envelope_only.format == 0.0 and envelope_only.total <= CFG.thinking_max * CFG.unformatted_thinking_keep
        think_only = R.reward("<think>" + answer(inst, inst.gold.answer) + "</think>", gt(inst))
        assert think_only.format == 0.0 and not think_only.correct


def test_repeated_answers_and_several_answer_blocks():
    for inst in INSTANCES:
        reasoning = reference_reasoning(inst)
        gold = json.dumps(inst.gold.answer)
        bad = json.dumps(wrong_answer(inst))
        block = "<final_answer>{}</final_answer>"
        once = R.reward(f"<reasoning>{reasoning}</reasoning>" + block.format(gold), gt(inst)).total
        repeated = R.reward(f"<reasoning>{reasoning}</reasoning>" + block.format(gold) * 30, gt(inst)).total
        hedged_last = R.reward(f"<reasoning>{reasoning}</reasoning>" + block.format(bad) * 5 + block.format(gold),
                               gt(inst)).total
        hedged_first = R.reward(f"<reasoning>{reasoning}</reasoning>" + block.format(gold) + block.format(bad),
                                gt(inst))
        assert once == repeated == hedged_last == CFG.maximum, inst.instance_id
        # the last complete block decides, as in the benchmark: hedging cannot add a chance of being right
        assert not hedged_first.correct and hedged_first.total <= FMT_PLUS_THINKING


def test_answers_listing_every_node():
    from gie.graphs import from_node_link

    seen = 0
    for inst in INSTANCES:
        if inst.task not in SET_KEYS:
            continue
        nodes = sorted(str(v) for v in from_node_link(inst.data["asked"][0]).nodes)
        r = R.reward(answer(inst, {SET_KEYS[inst.task]: nodes}, reference_reasoning(inst)), gt(inst))
        assert r.correct == (inst.gold.value == len(nodes)), inst.instance_id
        if not r.correct:
            seen += 1
            assert r.content == 0.0 and r.total <= FMT_PLUS_THINKING
    assert seen >= 15


def test_value_scored_tasks_pay_the_certificate():
    """SD/DIAM/GED/MCS are graded on the value; the full content needs the witness too."""
    for inst in INSTANCES:
        if inst.task not in R.VALUE_SCORED:
            continue
        value_key = next(k for k, v in inst.gold.answer.items() if not isinstance(v, list | dict))
        full = R.reward(answer(inst, inst.gold.answer), gt(inst))
        value = R.reward(answer(inst, {value_key: inst.gold.answer[value_key]}), gt(inst))
        assert full.correct and value.correct
        if R._gold_has_witness(inst.gold):
            assert (full.content, value.content) == (CFG.content_exact, CFG.content_value), inst.instance_id


# ------------------------------------------------------------------------------------------------ the property

PROPERTY_ROWS = [i for i in INSTANCES if i.meta["edit"] in ("none", "focus")]


def _fragments(inst):
    gold, bad = json.dumps(inst.gold.answer), json.dumps(wrong_answer(inst))
    example = json.dumps(get_config(inst.task).answer_example)
    return st.lists(st.one_of(
        st.sampled_from(["<root>", "</root>", "<reasoning>", "</reasoning>", "<think>", "</think>",
                         f"<final_answer>{gold}</final_answer>", f"<final_answer>{bad}</final_answer>",
                         f"<final_answer>{example}</final_answer>", "<final_answer>", "</final_answer>",
                         "<final_answer></final_answer>", gold, bad, PAD_DISTINCT[:400], "Check again. " * 40,
                         reference_reasoning(inst)]),
        st.text(max_size=80)), max_size=12).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_completion_beats_a_correct_answer_without_being_correct(data):
    """Whatever the completion is made of: the reward lies in [0, 1]; a completion the exact verifier grades
    wrong earns at most format + thinking; one it grades correct at least format + content_value."""
    inst = data.draw(st.sampled_from(PROPERTY_ROWS))
    text = data.draw(_fragments(inst))
    r = R.reward(text, gt(inst))
    assert 0.0 <= r.total <= 1.0
    if R.strict_reward(text, gt(inst)) == 1.0:
        assert r.total >= CFG.format_reward + CFG.content_value
    else:
        assert r.content == 0.0 and r.total <= FMT_PLUS_THINKING


def test_hostile_completions_cost_bounded_time():
    import time

    inst = INSTANCES[0]
    for text in ("<think>" * 150_000, "x. " * 350_000, "<reasoning>a. " * 80_000, "a " * 500_000,
                 "<final_answer>{" * 70_000):
        start = time.perf_counter()
        r = R.reward(text, gt(inst))
        assert time.perf_counter() - start < 15 and r.total <= CFG.thinking_max  # 1 MB each, no answer
