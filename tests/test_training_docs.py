"""docs/training.md, run as written: every ```bash block of the page, in order, in a fresh folder (the project's
`.venv/bin/` spelled as an absolute path), then the round trip checked here on what the commands wrote:
export -> load with `datasets` -> the E.4 reward gives every reference solution the maximum, and a wrong answer
no more than the format + thinking share (below the least a correct answer earns)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_judge_helpers import wrong_answer

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "training.md"
BIN = Path(sys.executable).parent


def doc_blocks() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 3, "docs/training.md lost its commands"
    return blocks


def test_doc_commands_name_every_training_format():
    text = "\n".join(doc_blocks())
    for fmt in ("sft", "trl", "verl"):
        assert f"--format {fmt}" in text
    assert "--split train" in text and "--edits none" in text


@pytest.mark.slow(reason="generates a 12-row train slice and runs five exports as subprocesses (~2 min)")
def test_training_doc_runs_as_written(tmp_path):
    import datasets
    import pyarrow.parquet as pq

    from evalcore.dataset import load_dataset
    from evalcore.prompting import format_response
    from gie.training.reference import reference_solution
    from gie.training.reward import DEFAULT, compute_score, graphverse_reward

    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HOME": str(tmp_path / "hf"),
           "HF_DATASETS_CACHE": str(tmp_path / "hf" / "datasets")}
    work = tmp_path / "work"
    work.mkdir()
    outputs = []
    for block in doc_blocks():
        cmd = block.replace(".venv/bin/", f"{BIN}/")
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], cwd=work, env=env, capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, f"docs/training.md block failed:\n{block}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        outputs.append(r.stdout + r.stderr)
    assert "note: no-GIE set" in outputs[1]
    assert "reference solutions: [1.0" in outputs[2]

    train = load_dataset(work / "gv-train")
    by_id = train.by_id()
    trl = datasets.load_from_disk(str(work / "gv-trl"))
    assert len(trl) == len(train.instances) == 12 and set(trl["split"]) == {"train"}
    columns = {c: trl[c] for c in trl.column_names if c != "prompt"}
    refs = [reference_solution(by_id[i]) for i in trl["instance_id"]]
    assert graphverse_reward(refs, **columns) == [DEFAULT.maximum] * 12
    wrong = [format_response(wrong_answer(by_id[i]), "I read the graph and searched it.") for i in trl["instance_id"]]
    scores = graphverse_reward(wrong, **columns)
    assert max(scores) <= DEFAULT.format_reward + DEFAULT.thinking_max < DEFAULT.format_reward + DEFAULT.content_value
    sft = datasets.load_from_disk(str(work / "gv-sft"))
    assert [m[1]["content"] for m in sft["messages"]] == refs
    table = pq.read_table(work / "gv-verl" / "train.parquet").to_pylist()
    assert [compute_score(r["data_source"], ref, r["reward_model"]["ground_truth"])["score"]
            for r, ref in zip(table, refs, strict=True)] == [1.0] * 12
    nogie = datasets.load_from_disk(str(work / "gv-trl-nogie"))
    assert set(nogie["edit"]) == {"none"}
    focus = datasets.load_from_disk(str(work / "gv-trl-focus"))
    assert set(focus["edit"]) == {"focus"}
