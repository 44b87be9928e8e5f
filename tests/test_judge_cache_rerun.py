"""The judge cache keeps successful judgments only, keyed on everything that changes the answer; a rerun's
summary counts every error it writes; `jobs/judge_rerun.py` answers every bad argument in one line."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from test_judge_helpers import JudgeFake, load_instances, write_dataset_folder, write_run

from cluster.config import JudgeConfig
from cluster.judge_stage import run_judge_stage
from judge.cache import CACHE_VERSION, JudgeCache
from judge.llm_judge import JudgeItem, JudgeResult, JudgeSpec, cache_key
from judge.vgr import read_judgments

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = load_instances()


def test_cache_key_covers_everything_that_changes_the_answer():
    spec = JudgeSpec(model="hosted_vllm/j", api_base="http://127.0.0.1:1/v1")
    item = JudgeItem(task="SD", evidence="E", gold="G", question="Q", response="R", repeat=0)
    k = cache_key(spec, "tmpl#1", item)
    assert k == cache_key(spec.model_copy(), "tmpl#1", JudgeItem(**vars(item)))  # deterministic
    changed_spec = [
        {"model": "hosted_vllm/other"}, {"snapshot": "j-2026-01-01"}, {"api_base": "http://127.0.0.1:2/v1"},
        {"temperature": 0.5}, {"max_tokens": 512}, {"max_steps": 4}, {"max_claim_chars": 40},
        {"extra": {"top_p": 0.9}},
    ]
    keys = {k}
    for upd in changed_spec:
        keys.add(cache_key(spec.model_copy(update=upd), "tmpl#1", item))
    keys.add(cache_key(spec, "tmpl#2", item))
    for field in ("task", "evidence", "gold", "question", "response"):
        keys.add(cache_key(spec, "tmpl#1", JudgeItem(**{**vars(item), field: "changed"})))
    keys.add(cache_key(spec, "tmpl#1", JudgeItem(**{**vars(item), "repeat": 1})))
    assert len(keys) == 1 + len(changed_spec) + 1 + 5 + 1
    # a pinned snapshot names the model: the endpoint it is reached through no longer matters
    pinned = spec.model_copy(update={"snapshot": "j-2026-01-01"})
    assert cache_key(pinned, "t", item) == cache_key(pinned.model_copy(update={"api_base": "http://x/v1"}), "t", item)


def test_cache_refuses_and_ignores_failures(tmp_path):
    cache = JudgeCache(tmp_path)
    bad = JudgeResult(status="judge_error", error_kind="malformed", error="not JSON", raw_outputs=["x"])
    assert not bad.cacheable
    with pytest.raises(ValueError):
        cache.put("ab" * 32, bad.to_json())
    # an entry written by an older version (which kept malformed answers) reads as a miss
    key = "cd" * 32
    cache.path(key).parent.mkdir(parents=True)
    cache.path(key).write_text(json.dumps({"cache_version": CACHE_VERSION, "key": key, "value": bad.to_json()}))
    assert cache.get(key) is None
    good = JudgeResult(status="ok", verdict=None)
    cache.put("ef" * 32, good.to_json())
    assert cache.get("ef" * 32)["status"] == "ok"


def test_misconfigured_judge_is_not_replayed_and_every_error_is_counted(tmp_path):
    """The issue's scenario: a server that answers junk, then the same server fixed."""
    insts = INSTANCES[::6]
    ds = write_dataset_folder(tmp_path / "ds", insts)
    run = write_run(tmp_path / "run", ds, insts, models=("good", "bad"))
    n = 2 * len(insts)
    opts = {"max_malformed": 2, "backoff_base_s": 0.01, "timeout_s": 20}
    with JudgeFake(default="junk") as broken:
        cfg = JudgeConfig(model="hosted_vllm/j", executor="local", progress=False,
                          options={**opts, "api_base": broken.base_url, "snapshot": "j-v1"})
        s1 = run_judge_stage(run, None, cfg, out_dir=tmp_path / "o1")
        assert s1.judge_errors == n == s1.errors["malformed"] and broken.count == 2 * n
        assert len(JudgeCache(run / "judge_cache")) == 0
        # identical responses of one run share one judgment: every row written counts
        s1b = run_judge_stage(run, None, cfg, out_dir=tmp_path / "o1b")
        assert s1b.judge_errors == n and s1b.cached == 0 and broken.count == 4 * n
    with JudgeFake() as fixed:  # same judge identity (pinned snapshot), now answering properly
        cfg2 = cfg.model_copy(update={"options": {**cfg.options, "api_base": fixed.base_url}})
        s2 = run_judge_stage(run, None, cfg2, out_dir=tmp_path / "o2")
        assert (s2.judge_errors, s2.cached, s2.judged) == (0, 0, n) and fixed.count == n
        assert len(JudgeCache(run / "judge_cache")) == n
        s3 = run_judge_stage(run, None, cfg2, out_dir=tmp_path / "o3")
        assert (s3.cached, s3.calls, s3.judge_errors) == (n, 0, 0) and fixed.count == n
    assert (read_judgments(tmp_path / "o3")["status"] == "ok").all()


# ------------------------------------------------------------------------------------ judge_rerun CLI


