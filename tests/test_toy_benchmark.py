"""A third benchmark that no file outside its own package names: `tests/toy_benchmark` (one task, MAX) registers
through the `nphe4v.benchmarks` entry point and runs as NPHardEval4V and GraphVerse do (docs/extending.md).

It is installed the way importlib.metadata sees an installed distribution: a `toy_benchmark-0.1.0.dist-info`
folder whose `entry_points.txt` is written from the package's own pyproject.toml, in a folder put on the path
(PYTHONPATH for the subprocesses and Ray workers of a run), beside the package's source folder. Nothing of the
project is edited for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import polars as pl
import pytest

from evalcore import benchmarks

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "toy_benchmark"
TOY_CONFIG = """\
name: toy
datasets:
  - {benchmark: toy, generate: {version: t1, seed: 7, per_level: 2}}
models:
  - {name: oracle, backend: baseline}
  - {name: greedy, backend: baseline}
  - {name: random, backend: baseline}
  - {name: always-yes, backend: baseline}
prompt_modes: [figure+limited_text, full_text_only, figure+full_text]
ray: {num_cpus: 2}
"""
BASELINES = ("oracle", "greedy", "random", "always-yes")


def install_toy(site: Path) -> Path:
    """The toy distribution's metadata in `site`, its entry points taken from tests/toy_benchmark/pyproject.toml;
    returns `site`. With `site` and TOY on the path, `evalcore.benchmarks` finds the toy benchmark."""
    project = tomllib.loads((TOY / "pyproject.toml").read_text())["project"]
    dist = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = [f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
             for group, eps in project["entry-points"].items()]
    (dist / "entry_points.txt").write_text("\n".join(lines))
    return site


@pytest.fixture
def toy_registered(tmp_path, monkeypatch):
    """The toy benchmark registered in this process (the registry reloaded, and reloaded again afterwards); its
    metadata folder is `tmp_path / "site"`."""
    site = install_toy(tmp_path / "site")
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.syspath_prepend(str(site))
    benchmarks.registry.cache_clear()
    yield benchmarks.get("toy")
    monkeypatch.undo()
    benchmarks.registry.cache_clear()
    sys.modules.pop("toy_benchmark.benchmark", None)


def test_toy_registers_beside_the_two_benchmarks_and_scores_through_the_plan(toy_registered, tmp_path):
    from cluster.config import RunConfig
    from cluster.plan import plan_model
    from cluster.run_datasets import resolve_dataset
    from evalcore.baselines import baseline_answer
    from evalcore.schema import ModelResponse
    from nphe4v.scoring import score_sample

    toy = toy_registered
    assert sorted(benchmarks.names()) == ["graphverse", "nphardeval4v", "toy"]
    assert benchmarks.default().name == "nphardeval4v"  # a dataset entry naming no benchmark
    cfg = RunConfig.model_validate({
        "datasets": [{"benchmark": "toy", "generate": {"version": "t1", "seed": 7, "per_level": 2}}],
        "models": [{"name": "oracle"}, {"name": "random"}], "prompts": "rewritten"})
    spec = cfg.datasets[0]
    ds = resolve_dataset(spec, tmp_path / "data")
    assert ds.root.parent.name == "toy" and ds.manifest.benchmark == "toy"
    assert [(i.task, i.level) for i in ds.instances] == [("MAX", 1)] * 2 + [("MAX", 2)] * 2
    assert len(ds.instances[0].images) == 1
    # the same spec finds the cached folder; a spec for another benchmark's fields is refused by the toy's check
    assert resolve_dataset(spec, tmp_path / "data").manifest.dataset_sha256 == ds.manifest.dataset_sha256
    with pytest.raises(ValueError, match="generate.split is not used by toy"):
        RunConfig.model_validate({"datasets": [{"benchmark": "toy", "generate": {"version": "t", "split": "full"}}],
                                  "models": [{"name": "oracle"}]})
    with pytest.raises(ValueError, match="unknown level 3; levels are 1..2"):
        RunConfig.model_validate({"datasets": [{"benchmark": "toy", "generate": {"version": "t", "levels": [3]}}],
                                  "models": [{"name": "oracle"}]})
    by_id = ds.by_id()
    for model in cfg.models:
        items = list(plan_model(cfg, model, ds, ds.manifest.version))
        # every instance in each of the run's three prompt modes; no recognition (the toy has none)
        assert len(items) == len(ds.instances) * 3
        assert {i.request.key.prompt_mode for i in items} == set(cfg.prompt_modes)
        verdicts = []
        for item in items:
            req = item.request  # a baseline's request carries the instance's data and gold
            response = ModelResponse(text=baseline_answer(model.baseline, req), status="ok")
            rec = score_sample("r", ds.manifest.version, by_id[item.instance_id], req, response)
            verdicts.append(rec.verdict)
        if model.name == "oracle":
            assert verdicts == ["correct"] * len(items)
        else:
            assert set(verdicts) <= {"correct", "wrong"}
    assert toy.probes(cfg.prompt_modes, True) == ["1", "text", "1"]


def test_toy_exports_and_grades_offline(toy_registered, tmp_path):
    """`nphe4v export` of a toy dataset (requests and card), the requests answered outside, `nphe4v grade`
    into a run folder, and the run's summaries: the toy's leaderboard."""
    import json

    from cluster.config import DatasetSpec
    from cluster.export import REQUESTS, export_jsonl
    from cluster.grading import grade_file
    from cluster.run_datasets import resolve_dataset
    from evalcore.prompting import format_response
    from report.summaries import write_summaries

    ds = resolve_dataset(DatasetSpec(benchmark="toy", generate=dict(version="t1", seed=7, per_level=2)),
                         tmp_path / "data")
    n = export_jsonl(ds, tmp_path / "export")
    assert n == len(ds.instances) * 3  # the three prompt modes, no recognition lines
    card = (tmp_path / "export" / "README.md").read_text()
    assert "# Toy `t1`" in card and "recognition template" not in card
    by_id = ds.by_id()
    lines = [json.loads(x) for x in (tmp_path / "export" / REQUESTS).read_text().splitlines()]
    for line in lines:  # an answer that is right on the first level, wrong on the second
        gold = by_id[line["instance_id"]].gold.answer
        pos = gold["Position"] if line["level"] == 1 else (gold["Position"] + 1) % 5
        line |= {"model": "m", "response": format_response({"Position": pos}, reasoning="")}
    (tmp_path / "responses.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    graded, _ = grade_file(ds.root, tmp_path / "responses.jsonl", tmp_path / "run")
    assert graded == n
    (_, board, _), (_, by_level, path) = write_summaries(tmp_path / "run")
    assert board["model"].to_list() == ["m"] * 3 and board["acc"].to_list() == [0.5] * 3
    # the toy's own metric (docs/extending.md, "Add a metric"): accuracy per level
    assert path.name == "toy_by_level.csv" and by_level.select("level", "n", "acc").rows() == [(1, 6, 1.0), (2, 6, 0.0)]


def test_the_backend_example_of_the_docs_answers_a_toy_plan(toy_registered, tmp_path):
    """docs/extending.md's backend, run as written: it answers every request of a plan with a well-formed
    answer (the first box), which the toy's verifier scores."""
    import asyncio
    import re

    from cluster.config import RunConfig
    from cluster.plan import plan_model
    from cluster.run_datasets import resolve_dataset
    from nphe4v.scoring import score_sample

    doc = (ROOT / "docs" / "extending.md").read_text()
    section = doc[doc.index("## Add a backend"):doc.index("## Add a metric")]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict = {}
    exec(code.group(1), namespace)  # noqa: S102 (the docs' own example)
    backend = namespace["FirstBoxBackend"]()
    cfg = RunConfig.model_validate({
        "datasets": [{"benchmark": "toy", "generate": {"version": "t1", "seed": 7, "per_level": 2}}],
        "models": [{"name": "first-box", "backend": "litellm", "options": {"model": "none"}}],
        "prompts": "rewritten"})
    ds = resolve_dataset(cfg.datasets[0], tmp_path / "data")
    items = list(plan_model(cfg, cfg.models[0], ds, "t1"))
    responses = asyncio.run(backend.generate([i.request for i in items]))
    by_id = ds.by_id()
    verdicts = [score_sample("r", "t1", by_id[i.instance_id], i.request, r).verdict for i, r in zip(items, responses, strict=True)]
    # parsed every time, and right exactly where the first box holds the largest number
    expected = ["correct" if by_id[i.instance_id].data["values"][0] == max(by_id[i.instance_id].data["values"])
                else "wrong" for i in items]
    assert len(verdicts) == len(ds.instances) * 3 and verdicts == expected


