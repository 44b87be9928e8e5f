"""The command line and dataset folders: determinism, manifests, bad input, grade, import-peer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import shared_or_skip
from typer.testing import CliRunner

from evalcore.dataset import DatasetError, load_dataset
from evalcore.hashing import sha256_file
from nphe4v.generate import generate_version
from nphe4v_cli.app import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_version_and_seed_give_identical_bytes(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate_version(a, version="v", seed=3, per_level=1, workers=1)
    generate_version(b, version="v", seed=3, per_level=1, workers=2)
    generate_version(c, version="v", seed=4, per_level=1, workers=2)
    ta, tb = _tree(a), _tree(b)
    assert ta == tb, "same version and seed must give byte-identical files, whatever the worker count"
    assert len([k for k in ta if k.endswith(".png")]) == 90
    assert _tree(c)["instances.parquet"] != ta["instances.parquet"]
    m = json.loads(ta["manifest.json"])
    assert m["version"] == "v" and m["seed"] == 3
    assert m["instances_sha256"] == sha256_file(a / "instances.parquet")
    assert set(m["tasks"]) == {"BSP", "EDP", "SPP", "KSP", "TSP-D", "GCP-D", "TSP", "GCP", "MSP"}
    assert all(t["count"] == 10 and len(t["levels"]) == 10 for t in m["tasks"].values())
    assert "pillow" in m["rendering"] and "pygraphviz" in m["rendering"]


def test_dataset_columns_and_gold(small_dataset):
    df = pl.read_parquet(small_dataset / "instances.parquet")
    for col in ("instance_id", "task", "level", "data", "gold", "gold_value", "images"):
        assert col in df.columns
    assert df["instance_id"].n_unique() == df.height == 180
    ds = load_dataset(small_dataset)
    assert {i.level for i in ds.instances} == set(range(1, 11))
    decisions = [i for i in ds.instances if i.task in ("TSP-D", "GCP-D")]
    assert {i.gold.value for i in decisions} <= {0.0, 1.0}


def test_generate_cli_refuses_existing_folder(tmp_path):
    out = tmp_path / "ds"
    r = runner.invoke(app, ["generate", "--version", "x", "--seed", "1", "--per-level", "1", "--tasks", "BSP",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    before = _tree(out)
    r = runner.invoke(app, ["generate", "--version", "y", "--seed", "2", "--per-level", "1", "--tasks", "BSP",
                            "--out", str(out)])
    assert r.exit_code == 2
    assert "already holds a dataset" in r.output and str(out) in r.output
    assert _tree(out) == before
    r = runner.invoke(app, ["generate", "--version", "y", "--tasks", "NOPE", "--out", str(tmp_path / "z")])
    assert r.exit_code == 2 and "unknown task" in r.output


def test_corrupt_datasets_give_one_line_errors(small_dataset, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(small_dataset, bad)
    png = next((bad / "images").rglob("*.png"))
    png.write_bytes(png.read_bytes()[:-10])
    with pytest.raises(DatasetError, match=r"\.png: sha256 differs") as e:
        load_dataset(bad)
    assert "\n" not in str(e.value)

    schema = tmp_path / "schema"
    shutil.copytree(small_dataset, schema)
    pl.read_parquet(schema / "instances.parquet").drop("gold_value").write_parquet(schema / "instances.parquet")
    with pytest.raises(DatasetError, match="instances.parquet: missing column 'gold_value'"):
        load_dataset(schema)

    garbage = tmp_path / "garbage"
    shutil.copytree(small_dataset, garbage)
    (garbage / "instances.parquet").write_bytes(b"not parquet")
    with pytest.raises(DatasetError, match="instances.parquet: unreadable Parquet"):
        load_dataset(garbage)

    manifest = tmp_path / "manifest"
    shutil.copytree(small_dataset, manifest)
    m = json.loads((manifest / "manifest.json").read_text())
    del m["version"]
    (manifest / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DatasetError, match="manifest.json: field version"):
        load_dataset(manifest)

    tampered = tmp_path / "tampered"
    shutil.copytree(small_dataset, tampered)
    df = pl.read_parquet(tampered / "instances.parquet")
    df = df.with_columns(pl.when(pl.col("task") == "BSP").then(pl.lit("XYZ")).otherwise(pl.col("task")).alias("task"))
    df.write_parquet(tampered / "instances.parquet")
    m = json.loads((tampered / "manifest.json").read_text())
    m["instances_sha256"] = sha256_file(tampered / "instances.parquet")
    (tampered / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DatasetError, match="row 0 .*unknown task 'XYZ'"):
        load_dataset(tampered)


def _oracle_lines(ds_dir: Path) -> list[dict]:
    from evalcore.prompting import format_response

    ds = load_dataset(ds_dir)
    lines = []
    for inst in ds.instances:
        lines.append({"model": "ext", "instance_id": inst.instance_id, "prompt_mode": "figure+limited_text",
                      "response": format_response(inst.gold.answer)})
        lines.append({"model": "ext", "instance_id": inst.instance_id, "prompt_mode": "full_text_only",
                      "response": "I think the answer is 42."})
    return lines


def test_grade_scores_external_responses(small_dataset, tmp_path):
    lines = _oracle_lines(small_dataset)
    resp = tmp_path / "responses.jsonl"
    resp.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "graded"
    r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(resp), "--out", str(out)])
    assert r.exit_code == 0, r.output
    df = pl.scan_parquet(f"{out}/samples/**/*.parquet").collect()
    assert df.height == len(lines)
    limited = df.filter(pl.col("prompt_mode") == "figure+limited_text")
    assert set(limited["verdict"]) == {"correct"}
    prose = df.filter(pl.col("prompt_mode") == "full_text_only")
    assert set(prose["verdict"]) == {"parse_error"}
    assert (out / "leaderboard.csv").exists()
    board = pl.read_csv(out / "leaderboard.csv")
    assert list(board.columns[:9]) == ["model", "prompt_mode", "ER", "RA", "RA_corrected", "AA_P", "AA_NPC",
                                      "AA_NPH", "AA_All"]
    # grading the same file again adds nothing
    r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(resp), "--out", str(out)])
    assert r.exit_code == 0 and "(0 new)" in r.output


def test_grade_bad_lines_name_file_line_and_field(small_dataset, tmp_path):
    resp = tmp_path / "r.jsonl"
    good = json.dumps({"model": "m", "instance_id": "bsp-L01-000", "prompt_mode": "full_text_only", "response": "x"})
    cases = {
        '{"model": "m", "prompt_mode": "full_text_only", "response": "x"}': "field instance_id",
        '{"model": "m", "instance_id": "nope", "prompt_mode": "full_text_only", "response": "x"}': "'nope' is not in",
        '{"model": "m", "instance_id": "bsp-L01-000", "prompt_mode": "sideways", "response": "x"}': "field prompt_mode",
        "{not json": "line",
    }
    for bad, expected in cases.items():
        resp.write_text(good + "\n" + bad + "\n")
        out = tmp_path / "o"
        r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(resp), "--out", str(out)])
        assert r.exit_code == 2
        assert f"{resp}:2:" in r.output and expected in r.output, r.output
        assert not out.exists(), "nothing is written when the input is bad"


def test_eval_all_bad_config_one_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cases = {
        "models: [{name: oracle}]\n": "field datasets: Field required",
        "datasets: [{generate: {version: v}}]\nmodels: [{name: gpt9, backend: baseline}]\n": "field models.0",
        "datasets: [{generate: {version: v}}]\nmodels: [{name: oracle}]\nbogus: 1\n": "field bogus",
        "datasets: [\n  - {generate: {version: v}\nmodels: [\n": "invalid YAML",
    }
    for text, expected in cases.items():
        cfg.write_text(text)
        p = subprocess.run([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(cfg),
                            "--out", str(tmp_path / "run")], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert p.returncode == 2, p.stderr
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and str(cfg) in err[0] and expected in err[0], p.stderr
        assert not (tmp_path / "run").exists()
    p = subprocess.run([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(ROOT / "configs/demo.yaml"),
                        "--models", "oracle,gpt-17", "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "unknown model 'gpt-17'" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.slow(reason="imports the 900 published NPHardEval4V instances: exact gold and a picture for each")
def test_import_peer_4v(tmp_path):
    data = shared_or_skip("peers", "nphardeval4v", "Data")
    out = tmp_path / "peer4v"
    r = runner.invoke(app, ["import-peer", "nphardeval4v", str(data), "--out", str(out)])
    assert r.exit_code == 0, r.output
    ds = load_dataset(out)
    assert len(ds.instances) == 900
    by_task: dict[str, list] = {}
    for inst in ds.instances:
        by_task.setdefault(inst.task, []).append(inst)
    assert all(len(v) == 100 for v in by_task.values())
    for insts in by_task.values():
        assert sorted(i.peer_index for i in insts) == list(range(100))
        for i in insts:
            assert i.level == i.peer_index // 10 + 1
    r = runner.invoke(app, ["import-peer", "nphardeval4v", str(tmp_path / "missing"), "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "not found" in r.output


def test_missing_api_key_fails_before_any_work(tmp_path):
    cfg = tmp_path / "api.yaml"
    cfg.write_text(
        "datasets: [{generate: {version: v, per_level: 1}}]\n"
        "models: [{name: gpt-x, backend: litellm, options: {model: openai/gpt-4o, api_key_env: NPHE4V_TEST_NO_SUCH_KEY}}]\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "NPHE4V_TEST_NO_SUCH_KEY"}
    p = subprocess.run([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(cfg), "--out",
                        str(tmp_path / "run"), "--data-root", str(tmp_path / "data")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert p.returncode == 2, p.stderr
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "NPHE4V_TEST_NO_SUCH_KEY" in err[0] and str(cfg) in err[0], p.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "data").exists(), "no work before the check"


@pytest.mark.ray
def test_replica_larger_than_any_node_fails_before_work(tmp_path):
    cfg = tmp_path / "gpu.yaml"
    cfg.write_text(
        "datasets: [{generate: {version: v, per_level: 1}}]\n"
        "models: [{name: big, backend: vllm, num_gpus: 4, options: {model: some/model, tensor_parallel_size: 4}}]\n"
    )
    p = subprocess.run([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(cfg), "--out",
                        str(tmp_path / "run"), "--data-root", str(tmp_path / "data")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 2, p.stderr[-2000:]
    err = [ln for ln in p.stderr.strip().splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and "needs 4 GPU(s)" in err[0] and "largest node has 0" in err[0], p.stderr[-2000:]
    assert not (tmp_path / "run").exists() and not (tmp_path / "data").exists()
