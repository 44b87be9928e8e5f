"""Runs you can trust, without Ray: dataset identity, one-line errors, `grade` validation, `--plan`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from cluster.config import ConfigError, DatasetSpec
from cluster.config_file import load_config
from cluster.run import dataset_path, resolve_dataset
from evalcore.dataset import DatasetError, load_dataset
from evalcore.hashing import sha256_file
from evalcore.records import SampleSink
from evalcore.shards import ShardError
from nphe4v_cli.app import app
from nphe4v_cli.eval_all import main as eval_all

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _stderr_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.strip().splitlines() if ln]


# --- 1. the dataset a run uses is exactly the one its config asks for -------------------------------------------

def test_generated_dataset_cache_is_keyed_on_the_whole_spec(tmp_path):
    small = DatasetSpec(generate=dict(version="v", seed=3, per_level=1, tasks=["SPP"], levels=[1, 2]))
    wider = DatasetSpec(generate=dict(version="v", seed=3, per_level=1, tasks=["SPP", "BSP"], levels=[1, 2]))
    a = resolve_dataset(small, tmp_path)
    b = resolve_dataset(wider, tmp_path)
    assert a.root != b.root, "same version and seed, other tasks: another folder"
    assert len(a.instances) == 2 and len(b.instances) == 4
    assert {i.task for i in b.instances} == {"SPP", "BSP"}
    # the same request in another spelling (task order, explicit defaults) is the same dataset
    same = DatasetSpec(generate=dict(version="v", seed=3, per_level=1, tasks=["BSP", "SPP"], levels=[2, 1]))
    assert dataset_path(same, tmp_path) == b.root
    assert resolve_dataset(same, tmp_path).manifest.dataset_sha256 == b.manifest.dataset_sha256
    # every field of the spec that changes the dataset is part of the key (graphverse's `limit` is refused
    # here: nphardeval4v does not use it, tests/test_refused_inputs.py)
    keys = {dataset_path(DatasetSpec(generate=dict(version="v", seed=3, per_level=1, **kw)), tmp_path)
            for kw in ({}, {"levels": [1]}, {"tasks": ["SPP"]})}
    keys |= {dataset_path(DatasetSpec(generate=dict(version="v", seed=s, per_level=p)), tmp_path)
             for s, p in ((4, 1), (3, 2))}
    assert len(keys) == 5


def test_named_dataset_folder_that_differs_from_the_spec_is_refused(tmp_path):
    folder = tmp_path / "ds"
    spec = DatasetSpec(path=str(folder),
                       generate=dict(version="v", seed=3, per_level=1, tasks=["SPP"], levels=[1, 2]))
    assert len(resolve_dataset(spec, tmp_path).instances) == 2
    asks_more = DatasetSpec(path=str(folder), generate=dict(version="v", seed=3, per_level=1))
    with pytest.raises(DatasetError) as e:
        resolve_dataset(asks_more, tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and f"{folder}/manifest.json: field tasks" in msg, msg
    other_seed = DatasetSpec(path=str(folder),
                             generate=dict(version="v", seed=4, per_level=1, tasks=["SPP"], levels=[1, 2]))
    with pytest.raises(DatasetError, match="field seed: dataset holds 3, config asks for 4"):
        resolve_dataset(other_seed, tmp_path)


# --- one-line errors and validation --------------------------------------------------------------------------

BASE = "datasets: [{generate: {version: v, per_level: 1}}]\nmodels: [{name: oracle}]\n"


@pytest.mark.parametrize("text, expected", [
    ("datasets: [{generate: {version: v, tasks: [SPP, NOPE]}}]\nmodels: [{name: oracle}]\n", "unknown task 'NOPE'"),
    ("datasets: [{generate: {version: v, levels: [0, 11]}}]\nmodels: [{name: oracle}]\n", "unknown level 0"),
    ("datasets: [{generate: {version: v, tasks: []}}]\nmodels: [{name: oracle}]\n", "must not be empty"),
    ("datasets: [{benchmark: graphverse, generate: {version: graphverse-testmini, tasks: [SPP]}}]\n"
     "models: [{name: oracle}]\n", "generate.tasks is not used by graphverse"),
    (BASE + "ray: {num_cpus: -1}\n", "field ray.num_cpus"),
    (BASE + "sampling: {temperature: -0.5}\n", "field sampling.temperature"),
    (BASE + "sampling: {max_tokens: -1}\n", "field sampling.max_tokens"),
    (BASE + "sampling: {seed: -3}\n", "field sampling.seed"),
    (BASE + "parser: strict\n", "field parser"),
    ("datasets: [{generate: {version: v}}]\nmodels: []\n", "field models"),
    ("datasets: [{generate: {version: ../../etc}}]\nmodels: [{name: oracle}]\n", "field datasets.0.generate.version"),
    ("datasets: [{generate: {version: a/b}}]\nmodels: [{name: oracle}]\n", "field datasets.0.generate.version"),
    ("datasets: [{generate: {version: 'a..b'}}]\nmodels: [{name: oracle}]\n", "must not contain '..'"),
    ("datasets: [{generate: {version: v, per_level: 0}}]\nmodels: [{name: oracle}]\n", "per_level"),
    ("datasets: [{generate: {version: v, seed: -1}}]\nmodels: [{name: oracle}]\n", "generate.seed"),
])
def test_meaningless_configs_are_refused_in_one_line(tmp_path, capsys, text, expected):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    assert "\n" not in str(e.value) and str(cfg) in str(e.value) and expected in str(e.value), str(e.value)
    rc = eval_all(["--config", str(cfg), "--out", str(tmp_path / "run"), "--data-root", str(tmp_path / "data")])
    err = _stderr_lines(capsys)
    assert rc == 2 and len(err) == 1 and expected in err[0], err
    assert not (tmp_path / "run").exists() and not (tmp_path / "data").exists()


def test_bad_command_line_is_one_line_and_escapes_control_characters(small_dataset, tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"datasets: [{{path: {small_dataset}}}]\nmodels: [{{name: oracle}}]\n")
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    cases = [
        (["--models", ","], "names no model"),
        (["--models", " , ,"], "names no model"),
        (["--out", str(a_file)], "--out is a file"),
        (["--out", str(a_file / "run")], "is a file, not a folder"),
        (["--models", "\x1b[2J\x1b[31mevil"], "unknown model"),
    ]
    for extra, expected in cases:
        argv = ["--config", str(cfg), "--out", str(tmp_path / "run"), *extra]
        rc = eval_all(argv)
        captured = capsys.readouterr()
        err = [ln for ln in captured.err.splitlines() if ln]
        assert rc == 2 and len(err) == 1 and expected in err[0], (extra, err)
        assert "\x1b" not in captured.err + captured.out, "escape sequences never reach the terminal raw"
    assert not (tmp_path / "run").exists()


def test_corrupt_shard_on_resume_is_one_line(small_dataset, tmp_path):
    out = _graded(small_dataset, tmp_path)
    shard = sorted((out / "samples").glob("**/*.parquet"))[0]
    shard.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ShardError) as e:
        SampleSink(out)
    assert str(e.value).startswith(f"{shard}: unreadable sample shard") and "\n" not in str(e.value)
    r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(tmp_path / "r.jsonl"),
                            "--out", str(out)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and f"{shard}: unreadable sample shard" in r.output


def test_dataset_image_paths_outside_the_folder_are_refused(small_dataset, tmp_path):
    ds = tmp_path / "ds"
    shutil.copytree(small_dataset, ds)
    frame = pl.read_parquet(ds / "instances.parquet")
    first = json.loads(frame["images"][0])
    for bad in ("../../outside.png", "/etc/passwd"):
        first[0]["path"] = bad
        images = [json.dumps(first), *frame["images"][1:]]
        frame.with_columns(pl.Series("images", images)).write_parquet(ds / "instances.parquet")
        manifest = json.loads((ds / "manifest.json").read_text())
        manifest["instances_sha256"] = sha256_file(ds / "instances.parquet")
        (ds / "manifest.json").write_text(json.dumps(manifest))
        for check in (True, False):
            with pytest.raises(DatasetError, match="field images.path: .* is outside the dataset folder"):
                load_dataset(ds, check_images=check)
    # a symlink that leads out of the folder is outside too
    frame.write_parquet(ds / "instances.parquet")
    manifest["instances_sha256"] = sha256_file(ds / "instances.parquet")
    (ds / "manifest.json").write_text(json.dumps(manifest))
    inside = ds / json.loads(frame["images"][0])[0]["path"]
    target = tmp_path / "elsewhere.png"
    shutil.copy(inside, target)
    inside.unlink()
    inside.symlink_to(target)
    with pytest.raises(DatasetError, match="outside the dataset folder"):
        load_dataset(ds)


def test_generate_refuses_zero_per_level_and_bad_versions(tmp_path):
    for args, expected in ((["--per-level", "0"], "--per-level"), (["--version", "../x"], "--version"),
                           (["--version", "a/b"], "--version")):
        r = runner.invoke(app, ["generate", "--out", str(tmp_path / "d"), *args])
        assert r.exit_code == 2 and expected in r.output and r.output.count("\n") == 1, r.output
    assert not (tmp_path / "d").exists() and not (tmp_path / "x").exists()


# --- 5. grade validates as a live run keys samples ---------------------------------------------------------------

def _graded(small_dataset: Path, tmp_path: Path) -> Path:
    resp = tmp_path / "r.jsonl"
    resp.write_text(json.dumps({"model": "m", "instance_id": "bsp-L01-000", "prompt_mode": "full_text_only",
                                "response": "x"}) + "\n")
    out = tmp_path / "graded"
    r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(resp), "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


def _line(**kw) -> str:
    base = {"model": "m", "instance_id": "bsp-L01-000", "prompt_mode": "full_text_only", "response": "x"}
    return json.dumps({**base, **kw})


@pytest.mark.parametrize("lines, expected", [
    ([_line(), _line(response="y")], ":2: duplicate of line 1"),
    ([_line(), _line(variant="a"), _line(variant="b")], ":2: field variant: 'a': only recognition lines"),
    ([_line(model="a|b")], ":1: field model"),
    ([_line(model="red\x1b[31m")], ":1: field model"),
    ([_line(repeat=10**30)], ":1: field repeat"),
    ([_line(repeat=-1)], ":1: field repeat"),
    ([_line(prompt_mode="vision")], ":1: field prompt_mode: 'vision' is not one of"),
    ([_line(prompt_mode="recognition", variant="mismatch", text_instance_id="spp-L01-000")],
     ":1: field text_instance_id: 'spp-L01-000' is SPP level 1, the instance is BSP level 1"),
    ([_line(prompt_mode="recognition", variant="mismatch", text_instance_id="bsp-L02-000")],
     ":1: field text_instance_id: 'bsp-L02-000' is BSP level 2"),
    ([_line(prompt_mode="recognition", variant="mismatch")], ":1: field text_instance_id: a 'mismatch' line"),
    ([_line(prompt_mode="recognition", variant="match", text_instance_id="bsp-L01-001")],
     ":1: field text_instance_id: a 'match' line"),
    ([_line(text_instance_id="bsp-L01-001")], ":1: field text_instance_id: only recognition lines"),
])
def test_grade_refuses_what_a_live_run_never_writes(small_dataset, tmp_path, lines, expected):
    resp = tmp_path / "r.jsonl"
    resp.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o"
    r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(resp), "--out", str(out)])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"{resp}{expected}" in r.output, r.output
    assert "\x1b" not in r.output
    assert not out.exists()


def test_grade_accepts_a_same_task_and_level_control(small_dataset, tmp_path):
    resp = tmp_path / "r.jsonl"
    resp.write_text(_line(prompt_mode="recognition", variant="mismatch", text_instance_id="bsp-L01-001",
                          response="No.") + "\n" + _line(prompt_mode="recognition", variant="match") + "\n")
    r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(resp),
                            "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    df = pl.scan_parquet(f"{tmp_path}/o/samples/**/*.parquet").collect()
    assert sorted(df["variant"]) == ["match", "mismatch"]


def test_grade_graphverse_lines_take_the_live_run_mode_and_edit(tmp_path):
    from gie.dataset import generate_split

    gv = tmp_path / "gv"
    generate_split(gv, "testmini", 2026, limit=3, workers=0)
    inst = load_dataset(gv).instances[0]
    edit = inst.meta["edit"]
    base = {"model": "m", "instance_id": inst.instance_id, "response": "x"}
    resp = tmp_path / "r.jsonl"
    for bad, expected in (({"prompt_mode": "figure+limited_text"}, "GraphVerse samples use 'vision'"),
                          ({"prompt_mode": "recognition", "variant": "match"}, "GraphVerse samples use 'vision'"),
                          ({"prompt_mode": "vision", "variant": "not-" + edit}, "this instance's image edit is")):
        resp.write_text(json.dumps({**base, **bad}) + "\n")
        r = runner.invoke(app, ["grade", "--dataset", str(gv), "--responses", str(resp), "--out", str(tmp_path / "o")])
        assert r.exit_code == 2 and expected in r.output, r.output
    # the variant may be omitted: it is the instance's edit, as in a live run's key
    resp.write_text(json.dumps({**base, "prompt_mode": "vision"}) + "\n")
    r = runner.invoke(app, ["grade", "--dataset", str(gv), "--responses", str(resp), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    df = pl.scan_parquet(f"{tmp_path}/o/samples/**/*.parquet").collect()
    assert df["variant"].to_list() == [edit] and df["prompt_mode"].to_list() == ["vision"]


def test_grade_refuses_a_folder_that_is_not_its_run(small_dataset, tmp_path):
    resp = tmp_path / "r.jsonl"
    resp.write_text(_line() + "\n")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out, expected in ((busy, "folder is not empty and holds no run manifest"), (a_file, "is a file")):
        r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(resp),
                                "--out", str(out)])
        assert r.exit_code == 2 and expected in r.output and r.output.count("\n") == 1, r.output
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"], "nothing written into someone else's folder"
    other = _graded(small_dataset, tmp_path)
    resp.write_text(_line(model="other") + "\n")
    r = runner.invoke(app, ["grade", "--dataset", str(small_dataset), "--responses", str(resp), "--out", str(other)])
    assert r.exit_code == 2 and "field run_id: folder holds run" in r.output


# --- 8. --plan --------------------------------------------------------------------------------------------------

def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def test_plan_prints_the_resolved_plan_and_writes_nothing(small_dataset, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    cfg = work / "plan.yaml"
    cfg.write_text(
        "name: p\n"
        f"datasets:\n  - {{path: {small_dataset}}}\n"
        "  - {generate: {version: later, seed: 5, per_level: 3, tasks: [SPP, BSP], levels: [1, 2]}}\n"
        "models:\n  - {name: oracle, replicas: 2}\n"
        "  - {name: api, backend: litellm, options: {model: openai/gpt-4o, api_key_env: NPHE4V_TEST_NO_SUCH_KEY}}\n"
        "prompt_modes: [figure+limited_text]\n"
        "recognition: {enabled: true, asks: 2}\n"
        "judge: {model: rule-based}\n"
    )
    before, ds_before = _tree(tmp_path), _tree(small_dataset)
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("NPHE4V_TEST_NO_SUCH_KEY", "RAY_ADDRESS")}
    p = subprocess.run([sys.executable, str(ROOT / "jobs" / "eval_all.py"), "--config", str(cfg), "--plan",
                        "--out", str(work / "run"), "--data-root", str(work / "data")],
                       capture_output=True, text=True, cwd=work, timeout=300, env=env)
    # the plan is printed whole; a missing key is one line on stderr and exit 2, since a run would refuse it
    assert p.returncode == 2, p.stderr[-2000:]
    assert p.stderr.strip().splitlines() == [
        f"error: {cfg}: model 'api': API key missing: set the environment variable NPHE4V_TEST_NO_SUCH_KEY "
        "(a run would refuse to start)"], p.stderr
    plan = json.loads(p.stdout)
    assert _tree(tmp_path) == before and _tree(small_dataset) == ds_before, "--plan writes nothing"
    existing, later = plan["datasets"]
    assert existing["exists"] and existing["path"] == str(small_dataset.resolve()) and existing["instances"] == 180
    assert not later["exists"] and later["instances"] == 2 * 2 * 3
    assert later["path"].startswith(str(work / "data" / "nphardeval4v" / "later-seed5-n3-"))
    oracle, api = plan["models"]
    assert (oracle["backend"], oracle["replicas"], api["backend"]) == ("baseline", 2, "litellm")
    # figure+limited_text + recognition (a match and a mismatch, 2 asks each) per instance
    assert oracle["samples_per_dataset"][f"nphardeval4v:{existing['path']}"] == 180 + 180 * 2 * 2
    assert oracle["samples_per_dataset"][f"nphardeval4v:{later['path']}"] == 12 + 12 * 2 * 2
    assert oracle["samples"] == api["samples"] and plan["total_samples"] == 2 * oracle["samples"]
    assert api["missing_api_keys"] and "NPHE4V_TEST_NO_SUCH_KEY" in api["missing_api_keys"][0]
    assert plan["missing_api_keys"] == api["missing_api_keys"]
    assert plan["judge"]["model"] == "rule-based" and plan["ray"]["address"].startswith("local")


def test_eval_all_resume_over_a_corrupt_shard_is_one_line(small_dataset, tmp_path, capsys):
    from cluster.run import run_fingerprint

    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(f"name: t\ndatasets: [{{path: {small_dataset}}}]\nmodels: [{{name: oracle}}]\n")
    cfg = load_config(cfg_path)
    run = tmp_path / "run"
    shard = run / "samples" / "nphardeval4v" / "oracle" / "part-1.parquet"
    shard.parent.mkdir(parents=True)
    shard.write_bytes(b"PAR1 torn write")
    run_id = f"t-{run_fingerprint(cfg, [load_dataset(small_dataset)])[:12]}"
    (run / "manifest.json").write_text(json.dumps({"run_id": run_id, "status": "running"}))
    rc = eval_all(["--config", str(cfg_path), "--out", str(run)])
    err = _stderr_lines(capsys)
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: {shard}: unreadable sample shard"), err


def test_run_command_passes_plan_through(small_dataset, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"datasets: [{{path: {small_dataset}}}]\nmodels: [{{name: oracle}}]\n")
    r = runner.invoke(app, ["run", "--config", str(cfg), "--plan", "--out", str(tmp_path / "run"),
                            "--data-root", str(tmp_path / "data")])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["models"][0]["name"] == "oracle" and plan["datasets"][0]["instances"] == 180
    assert not (tmp_path / "run").exists() and not (tmp_path / "data").exists()


def test_two_processes_asking_for_one_new_dataset_share_one_generation(tmp_path):
    code = (
        "import sys\nfrom pathlib import Path\nfrom cluster.config import DatasetSpec\n"
        "from cluster.run import resolve_dataset\n"
        "spec = DatasetSpec(generate=dict(version='race', seed=1, per_level=2, tasks=['SPP', 'TSP']))\n"
        "print(resolve_dataset(spec, Path(sys.argv[1])).manifest.dataset_sha256)\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    assert outs[0][0] == outs[1][0] and len(outs[0][0].strip()) == 64
    folders = [p.name for p in (tmp_path / "nphardeval4v").iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1 and not list((tmp_path / "nphardeval4v").glob(".*.partial"))
