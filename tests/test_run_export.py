"""`nphe4v export RUN --format hub|inspect`: a run's results opened by the libraries users read them with
(`datasets.load_from_disk`, inspect_ai's `read_eval_log`), compared with the run's own samples and tables."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from explorer_runs import build_explorer_runs
from typer.testing import CliRunner

from nphe4v_cli.app import app

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    return build_explorer_runs(tmp_path_factory.mktemp("export-runs"))


def _samples(run: Path) -> pl.DataFrame:
    return pl.read_parquet(sorted((run / "samples").glob("**/*.parquet")))


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_hub_export_loads_back_with_every_sample_and_table(runs, tmp_path) -> None:
    import datasets

    for run in runs:
        before = _tree(run)
        out = tmp_path / run.name
        r = runner.invoke(app, ["export", str(run), "--format", "hub", "--out", str(out)])
        assert r.exit_code == 0, r.output
        assert _tree(run) == before  # the run folder has one writer; the export only reads it
        dd = datasets.load_from_disk(str(out))
        got = dd["samples"].to_polars()
        want = _samples(run)
        assert got.height == want.height
        on = ["model", "benchmark", "instance_id", "variant", "prompt_mode", "repeat"]
        joined = want.select(*on, "verdict").join(got.select(*on, pl.col("verdict").alias("v2")), on=on)
        assert joined.height == want.height and (joined["verdict"] == joined["v2"]).all()
        assert "configs:" in (out / "README.md").read_text()
    gv = datasets.load_from_disk(str(tmp_path / runs[1].name))
    # the GraphVerse run was judged: its samples carry the default judge's VGR, its table the Acc
    assert gv["samples"].to_polars()["vgr_score"].drop_nulls().len() > 0
    assert "All" in gv["graphverse_acc"].column_names
    np_ = datasets.load_from_disk(str(tmp_path / runs[0].name))
    assert np_["leaderboard"].num_rows > 0


def test_inspect_export_opens_in_inspect_ai_with_the_verdicts(runs, tmp_path) -> None:
    from inspect_ai.log import read_eval_log

    run = runs[1]
    out = tmp_path / "logs"
    r = runner.invoke(app, ["export", str(run), "--format", "inspect", "--out", str(out)])
    assert r.exit_code == 0, r.output
    listed = json.loads((out / "export.json").read_text())["logs"]
    want = _samples(run)
    assert len(listed) == want["model"].n_unique()
    seen = 0
    for name in listed:
        log = read_eval_log(str(out / name))
        assert log.status == "success"
        rows = want.filter(pl.col("model") == log.eval.model)
        assert len(log.samples) == rows.height
        correct = sum(s.scores["verifier"].value == "C" for s in log.samples)
        assert correct == rows.filter(pl.col("verdict") == "correct").height
        acc = log.results.scores[0].metrics["accuracy"].value
        assert acc == pytest.approx(correct / rows.height)
        seen += len(log.samples)
    assert seen == want.height


def test_run_export_refuses_in_one_line(runs, tmp_path) -> None:
    r = runner.invoke(app, ["export", str(tmp_path), "--format", "hub", "--out", str(tmp_path / "o")])
    assert r.exit_code != 0 and "not a run folder" in r.output and len(r.output.strip().splitlines()) == 1
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    r = runner.invoke(app, ["export", str(runs[0]), "--format", "inspect", "--out", str(busy)])
    assert r.exit_code != 0 and "not an empty folder" in r.output