def _job():
    spec = importlib.util.spec_from_file_location("judge_rerun_cli", ROOT / "jobs" / "judge_rerun.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def unjudged_run(tmp_path_factory):
    """A finished run made with `judge: {enabled: false}`: samples, no judgments/."""
    base = tmp_path_factory.mktemp("unjudged")
    insts = INSTANCES[::10]
    ds = write_dataset_folder(base / "ds", insts)
    return write_run(base / "run", ds, insts, models=("good", "bad"))


def _bad_args(run: Path, tmp: Path) -> list[tuple[list[str], str]]:
    a_file = tmp / "a-file"
    a_file.write_text("x")
    nomanifest = tmp / "empty-dir"
    nomanifest.mkdir(exist_ok=True)
    r = ["--run", str(run)]
    return [
        ([], "--run"),
        (["--run", str(tmp / "missing")], "not a run folder"),
        (["--run", str(a_file)], "not a run folder"),
        (["--run", str(nomanifest)], "not a run folder"),
        ([*r, "--repeat", "-1"], "--repeat"),
        ([*r, "--repeat", "x"], "--repeat"),
        ([*r, "--actors", "0"], "--actors"),
        ([*r, "--max-tokens", "3"], "--max-tokens"),
        ([*r, "--options", "{bad"], "--options"),
        ([*r, "--options", "[1]"], "--options"),
        ([*r, "--judge", "hosted_vllm/j", "--options", '{"nope": 1}'], "nope"),
        ([*r, "--judge", "hosted_vllm/j", "--options", '{"max_tokens": 1}'], "max_tokens"),
        ([*r, "--baseline", "x@y"], "--baseline"),
        ([*r, "--baseline", "@1"], "--baseline"),
        ([*r, "--baseline", "x@-2"], "--baseline"),
        ([*r, "--out", str(a_file)], "--out"),
        ([*r, "--cache", str(a_file)], "--cache"),
        ([*r, "--human", str(tmp / "no.csv")], "--human"),
        ([*r, "--api-base", "localhost:8000"], "--api-base"),
        ([*r, "--judge", "no-such-judge"], "no-such-judge"),
        ([*r, "--judge", "   "], "--judge"),
        ([*r, "--judge", "openai/gpt-5.1"], "OPENAI_API_KEY"),
        ([*r, "--bogus"], "--bogus"),
    ]


def test_every_bad_argument_is_one_line(unjudged_run, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    job = _job()
    for argv, needle in _bad_args(unjudged_run, tmp_path):
        rc = job.cli(argv)
        err = capsys.readouterr().err.strip()
        assert rc == 2, (argv, rc, err)
        assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err, (argv, err)
    assert not (unjudged_run / "judgments").exists()  # nothing was judged or written by a refused call


def test_run_without_judgments_and_broken_dataset(unjudged_run, tmp_path, capsys):
    job = _job()
    # a run made with the judge disabled: judged now (rule-based), which becomes the baseline
    assert job.cli(["--run", str(unjudged_run), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "has no judgments yet" in err and "Traceback" not in err
    assert pl.read_csv(tmp_path / "o" / "judge_deltas.csv").height > 0
    # its dataset moved away: one line naming it
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "manifest.json").write_text(json.dumps({"run_id": "x", "datasets": [
        {"benchmark": "graphverse", "path": str(tmp_path / "gone")}]}))
    (moved / "samples").symlink_to(unjudged_run / "samples")
    rc = job.cli(["--run", str(moved), "--no-progress"])
    err = capsys.readouterr().err.strip()
    errors = [ln for ln in err.splitlines() if "error" in ln]
    assert rc in (1, 2) and len(errors) == 1 and "Traceback" not in err, err
    assert errors[0].startswith("judge_rerun: error: ") and "gone" in errors[0]
    # a run with no GraphVerse samples
    empty = tmp_path / "nph"
    empty.mkdir()
    (empty / "manifest.json").write_text(json.dumps({"run_id": "x", "datasets": []}))
    rc = job.cli(["--run", str(empty)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "no GraphVerse samples" in err, err


def test_cli_process_prints_one_line(unjudged_run, tmp_path):
    """As a process: no traceback on stderr, exit status 2."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    for argv in (["--run", str(unjudged_run), "--options", "{bad"],
                 ["--run", str(unjudged_run), "--judge", "openai/gpt-5.1"]):
        p = subprocess.run([sys.executable, str(ROOT / "jobs" / "judge_rerun.py"), *argv], capture_output=True,
                           text=True, env=env, timeout=120)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert p.stderr.startswith("judge_rerun: error: ")


def test_paper_config_uses_the_papers_judge_and_the_demo_stays_offline():
    from cluster.config_file import load_config
    from cluster.judge_work import resolve_spec

    paper = load_config(ROOT / "configs" / "paper-graphverse.yaml")
    assert paper.judge.enabled and paper.judge.model == "gpt-5.1"
    spec = resolve_spec(paper.judge.model, paper.judge.options)
    assert (spec.model, spec.api_key_env, spec.is_rule) == ("openai/gpt-5.1", "OPENAI_API_KEY", False)
    demo = load_config(ROOT / "configs" / "demo.yaml")
    assert resolve_spec(demo.judge.model, demo.judge.options).is_rule  # no key, no network


def test_final_answer_agreement_compares_the_judges_flags():
    from judge.agreement import compare
    from judge.schema import JUDGMENT_SCHEMA

    rows = []
    for judge, flags in (("a", [True, True]), ("b", [True, False])):
        for k, flag in enumerate(flags):
            rows.append({"run_id": "r", "model": "m", "benchmark": "graphverse", "instance_id": f"i{k}",
                         "variant": "none", "prompt_mode": "vision", "repeat": 0, "task": "SD", "judge": judge,
                         "judge_template": "t", "judge_repeat": 0, "status": "ok", "vgr_score": 50.0,
                         "final_answer_match": False, "judge_final_match": flag})
    js = pl.DataFrame(rows, schema_overrides={k: v for k, v in JUDGMENT_SCHEMA.items() if k in rows[0]})
    out = compare(js, ("a", "t", 0), ("b", "t", 0))
    assert out.filter(pl.col("task") == "All")["final_match_agreement"][0] == 0.5
