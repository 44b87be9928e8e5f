"""The report with the judge: Acc/VGR-S (Table 1), per edit, failure modes, agreement CSVs, sample browser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from evalcore.records import SAMPLE_SCHEMA, read_samples
from gie import metrics as gm
from gie import report_tables as gt
from judge import vgr
from judge.schema import JUDGMENT_SCHEMA, vgr_score
from report import analysis
from report.html_report import build_report
from report.sections import RunsContext

RUN_ID = "J"
EVIL = "<script>alert(1)</script> node & edge"


def _steps(kinds: list[str]) -> list[dict]:
    # kinds: "ok" or an error type
    return [{"claim": f"step {i}: {EVIL}" if k != "ok" else f"step {i} holds", "kind": "inference",
             "relevant": True, "correct": k == "ok", "error_type": "none" if k == "ok" else k}
            for i, k in enumerate(kinds)]


# (task, edit, verdict, steps) per model: mixes VGR above Acc (wrong answers with correct steps), below
# (correct answers with wrong steps) and equal
PLAN = {
    "m1": [
        ("SD", "none", "correct", ["ok", "ok"]), ("SD", "patch", "correct", ["ok", "perception"]),
        ("TSP", "none", "wrong", ["ok", "visual_reasoning"]), ("TSP", "patch", "wrong", ["perception"]),
        ("SD", "focus", "correct", []), ("TSP", "recolor", "wrong", ["text_reasoning", "perception"]),
    ],
    "m2": [
        ("SD", "none", "wrong", ["ok", "ok"]), ("SD", "patch", "wrong", ["ok", "text_reasoning"]),
        ("TSP", "none", "correct", ["ok"]), ("TSP", "patch", "wrong", []),
        ("SD", "composition", "correct", ["ok", "ok", "ok"]), ("TSP", "focus", "infra", []),
    ],
}


def _make_run(root, with_judgments: bool = True):
    run = root / RUN_ID
    samples, judgments = [], []
    for model, rows in PLAN.items():
        for k, (task, edit, verdict, kinds) in enumerate(rows):
            key = {"model": model, "benchmark": "graphverse", "instance_id": f"{task.lower()}-{k}",
                   "variant": edit, "prompt_mode": "vision", "repeat": 0}
            infra = verdict == "infra"
            samples.append({**key, "run_id": RUN_ID, "version": "gv1", "task": task, "level": 1,
                            "status": "infra_error" if infra else "ok",
                            "verdict": None if infra else verdict, "raw_response": "answer",
                            "parsed_answer": "1", "reason": "r"})
            if infra:
                continue
            steps = _steps(kinds)
            n_ok = sum(1 for s in steps if s["correct"])
            base = {**key, "run_id": RUN_ID, "task": task, "judge_template": "rule-v1", "status": "ok",
                    "n_steps": len(steps), "n_correct": n_ok, "final_answer_match": verdict == "correct",
                    "steps": json.dumps(steps), "sample_verdict": verdict, "evidence_sha256": "e",
                    "response_sha256": "r", "cache_key": "c", "attempts": 0, "calls": 0, "cached": False}
            judgments.append({**base, "judge": "rule-based", "judge_snapshot": "rule-based", "judge_repeat": 0,
                              "vgr_score": vgr_score(n_ok, len(steps) - n_ok, verdict == "correct")})
            # a second judge (not the default) must not leak into the tables
            judgments.append({**base, "judge": "other/judge", "judge_snapshot": "other/judge",
                              "judge_template": "llm-v1", "judge_repeat": 0, "vgr_score": 100.0, "steps": "[]"})
    (run / "samples" / "graphverse" / "all").mkdir(parents=True)
    pl.DataFrame(samples, schema=SAMPLE_SCHEMA).write_parquet(run / "samples" / "graphverse" / "all" / "p.parquet")
    (run / "manifest.json").write_text(json.dumps({"run_id": RUN_ID, "status": "complete", "config": {
        "models": [{"name": "m1"}, {"name": "m2"}]}, "datasets": []}))
    if with_judgments:
        jd = run / "judgments"
        (jd / "rule-based").mkdir(parents=True)
        pl.DataFrame(judgments, schema=JUDGMENT_SCHEMA).write_parquet(jd / "rule-based" / "part-0.parquet")
        ident = {"judge": "rule-based", "judge_repeat": 0, "judge_snapshot": "rule-based", "judge_template": "rule-v1"}
        (jd / "manifest.json").write_text(json.dumps({"default": ident, "judges": [ident]}))
    return run


def _judged(run: Path) -> dict[str, pl.DataFrame]:
    """GraphVerse's judged tables (gie.report_tables.graphverse_judged) of one run folder, as its report section
    computes them (the judge's output through the report's context)."""
    df = analysis.frame_of(run)
    return gt.graphverse_judged(df, RunsContext("graphverse", df.lazy(), [run]))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _make_run(tmp_path_factory.mktemp("judged"))


def test_table1_matches_judge_vgr_and_gie_metrics(run) -> None:
    judged = _judged(run)
    table = judged["acc_vgr"]
    joined = vgr.samples_with_vgr(run)
    samples = read_samples(run)
    for by, tcol in ((("model", "task"), None), (("model",), "All")):
        acc = gm.accuracy(samples, by=by)
        v = vgr.vgr_table(joined, by)
        for r in acc.iter_rows(named=True):
            task = tcol or r["task"]
            got = table.filter((pl.col("model") == r["model"]) & (pl.col("task") == task)).row(0, named=True)
            want_v = v.filter(pl.col("model") == r["model"]).filter(
                pl.col("task") == task if tcol is None else pl.lit(True)).row(0, named=True)
            assert got["acc"] == pytest.approx(r["acc"]) and got["n_acc"] == r["n"]
            assert got["vgr"] == pytest.approx(want_v["vgr"]) and got["n_vgr"] == want_v["n"]
            a, w = round(r["acc"], 1), round(want_v["vgr"], 1)
            assert got["arrow"] == ("↑" if w > a else "↓" if w < a else "")
    arrows = set(table["arrow"].to_list())
    assert {"↑", "↓"} <= arrows  # the data exercises both directions
    # the infra_error sample counts nowhere
    m2 = table.filter((pl.col("model") == "m2") & (pl.col("task") == "All")).row(0, named=True)
    assert m2["n_acc"] == 5 and m2["n_vgr"] == 5
    # the wide Table 1 cell carries Acc, VGR-S, the arrow and the counts
    m1_sd = table.filter((pl.col("model") == "m1") & (pl.col("task") == "SD")).row(0, named=True)
    cell = judged["acc_vgr_wide"].filter(pl.col("model") == "m1")["SD"][0]
    assert cell.startswith(f"{m1_sd['acc']:.1f} / {m1_sd['vgr']:.1f}") and "n=3/3" in cell
    # per edit: same numbers as gie.metrics.by_edit and judge.vgr.vgr_by_edit
    edit = judged["edit_vgr"]
    ge = gm.by_edit(samples)
    ve = vgr.vgr_by_edit(joined)
    for r in ge.iter_rows(named=True):
        got = edit.filter((pl.col("model") == r["model"]) & (pl.col("variant") == r["variant"])).row(0, named=True)
        want = ve.filter((pl.col("model") == r["model"]) & (pl.col("variant") == r["variant"])).row(0, named=True)
        assert got["acc"] == pytest.approx(r["acc"]) and got["vgr"] == pytest.approx(want["vgr"])


def test_failure_mode_shares_sum_to_one(run) -> None:
    fm = _judged(run)["failure_modes"]
    assert set(fm["model"].to_list()) == {"m1", "m2"}
    for r in fm.iter_rows(named=True):
        assert r["n_incorrect"] > 0
        assert sum(r[m] for m in gt.FAILURE_MODES) == pytest.approx(1.0)
    m1 = fm.filter(pl.col("model") == "m1").row(0, named=True)
    # m1 wrong: TSP/none -> visual_reasoning, TSP/patch -> perception, TSP/recolor -> text_reasoning
    assert (m1["perception"], m1["visual_reasoning"], m1["text_reasoning"]) == pytest.approx((1 / 3,) * 3)


def test_report_sections_browser_and_deltas(run, tmp_path) -> None:
    res = build_report(run, tmp_path / "a" / "r.html", tmp_path / "a" / "r.md", n_boot=0, samples_per_group=50)
    page = res.html.read_text()
    assert 'id="gv-acc-vgr"' in page and 'id="gv-failure-modes"' in page and 'id="gv-edit-vgr"' in page
    assert 'id="fig-graphverse_failure_modes"' in page
    assert "judge not yet run" not in page
    # sample browser: VGR-Score, judge identity and escaped step labels
    assert "VGR-Score" in page and "rule-based · rule-v1" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; node &amp; edge" in page and "<script>alert(1)" not in page
    assert "other/judge" not in page
    assert "Not run yet (judge_deltas.csv absent)" in page and "Not run yet (human_agreement.csv absent)" in page
    assert (tmp_path / "a" / "r_tables" / "graphverse_acc_vgr.csv").is_file()
    assert (tmp_path / "a" / "r_tables" / "graphverse_failure_modes.csv").is_file()
    assert (tmp_path / "a" / "r_figures" / "graphverse_failure_modes.svg").is_file()
    md = res.markdown.read_text()
    assert "Acc / VGR-S per model and task" in md and "Failure modes" in md

    # judge_rerun outputs appear as tables: Table 10 as judge_rerun writes it, one block per model
    from judge.agreement import judge_deltas
    from judge.vgr import read_judgments

    deltas = judge_deltas(read_judgments(run), ("rule-based", "rule-v1", 0),
                          [("alternative", "other/judge", "llm-v1", 0)])
    assert set(deltas["model"]) == {"m1", "m2"}
    deltas.write_csv(run / "judge_deltas.csv")
    try:
        res = build_report(run, tmp_path / "b" / "r.html", tmp_path / "b" / "r.md", n_boot=0)
        page = res.html.read_text()
        assert 'id="gv-judge-deltas"' in page and "Not run yet (judge_deltas.csv absent)" not in page
        assert (tmp_path / "b" / "r_tables" / "judge_deltas.csv").is_file()
        md = res.markdown.read_text()
        assert "| alternative | other/judge | 0 | m1 | All |" in md and "| alternative | other/judge | 0 | m2 | All |" in md
    finally:
        (run / "judge_deltas.csv").unlink()


def test_missing_judge_only_without_judgments(run, tmp_path) -> None:
    parts = analysis.missing_parts(run)
    assert "judge" not in parts["part"].to_list()
    bare = _make_run(tmp_path, with_judgments=False)
    assert "judge not yet run" in "\n".join(analysis.missing_parts(bare)["detail"].to_list())
    assert _judged(bare) == {}
    page = build_report(bare, tmp_path / "o" / "r.html", n_boot=0).html.read_text()
    assert "The judge has not been run" in page
    # an empty judgments folder is no judgment either
    (bare / "judgments").mkdir()
    assert "judge" in analysis.missing_parts(bare)["part"].to_list()
    shutil.rmtree(bare / "judgments")


def _judgment_rows(rng, n: int) -> pl.DataFrame:
    """A judgments table of `n` scored rows over two models and three tasks (status ok, score 0-100)."""
    return pl.DataFrame({"model": [rng.choice(["a", "b"]) for _ in range(n)],
                         "task": [rng.choice(["SD", "TSP", "MCP"]) for _ in range(n)],
                         "status": ["ok"] * n,
                         "vgr_score": [float(rng.randrange(0, 101)) for _ in range(n)]},
                        schema_overrides={"vgr_score": pl.Float64})


def test_vgr_floor_cannot_be_raised_by_unreadable_responses() -> None:
    """The property of ``vgr_floor``: making any responses unscored (null, VGR v4's `unreadable`) never raises
    it, while the mean over scored rows (``vgr``) can rise that way; at full coverage the two are equal, and
    the floor is the coverage-weighted mean (unscored = 0). Over 200 generated tables and null patterns."""
    import random

    rng = random.Random(7)
    raised_vgr = 0
    for _ in range(200):
        full = _judgment_rows(rng, rng.randrange(5, 40))
        base = vgr.vgr_table(full, ("model", "task"))
        assert (base["coverage"] == 1.0).all()
        assert base["vgr_floor"].to_list() == pytest.approx(base["vgr"].to_list())
        # the attacker's choice: null the rows it scores lowest on (what raises the mean of the scored rows)
        cut = rng.randrange(0, 101)
        gamed = full.with_columns(vgr_score=pl.when(pl.col("vgr_score") < cut).then(None)
                                  .otherwise(pl.col("vgr_score")))
        after = vgr.vgr_table(gamed, ("model", "task"))
        for b, a in zip(base.iter_rows(named=True), after.iter_rows(named=True), strict=True):
            assert (b["model"], b["task"], b["n"]) == (a["model"], a["task"], a["n"])
            assert a["vgr_floor"] <= b["vgr_floor"] + 1e-9
            if a["vgr"] is not None:
                raised_vgr += a["vgr"] > b["vgr"] + 1e-9
                assert a["vgr_floor"] == pytest.approx(a["vgr"] * a["coverage"])
            else:
                assert a["coverage"] == 0 and a["vgr_floor"] == 0
    assert raised_vgr > 100  # the channel the floor closes is real for the plain mean


def test_table1_cell_shows_the_floor_below_full_coverage(tmp_path) -> None:
    """A model x task cell says the coverage and, below full coverage, the floor; at full coverage neither."""
    run = _make_run(tmp_path)
    part = run / "judgments" / "rule-based" / "part-0.parquet"
    js = pl.read_parquet(part)
    # m1's SD has three judged rows; leave the 100-point one unscored
    hit = ((pl.col("model") == "m1") & (pl.col("task") == "SD") & (pl.col("judge") == "rule-based")
           & (pl.col("variant") == "none"))
    assert js.filter(hit).height == 1
    js.with_columns(vgr_score=pl.when(hit).then(None).otherwise(pl.col("vgr_score"))).write_parquet(part)
    judged = _judged(run)
    row = judged["acc_vgr"].filter((pl.col("model") == "m1") & (pl.col("task") == "SD")).row(0, named=True)
    assert row["vgr_coverage"] == pytest.approx(2 / 3)
    assert row["vgr_floor"] == pytest.approx(row["vgr"] * 2 / 3)
    cell = judged["acc_vgr_wide"].filter(pl.col("model") == "m1")["SD"][0]
    assert f"VGR cov 67%, floor {row['vgr_floor']:.1f}" in cell
    full = judged["acc_vgr_wide"].filter(pl.col("model") == "m2")["SD"][0]
    assert "VGR cov 100%" in full and "floor" not in full
    # the report's Table 1 tooltip says the same
    from report.html.tables import papers_view

    view = papers_view(gm.accuracy(read_samples(run), by=("model", "task")), judged["acc_vgr"])
    titles = [c["title"] for r in view["rows"] for c in r["cells"] if c["vgr"]]
    assert sum("67% scored (floor" in t for t in titles) == 1
