"""A benchmark's run-level options (`Benchmark.run_options`): declared by its plug-in, written at the top level of
a run config as before, given to the plug-in's hooks, and hashed into run ids as before the plug-in owned them."""

from __future__ import annotations

import pytest

from cluster.config import RunConfig, RunConfigBase, _with_run_options, run_option_keys
from evalcore import benchmarks
from evalcore.hashing import sha256_json

BASE = {"datasets": [{"generate": {"version": "pin", "seed": 3, "per_level": 2, "tasks": ["EDP"]}}],
        "models": [{"name": "oracle"}]}


def test_the_run_options_are_the_plugins_fields_at_the_top_level():
    owned = {k: b.name for b in benchmarks.registry().values() if b.run_options is not None
             for k in b.run_options.model_fields}
    assert owned, "no registered benchmark declares run options: the test would check nothing"
    assert set(run_option_keys()) == set(owned)
    assert not set(owned) & set(RunConfigBase.model_fields), "the cluster declares a plug-in's run option itself"
    assert set(owned) <= set(RunConfig.model_fields)
    cfg = RunConfig.model_validate({**BASE, "prompts": "rewritten", "recognition": {"asks": 2}})
    dumped = cfg.model_dump(mode="json")
    assert set(owned) <= set(dumped)  # the manifest's config keeps them where a config writes them
    for bench in benchmarks.registry().values():
        opts = cfg.options_for(bench)
        if bench.run_options is None:
            assert opts is None
            continue
        assert isinstance(opts, bench.run_options)
        assert {k: dumped[k] for k in bench.run_options.model_fields} == opts.model_dump(mode="json")
        if bench.recognition:
            assert bench.recognition_settings(opts).asks == 2
        if bench.paper_prompts:
            assert not bench.sends_paper_prompts(opts)  # prompts: rewritten


# The run fingerprints the config made when RunConfig declared parser / prompts / prompt_assets / recognition
# itself (computed with that code, commit e3b55cf): a resumed run keeps its folder and id.
PINNED = [
    ({}, "175c1742a9ef7853baf6ebec8d81e660ca9caf149462d58c30d797a5d94c8a67"),
    ({"prompts": "rewritten"}, "8e0b26aa514992b466d8541ef2cc7be46360ada50225411423fb64c85bf1f563"),
    # parser and prompt_assets change no sample: the same run as the first
    ({"prompts": "paper", "parser": "paper", "prompt_assets": "/x"},
     "175c1742a9ef7853baf6ebec8d81e660ca9caf149462d58c30d797a5d94c8a67"),
    ({"recognition": {"asks": 2, "controls": False}},
     "108a8654ad123f30e694843583b317cda5fa09276691979919c30c12f3d0c57a"),
]


@pytest.mark.parametrize(("override", "fingerprint"), PINNED)
def test_run_ids_are_those_made_before_the_plugin_owned_the_options(override, fingerprint, monkeypatch):
    monkeypatch.delenv("NPHE4V_PROMPTS", raising=False)
    cfg = RunConfig.model_validate({**BASE, **override})
    assert sha256_json(cfg.fingerprint_fields()) == fingerprint


def test_a_plugin_run_option_named_like_a_config_field_is_refused(monkeypatch):
    from pydantic import BaseModel

    class Clash(BaseModel):
        repeats: int = 1

    class Fake:
        name = "fake"
        run_options = Clash

    monkeypatch.setattr(benchmarks, "registry", lambda: {"fake": Fake()})
    with pytest.raises(benchmarks.BenchmarkError, match="benchmark fake: run option 'repeats'"):
        _with_run_options(RunConfigBase)
