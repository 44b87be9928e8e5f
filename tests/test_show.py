"""`nphe4v show`: the prompt text and images it prints are the ones the run planner sends."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.plan import plan_model
from nphe4v.core.dataset import load_dataset
from nphe4v.core.schema import PROMPT_MODES
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
