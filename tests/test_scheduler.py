"""The whole-run scheduler on a real local Ray: real tiny vLLM engines and a real HTTP API model in one run,
overlapping in time; a model whose replicas cannot load ends as infra_error while the others complete."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import polars as pl
import pytest
from fake_provider import FakeProvider

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.run import execute
from evalcore.dataset import load_dataset
from evalcore.records import KEY_COLUMNS, read_samples
from nphe4v.generate import generate_version

pytestmark = pytest.mark.ray

KEY = "sk-sched-test-KEY"
ENV = "NPHE4V_SCHED_TEST_KEY"
# before the session's Ray starts, so its worker processes (the API replica) inherit the key
os.environ.setdefault(ENV, KEY)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
TINY_DIR = Path(os.environ.get("NPHE4V_TINY_VLM_DIR", Path(__file__).resolve().parents[1] / "data" / "models" / "tiny-idefics3"))


@pytest.fixture(scope="module")
def bsp_spp(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "bsp-spp"
    generate_version(out, version="sched-test", seed=3, per_level=1, tasks=["BSP", "SPP"])
    return out


def _cfg(dataset: Path, out: Path, models: list[ModelSpec], **kw) -> RunConfig:
    return RunConfig(name="sched", out=str(out), datasets=[DatasetSpec(path=str(dataset))], models=models,
                     prompt_modes=["figure+limited_text", "full_text_only"], recognition={"enabled": False},
                     sampling={"temperature": 0.0, "max_tokens": 12, "seed": 0}, **kw)


def _windows(out: Path, start: str = "started_at") -> dict[str, tuple[float, float]]:
    manifest = json.loads((out / "manifest.json").read_text())
    return {m["model"]: (m[start], m["finished_at"]) for m in manifest["models"]}


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
@pytest.mark.slow(reason="two CPU vLLM engines in Ray actors beside an API model")
def test_two_vllm_models_and_an_api_model_run_at_once(bsp_spp, ray_local, tmp_path):
    from cluster.backends.vllm_cpu import set_cpu_env_defaults
    from cluster.tiny_vlm import build_tiny_idefics3

    set_cpu_env_defaults()
    # the folder the judge and multi-node tests reuse once complete (~6 CPU s to build; the build publishes by
    # rename, so concurrent workers never see half a model)
    tiny = build_tiny_idefics3(TINY_DIR)
    vllm_opts = {"model": str(tiny), "max_model_len": 4096, "max_images": 2}
    # the same checkpoint under two names: two models, two engines; 0.5 CPU each so that the API replica
    # and the score tasks still fit beside them on a 2-CPU Ray
    models = [ModelSpec(name=n, backend="vllm", num_cpus=0.5, batch_size=8, options=vllm_opts)
              for n in ("tiny-a", "tiny-b")]
    n = len(load_dataset(bsp_spp).instances) * 2
    out = tmp_path / "run"
    # one request at a time, 0.25 s each, and the API model's last answer held until both engines have written
    # all their samples: "the API model was answering while the engines wrote" must not depend on how long the
    # engines take to load on a loaded machine (CI once loaded them slower than the API model answered); the
    # gate makes it hold, so the API model need not be slow (1 s each made its 39 answers the test's floor)
    with FakeProvider(script=["slow:0.25"] * (n - 1), default="gate:600", lifetime_s=900) as fp:
        def engines_done() -> bool:
            done = read_samples(out).group_by("model").len()
            counts = dict(zip(done["model"], done["len"], strict=True))
            return all(counts.get(m, 0) >= n for m in ("tiny-a", "tiny-b"))

        api = ModelSpec(name="fake-api", backend="litellm", num_cpus=0.25, batch_size=4, options={
            "model": "openai/fake-model", "api_base": fp.base_url, "api_key_env": ENV, "max_concurrency": 1,
            "timeout_s": 900.0, "backoff_base_s": 0.05})
        with fp.gate_opens_when(engines_done, every_s=0.5):
            execute(_cfg(bsp_spp, out, [*models, api]))
        api_hits = list(fp.hits)
    df = read_samples(out)
    assert df.height == 3 * n and df.select(KEY_COLUMNS).unique().height == df.height
    assert set(df["status"]) == {"ok"}, df.filter(pl.col("status") != "ok")["error"].to_list()[:3]
    assert len(api_hits) == n
    win = _windows(out)
    # every model's first replica started before every other model wrote its last batch: they ran side by
    # side, not one after another (one at a time, a model starts after the previous one's last write)
    for a, (start_a, _) in win.items():
        for b, (_, last_b) in win.items():
            if a != b:
                assert start_a < last_b, (a, b, win)
    # and the API model was answering while both engines wrote their samples
    writes = _windows(out, "first_written_at")
    api_first, api_last = writes["fake-api"]
    for m in ("tiny-a", "tiny-b"):
        assert api_first < writes[m][0] and writes[m][1] < api_last, (m, writes)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "failed_models" not in manifest


def test_model_whose_replicas_cannot_load_is_infra_error_and_the_others_complete(bsp_spp, ray_local, tmp_path):
    # a vLLM replica of a checkpoint folder that does not exist fails in its engine's start (before `import vllm`,
    # which a machine without it would fail at): a real load error, raised by the replica's readiness call
    broken = ModelSpec(name="broken", backend="vllm", num_cpus=0.25, batch_size=8,
                       options={"model": str(tmp_path / "no-such-checkpoint"), "max_model_len": 1024})
    ok = [ModelSpec(name="oracle", num_cpus=0.25), ModelSpec(name="greedy", num_cpus=0.25)]
    out = tmp_path / "run"
    execute(_cfg(bsp_spp, out, [broken, *ok], max_attempts=2))
    df = read_samples(out)
    n = len(load_dataset(bsp_spp).instances) * 2
    assert df.height == 3 * n and df.select(KEY_COLUMNS).unique().height == df.height
    bad = df.filter(pl.col("model") == "broken")
    assert bad.height == n and set(bad["status"]) == {"infra_error"}
    assert bad["error"].str.contains("replicas failed 2 times").all(), bad["error"][0]
    assert set(df.filter(pl.col("model") == "oracle")["verdict"]) == {"correct"}
    assert set(df.filter(pl.col("model") != "broken")["status"]) == {"ok"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert set(manifest["failed_models"]) == {"broken"}
    stats = {m["model"]: m for m in manifest["models"]}
    assert stats["broken"]["status"] == "infra_error" and stats["broken"]["replica_failures"] == 2
    assert stats["oracle"]["status"] == "complete" and stats["oracle"]["infra_errors"] == 0
    # a rerun of the same config resumes: every key is written, nothing is asked again
    before = sorted(p.name for p in (out / "samples").glob("**/*.parquet"))
    execute(_cfg(bsp_spp, out, [broken, *ok], max_attempts=2))
    assert sorted(p.name for p in (out / "samples").glob("**/*.parquet")) == before


def test_judge_streams_beside_the_models_and_resumes_exactly_once(tmp_path, ray_local):
    import time

    from test_judge_helpers import JudgeFake

    from gie.dataset import generate_split
    from judge.vgr import read_judgments

    generate_split(tmp_path / "gv", "testmini", 0, limit=8, workers=0)
    # The model (an API model on a fake provider) answers 7 of its 8 samples at once and holds the last one
    # until the judge has made its first call: "the judge was asked while the model was still writing" then
    # holds by construction, however long the judge actor takes to start on a loaded machine.
    with JudgeFake() as fake, FakeProvider(script=["ok"] * 7, default="gate:600", lifetime_s=900) as fp:
        model = ModelSpec(name="api-model", backend="litellm", batch_size=2, num_cpus=0.25, options={
            "model": "openai/fake-model", "api_base": fp.base_url, "api_key_env": ENV, "max_concurrency": 1,
            "timeout_s": 900.0, "backoff_base_s": 0.05})
        judge = {"model": "hosted_vllm/fake-judge", "actors": 1, "batch_size": 2, "progress": False,
                 "options": {"api_base": fake.base_url, "max_concurrency": 2, "backoff_base_s": 0.05,
                             "timeout_s": 20}}
        cfg = RunConfig(name="stream", out=str(tmp_path / "run"), models=[model], max_inflight_batches=1,
                        datasets=[DatasetSpec(benchmark="graphverse", path=str(tmp_path / "gv"))], judge=judge)
        with fp.gate_opens_when(lambda: bool(fake.hits)):
            out = execute(cfg)
        offset = time.time() - time.monotonic()
        first_call = min(h.t for h in fake.hits) + offset
        calls = len(fake.hits)
        js = read_judgments(out)
        df = read_samples(out)
        assert df.height == 8 and js.height == 8
        assert not js.select(KEY_COLUMNS).is_duplicated().any()
        assert set(js["status"]) == {"ok"}
        _, last_write = _windows(out)["api-model"]
        # the judge was asked while the model was still writing: streamed, not after the model loop
        assert first_call < last_write, (first_call, last_write)
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["judge"]["written"] == 8
        # the same run again: every sample and judgment is there, nothing is asked or written twice
        execute(cfg)
        assert len(fake.hits) == calls
        assert read_judgments(out).height == 8 and read_samples(out).height == 8
