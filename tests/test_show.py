"""`nphe4v show`: the prompt text and images it prints are the ones the run planner sends."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.plan import plan_model
from evalcore.dataset import load_dataset
from evalcore.schema import PROMPT_MODES
from nphe4v.generate import generate_version
from nphe4v_cli.app import app

runner = CliRunner()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("show") / "ds"
    generate_version(out, version="show-test", seed=5, per_level=1, tasks=["EDP", "GCP"], levels=(1, 10), workers=1)
    return out


def _shown(out: str) -> tuple[str, list[str]]:
    lines = out.rstrip("\n").split("\n")
    assert lines[0].startswith("=== prompt: ")
    end = max(i for i, line in enumerate(lines) if line.startswith("=== images: "))
    return "\n".join(lines[1:end]), lines[end + 1 :]


def test_show_prints_what_the_planner_sends_in_every_mode(dataset: Path) -> None:
    ds = load_dataset(dataset)
    model = ModelSpec(name="oracle")
    cfg = RunConfig(datasets=[DatasetSpec(path=str(dataset))], models=[model], recognition={"enabled": False})
    sent = {
        (item.instance_id, item.request.key.prompt_mode): item.request.prompt
        for item in plan_model(cfg, model, ds, ds.manifest.version)
    }
    assert len(sent) == len(ds.instances) * len(PROMPT_MODES)
    for (iid, mode), prompt in sent.items():
        result = runner.invoke(app, ["show", str(dataset), iid, "--mode", mode])
        assert result.exit_code == 0, result.output
        text, images = _shown(result.output)
        assert text == prompt.text
        assert images == [str(dataset.resolve() / ref.path) for ref in prompt.images]
        assert all(Path(p).is_file() for p in images)
        assert f"[{mode}] {prompt.template_version}" in result.output.split("\n", 1)[0]


def test_show_default_mode_and_edp_limited_text(dataset: Path) -> None:
    inst = next(i for i in load_dataset(dataset).instances if i.task == "EDP")
    result = runner.invoke(app, ["show", str(dataset), inst.instance_id])
    assert result.exit_code == 0 and "[figure+limited_text]" in result.output
    text, images = _shown(result.output)
    assert inst.data["string_a"] not in text and len(images) == 1
    full, _ = _shown(runner.invoke(app, ["show", str(dataset), inst.instance_id, "--mode", "full_text_only"]).output)
    assert inst.data["string_a"] in full


def test_show_errors_are_one_line(dataset: Path) -> None:
    result = runner.invoke(app, ["show", str(dataset), "nope-L01-000"])
    assert result.exit_code == 2
    assert "instances.parquet: field instance_id: no instance 'nope-L01-000'" in result.output
    result = runner.invoke(app, ["show", str(dataset), "edp-L01-000", "--mode", "vision"])
    assert result.exit_code == 2 and "--mode vision: expected one of" in result.output
    result = runner.invoke(app, ["show", str(dataset / "missing"), "edp-L01-000"])
    assert result.exit_code == 2 and result.output.count("\n") == 1


def test_show_prints_the_paper_prompts_the_planner_sends(dataset: Path, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    # the paper set from a checkout-shaped folder (the authors' prompt files + stand-in runners, as in
    # tests/test_paper_prompts.py), for an open-weights and an API model
    from conftest import shared_or_skip
    from test_paper_prompts import _runner_source

    from nphe4v import upstream_assets
    from nphe4v.paper_prompts import PROMPT_FILES, TASK_SOURCES

    shared = shared_or_skip("peers", "nphardeval4v")
    root = tmp_path / "checkout"
    for rel in PROMPT_FILES.values():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes((shared / rel).read_bytes())
    for task, (_, rel, _) in TASK_SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(_runner_source(task), encoding="utf-8")
    import hashlib

    monkeypatch.setattr(upstream_assets, "PINNED_FILES", {
        rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in upstream_assets.PINNED_FILES})
    ds = load_dataset(dataset)
    for model, kind in ((ModelSpec(name="oracle"), "open"),
                        (ModelSpec(name="api", backend="litellm", options={"model": "openai/gpt-4o"}), "api")):
        cfg = RunConfig(datasets=[DatasetSpec(path=str(dataset))], models=[model], recognition={"enabled": False},
                        prompts="paper", prompt_assets=str(root))
        for item in plan_model(cfg, model, ds, ds.manifest.version):
            mode = item.request.key.prompt_mode
            result = runner.invoke(app, ["show", str(dataset), item.instance_id, "--mode", mode, "--prompts", "paper",
                                         "--model-kind", kind, "--prompt-assets", str(root)])
            assert result.exit_code == 0, result.output
            text, images = _shown(result.output)
            assert text == item.request.prompt.text
            assert images == [str(dataset.resolve() / ref.path) for ref in item.request.prompt.images]
    # without the files: one line saying how to get them
    result = runner.invoke(app, ["show", str(dataset), ds.instances[0].instance_id, "--prompts", "paper",
                                 "--prompt-assets", str(tmp_path / "none")])
    assert result.exit_code != 0 and "prompt_assets" in result.output and str(tmp_path / "none") in result.output
