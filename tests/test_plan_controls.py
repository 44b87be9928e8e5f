"""Recognition controls (issue 11.14): made whenever the config asks for them, across levels when a level has a
single instance, or one line saying why not; RA_corrected is then filled. Real generated datasets, the real
planner and the real scorer (no Ray: the always-YES answers are scored directly)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from cluster.config import DatasetSpec, ModelSpec, RunConfig
from cluster.plan import plan_model
from evalcore.dataset import load_dataset
from evalcore.recognition import control_gaps, mismatch_partners
from evalcore.schema import RECOGNITION_MODE, ModelResponse
from nphe4v import metrics
from nphe4v.generate import generate_version
from nphe4v.scoring import score_sample


@pytest.fixture(scope="module")
def one_per_level(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "pl1"
    generate_version(out, version="pl1", seed=3, per_level=1, tasks=["BSP", "KSP"], levels=[1, 2, 4], workers=1)
    return out


def _cfg(ds: Path, **rec) -> RunConfig:
    return RunConfig(name="t", out="unused", datasets=[DatasetSpec(path=str(ds))],
                     models=[ModelSpec(name="always-yes")], prompt_modes=["figure+limited_text"],
                     recognition=rec or {})


def test_per_level_one_pairs_across_the_nearest_level(one_per_level) -> None:
    ds = load_dataset(one_per_level)
    by_id = ds.by_id()
    partners = mismatch_partners(ds, seed=0)
    assert set(partners) == {i.instance_id for i in ds.instances}
    for iid, other in partners.items():
        a, b = by_id[iid], by_id[other]
        assert other != iid and a.task == b.task
        # levels 1, 2, 4: nearest of 1 is 2, of 2 is 1, of 4 is 2
        assert b.level == {1: 2, 2: 1, 4: 2}[a.level]
    assert control_gaps(ds, partners) is None
    assert mismatch_partners(ds, seed=0) == partners, "pairing must be deterministic"


def test_plan_makes_mismatch_asks_and_ra_corrected_is_filled(one_per_level, capsys) -> None:
    ds = load_dataset(one_per_level)
    cfg = _cfg(one_per_level)
    model = cfg.models[0]
    items = list(plan_model(cfg, model, ds, ds.manifest.version))
    mism = [w for w in items if w.request.key.prompt_mode == RECOGNITION_MODE and w.request.key.variant == "mismatch"]
    assert len(mism) == len(ds.instances) * cfg.recognition.asks
    assert capsys.readouterr().err == "", "nothing to report when every instance has a control"
    by_id = ds.by_id()
    rows = []
    for w in items:
        text = "YES" if w.request.key.prompt_mode == RECOGNITION_MODE else '{"Position": 0}'
        rec = score_sample("r", ds.manifest.version, by_id[w.instance_id], w.request,
                           ModelResponse(text=text, status="ok"))
        rows.append(rec.model_dump())
    levels = metrics.level_table(pl.DataFrame(rows))
    # always YES: RA = 1 and every control is a false YES, so the corrected RA is 0, not blank
    assert levels["RA"].to_list() == [1.0] * levels.height
    assert levels["RA_corrected"].to_list() == [0.0] * levels.height


def test_a_task_with_one_instance_gets_one_line(tmp_path, capsys) -> None:
    out = tmp_path / "solo"
    generate_version(out, version="solo", seed=1, per_level=1, tasks=["EDP", "BSP"], levels=[3], workers=1)
    ds = load_dataset(out)
    line = control_gaps(ds)
    assert line is not None and "\n" not in line
    assert "BSP (1)" in line and "EDP (1)" in line and "'solo'" in line
    cfg = _cfg(out)
    list(plan_model(cfg, cfg.models[0], ds, "solo"))
    list(plan_model(cfg, cfg.models[0], ds, "solo"))  # a second model: the line is not repeated
    err = capsys.readouterr().err
    assert err == line + "\n"
    # controls off: nothing to say
    cfg_off = _cfg(out, controls=False)
    list(plan_model(cfg_off, cfg_off.models[0], ds, "solo"))
    assert capsys.readouterr().err == ""
