"""The MLLM description -> LLM baseline (GraphVerse §5.1, Table 13) end to end: a run on a GraphVerse slice whose
caption-chain model calls two local HTTP endpoints (a captioner that sees the images, a text-only solver that
sees only the question and the description), judged by the rule scorer, then Table 13 from that run against
the visual oracle."""

from __future__ import annotations

import base64
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fake_provider import FakeProvider, image_parts

ENV = "NPHE4V_TEST_CHAIN_KEY"
# before the session's Ray starts, so its worker processes (the chain's replica) inherit the key
os.environ.setdefault(ENV, "sk-chain-test-KEY")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
CHAIN = "describe+solve"


class Captioner(FakeProvider):
    """Reads a picture by its bytes: names the instance whose image it was sent (``by_sha``: sha256 -> id)."""

    by_sha: dict[str, str]

    def _completion(self, body: dict[str, Any], prompt: str, text: str | None = None,
                    finish: str = "stop") -> dict[str, Any]:
        if text is None:
            shas = {hashlib.sha256(base64.b64decode(u.split(",", 1)[1])).hexdigest() for u in image_parts(body)}
            ids = sorted({self.by_sha[s] for s in shas if s in self.by_sha})
            text = f"The picture shows the graph of instance {' '.join(ids) or 'unknown'}."
        return super()._completion(body, prompt, text=text, finish=finish)


class Solver(FakeProvider):
    """Answers from the description alone: the gold answer of the instance the description names when that
    instance is in ``right``, otherwise no answer at all."""

    answers: dict[str, str]
    right: set[str]

    def _completion(self, body: dict[str, Any], prompt: str, text: str | None = None,
                    finish: str = "stop") -> dict[str, Any]:
        if text is None:
            m = re.search(r"graph of instance (\S+)\.", prompt)
            iid = m.group(1) if m else ""
            text = self.answers[iid] if iid in self.right else "I cannot tell from this description."
        return super()._completion(body, prompt, text=text, finish=finish)


def _step(fp: FakeProvider, model: str) -> dict[str, Any]:
    return {"backend": "litellm", "options": {
        "model": f"openai/{model}", "api_base": fp.base_url, "api_key_env": ENV, "limiter": "local",
        "timeout_s": 20.0, "max_attempts": 2, "backoff_base_s": 0.05}}


@pytest.mark.slow(reason="a GraphVerse slice through the Ray pipeline with two HTTP endpoints and the judge")
def test_caption_chain_with_two_endpoints_and_table13(ray_local, tmp_path: Path) -> None:
    from cluster.config import DatasetSpec, ModelSpec, RunConfig
    from cluster.run import execute
    from evalcore.dataset import load_dataset
    from evalcore.prompting import format_response
    from evalcore.records import read_samples
    from gie.dataset import generate_split
    from judge import vgr
    from report.comparisons import parse_comparisons
    from report.html_report import build_report

    ds_dir = tmp_path / "gv"
    generate_split(ds_dir, "testmini", 0, limit=6, workers=0)
    instances = load_dataset(ds_dir).instances
    ids = [i.instance_id for i in instances]
    right = set(ids[::2])
    with Captioner(lifetime_s=600) as cap, Solver(lifetime_s=600) as sol:
        cap.by_sha = {img.sha256: i.instance_id for i in instances for img in i.images}
        sol.answers = {i.instance_id: format_response(i.gold.answer, reasoning="from the description")
                       for i in instances}
        sol.right = right
        chain = ModelSpec(name=CHAIN, backend="caption-chain", options={
            "captioner": _step(cap, "captioner-mllm"), "solver": _step(sol, "solver-llm")})
        out = tmp_path / "run"
        execute(RunConfig(name="chain", out=str(out), datasets=[DatasetSpec(path=str(ds_dir))],
                          models=[ModelSpec(name="oracle"), chain]))
        cap_hits, sol_hits = list(cap.hits), list(sol.hits)

    df = read_samples(out)
    chain_rows = df.filter(pl.col("model") == CHAIN)
    assert chain_rows.height == len(ids) and set(chain_rows["status"]) == {"ok"}, chain_rows["error"].to_list()
    # two endpoints: the captioner saw every image and no question; the solver saw no image, the question and
    # the caption
    assert cap.port != sol.port
    assert len(cap_hits) == len(sol_hits) == len(ids)
    assert sorted(len(h.images) for h in cap_hits) == sorted(len(i.images) for i in instances)
    assert all(h.images == [] and "Description of the image(s), written by another model" in h.prompt
               for h in sol_hits)
    assert {h.model for h in cap_hits} == {"captioner-mllm"} and {h.model for h in sol_hits} == {"solver-llm"}
    got = {r["instance_id"]: r["verdict"] == "correct" for r in chain_rows.iter_rows(named=True)}
    assert got == {i: i in right for i in ids}  # the solver could answer only from the caption it was given

    # Table 13 from that run: the visual oracle against the description pipeline
    spec = parse_comparisons({"description": [{"label": "oracle", "visual": "oracle", "description": CHAIN}]})
    res = build_report(out, tmp_path / "r.html", tmp_path / "r.md", n_boot=50, comparisons=spec)
    t13 = pl.read_csv(tmp_path / "r_tables" / "graphverse_description.csv")
    desc = t13.filter(pl.col("setting") == "description").row(0, named=True)
    vis = t13.filter(pl.col("setting") == "visual").row(0, named=True)
    assert desc["acc"] == pytest.approx(100 * len(right) / len(ids))
    assert vis["acc"] == pytest.approx(100.0)
    assert vis["d_acc"] == pytest.approx(100.0 - 100 * len(right) / len(ids))
    joined = vgr.samples_with_vgr(out)
    for model, row in ((CHAIN, desc), ("oracle", vis)):
        scores = joined.filter((pl.col("model") == model) & (pl.col("judge_status") == "ok"))["vgr_score"]
        assert row["n_vgr"] == scores.len() == len(ids) and row["vgr"] == pytest.approx(scores.mean())
    assert 'id="gv-table13"' in res.html.read_text()
    assert "#### Table 13: visual access vs MLLM description → LLM" in res.markdown.read_text()
