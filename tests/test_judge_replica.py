"""The LLM judge as a model job on the cluster's own replicas: `nphe4v judge RUN --judge MODEL`, where MODEL is a
vllm model of the run, is served by the models' actor class (`cluster.pipeline.ModelActor`) running a real vLLM
engine (the CPU build, the tiny random-weight Idefics3) on a local Ray: no outside server, no JudgeActor.

The random model's grades are meaningless; what is tested is the path: the judge's chats reach the replica's
engine under the JSON schema (vLLM structured outputs), the answers are parsed and validated into judgments
recorded under the judge's name and the engine's model, and a rerun is served from the cache without Ray.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import polars as pl
import pytest
from test_judge_helpers import load_instances, write_dataset_folder, write_run

from judge.vgr import read_judgments

ROOT = Path(__file__).resolve().parents[1]
MODEL_DIR = Path(os.environ.get("NPHE4V_TINY_VLM_DIR", ROOT / "data" / "models" / "tiny-idefics3"))

needs_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm not installed")


def _job():
    spec = importlib.util.spec_from_file_location("judge_rerun_replica", ROOT / "jobs" / "judge_rerun.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run_with_models(tmp_path: Path, models: list[dict]) -> Path:
    insts = [i for i in load_instances() if i.task == "SD"][:1]
    ds = write_dataset_folder(tmp_path / "ds", insts)
    run = write_run(tmp_path / "run", ds, insts, models=("good",))
    man = json.loads((run / "manifest.json").read_text())
    man["config"] = {"models": models}
    (run / "manifest.json").write_text(json.dumps(man))
    return run


def test_which_replica_serves_a_judge(tmp_path):
    """A vllm model of the run, or a registry vllm entry, is served by a vLLM replica (no key, its weights as
    the judge's snapshot, JSON without free whitespace unless its engine settings say otherwise); an API model
    or string is not; a model that cannot judge is one line."""
    from cluster.config import ModelSpec
    from cluster.judge_work import JUDGE_STRUCTURED_OUTPUTS, judge_replica, models_of, resolve_spec

    own = ModelSpec(name="my-judge", backend="vllm", options={"model": "org/weights", "revision": "abc"})
    mine = judge_replica("my-judge", [own])
    assert mine is not None and mine.options["engine_kwargs"]["structured_outputs_config"] == JUDGE_STRUCTURED_OUTPUTS
    assert own.options.get("engine_kwargs") is None  # the run's model itself is left as it is
    spec = resolve_spec("my-judge", {"max_tokens": 64}, [own])
    assert (spec.identity, spec.pinned, spec.max_tokens, spec.api_base) == ("my-judge", "vllm:org/weights@abc", 64, None)
    set_own = ModelSpec(name="j2", backend="vllm", options={"engine_kwargs": {"structured_outputs_config": {
        "backend": "guidance"}}})
    assert judge_replica("j2", [set_own]).options["engine_kwargs"]["structured_outputs_config"] == {"backend": "guidance"}
    reg = judge_replica("qwen2.5-vl-72b")
    assert reg is not None and reg.backend == "vllm" and reg.num_gpus >= 1  # placed as that model's replicas
    assert resolve_spec("qwen2.5-vl-72b").pinned.startswith("vllm:Qwen/")
    for api in ("gpt-5.1", "openai/gpt-5.1", "hosted_vllm/x", "rule-based"):
        assert judge_replica(api) is None
    api_model = ModelSpec(name="api", backend="litellm", options={"model": "openai/gpt-4o", "api_key_env": "K"})
    assert judge_replica("api", [api_model]) is None
    assert (resolve_spec("api", None, [api_model]).model, resolve_spec("api", None, [api_model]).api_key_env) == \
        ("openai/gpt-4o", "K")
    with pytest.raises(ValueError, match="backend baseline, which cannot judge"):
        judge_replica("oracle", [ModelSpec(name="oracle", baseline="oracle")])
    # a run's models as its manifest recorded them; an entry that no longer validates is left out
    run = _run_with_models(tmp_path, [own.model_dump(mode="json"), {"name": "bad", "backend": "nope"}])
    assert [m.name for m in models_of(run)] == ["my-judge"] and models_of(tmp_path) == []


def test_judge_command_spellings_and_refusals(tmp_path, capsys):
    """`nphe4v judge RUN` and `--run RUN` are one command; naming a model of the run that cannot judge, or two
    different folders, is one line and exit status 2, before any work."""
    from typer.testing import CliRunner

    from nphe4v_cli.app import app

    run = _run_with_models(tmp_path, [{"name": "oracle", "backend": "baseline", "baseline": "oracle"}])
    r = CliRunner().invoke(app, ["judge", str(run), "--judge", "oracle", "--local", "--no-progress"])
    assert r.exit_code == 2 and "cannot judge" in r.output and len(r.output.strip().splitlines()) == 1, r.output
    r = CliRunner().invoke(app, ["judge", str(run), "--run", str(tmp_path), "--local"])
    assert r.exit_code == 2 and "name two folders" in r.output, r.output
    assert not (run / "judgments").exists()
    r = CliRunner().invoke(app, ["judge", str(run), "--local", "--no-progress"])  # the rule judge, as the default
    assert r.exit_code == 0, r.output
    job = _job()
    capsys.readouterr()
    assert job.cli(["--run", str(run), "--judge", "oracle", "--local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("judge_rerun: error: --judge: ") and "cannot judge" in err[0]


@needs_vllm
@pytest.mark.slow(reason="a real vLLM engine on the CPU in a Ray model replica (~60 s)")
@pytest.mark.ray
def test_open_weights_judge_runs_on_a_model_replica(tmp_path, ray_local, capsys):
    import cluster.judge_stage as stage
    from cluster.tiny_vlm import build_tiny_idefics3

    model = build_tiny_idefics3(MODEL_DIR)
    insts = [i for i in load_instances() if i.task == "SD"][:2]
    ds = write_dataset_folder(tmp_path / "ds", insts)
    run = write_run(tmp_path / "run", ds, insts, models=("good",))
    # the run's config names the judge's model as one of its models (as `eval_all` records it)
    man = json.loads((run / "manifest.json").read_text())
    man["config"] = {"models": [{"name": "tiny-judge", "backend": "vllm", "num_cpus": 1,
                                 "options": {"model": str(model), "max_model_len": 8192}}]}
    (run / "manifest.json").write_text(json.dumps(man))
    opts = json.dumps({"max_tokens": 256, "max_steps": 2, "max_claim_chars": 24, "max_malformed": 2,
                       "template": "vgr_judge_v2"})
    job = _job()
    capsys.readouterr()
    rc = job.cli(["--run", str(run), "--judge", "tiny-judge", "--options", opts, "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 0, err[-3000:]

    # served by the models' actor class (the judge has none of its own) running the engine: the engine's
    # chat client records the model it loaded as the served model, and the calls are counted
    assert not hasattr(stage, "JudgeActor")
    assert "judge tiny-judge [" in err and "calls=0" not in err, err[-2000:]
    js = read_judgments(run).filter(pl.col("judge") == "tiny-judge")
    assert js.height == len(insts)
    assert js["judge_snapshot"].unique().to_list() == [f"vllm:{model}"]
    ok = js.filter(pl.col("status") == "ok")
    # a random model under the schema: schema-valid JSON, or malformed (cut at max_tokens); a typed error, never
    # an infra failure of the replica
    assert (js.filter(pl.col("status") != "ok")["error_kind"] == "malformed").all(), \
        js.select("status", "error_kind", "error").to_dicts()
    assert (js["completion_tokens"] <= 256 * js["attempts"]).all() and (js["prompt_tokens"] > 0).all()
    assert ok["vgr_score"].is_between(0, 100).all()
    assert (ok["final_answer_match"] == (ok["sample_verdict"] == "correct")).all()
    assert ok.height >= 1, js.select("status", "error_kind", "error", "raw_output").to_dicts()
    assert set(pl.read_csv(run / "judge_deltas.csv")["setting"]) == {"default"}

    assert (ok["judge_served_model"] == str(model)).all() and (js["calls"] >= 1).all()

    # into another folder: the successful judgments come from the cache (zero calls for them)
    rc = job.cli(["--run", str(run), "--judge", "tiny-judge", "--options", opts, "--no-progress",
                  "--out", str(tmp_path / "again")])
    assert rc == 0, capsys.readouterr().err[-3000:]
    again = read_judgments(tmp_path / "again").filter(pl.col("judge") == "tiny-judge")
    cached = again.filter(pl.col("cached"))
    assert cached.height == ok.height and (cached["calls"] == 0).all()
