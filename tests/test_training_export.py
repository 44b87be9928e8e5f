"""`nphe4v export --format sft|trl|verl` (gie.training.export): layouts the trainers read, prompts identical to a
live run's, the ablation filters, and the refusal of test splits. The dataset folder holds the 51 generated
rows of the judge fixture (testmini, one per task x edit) with stand-in PNGs (the fixture keeps no images; the
exports copy image bytes, they never read them); the real train split goes through docs/training.md's test."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from PIL import Image
from test_judge_helpers import load_instances, wrong_answer
from typer.testing import CliRunner

from evalcore.hashing import sha256_bytes
from evalcore.prompting import format_response
from evalcore.schema import ImageRef
from gie.training import export as E
from gie.training.reference import reference_solution
from gie.training.reward import compute_score, graphverse_reward, graphverse_strict_reward
from nphe4v_cli.app import app

runner = CliRunner()


def _png(k: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8 + k, 8), "white").save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def testmini(tmp_path_factory):
    from evalcore.dataset import load_dataset, write_dataset

    items = []
    for inst in load_instances():
        n = len(inst.data["graphs"])
        pngs = [_png(k) for k in range(n)]
        refs = tuple(ImageRef(path=f"images/{inst.task}/{inst.instance_id}{'' if n == 1 else f'-{k}'}.png",
                              sha256=sha256_bytes(p), width=8 + k, height=8) for k, p in enumerate(pngs))
        items.append((inst.model_copy(update={"images": refs}), pngs))
    root = tmp_path_factory.mktemp("gv") / "testmini"
    write_dataset(root, items, benchmark="graphverse", version="graphverse-testmini", seed=2026, per_level=None,
                  source="generated", extra={"split": "testmini", "limit": 51})
    return load_dataset(root)


def test_a_test_split_is_refused_for_training_in_one_line(testmini, tmp_path):
    with pytest.raises(E.TrainingExportError, match="testmini split is test data"):
        E.export_training(testmini, tmp_path / "x", "trl")
    r = runner.invoke(app, ["export", str(testmini.root), "--format", "sft", "--out", str(tmp_path / "y")])
    assert r.exit_code == 2 and "--allow-test-split" in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "y").exists()
    r = runner.invoke(app, ["export", str(testmini.root), "--format", "verl", "--allow-test-split", "--edits",
                            "focus", "--out", str(tmp_path / "z")])
    assert r.exit_code == 0, r.output
    assert "wrote 10 verl rows" in r.output


def test_sft_export_chats_with_reference_solutions(testmini, tmp_path):
    import datasets

    from cluster.export import planned

    out = tmp_path / "sft"
    n, notes = E.export_training(testmini, out, "sft", allow_test_split=True)
    assert (n, notes) == (51, [])
    ds = datasets.load_from_disk(str(out))
    live = {line["instance_id"]: line["prompt"] for line in planned(testmini)}
    by_id = testmini.by_id()
    for row in ds:
        inst = by_id[row["instance_id"]]
        user, assistant = row["messages"]
        assert user == {"role": "user", "content": live[inst.instance_id]}  # byte for byte the live prompt
        assert assistant == {"role": "assistant", "content": reference_solution(inst)}
        assert [im.size for im in row["images"]] == [(r.width, r.height) for r in inst.images]
        assert row["edit"] == inst.meta["edit"] and row["split"] == "testmini"
    lines = [json.loads(x) for x in (out / E.SFT_JSONL).read_text().splitlines()]
    assert [x["instance_id"] for x in lines] == ds["instance_id"]
    for x in lines:
        assert x["messages"][1]["content"] == reference_solution(by_id[x["instance_id"]])
        for p in x["images"]:
            assert (out / p).read_bytes() == (testmini.root / p).read_bytes()
    assert "reference solution" in (out / E.CARD).read_text()


def test_trl_export_feeds_the_reward(testmini, tmp_path):
    import datasets

    out = tmp_path / "trl"
    E.export_training(testmini, out, "trl", allow_test_split=True)
    ds = datasets.load_from_disk(str(out))
    assert set(ds.column_names) >= {"prompt", "images", "ground_truth"}
    by_id = testmini.by_id()
    refs = [reference_solution(by_id[i]) for i in ds["instance_id"]]
    wrong = [format_response(wrong_answer(by_id[i])) for i in ds["instance_id"]]
    cols = {c: ds[c] for c in ds.column_names if c != "prompt"}  # what GRPOTrainer passes as keywords
    assert graphverse_reward(refs, **cols) == [1.0] * len(ds)
    assert graphverse_strict_reward([[{"role": "assistant", "content": t}] for t in refs], **cols) == [1.0] * len(ds)
    assert all(r <= 0.45 for r in graphverse_reward(wrong, **cols))
    assert all(p[0]["role"] == "user" and len(p) == 1 for p in ds["prompt"])


def test_verl_export_layout(testmini, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "verl"
    E.export_training(testmini, out, "verl", edits="gie", allow_test_split=True)
    table = pq.read_table(out / "testmini.parquet")
    assert table.column_names == ["data_source", "prompt", "images", "ability", "reward_model", "extra_info"]
    by_id = testmini.by_id()
    rows = table.to_pylist()
    assert len(rows) == 40 and all(r["extra_info"]["edit"] != "none" for r in rows)
    for k, r in enumerate(rows):
        inst = by_id[r["extra_info"]["instance_id"]]
        assert r["data_source"] == "graphverse" and r["reward_model"]["style"] == "rule"
        n = len(inst.images)
        assert r["prompt"][0]["content"] == "<image>" * n + E.prompt_text(inst)
        assert [im["bytes"] for im in r["images"]] == [(testmini.root / x.path).read_bytes() for x in inst.images]
        assert r["extra_info"]["index"] == k
        score = compute_score(r["data_source"], reference_solution(inst), r["reward_model"]["ground_truth"],
                              r["extra_info"])
        assert score["score"] == 1.0 and score["correct"] == 1.0


def test_ablation_filters(testmini):
    rows = testmini.instances
    gie, _ = E.select(rows, "gie")
    assert len(gie) == 40 and {E._edit(i) for i in gie} == {"patch", "composition", "focus", "recolor"}
    focus, _ = E.select(rows, "focus")
    assert {E._edit(i) for i in focus} == {"focus"} and len(focus) == 10
    none, notes = E.select(rows, "none")
    assert {E._edit(i) for i in none} == {"none"}
    # one un-edited row per task: the largest set with the GIE set's task mix (TSP has 1 GIE row in 40)
    assert len(none) < len(gie) and "--edits gie --limit" in notes[0]
    matched, _ = E.select(rows, "gie", limit=len(none))
    assert Counter(i.task for i in matched) == Counter(i.task for i in none)
    assert E.select(rows, "none", seed=1)[0] != [] and E.select(rows, "none")[0] == none  # seeded, reproducible
    with pytest.raises(E.TrainingExportError, match="--edits blur"):
        E.select(rows, "blur")
    limited, _ = E.select(rows, "all", limit=11)
    assert len(limited) == 11 and len({i.task for i in limited}) == 11


def test_matched_no_gie_set_has_the_gie_task_mix():
    """On a train-sized allocation (many un-edited rows per task) the no-GIE set is as large as the GIE set
    allows and its task shares are the GIE set's."""
    insts = load_instances()
    big = []
    for k in range(8):  # eight copies of each row: eight un-edited rows per task
        big += [i.model_copy(update={"instance_id": f"{i.instance_id}-{k}"}) for i in insts]
    gie, _ = E.select(big, "gie")
    none, _ = E.select(big, "none")
    mix_gie, mix_none = Counter(i.task for i in gie), Counter(i.task for i in none)
    for t in mix_gie:
        assert abs(mix_none[t] / len(none) - mix_gie[t] / len(gie)) < 0.03, t


def test_training_options_are_refused_with_other_formats(testmini, tmp_path):
    r = runner.invoke(app, ["export", str(testmini.root), "--format", "hf", "--edits", "gie", "--out",
                            str(tmp_path / "hf")])
    assert r.exit_code == 2 and "apply to --format sft|trl|verl" in r.output
    r = runner.invoke(app, ["export", str(testmini.root), "--format", "trl", "--edits", "blur",
                            "--allow-test-split", "--out", str(tmp_path / "t")])
    assert r.exit_code == 2 and "--edits blur: expected one of" in r.output
