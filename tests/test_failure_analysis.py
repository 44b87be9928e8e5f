"""§5.3 failure categories from samples scored by the real scorer on real generated instances; each crafted
answer's category is cross-checked by an independent computation (weights, tour lengths, colour counts)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import polars as pl
import pytest

from evalcore.dataset import load_dataset
from evalcore.schema import ModelRequest, ModelResponse, Prompt, SampleKey, SamplingParams
from nphe4v.failure_analysis import (
    CATEGORIES,
    categorise,
    failure_samples,
    failure_summary,
    is_suboptimal,
    unknown_entities,
)
from nphe4v.generate import generate_version
from nphe4v.scoring import score_sample


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out: Path = tmp_path_factory.mktemp("ds") / "fa"
    generate_version(out, version="fa", seed=5, per_level=1,
                     tasks=["BSP", "EDP", "KSP", "TSP", "GCP", "GCP-D", "MSP"], levels=[4], workers=1)
    return load_dataset(out)


def _answer(obj) -> str:
    return f"<root><reasoning>r</reasoning><final_answer>{json.dumps(obj)}</final_answer></root>"


def _score(ds, inst, text: str | None, i: int, status: str = "ok") -> dict:
    key = SampleKey(model="m", benchmark="nphardeval4v", instance_id=inst.instance_id, variant="",
                    prompt_mode="figure+limited_text", repeat=i)
    req = ModelRequest(key=key, task=inst.task, level=inst.level, prompt=Prompt(text="p", template_version="t"),
                       sampling=SamplingParams(), image_root=str(ds.root))
    resp = ModelResponse(text=text, status=status, error=None if status == "ok" else "boom")
    return score_sample("r", ds.manifest.version, inst, req, resp).model_dump()


def _cases(ds) -> list[tuple[dict, str]]:
    """(scored sample, expected category) for answers whose category is established independently."""
    by_task = {i.task: i for i in ds.instances}
    out = []
    n = itertools.count()

    def add(task: str, text: str | None, expected: str, status: str = "ok") -> None:
        out.append((_score(ds, by_task[task], text, next(n), status), expected))

    bsp = by_task["BSP"].data
    add("BSP", _answer({"Position": len(bsp["array"]) + 3}), "perception_error")
    wrong_pos = next(p for p, v in enumerate(bsp["array"]) if v != bsp["target"])
    add("BSP", _answer({"Position": wrong_pos}), "infeasible")
    add("BSP", "I cannot tell.", "unparsable")
    add("BSP", None, "unparsable", status="model_error")

    best = int(by_task["EDP"].gold.value)
    add("EDP", _answer({"Operations": best + 2}), "suboptimal")  # a longer edit script exists
    if best > 0:
        add("EDP", _answer({"Operations": best - 1}), "infeasible")  # below the edit distance: impossible

    ksp = by_task["KSP"].data
    items = sorted(ksp["items"], key=lambda it: it["weight"])
    light = items[0]
    assert light["weight"] <= ksp["capacity"] and light["value"] < by_task["KSP"].gold.value
    add("KSP", _answer({"SelectedItemIds": [light["id"]], "TotalValue": light["value"]}), "suboptimal")
    every = [it["id"] for it in items]
    assert sum(it["weight"] for it in items) > ksp["capacity"]
    add("KSP", _answer({"SelectedItemIds": every, "TotalValue": sum(it["value"] for it in items)}), "infeasible")
    add("KSP", _answer({"SelectedItemIds": [999], "TotalValue": 1}), "perception_error")

    tsp = by_task["TSP"].data
    nc, dist = tsp["num_cities"], tsp["distances"]
    worst = max(itertools.permutations(range(1, nc)), key=lambda p: sum(
        dist[a][b] for a, b in zip((0, *p), (*p, 0), strict=True)))
    tour = [0, *worst, 0]
    length = sum(dist[a][b] for a, b in itertools.pairwise(tour))
    assert length > by_task["TSP"].gold.value + 1e-6
    add("TSP", _answer({"Path": tour, "TotalDistance": round(length, 2)}), "suboptimal")
    add("TSP", _answer({"Path": [0, nc + 4, 0], "TotalDistance": 3}), "perception_error")

    gcp = by_task["GCP"].data
    nv = gcp["num_vertices"]
    assert by_task["GCP"].gold.value < nv
    # the papers' prompt allows K = chi colours: a proper colouring with more breaks the stated constraint
    add("GCP", _answer({"NumColors": nv, "Coloring": {str(v): v for v in range(1, nv + 1)}}), "infeasible")
    add("GCP", _answer({"NumColors": 1, "Coloring": {str(v): 1 for v in range(1, nv + 1)}}), "infeasible")
    add("GCP", _answer({"NumColors": 2, "Coloring": {str(v): 1 for v in range(0, nv + 1)}}), "perception_error")

    gold_d = by_task["GCP-D"].gold.answer["Feasible"]
    add("GCP-D", _answer({"Feasible": "NO" if gold_d == "YES" else "YES"}), "wrong_decision")

    msp = by_task["MSP"].data
    add("MSP", _answer({"NumScheduled": 1, "Schedule": {"77": [0]}}), "perception_error")
    mid = msp["meetings"][0]["id"]
    add("MSP", _answer({"NumScheduled": 1, "Schedule": {str(mid): [msp["num_slots"] + 5]}}), "perception_error")
    return out


def test_categories_match_independent_checks(ds) -> None:
    cases = _cases(ds)
    samples = pl.DataFrame([s for s, _ in cases])
    assert (samples["verdict"] != "correct").all(), "every crafted answer must be graded wrong by the verifier"
    instances = {(ds.manifest.version, i.instance_id): i.data for i in ds.instances}
    got = failure_samples(samples, instances)
    assert got["category"].to_list() == [c for _, c in cases]
    # without the dataset, perception errors that the verifier names (unknown id, out of range) still count
    no_data = failure_samples(samples)
    for (_, expected), cat in zip(cases, no_data["category"].to_list(), strict=True):
        assert cat == expected or (expected == "perception_error" and cat in ("infeasible", "suboptimal"))
    assert "perception_error" in no_data["category"].to_list()


def test_summary_shares_sum_to_one_and_correct_is_not_a_failure(ds) -> None:
    cases = _cases(ds)
    inst = next(i for i in ds.instances if i.task == "BSP")
    correct = _score(ds, inst, _answer(inst.gold.answer), 999)
    assert correct["verdict"] == "correct"
    samples = pl.DataFrame([*(s for s, _ in cases), correct])
    fails = failure_samples(samples)
    assert fails.height == len(cases)
    summ = failure_summary(fails, samples)
    row = summ.row(0, named=True)
    assert (row["n"], row["n_failed"]) == (len(cases) + 1, len(cases))
    assert sum(row[f"{c}_share"] for c in CATEGORIES) == pytest.approx(1.0)
    assert sum(row[c] for c in CATEGORIES) == len(cases)


def test_hostile_answers_never_crash() -> None:
    for ans in ('{"Path": [[1], {"a": 2}, "x", 1e309]}', "not json", '{"Coloring": 5}', "[1, 2]",
                '{"Schedule": {"0": "slot"}}', None):
        for task in ("BSP", "SPP", "TSP", "KSP", "GCP", "MSP", "EDP"):
            assert isinstance(unknown_entities(task, {"array": [1], "num_nodes": 2, "num_cities": 2,
                                                      "items": [{"id": 0}], "num_vertices": 2,
                                                      "meetings": [{"id": 0}], "num_slots": 2}, ans), list)
    assert categorise("BSP", "infra_error", None, False, False) is None
    assert categorise("BSP", "ok", "correct", False, False) is None
    assert categorise("KSP", "ok", "parse_error", True, True) == "unparsable"
    assert is_suboptimal("feasible, but schedules 2 meetings; 3 can be scheduled")
    assert not is_suboptimal("total weight 9 exceeds the capacity 8")