def test_generate_command_makes_a_toy_dataset(toy_registered, tmp_path):
    from typer.testing import CliRunner

    from evalcore.dataset import load_dataset
    from nphe4v_cli.app import app

    res = CliRunner().invoke(app, ["generate", "--benchmark", "toy", "--out", str(tmp_path / "d"), "--version", "v",
                                   "--seed", "3", "--per-level", "1"])
    assert res.exit_code == 0, res.output
    ds = load_dataset(tmp_path / "d")
    assert ds.manifest.benchmark == "toy" and [i.instance_id for i in ds.instances] == ["max-L01-000", "max-L02-000"]
    bad = CliRunner().invoke(app, ["generate", "--benchmark", "toy", "--out", str(tmp_path / "e"), "--tasks", "MIN"])
    assert bad.exit_code != 0 and "unknown task 'MIN'; known: MAX" in bad.output, bad.output
    assert not (tmp_path / "e").exists()
    other = CliRunner().invoke(app, ["generate", "--benchmark", "toy", "--out", str(tmp_path / "f"), "--limit", "2"])
    assert other.exit_code != 0 and "--limit is not used by --benchmark toy" in other.output, other.output


@pytest.mark.ray
@pytest.mark.slow(reason="a whole `nphe4v run` in a subprocess: generation, a local Ray, four baselines, the report")
def test_toy_runs_end_to_end_from_its_own_package(toy_registered, tmp_path):
    site = tmp_path / "site"  # the fixture's
    cfg = tmp_path / "toy.yaml"
    cfg.write_text(TOY_CONFIG)
    out, data = tmp_path / "run", tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    # the Ray workers of the run import the toy package and find its entry point the same way
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TOY), str(site), *filter(None, [env.get("PYTHONPATH")])])
    res = subprocess.run([sys.executable, "-m", "nphe4v_cli", "run", "--config", str(cfg), "--out", str(out),
                          "--data-root", str(data)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Toy leaderboard" in res.stdout, res.stdout[-3000:]
    board = pl.read_csv(out / "toy_leaderboard.csv")
    assert sorted(board["model"].unique().to_list()) == sorted(BASELINES)
    assert set(board["prompt_mode"].to_list()) == {"figure+limited_text", "full_text_only", "figure+full_text"}
    assert (board["n"] == 4).all()  # two levels x two instances, one repeat
    oracle = board.filter(pl.col("model") == "oracle")
    assert (oracle["acc"] == 1.0).all() and (oracle["ER"] == 1.0).all()
    yes = board.filter(pl.col("model") == "always-yes")
    assert (yes["acc"] == 0.0).all() and (yes["ER"] == 0.0).all()  # prose, no final answer
    # no other benchmark's table was made from the toy's samples
    assert not (out / "leaderboard.csv").exists() and not (out / "graphverse_acc.csv").exists()
    samples = pl.read_parquet(out / "samples" / "**" / "*.parquet")
    assert set(samples["benchmark"].to_list()) == {"toy"} and samples.height == 4 * 3 * len(BASELINES)
    # the report the run wrote, and `nphe4v report` over the run folder
    html = (out / "report.html").read_text()
    assert '<section id="bench-toy"><h2>Toy</h2>' in html and "Toy leaderboard" in html
    assert "## Toy" in (out / "report.md").read_text()
    assert pl.read_csv(out / "report_tables" / "toy_leaderboard.csv").height == board.height
    rep = subprocess.run([sys.executable, "-m", "nphe4v_cli", "report", str(out)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stdout[-3000:] + rep.stderr[-3000:]
    assert "Toy leaderboard" in rep.stdout and "toy_leaderboard.csv" in rep.stdout
    # nothing missing from the run, and its results as a Hugging Face dataset folder with the toy's leaderboard
    from report.analysis import missing_parts
    from report.run_export import export_hub

    assert missing_parts([out]).is_empty(), missing_parts([out]).to_dicts()
    assert export_hub(out, tmp_path / "hub") == {"samples": samples.height, "toy_leaderboard": board.height,
                                                 "toy_by_level": 2 * len(BASELINES)}
    by_level = pl.read_csv(out / "toy_by_level.csv")
    assert by_level.filter(pl.col("model") == "oracle")["acc"].to_list() == [1.0, 1.0]
    assert "Toy accuracy per level" in html
    # the explorer over the run (in this process, where the fixture registered the toy too): its leaderboard on
    # the index, its samples listed, a sample's page with the prompt rebuilt from the toy's task and its image
    from fastapi.testclient import TestClient

    from report.explorer.app import create_app

    client = TestClient(create_app([out], n_boot=0))
    index = client.get("/")
    assert index.status_code == 200 and "<h2>Toy</h2>" in index.text and 'id="board-toy-1"' in index.text
    listing = client.get("/samples", params={"model": "oracle"})
    assert listing.status_code == 200 and "max-L01-000" in listing.text
    row = samples.filter((pl.col("model") == "oracle") & (pl.col("prompt_mode") == "figure+full_text")).row(0, named=True)
    from report.explorer.app import sample_query

    page = client.get(f"/sample?{sample_query({**row, 'run': row['run_id']})}")
    assert page.status_code == 200 and "largest number" in page.text, page.text[:2000]
    image = client.get("/image", params={"run": row["run_id"], "benchmark": "toy", "version": "t1",
                                          "path": f"images/MAX/{row['instance_id']}.png"})
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
